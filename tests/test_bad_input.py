"""The bad-input matrix: malformed variants of real files, each derived in tmp_path from a
slice of the shared data (Wolof UD dev, Wolof WikiAnn dev, Wolof Wikipedia corpus files).

Every case either reads exactly as the clean slice does, or fails with a one-line DataError that
starts ``<file>:<line>: `` (the offending line, computed here from the slice, not hard-coded) and
names the problem; a CoNLL-U refusal also names the UD validator test it fails, e.g. ``(level 2:
invalid-deprel)`` (tests/test_conllu_validation.py compares the reader with the validator rule by
rule). A failing Tango step leaves no cache entry behind.
"""
from __future__ import annotations

import gzip
import os
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Tuple

import pytest
from tango.common import Params
from tango.workspaces import LocalWorkspace

from steps.common.data_root import DATA_ROOT_ENV, DataError, DataPath, normalised_copy
from steps.data.corpus import LoadCorpus
from steps.data.readers import read_conllu, read_corpus_documents
from steps.evaluate.metrics import attachment_scores, span_scores
from steps.finetune.ner import FinetuneNer, read_bio
from steps.parse.corpus_parser import TrainCorpusParser

REPO = Path(__file__).resolve().parents[1]
UD_DEV = "wolof/ud/wo_wtb-ud-dev.conllu"
UD_SENTENCES = 25
WIKIANN_DEV = "wolof/wikiann/wikiann-wo_dev.bio"  # BIOUL tags, `token O O TAG`
BIO_SENTENCES = 30
CORPUS = "wolof/corpus"
CORPUS_FILES = 12  # the first by name; load_corpus keeps ceil(0.9 * 12) = 11 for train, 1 for dev
BOM = b"\xef\xbb\xbf"

# What a case expects: SAME (reads as the clean file), or a rejection at a 1-based line (None: the
# file as a whole, e.g. an empty one) whose message contains `problem`.
SAME = "same"


@dataclass
class Reject:
    line: Optional[int]
    problem: str
    file: Optional[str] = None  # for a corpus directory: the document at fault


Built = Tuple[bytes, object]  # (bad file bytes, SAME | Reject)


# ------------------------------------------------------------------------------ the real slices


def first_blocks(text: str, count: int) -> str:
    """The first `count` blank-line-separated blocks of a file, as it is (comments, MWT lines)."""
    return "\n\n".join(text.split("\n\n")[:count]) + "\n\n"


@pytest.fixture(scope="module")
def clean_conllu(data_root) -> str:
    text = first_blocks((data_root / UD_DEV).read_text(encoding="utf-8"), UD_SENTENCES)
    assert "\n22-24\t" in text and unicodedata.is_normalized("NFC", text)  # MWT ranges; NFC
    assert not unicodedata.is_normalized("NFD", text)  # so the NFD case differs from the clean file
    return text


@pytest.fixture(scope="module")
def clean_bio(data_root) -> str:
    text = first_blocks((data_root / WIKIANN_DEV).read_text(encoding="utf-8"), BIO_SENTENCES)
    assert not unicodedata.is_normalized("NFD", text)
    return text


class Lines:
    """A text as lines, with the helpers the cases need to find what to break."""

    def __init__(self, text: str):
        self.lines = text.split("\n")

    def text(self) -> str:
        return "\n".join(self.lines)

    def bytes(self) -> bytes:
        return self.text().encode("utf-8")


