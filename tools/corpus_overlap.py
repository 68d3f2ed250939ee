"""How many of the sentences an experiment file's MLM accuracy is scored on stand verbatim in its pretraining corpus.

    python tools/corpus_overlap.py experiments/paper/related/wolof_trigram_lm.jsonnet -w workspace \\
        [--json docs/benchmarks/corpus_overlap.jsonl]

The file's ``mlm_accuracy`` step names the UD sentences it scores (``sentences``, ``max_sentences``);
its ``corpus`` step (read from the workspace's cache, or computed) is the unlabeled corpus whose train
split the encoders and the n-gram model learn from. A scored sentence counts as in the corpus when
its text, tokenized as the corpus is (whitespace, then edge punctuation split off), or its syntactic
words are a run of tokens of one train sentence: a corpus of raw text (Wolof's) is written as the
``# text`` line is, one in the treebank's segmentation (Coptic's, whose ``# text`` holds bound groups
of several words) as the words are. Why it exists: a model that saw a scored sentence in pretraining can
recall it rather than predict it, and an n-gram model recalls best; the MLM-accuracy table says how
much of its evaluation text that concerns (the leak-free Coptic corpus answers the same question for
the UD dev/test documents).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import steps  # noqa: E402,F401  (registers the steps and Tango shims)
from reporting.graphs import display_path, scale_label  # noqa: E402
from reporting.records import append_jsonl  # noqa: E402
from steps.data.corpus import corpus_tokens  # noqa: E402


def tokens(text: str) -> List[str]:
    """A sentence's text tokenized as the corpus step tokenizes its sentences."""
    return corpus_tokens(text.split())


def words(sentence) -> List[str]:
    """A CoNLL-U sentence's syntactic words: no multiword-token ranges, no empty nodes."""
    return [token["form"] for token in sentence if isinstance(token["id"], int)]


def found_in_corpus(sentences, train: Sequence[List[str]]) -> List[bool]:
    """For each CoNLL-U sentence, whether its text's tokens or its words stand as a run in one train sentence."""
    haystack = _haystack(train)
    return [_fenced(tokens(sentence.metadata["text"])) in haystack or _fenced(words(sentence)) in haystack
            for sentence in sentences]


def overlap(scored: Sequence[List[str]], train: Sequence[List[str]]) -> List[bool]:
    """For each scored sentence (tokens), whether it is a run of tokens of one train sentence."""
    haystack = _haystack(train)
    return [_fenced(sentence) in haystack for sentence in scored]


# Tokens joined by a separator no token holds, each train sentence fenced by it: a substring match
# is then a whole-token run inside one sentence.
def _fenced(sentence: Sequence[str]) -> str:
    return "\x1f" + "\x1f".join(sentence) + "\x1f"


def _haystack(train: Sequence[List[str]]) -> str:
    return "\n".join(_fenced(sentence) for sentence in train)


def measure(file: Path, workspace_dir: Path) -> Dict:
    from conllu import parse_incr
    from tango.common import Params
    from tango.step_graph import StepGraph
    from tango.workspaces import LocalWorkspace

    graph = StepGraph.from_params(Params.from_file(str(file)).pop("steps"))
    if "mlm_accuracy" not in graph or "corpus" not in graph:
        raise SystemExit(f"{file}: no mlm_accuracy and corpus steps")
    scoring = graph["mlm_accuracy"].kwargs
    path, limit = scoring["sentences"].resolve(), scoring.get("max_sentences")
    with open(path, encoding="utf-8") as handle:
        sentences = list(parse_incr(handle))
    sentences = sentences[:limit] if limit else sentences
    texts = [sentence.metadata["text"] for sentence in sentences]
    corpus = graph["corpus"].result(LocalWorkspace(workspace_dir))
    scored = [tokens(text) for text in texts]
    found = found_in_corpus(sentences, corpus["train"])
    return {
        "file": display_path(file), "scale": graph["mlm_accuracy_score"].kwargs["scale"] if "mlm_accuracy_score" in graph
        else scale_label(display_path(file)), "language": graph["corpus"].kwargs["language"],
        "scored": path.name, "sentences": len(scored), "sentences_in_corpus": sum(found),
        "tokens": sum(len(s) for s in scored), "tokens_in_corpus": sum(len(s) for s, hit in zip(scored, found) if hit),
        "corpus_train_sentences": len(corpus["train"]),
        "examples": [text for text, hit in zip(texts, found) if hit][:3],
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, help="an experiment file with mlm_accuracy and corpus steps")
    parser.add_argument("-w", "--workspace", type=Path, default=REPO / "workspace")
    parser.add_argument("--json", type=Path, help="append the record to this JSONL file")
    args = parser.parse_args(argv)
    record = measure(args.file, args.workspace)
    print(json.dumps(record, ensure_ascii=False, indent=1))
    if args.json:
        append_jsonl(args.json, [record])
    return 0


if __name__ == "__main__":
    sys.exit(main())
