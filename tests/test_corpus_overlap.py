"""tools/corpus_overlap.py: which scored sentences stand verbatim in the pretraining corpus."""
import json
import random
from pathlib import Path

from tools import corpus_overlap

REPO = Path(__file__).resolve().parents[1]


def _brute_force(scored, train):
    """A scored sentence is in the corpus when some train sentence holds it as a run of whole tokens."""
    def inside(needle, sentence):
        return any(sentence[i:i + len(needle)] == needle for i in range(len(sentence) - len(needle) + 1))
    return [any(inside(s, t) for t in train) for s in scored]


def test_overlap_matches_a_brute_force_over_token_runs():
    rng = random.Random(0)
    vocabulary = ["a", "ab", "b", "ba", "c", ".", ","]
    train = [[rng.choice(vocabulary) for _ in range(rng.randint(1, 8))] for _ in range(40)]
    scored = [t[i:j] for t in train[:10] for i, j in [sorted(rng.sample(range(len(t) + 1), 2))] if j > i]
    scored += [[rng.choice(vocabulary) for _ in range(rng.randint(1, 4))] for _ in range(60)]
    scored += [train[0] + train[1], ["a", "b"], ["ab"]]  # across two sentences; token pieces of "ab"
    assert corpus_overlap.overlap(scored, train) == _brute_force(scored, train)
    assert corpus_overlap.overlap([["a", "b"]], [["ab", "c"]]) == [False]
    assert corpus_overlap.overlap([["x", "y"]], [["w", "x"], ["y", "z"]]) == [False]


def test_a_sentence_counts_in_either_segmentation_its_text_or_its_words():
    """Coptic's `# text` holds bound groups of several words, while its corpus is in the treebank's word
    segmentation: the first UD dev sentence is found by its words, not by its text; a raw-text corpus
    (Wolof's) holds the text's tokens."""
    import os

    from conllu import parse_incr

    gold = Path(os.environ["SIB_DATA_ROOT"]) / "coptic/ud/cop_scriptorium-ud-dev.conllu"
    with gold.open(encoding="utf-8") as handle:
        first = next(parse_incr(handle))
    words = corpus_overlap.words(first)
    text = corpus_overlap.tokens(first.metadata["text"])
    assert len(words) > len(text)  # bound groups hold several words
    train = [["ⲁⲩⲱ"] + words + ["."], ["ⲁⲩⲱ"]]
    assert corpus_overlap.found_in_corpus([first], train) == [True]
    assert corpus_overlap.overlap([text], train) == [False]
    assert corpus_overlap.found_in_corpus([first], [text]) == [True]
    assert corpus_overlap.found_in_corpus([first], [words[1:]]) == [False]


def test_measure_reads_the_scored_sentences_and_the_corpus_of_an_experiment_file(tmp_path):
    file = REPO / "experiments/smoke/related/wolof_trigram_lm.jsonnet"
    record = corpus_overlap.measure(file, tmp_path / "workspace")
    from tango.common import Params
    from tango.step_graph import StepGraph
    from tango.workspaces import LocalWorkspace

    graph = StepGraph.from_params(Params.from_file(str(file)).pop("steps"))
    corpus = graph["corpus"].result(LocalWorkspace(tmp_path / "workspace"))
    texts = [line[len("# text = "):].rstrip("\n") for line in graph["mlm_accuracy"].kwargs["sentences"].resolve().open(encoding="utf-8")
             if line.startswith("# text = ")][: graph["mlm_accuracy"].kwargs["max_sentences"]]
    scored = [corpus_overlap.tokens(text) for text in texts]
    from conllu import parse_incr
    with graph["mlm_accuracy"].kwargs["sentences"].resolve().open(encoding="utf-8") as handle:
        sentences = list(parse_incr(handle))[: len(texts)]
    as_words = _brute_force([[t["form"] for t in s if isinstance(t["id"], int)] for s in sentences], corpus["train"])
    expected = [a or b for a, b in zip(_brute_force(scored, corpus["train"]), as_words)]
    assert (record["scale"], record["language"], record["sentences"]) == ("smoke", "wolof", len(texts))
    assert record["sentences_in_corpus"] == sum(expected)
    assert record["tokens"] == sum(map(len, scored))


def test_the_mlm_table_note_says_how_much_scored_text_was_seen(tmp_path):
    from reporting import tables

    path = tmp_path / "overlap.jsonl"
    record = {"language": "wolof", "scale": "paper", "sentences": 100, "sentences_in_corpus": 11, "tokens": 2052,
              "tokens_in_corpus": 160, "corpus_train_sentences": 34064}
    path.write_text(json.dumps(dict(record, sentences_in_corpus=9)) + "\n" + json.dumps(record) + "\n")
    note = tables.corpus_overlap_note("paper", path)
    assert "Wolof: 11 of the 100 sentences (160 of 2,052 tokens)" in note and "34,064" in note  # the latest record
    assert tables.corpus_overlap_note("cpu", path) == "" and tables.corpus_overlap_note("paper", tmp_path / "none") == ""