class Conllu(Lines):
    def __init__(self, text: str):
        super().__init__(text)
        self.sentences: List[dict] = []  # per sentence: word id -> line index (0-based)
        current = None
        for index, line in enumerate(self.lines):
            if not line.strip():
                current = None
                continue
            if current is None:
                current = {}
                self.sentences.append(current)
            word_id = line.split("\t")[0]
            if word_id.isdigit():
                current[int(word_id)] = index

    def columns(self, sentence: int, word: int) -> List[str]:
        return self.lines[self.sentences[sentence][word]].split("\t")

    def head(self, sentence: int, word: int) -> int:
        return int(self.columns(sentence, word)[6])

    def set_column(self, sentence: int, word: int, column: int, value: str) -> int:
        """Change one cell; returns the 1-based line number of the word."""
        columns = self.columns(sentence, word)
        columns[column] = value
        index = self.sentences[sentence][word]
        self.lines[index] = "\t".join(columns)
        return index + 1

    def line_of(self, sentence: int, word: int) -> int:
        return self.sentences[sentence][word] + 1

    def root(self, sentence: int) -> int:
        return next(w for w in self.sentences[sentence] if self.head(sentence, w) == 0)

    def grandchild(self, sentence: int) -> int:
        """A word whose head is not the root (so that word ↔ head can be made a cycle)."""
        return next(w for w in self.sentences[sentence] if self.head(sentence, w) not in (0, self.root(sentence)))


S = 3  # the sentence the CoNLL-U cases break (not the first: line numbers must be the file's)


# ------------------------------------------------------------------------------ CoNLL-U cases


def conllu_cycle(text: str) -> Built:
    c = Conllu(text)
    word = c.grandchild(S)
    head = c.head(S, word)
    c.set_column(S, head, 6, str(word))  # head -> word -> head
    return c.bytes(), Reject(c.line_of(S, min(word, head)), "dependency cycle")


def conllu_two_roots(text: str) -> Built:
    c = Conllu(text)
    word, root = c.grandchild(S), c.root(S)
    c.set_column(S, word, 6, "0")
    return c.bytes(), Reject(c.line_of(S, max(word, root)), "2 roots")  # the second root's line


def conllu_no_root(text: str) -> Built:
    c = Conllu(text)
    root = c.root(S)
    c.set_column(S, root, 6, str(1 if root != 1 else 2))
    return c.bytes(), Reject(c.line_of(S, 1), "0 roots")


def conllu_head(value: str, problem: str) -> Callable[[str], Built]:
    def build(text: str) -> Built:
        c = Conllu(text)
        word = c.grandchild(S)
        line = c.set_column(S, word, 6, value)
        return c.bytes(), Reject(line, problem)

    return build


def conllu_head_past_end(text: str) -> Built:
    c = Conllu(text)
    n = len(c.sentences[S])
    return conllu_head(str(n + 1), f"head {n + 1} outside 0..{n}")(text)


def conllu_columns(change: Callable[[List[str]], List[str]], problem: str) -> Callable[[str], Built]:
    def build(text: str) -> Built:
        c = Conllu(text)
        index = c.sentences[S][2]
        c.lines[index] = "\t".join(change(c.lines[index].split("\t")))
        return c.bytes(), Reject(index + 1, problem)

    return build


def conllu_spaces_everywhere(text: str) -> Built:
    c = Conllu(text)
    c.lines = [line.replace("\t", " ") for line in c.lines]
    first_token_line = next(i for i, line in enumerate(c.lines) if line.strip() and not line.startswith("#")) + 1
    return c.bytes(), Reject(first_token_line, "spaces, not tabs")


def conllu_missing_word(text: str) -> Built:
    c = Conllu(text)
    line = c.line_of(S, 3)  # word 4 moves up to this line once word 3 is gone
    del c.lines[c.sentences[S][3]]
    return c.bytes(), Reject(line, "not consecutive at id 4")


def conllu_bad_id(text: str) -> Built:
    c = Conllu(text)
    line = c.set_column(S, 2, 0, "two")
    return c.bytes(), Reject(line, "not a valid ID")


def first_token_line(c: Conllu, sentence: int) -> int:
    """1-based line of a sentence's first token line (a range or word 1)."""
    first_word = min(c.sentences[sentence].values())
    while c.lines[first_word - 1][:1].isdigit():
        first_word -= 1
    return first_word + 1


EMPTY_NODE = "2.1\tnull\t_\tVERB\t_\t_\t_\t_\t1:dep\t_"


