"""Readers, data root, bad input, vocabulary and subword-tree invariants (the reference's data pipeline)."""
from __future__ import annotations

import logging
import shutil

import pytest
from tango.common.det_hash import det_hash

from steps.common.data_root import DATA_ROOT_ENV, DataError, DataPath
from steps.data.corpus import corpus_tokens, split_edge_punctuation
from steps.data.inputs import expand_tree, make_instance, make_instances, mix_in_treebank
from steps.data.languages import get_language, language_facts
from steps.data.readers import check_tree, read_conllu, read_corpus_documents, split_documents, split_sentences
from steps.data.vocab import SPECIAL_TOKENS, encode_words, load_tokenizer, vocabulary_size

CONLLU_HEADER = "# sent_id = 1\n# text = a b c\n"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def conllu_line(i, form, head, deprel="dep", upos="NOUN", deps="_"):
    return f"{i}\t{form}\t_\t{upos}\tX{upos}\t_\t{head}\t{deprel}\t{deps}\t_\n"


# --- UD reader ------------------------------------------------------------------------------


def test_reads_real_treebank_word_counts(data_root):
    # shared/data README: Wolof-WTB dev has 449 sentences / 10,294 syntactic words.
    sentences = read_conllu(data_root / "wolof/ud/wo_wtb-ud-dev.conllu")
    assert len(sentences) == 449
    assert sum(len(s["tokens"]) for s in sentences) == 10294
    first = sentences[0]
    assert set(first) == {"tokens", "upos", "xpos", "head", "deprel"}
    assert all(len(first[k]) == len(first["tokens"]) for k in first)


def test_multiword_ranges_and_empty_nodes_are_skipped_and_counted(tmp_path, caplog):
    # An empty node comes with an enhanced graph (DEPS on every word), as UD requires.
    text = (CONLLU_HEADER + "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n" + conllu_line(1, "a", 2, deps="2:dep")
            + conllu_line(2, "b", 0, "root", deps="0:root") + "2.1\tx\t_\tNOUN\t_\t_\t_\t_\t2:dep\t_\n"
            + conllu_line(3, "c", 2, deps="2:dep") + "\n")
    path = write(tmp_path / "mwt.conllu", text)
    with caplog.at_level(logging.INFO):
        [sentence] = read_conllu(path)
    assert sentence["tokens"] == ["a", "b", "c"]
    assert sentence["head"] == [2, 0, 2]
    assert "skipped 1 multiword-token ranges and 1 empty nodes" in caplog.text


@pytest.mark.parametrize(
    "body, message, line",
    [
        (conllu_line(1, "a", 0, "root") + "2\tb\tonly three columns\n", "malformed CoNLL-U line", 8),
        (conllu_line(1, "a", 0, "root") + conllu_line(2, "b", 0, "root"), "2 roots", 8),  # the second root
        (conllu_line(1, "a", 2) + conllu_line(2, "b", 1), "0 roots", 7),  # the sentence's first word
        (conllu_line(1, "a", 0, "root") + conllu_line(2, "b", 3) + conllu_line(3, "c", 2), "cycle", 8),
        (conllu_line(1, "a", 0, "root") + conllu_line(2, "b", 7), "head 7 outside 0..2", 8),
    ],
)
def test_bad_conllu_gives_one_line_error_with_file_and_line(tmp_path, body, message, line):
    good = CONLLU_HEADER + conllu_line(1, "x", 0, "root") + "\n"
    path = write(tmp_path / "bad.conllu", good + CONLLU_HEADER + body + "\n")
    with pytest.raises(DataError) as error:
        read_conllu(path)
    text = str(error.value)
    assert "\n" not in text
    # The offending word's line, not the sentence's first line (line 5, its first comment).
    assert text.startswith(f"{path}:{line}: ")
    assert message in text


def test_check_tree_accepts_a_tree():
    check_tree([2, 0, 2, 3], "here")


# --- data root ------------------------------------------------------------------------------


def test_missing_file_names_the_path(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_ROOT_ENV, str(tmp_path))
    with pytest.raises(DataError, match=r"no_such/file.conllu: no such file or directory .*SIB_DATA_ROOT"):
        DataPath("no_such/file.conllu").resolve()