def conllu_insert_empty_node(text: str) -> Built:
    # An empty node belongs to the enhanced graph: UD wants one in every sentence then (each
    # word's DEPS here is its HEAD:DEPREL). Neither DEPS nor empty nodes are read.
    c = Conllu(text)
    for index, line in enumerate(c.lines):
        columns = line.split("\t")
        if columns[0].isdigit():
            columns[8] = f"{columns[6]}:{columns[7]}"
            c.lines[index] = "\t".join(columns)
    c.lines.insert(c.sentences[S][2] + 1, EMPTY_NODE)
    return c.bytes(), SAME


def conllu_empty_node_without_enhanced_graph(text: str) -> Built:
    c = Conllu(text)
    c.lines.insert(c.sentences[S][2] + 1, EMPTY_NODE)
    return c.bytes(), Reject(first_token_line(c, S), "(level 2: edeps-only-sometimes)")


def conllu_drop_ranges(text: str) -> Built:
    # The clean slice has multiword-token ranges; a file without them reads the same (they are
    # skipped, never taken for words).
    c = Conllu(text)
    c.lines = [line for line in c.lines if not (line[:1].isdigit() and "-" in line.split("\t")[0])]
    return c.bytes(), SAME


def conllu_comment_block(text: str) -> Built:
    # A block of comment lines only is an empty sentence to the UD validator (level 1), and the
    # sentence after it would have lost its comments: refused at the block's empty line.
    c = Conllu(text)
    index = min(c.sentences[S].values())
    c.lines[index:index] = ["# newdoc id = comment-only block", "# note = nothing follows", ""]
    return c.bytes(), Reject(index + 3, "(level 1: empty-sentence)")


def conllu_deprel(value: str, rule: str) -> Callable[[str], Built]:
    def build(text: str) -> Built:
        c = Conllu(text)
        line = c.set_column(S, c.grandchild(S), 7, value)
        return c.bytes(), Reject(line, f"(level 2: {rule})")

    return build


def bytes_at_line(text: str, line_index: int, junk: bytes) -> bytes:
    lines = text.encode("utf-8").split(b"\n")
    lines[line_index] = lines[line_index][:5] + junk + lines[line_index][5:]
    return b"\n".join(lines)


def conllu_not_utf8(text: str) -> Built:
    index = Conllu(text).sentences[S][4]
    return bytes_at_line(text, index, b"\xff\xfe"), Reject(index + 1, "not UTF-8")


def conllu_nul(text: str) -> Built:
    index = Conllu(text).sentences[S][4]
    return bytes_at_line(text, index, b"\x00"), Reject(index + 1, "NUL byte")


CONLLU_CASES = {
    "bom": lambda t: (BOM + t.encode(), SAME),
    "crlf": lambda t: (t.replace("\n", "\r\n").encode(), SAME),
    "bom_crlf": lambda t: (BOM + t.replace("\n", "\r\n").encode(), SAME),
    "nfd": lambda t: (unicodedata.normalize("NFD", t).encode(), SAME),
    "no_multiword_ranges": conllu_drop_ranges,
    "empty_node": conllu_insert_empty_node,
    "empty_node_without_enhanced_graph": conllu_empty_node_without_enhanced_graph,
    "comment_only_block": conllu_comment_block,
    "blank_line_runs": lambda t: (("\n\n" + t.replace("\n\n", "\n\n\n\n") + "\n\n").encode(), SAME),
    "no_final_blank_line": lambda t: (t.rstrip("\n").encode(), SAME),
    "comment_only_file": lambda t: ("# sent_id = 1\n# text = nothing\n".encode(), Reject(None, "no sentences")),
    "empty_file": lambda t: (b"", Reject(None, "no sentences")),
    "cycle": conllu_cycle,
    "two_roots": conllu_two_roots,
    "no_root": conllu_no_root,
    "head_past_end": conllu_head_past_end,
    "negative_head": conllu_head("-1", "head -1 outside"),
    "non_integer_head": conllu_head("x", "'x' is not a valid value"),
    "decimal_head": conllu_head("1.5", "'1.5' is not a valid value"),
    "missing_head": conllu_head("_", "has no head"),
    "missing_deprel": conllu_deprel("_", "invalid-deprel"),
    "unknown_deprel": conllu_deprel("subject", "unknown-udeprel"),
    "9_columns": conllu_columns(lambda cols: cols[:9], "found 9"),
    "11_columns": conllu_columns(lambda cols: cols + ["_"], "found 11"),
    "spaces_for_tabs_one_line": conllu_columns(lambda cols: [" ".join(cols)], "spaces, not tabs"),
    "spaces_for_tabs_file": conllu_spaces_everywhere,
    "missing_word": conllu_missing_word,
    "non_integer_id": conllu_bad_id,
    "not_utf8": conllu_not_utf8,
    "nul_byte": conllu_nul,
}


# ------------------------------------------------------------------------------ BIO cases


def as_bio(text: str) -> str:
    """The BIOUL slice in plain BIO (IOB2): L- → I-, U- → B-."""
    out = []
    for line in text.split("\n"):
        columns = line.split(" ")
        if len(columns) > 1 and columns[-1][:2] in ("L-", "U-"):
            columns[-1] = {"L": "I", "U": "B"}[columns[-1][0]] + columns[-1][1:]
        out.append(" ".join(columns))
    return "\n".join(out)


def tag_lines(text: str, prefix: str) -> List[int]:
    """0-based indices of lines whose tag starts with `prefix`."""
    return [i for i, line in enumerate(text.split("\n")) if line.split() and line.split()[-1].startswith(prefix)]


def retag(text: str, index: int, tag: str) -> str:
    lines = text.split("\n")
    columns = lines[index].split(" ")
    columns[-1] = tag
    lines[index] = " ".join(columns)
    return "\n".join(lines)


def bio_i_without_b(text: str) -> Built:
    # In BIO, an I-x that does not continue an x span opens one (AllenNLP's leniency): the same
    # BIOUL spans as with B-x. Take a B-x that follows no x span.
    bio = as_bio(text)
    lines = bio.split("\n")
    index = next(i for i in tag_lines(bio, "B-") if not (lines[i - 1].split() and lines[i - 1].split()[-1][2:] == lines[i].split()[-1][2:]))
    return retag(bio, index, "I-" + lines[index].split()[-1][2:]).encode(), SAME


def bioul_i_without_b(text: str) -> Built:
    index = tag_lines(text, "B-")[0]
    entity = text.split("\n")[index].split()[-1][2:]
    return retag(text, index, "I-" + entity).encode(), Reject(index + 1, f"does not continue a {entity} span")


def bioul_unfinished_span(text: str) -> Built:
    lines = text.split("\n")
    index = next(i for i in tag_lines(text, "L-") if not lines[i + 1].strip())  # L- ending a sentence
    entity = lines[index].split()[-1][2:]
    return retag(text, index, "I-" + entity).encode(), Reject(index + 1, f"ends inside a {entity} span")


def bio_unknown_tag(tag: str) -> Callable[[str], Built]:
    def build(text: str) -> Built:
        index = tag_lines(text, "O")[7]
        return retag(text, index, tag).encode(), Reject(index + 1, f"unknown tag {tag!r}")

    return build


def bio_one_column(text: str) -> Built:
    lines = text.split("\n")
    index = tag_lines(text, "O")[5]
    lines[index] = lines[index].split()[0]
    return "\n".join(lines).encode(), Reject(index + 1, "malformed line")


def bio_not_utf8(text: str) -> Built:
    index = tag_lines(text, "O")[3]
    return bytes_at_line(text, index, b"\xc3("), Reject(index + 1, "not UTF-8")