def test_cache_key_follows_content_not_location(monkeypatch, tmp_path):
    root_a, root_b = tmp_path / "a", tmp_path / "b"
    write(root_a / "wolof/ud/x.conllu", CONLLU_HEADER + conllu_line(1, "a", 0, "root") + "\n")
    shutil.copytree(root_a, root_b)
    monkeypatch.setenv(DATA_ROOT_ENV, str(root_a))
    key_a = det_hash(DataPath("wolof/ud/x.conllu"))
    monkeypatch.setenv(DATA_ROOT_ENV, str(root_b))
    assert det_hash(DataPath("wolof/ud/x.conllu")) == key_a, "moving the root must not change the key"
    write(root_b / "wolof/ud/x.conllu", CONLLU_HEADER + conllu_line(1, "b", 0, "root") + "\n")
    assert det_hash(DataPath("wolof/ud/x.conllu")) != key_a, "changed content must change the key"
    # Directories hash their files' names and contents.
    monkeypatch.setenv(DATA_ROOT_ENV, str(root_a))
    dir_key = det_hash(DataPath("wolof/ud"))
    write(root_a / "wolof/ud/y.conllu", "")
    assert det_hash(DataPath("wolof/ud")) != dir_key


def test_unknown_language_lists_known_ones():
    with pytest.raises(DataError, match=r"unknown language 'klingon'; known: .*wolof"):
        get_language("klingon")


# --- corpus reader --------------------------------------------------------------------------


def test_sentence_splitter_follows_microbert():
    assert split_sentences("Dafa tàng. Mu ngi dem!") == [["Dafa", "tàng."], ["Mu", "ngi", "dem!"]]
    assert split_sentences("Mu ne: «Waaw.» Noo ko?") == [["Mu", "ne:", "«Waaw.»"], ["Noo", "ko?"]]
    assert split_sentences("3.5 la") == [["3."], ["5", "la"]]  # as in the reference
    assert split_sentences("line one\nline two") == [["line", "one"], ["line", "two"]]


def test_wikipedia_markup_is_stripped(tmp_path, monkeypatch):
    html = ('<html><body><text id="x" title="T">Title<figure><caption>Cap</caption></figure>\n'
            '<p><hi rend="bold">Albert</hi> (<ref target="u">1879</ref>) doon na ab &amp; xam-xam. Mu dem.</p>\n'
            "</text></body></html>")
    write(tmp_path / "c/wo_wikipedia_org__1.html", html)
    monkeypatch.setenv(DATA_ROOT_ENV, str(tmp_path))
    [(name, sentences)] = read_corpus_documents(DataPath("c"), "wikipedia_html")
    assert sentences == [["Title"], ["Cap"], ["Albert", "(1879)", "doon", "na", "ab", "&", "xam-xam."], ["Mu", "dem."]]


def test_empty_corpus_is_an_error(tmp_path, monkeypatch):
    write(tmp_path / "c/wo_wikipedia_org__1.html", "<html><body><text></text></body></html>")
    monkeypatch.setenv(DATA_ROOT_ENV, str(tmp_path))
    with pytest.raises(DataError, match=r"corpus is empty"):
        read_corpus_documents(DataPath("c"), "wikipedia_html")


# Paper Table 1 (train split, whitespace tokens; `paper_train_tokens` of configs/languages.libsonnet); the bar is 0.5%.
@pytest.mark.parametrize("language", ["maltese", "uyghur", "wolof"])
def test_train_token_counts_match_paper_table_1(language):
    lang = get_language(language)
    splits = split_documents(read_corpus_documents(DataPath(lang.corpus_path), lang.corpus_format))
    tokens = sum(len(s) for _, doc in splits["train"] for s in doc)
    paper = language_facts()[language]["paper_train_tokens"]
    assert abs(tokens - paper) / paper < 0.005, tokens


def test_document_split_is_90_10_and_deterministic():
    docs = [(f"wo_wikipedia_org__{i}.html", [["w"]]) for i in range(25)]
    first, second = split_documents(docs), split_documents(list(reversed(docs)))
    assert len(first["train"]) == 23 and len(first["dev"]) == 2  # ceil(0.9 * 25)
    assert first == second


def test_edge_punctuation_split():
    assert split_edge_punctuation("(Almaañ),") == ["(", "Almaañ", ")", ","]
    assert split_edge_punctuation("xam-xam.") == ["xam-xam", "."]
    assert split_edge_punctuation("...") == [".", ".", "."]
    assert split_edge_punctuation("bi") == ["bi"]
    assert corpus_tokens(["(Almaañ),", "xam-xam."]) == ["(", "Almaañ", ")", ",", "xam-xam", "."]


# --- vocabulary -----------------------------------------------------------------------------


def test_vocabulary_size_formula():
    assert vocabulary_size(10_000) == 8000
    assert vocabulary_size(15_000) == 8000
    assert vocabulary_size(465_000) == 14_000
    assert vocabulary_size(59_100) == 8588  # Wolof's size by MicroBERT's rule