BIO_CASES = {
    "bom": lambda t: (BOM + t.encode(), SAME),
    "bom_bio": lambda t: (BOM + as_bio(t).encode(), SAME),
    "bio_tags": lambda t: (as_bio(t).encode(), SAME),
    "crlf": lambda t: (t.replace("\n", "\r\n").encode(), SAME),
    "nfd": lambda t: (unicodedata.normalize("NFD", t).encode(), SAME),
    "blank_line_runs": lambda t: (("\n\n\n" + t.replace("\n\n", "\n\n\n\n") + "\n\n\n").encode(), SAME),
    "tabs_for_spaces": lambda t: (t.replace(" ", "\t").encode(), SAME),
    "i_without_b_bio": bio_i_without_b,
    "i_without_b_bioul": bioul_i_without_b,
    "unfinished_span_bioul": bioul_unfinished_span,
    "unknown_tag_prefix": bio_unknown_tag("X-LOC"),
    "unknown_tag_bare": bio_unknown_tag("LOC"),
    "one_column": bio_one_column,
    "empty_file": lambda t: (b"", Reject(None, "no sentences")),
    "blank_lines_only": lambda t: (b"\n\n\n", Reject(None, "no sentences")),
    "not_utf8": bio_not_utf8,
}


def read_case(tmp_path: Path, name: str, suffix: str, build, clean: str, reader):
    data, expected = build(clean)
    path = tmp_path / f"{name}{suffix}"
    path.write_bytes(data)
    clean_path = tmp_path / f"clean{suffix}"
    clean_path.write_text(clean, encoding="utf-8")
    return path, expected, lambda: reader(path), lambda: reader(clean_path)


def assert_one_line_error(error: DataError, path: Path, expected: Reject) -> None:
    message = str(error)
    assert "\n" not in message, message
    where = f"{path}:{expected.line}: " if expected.line is not None else f"{path}: "
    assert message.startswith(where), f"expected {where!r}, got {message!r}"
    assert expected.problem in message, message


@pytest.mark.parametrize("case", sorted(CONLLU_CASES))
def test_conllu_case(case, clean_conllu, tmp_path):
    path, expected, read, read_clean = read_case(tmp_path, case, ".conllu", CONLLU_CASES[case], clean_conllu, read_conllu)
    if expected == SAME:
        assert read() == read_clean()
    else:
        with pytest.raises(DataError) as error:
            read()
        assert_one_line_error(error.value, path, expected)


@pytest.mark.parametrize("case", sorted(BIO_CASES))
def test_bio_case(case, clean_bio, tmp_path):
    path, expected, read, read_clean = read_case(tmp_path, case, ".bio", BIO_CASES[case], clean_bio, read_bio)
    if expected == SAME:
        clean = read_clean()
        assert read() == clean
        assert not clean[0]["tokens"][0].startswith("\ufeff")
    else:
        with pytest.raises(DataError) as error:
            read()
        assert_one_line_error(error.value, path, expected)


# ------------------------------------------------------------------------------ corpus cases


@pytest.fixture(scope="module")
def corpus_names(data_root) -> List[str]:
    return sorted(p.name for p in (data_root / CORPUS).iterdir())[:CORPUS_FILES]


def corpus_dir(data_root: Path, target: Path, names: List[str], change=None) -> Path:
    """A copy of some real corpus files; `change(name, bytes)` may rewrite each."""
    target.mkdir()
    for name in names:
        data = (data_root / CORPUS / name).read_bytes()
        (target / name).write_bytes(change(name, data) if change else data)
    return target


def flat_tokens(documents) -> List[str]:
    return [token for _, sentences in documents for sentence in sentences for token in sentence]


def test_corpus_bom_and_crlf_read_as_clean(data_root, corpus_names, tmp_path):
    clean = read_corpus_documents(DataPath(str(corpus_dir(data_root, tmp_path / "clean", corpus_names))), "wikipedia_html")
    bom = corpus_dir(data_root, tmp_path / "bom", corpus_names, lambda n, d: BOM + d)
    crlf = corpus_dir(data_root, tmp_path / "crlf", corpus_names, lambda n, d: d.replace(b"\n", b"\r\n"))
    for variant in (bom, crlf):
        assert read_corpus_documents(DataPath(str(variant)), "wikipedia_html") == clean


def test_corpus_one_megabyte_line_keeps_every_token(data_root, tmp_path):
    # The largest real articles, newlines turned into spaces: one line of over 1 MB. Line breaks
    # only end sentences, so the tokens are those of the clean files, in order.
    largest = sorted((data_root / CORPUS).iterdir(), key=lambda p: -p.stat().st_size)[:5]
    clean = read_corpus_documents(DataPath(str(corpus_dir(data_root, tmp_path / "clean", [p.name for p in largest]))), "wikipedia_html")
    line = " ".join(p.read_text(encoding="utf-8").replace("\n", " ") for p in sorted(largest))
    assert len(line.encode()) > 1 << 20
    (tmp_path / "long").mkdir()
    (tmp_path / "long" / "one_line.html").write_text(line + "\n", encoding="utf-8")
    long = read_corpus_documents(DataPath(str(tmp_path / "long")), "wikipedia_html")
    assert flat_tokens(long) == flat_tokens(clean) and len(flat_tokens(clean)) > 100_000


def corpus_junk(junk: bytes, problem: str):
    def case(data_root, names, tmp_path):
        victim = next(n for n in names if (data_root / CORPUS / n).read_text(encoding="utf-8").count("\n") > 4)
        text = (data_root / CORPUS / victim).read_text(encoding="utf-8")
        index = 3
        folder = corpus_dir(data_root, tmp_path / "bad", names, lambda n, d: bytes_at_line(text, index, junk) if n == victim else d)
        return folder, "wikipedia_html", Reject(index + 1, problem, victim)

    return case


def corpus_all_empty(data_root, names, tmp_path):
    folder = corpus_dir(data_root, tmp_path / "bad", names, lambda n, d: b"")
    return folder, "wikipedia_html", Reject(None, "corpus is empty")


def corpus_no_files(data_root, names, tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "notes.md").write_text("not a corpus file\n")
    return folder, "wikipedia_html", Reject(None, "holds no")