def test_tokenizer_special_ids_and_round_trip(small_wolof_tokenizer, tmp_path):
    tokenizer = small_wolof_tokenizer
    assert tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS) == [0, 1, 2, 3, 4]
    assert (tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.unk_token_id, tokenizer.mask_token_id) == (0, 1, 2, 3, 4)
    tokenizer.save_pretrained(str(tmp_path))
    reloaded = load_tokenizer(tmp_path)
    text = "Àddina bi dafa rëy"
    assert reloaded(text)["input_ids"] == tokenizer(text)["input_ids"]
    ids = reloaded(text)["input_ids"]
    assert ids[0] == 1 and ids[-1] == 2 and 3 not in ids  # accents survive NFD + lowercase


def test_empty_word_becomes_unk(small_wolof_tokenizer):
    assert encode_words(small_wolof_tokenizer, ["\u200b", "bi"])[0] == [small_wolof_tokenizer.unk_token_id]


# --- subword trees (expansion to subwords and its invariants) --------------------------------------------


def test_expand_tree_small_example():
    # words: w1 (2 pieces) ← root w2 (1 piece) → w3 (3 pieces)
    head, deprel = expand_tree([(1, 2), (3, 3), (4, 6)], [2, 0, 2], ["nsubj", "root", "obj"])
    assert head == [3, 1, 0, 3, 4, 4]
    assert deprel == ["nsubj", "subword", "root", "obj", "subword", "subword"]


def test_expansion_invariants_on_real_sentences(small_wolof_tokenizer, wolof_dev_sentences):
    instances = make_instances(small_wolof_tokenizer, wolof_dev_sentences[:200], True, 512, "wolof dev")
    assert len(instances) == 200
    split_words = 0
    for instance, sentence in zip(instances, wolof_dev_sentences):
        ids, head, spans = instance["input_ids"], instance["head"], instance["token_spans"]
        n = len(ids) - 2
        assert len(head) == n and len(instance["deprel"]) == n
        assert all(0 <= h <= n for h in head) and head.count(0) == 1
        check_tree(head, "expanded")  # acyclic, single root
        word_spans = spans[1:-1]
        assert spans[0] == (0, 0) and spans[-1] == (n + 1, n + 1)
        # Spans tile 1..n in order.
        assert [p for b, e in word_spans for p in range(b, e + 1)] == list(range(1, n + 1))
        first_piece_to_word = {b: w + 1 for w, (b, _) in enumerate(word_spans)}
        for b, e in word_spans:
            split_words += e > b
            for piece in range(b + 1, e + 1):
                assert head[piece - 1] == b and instance["deprel"][piece - 1] == "subword"
        # Collapsing pieces gives back the word-level tree.
        collapsed = [0 if head[b - 1] == 0 else first_piece_to_word[head[b - 1]] for b, _ in word_spans]
        assert collapsed == instance["orig_head"] == sentence["head"]
        assert instance["tree_is_gold"] == [1]
    assert split_words > 500, "the small vocabulary should split many words"


def test_too_long_sentences_are_dropped_and_counted(small_wolof_tokenizer, wolof_dev_sentences, caplog):
    with caplog.at_level(logging.INFO):
        instances = make_instances(small_wolof_tokenizer, wolof_dev_sentences[:50], False, 24, "slice")
    assert 0 < len(instances) < 50
    assert all(len(i["input_ids"]) <= 24 for i in instances)
    assert f"dropped {50 - len(instances)} of 50 sentences longer than 22 subwords" in caplog.text


def test_mismatched_heads_are_an_error(small_wolof_tokenizer):
    with pytest.raises(DataError, match="sentence 1 has 2 tokens but 1 heads"):
        make_instances(small_wolof_tokenizer, [{"tokens": ["a", "b"], "head": [0], "deprel": ["root"], "xpos": ["X", "X"]}], False, 128, "parsed")


def test_treebank_is_cycled_to_one_eighth(small_wolof_tokenizer, wolof_dev_sentences):
    gold = [make_instance(small_wolof_tokenizer, s, True, 512, "s") for s in wolof_dev_sentences[:5]]
    corpus = [dict(g, tree_is_gold=[0]) for g in gold] * 20  # 100 corpus rows
    mixed = mix_in_treebank(corpus, gold, 8)
    assert len(mixed) == 100 + 12
    assert [r["tree_is_gold"][0] for r in mixed[100:]] == [1] * 12
    assert mixed[100:105] == gold and mixed[105:110] == gold  # cycled in order