def corpus_damaged_gzip(data_root, names, tmp_path):
    # A plain-text corpus file (one sentence per line) from real text, gzipped and cut short.
    text = "\n".join(" ".join(s) for _, doc in read_corpus_documents(DataPath(str(data_root / CORPUS / names[0])), "wikipedia_html") for s in doc)
    folder = tmp_path / "bad"
    folder.mkdir()
    data = gzip.compress(text.encode("utf-8"))
    (folder / "part.txt.gz").write_bytes(data[: len(data) // 2])
    return folder, "plain_text_gz", Reject(None, "damaged gzip", "part.txt.gz")


def corpus_unknown_format(data_root, names, tmp_path):
    return corpus_dir(data_root, tmp_path / "bad", names[:2]), "docx", Reject(None, "unknown corpus format 'docx'")


CORPUS_CASES = {
    "binary_bytes": corpus_junk(b"\x89PNG\x1a\x00\x00\x00\rIHDR\x00", "not UTF-8"),  # a PNG header
    "invalid_utf8": corpus_junk(b"\xff\xfe", "not UTF-8"),
    "nul_bytes": corpus_junk(b"\x00\x00\x01", "NUL byte"),
    "all_files_empty": corpus_all_empty,
    "no_corpus_files": corpus_no_files,
    "damaged_gzip": corpus_damaged_gzip,
    "unknown_format": corpus_unknown_format,
}


@pytest.mark.parametrize("case", sorted(CORPUS_CASES))
def test_corpus_case(case, data_root, corpus_names, tmp_path):
    folder, corpus_format, expected = CORPUS_CASES[case](data_root, corpus_names, tmp_path)
    with pytest.raises(DataError) as error:
        read_corpus_documents(DataPath(str(folder)), corpus_format)
    if case == "unknown_format":  # a config error: no file to name
        assert str(error.value).startswith(expected.problem)
        return
    assert_one_line_error(error.value, folder / expected.file if expected.file else folder, expected)


# ------------------------------------------------------------------------------ configs


def evaluate_experiment(tmp_path: Path, arguments: str) -> Params:
    config = tmp_path / "experiment.jsonnet"
    config.write_text(f'(import "{REPO / "configs" / "lib.libsonnet"}").experiment({arguments})\n')
    return Params.from_file(config)


@pytest.mark.parametrize(
    "arguments, problem",
    [
        ('"klingon", "M", "cpu"', "unknown language klingon; known: "),
        ('"wolof", "MQ", "cpu"', "unknown condition MQ; known: M, MP"),
        ('"wolof", "M", "huge"', "unknown scale huge; known: "),
    ],
)
def test_config_with_unknown_name_fails_naming_it(tmp_path, arguments, problem):
    with pytest.raises(RuntimeError) as error:
        evaluate_experiment(tmp_path, arguments)
    first_line, _, trace = str(error.value).partition("\n")
    assert problem in first_line
    assert "lib.libsonnet:" in trace  # Jsonnet names the assert's file and line


def test_config_with_known_names_evaluates(tmp_path):
    assert "pretrained_model" in evaluate_experiment(tmp_path, '"wolof", "M", "cpu"')["steps"]


def test_unknown_language_in_a_step_is_a_data_error():
    with pytest.raises(DataError, match="unknown language 'klingon'; known: "):
        LoadCorpus(language="klingon", corpus=DataPath(CORPUS)).result(None)


def test_unknown_parser_backend_is_a_data_error(tmp_path):
    step = TrainCorpusParser(language="wolof", train=DataPath(UD_DEV), dev=DataPath(UD_DEV), test=DataPath(UD_DEV), backend="spacy")
    with pytest.raises(DataError, match="unknown parser backend 'spacy'; known: stanza, udpipe"):
        step.result(LocalWorkspace(tmp_path / "workspace"))


def test_missing_data_root_names_the_root_and_the_setting(tmp_path, monkeypatch):
    missing = tmp_path / "no-such-root"
    monkeypatch.setenv(DATA_ROOT_ENV, str(missing))
    with pytest.raises(DataError) as error:
        DataPath(UD_DEV).resolve()
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{missing / UD_DEV}: no such file or directory")
    assert f"data root {missing} from ${DATA_ROOT_ENV}" in message


# ------------------------------------------------------------------------------ Tango steps


def assert_failed_without_cache_entry(step, workspace: LocalWorkspace, path: Path, line: Optional[int], problem: str):
    with pytest.raises(DataError) as error:
        step.result(workspace)
    assert_one_line_error(error.value, path, Reject(line, problem))
    # Tango leaves its lock and an empty work dir; no result, no metadata, also for a new process.
    assert step not in workspace.step_cache and step not in LocalWorkspace(workspace.dir).step_cache
    step_dir = workspace.step_cache.step_dir(step)
    assert {p.name for p in step_dir.iterdir()} <= {"lock", "work"}
    assert not (step_dir / "work").exists() or not any((step_dir / "work").iterdir())
    assert workspace.step_info(step).state.value == "failed"


def test_load_corpus_step_bom_is_clean_and_binary_leaves_no_cache_entry(data_root, corpus_names, tmp_path):
    workspace = LocalWorkspace(tmp_path / "workspace")
    clean = LoadCorpus(language="wolof", corpus=DataPath(str(corpus_dir(data_root, tmp_path / "clean", corpus_names))))
    bom = LoadCorpus(language="wolof", corpus=DataPath(str(corpus_dir(data_root, tmp_path / "bom", corpus_names, lambda n, d: BOM + d))))
    assert bom.result(workspace) == clean.result(workspace)
    assert bom in workspace.step_cache

    folder, _, expected = corpus_junk(b"\xff", "not UTF-8")(data_root, corpus_names, tmp_path)
    bad = LoadCorpus(language="wolof", corpus=DataPath(str(folder)))
    assert_failed_without_cache_entry(bad, workspace, folder / expected.file, expected.line, expected.problem)


def test_train_corpus_parser_step_fails_on_a_bad_tree_before_training(clean_conllu, tmp_path):
    clean = tmp_path / "clean.conllu"
    clean.write_text(clean_conllu, encoding="utf-8")
    data, expected = conllu_two_roots(clean_conllu)
    bad = tmp_path / "two_roots.conllu"
    bad.write_bytes(data)
    step = TrainCorpusParser(language="wolof", train=DataPath(str(bad)), dev=DataPath(str(clean)), test=DataPath(str(clean)))
    assert_failed_without_cache_entry(step, LocalWorkspace(tmp_path / "workspace"), bad, expected.line, expected.problem)


def test_finetune_ner_step_fails_on_an_unknown_tag_before_training(clean_bio, tmp_path):
    clean = tmp_path / "clean.bio"
    clean.write_text(clean_bio, encoding="utf-8")
    data, expected = bio_unknown_tag("B_LOC")(clean_bio)
    bad = tmp_path / "bad.bio"
    bad.write_bytes(data)
    # The encoder is never reached: the data is read (and refused) first.
    step = FinetuneNer(encoder=str(tmp_path / "no-encoder"), train=DataPath(str(clean)), dev=DataPath(str(bad)), test=DataPath(str(clean)))
    assert_failed_without_cache_entry(step, LocalWorkspace(tmp_path / "workspace"), bad, expected.line, expected.problem)


# ------------------------------------------------------------------------------ BOM files score as clean ones


def test_bom_conllu_and_bio_give_the_clean_scores(clean_conllu, clean_bio, tmp_path):
    (tmp_path / "clean.conllu").write_text(clean_conllu, encoding="utf-8")
    (tmp_path / "bom.conllu").write_bytes(BOM + clean_conllu.replace("\n", "\r\n").encode())
    gold, gold_bom = read_conllu(tmp_path / "clean.conllu"), read_conllu(tmp_path / "bom.conllu")
    # A deterministic imperfect prediction: every third word attaches to its left neighbour.
    predicted = [dict(s, head=[i if i % 3 == 2 else h for i, h in enumerate(s["head"])]) for s in gold]
    scores = attachment_scores(gold, predicted)
    assert attachment_scores(gold_bom, predicted) == scores and 0 < scores["las"] < 100

    (tmp_path / "clean.bio").write_text(clean_bio, encoding="utf-8")
    (tmp_path / "bom.bio").write_bytes(BOM + clean_bio.encode())
    tags, tags_bom = ([s["tags"] for s in read_bio(tmp_path / name)] for name in ("clean.bio", "bom.bio"))
    guesses = [["O"] * len(t) if n % 2 else list(t) for n, t in enumerate(tags)]  # half the sentences missed
    f1 = span_scores(tags, guesses)
    assert span_scores(tags_bom, guesses) == f1 and 0 < f1["f1"] < 100


def test_external_trainers_get_a_normalised_copy(clean_conllu, tmp_path):
    # Stanza/UDPipe read files themselves: a BOM + CRLF + NFD file's copy is the clean bytes.
    bad = tmp_path / "bad.conllu"
    bad.write_bytes(BOM + unicodedata.normalize("NFD", clean_conllu).replace("\n", "\r\n").encode())
    assert normalised_copy(bad, tmp_path / "copy.conllu").read_bytes() == clean_conllu.encode("utf-8")


def test_the_matrix_is_large_enough():
    # The bar: at least 30 bad-input cases (the file cases alone; configs come on top).
    assert len(CONLLU_CASES) + len(BIO_CASES) + len(CORPUS_CASES) >= 30