def test_parser_training_tags_follow_the_taggers_dev_confusion(data_root, tmp_path):
    """The corpus parser trains on what it sees at parse time: identity lemmas, and UPOS drawn from
    the tagger's dev confusion. Here the "tagger" confuses every dev NOUN with PROPN."""
    import conllu

    from steps.parse.backends import prepare_parser_training_files, resample_upos, tag_confusion

    dev = data_root / "wolof/ud/wo_wtb-ud-dev.conllu"
    gold = conllu.parse(dev.read_text(encoding="utf-8"))[:60]
    gold_file = tmp_path / "dev.conllu"
    gold_file.write_text("".join(s.serialize() for s in gold), encoding="utf-8")
    tagged = conllu.parse(gold_file.read_text(encoding="utf-8"))
    for sentence in tagged:
        for word in sentence:
            if word["upos"] == "NOUN":
                word["upos"] = "PROPN"
    tagged_file = tmp_path / "tagged.conllu"
    tagged_file.write_text("".join(s.serialize() for s in tagged), encoding="utf-8")

    confusion = tag_confusion(gold, tagged)
    assert confusion["NOUN"] == {"PROPN": confusion["NOUN"]["PROPN"]} and confusion["VERB"] == {"VERB": confusion["VERB"]["VERB"]}
    # A perfect tagger changes nothing.
    copy = conllu.parse(gold_file.read_text(encoding="utf-8"))
    assert resample_upos(copy, tag_confusion(gold, gold), seed=1) == 0

    files = prepare_parser_training_files(gold_file, gold_file, tagged_file, tmp_path, seed=1)
    train = conllu.parse(files["train"].read_text(encoding="utf-8"))
    words = [w for s in train for w in s if isinstance(w["id"], int)]
    gold_words = [w for s in gold for w in s if isinstance(w["id"], int)]
    assert all(w["lemma"] == w["form"] for w in words)
    assert not any(w["upos"] == "NOUN" for w in words)
    assert sum(g["upos"] == "NOUN" for g in gold_words) == files["train_upos_resampled"] * len(words) > 0
    assert [w["upos"] for w in words if w["upos"] != "PROPN"] == [g["upos"] for g in gold_words if g["upos"] not in ("NOUN", "PROPN")]
    # Model selection sees the tagger's tags, with identity lemmas.
    dev_words = [w for s in conllu.parse(files["dev"].read_text(encoding="utf-8")) for w in s if isinstance(w["id"], int)]
    assert [w["upos"] for w in dev_words] == [w["upos"] for s in tagged for w in s if isinstance(w["id"], int)]
    assert files["tagger_dev_upos_accuracy"] < 100


def test_parser_optimizer_flags_reach_stanzas_cli():
    """"adam" replaces Stanza's Adadelta warm-up from the first step (and never switches back);
    None keeps Stanza's own schedule; anything else is refused before minutes of tagger training."""
    from stanza.models import parser as stanza_parser

    from steps.parse.backends import ParserBudget, parser_optimizer_args

    flags = parser_optimizer_args(ParserBudget(parser_optimizer="adam", parser_lr=0.002, parser_beta2=0.9))
    parsed = stanza_parser.parse_args(["--train_file", "x", *flags])
    assert (parsed["optim"], parsed["lr"], parsed["beta2"], parsed["second_optim"]) == ("adam", 0.002, 0.9, None)
    defaults = stanza_parser.parse_args(["--train_file", "x", *parser_optimizer_args(ParserBudget(parser_optimizer=None))])
    assert defaults["optim"] == "adadelta" and defaults["second_optim"] == "adam"
    with pytest.raises(ValueError, match="parser_optimizer.*'sgd'"):
        ParserBudget(parser_optimizer="sgd")
    with pytest.raises(ValueError, match="parser_training_tags.*'silver'"):
        ParserBudget(parser_training_tags="silver")
    with pytest.raises(ValueError, match="tagger_tags='upos'.*parser_uses_xpos"):
        ParserBudget(tagger_tags="upos", parser_uses_xpos=True)


def test_upos_only_tagger_data_keeps_upos_and_blanks_the_rest(data_root, tmp_path):
    import conllu

    from steps.parse.backends import blank_columns

    source = data_root / "wolof/ud/wo_wtb-ud-dev.conllu"
    blanked = conllu.parse(blank_columns(source, tmp_path / "dev.conllu", ("xpos", "feats")).read_text(encoding="utf-8"))
    original = conllu.parse(source.read_text(encoding="utf-8"))
    assert len(blanked) == len(original)
    pairs = [(b, o) for bs, os_ in zip(blanked, original) for b, o in zip(bs, os_)]
    assert all(b["form"] == o["form"] and b["upos"] == o["upos"] and b["head"] == o["head"] for b, o in pairs)
    assert all(b["xpos"] is None and b["feats"] is None for b, _ in pairs)
    assert any(o["xpos"] is not None for _, o in pairs)
