"""Malformed CoNLL-U files built from a real slice, one UD validator rule (levels 1-2) broken per
file, and the verdicts of the validator and of :func:`steps.data.readers.read_conllu` on them.

``tests/test_conllu_validation.py`` asserts the verdicts; ``python -m steps.data.conllu_rules
--matrix`` prints them as the table of docs/RELIABILITY.md ("CoNLL-U validation").

Each :class:`Case` names the validator test (``rule``) its file breaks and how the project treats
that rule (``kind``):

- ``checked``: both refuse the file (the reader names a test the validator also reports);
- ``good``: a valid variant; both accept it;
- ``tolerated``: the validator refuses the file as it is, the reader reads it as the clean slice
  (and the validator accepts the text the reader reads);
- ``unchecked``: a METADATA test (comment lines) the project leaves out; the validator refuses,
  the reader accepts;
- ``project``: a project rule the validator does not have; the reader refuses, the validator
  accepts.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional

from steps.common.data_root import DataError, DataPath

SLICE_FILE = "wolof/ud/wo_wtb-ud-dev.conllu"
SLICE_SENTENCES = 3  # sentence 0 has the range 22-24, sentence 2 the range 10-11
S = 2  # the sentence the cases break (not the first, so that line numbers are the file's)


def real_slice() -> str:
    text = DataPath(SLICE_FILE).resolve().read_text(encoding="utf-8")
    return "\n\n".join(text.split("\n\n")[:SLICE_SENTENCES]) + "\n\n"


class Lines:
    """The slice as lines, with what the cases need to find what to break."""

    def __init__(self, text: str):
        self.lines = text.split("\n")

    def sentence_lines(self, sentence: int) -> List[int]:
        """Indices of the lines (comments and token lines) of a sentence."""
        blocks, current = [], []
        for index, line in enumerate(self.lines):
            if line:
                current.append(index)
            elif current:
                blocks.append(current)
                current = []
        return blocks[sentence]

    def index(self, sentence: int, token_id: str) -> int:
        return next(i for i in self.sentence_lines(sentence) if self.lines[i].split("\t")[0] == token_id)

    def words(self, sentence: int) -> List[int]:
        return [i for i in self.sentence_lines(sentence) if self.lines[i].split("\t")[0].isdigit()]

    def get(self, sentence: int, token_id: str, column: int) -> str:
        return self.lines[self.index(sentence, token_id)].split("\t")[column]

    def set(self, sentence: int, token_id: str, column: int, value: str) -> "Lines":
        index = self.index(sentence, token_id)
        columns = self.lines[index].split("\t")
        columns[column] = value
        self.lines[index] = "\t".join(columns)
        return self

    def insert_after(self, sentence: int, token_id: str, line: str) -> "Lines":
        self.lines.insert(self.index(sentence, token_id) + 1, line)
        return self

    def root(self, sentence: int) -> str:
        return next(self.lines[i].split("\t")[0] for i in self.words(sentence) if self.lines[i].split("\t")[6] == "0")

    def enhanced(self) -> "Lines":
        """Every word's DEPS = HEAD:DEPREL: an enhanced graph, as UD requires where empty nodes are."""
        for index, line in enumerate(self.lines):
            columns = line.split("\t")
            if len(columns) == 10 and columns[0].isdigit():
                columns[8] = f"{columns[6]}:{columns[7]}"
                self.lines[index] = "\t".join(columns)
        return self

    def text(self) -> str:
        return "\n".join(self.lines)


ID, FORM, LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS, MISC = range(10)
EMPTY_NODE = "3.1\tnull\t_\tVERB\t_\t_\t_\t_\t3:dep\t_"


def edit(change: Callable[[Lines], object]) -> Callable[[str], bytes]:
    def build(text: str) -> bytes:
        lines = Lines(text)
        change(lines)
        return lines.text().encode("utf-8")

    return build


def cell(column: int, value, token_id: str = "5") -> Callable[[str], bytes]:
    """Set one cell of sentence S (``value`` may be a function of the Lines)."""
    return edit(lambda c: c.set(S, token_id, column, value(c) if callable(value) else value))


def enhanced(change: Optional[Callable[[Lines], object]] = None) -> Callable[[str], bytes]:
    return edit(lambda c: (c.enhanced(), change(c) if change else None))


def line_bytes(change: Callable[[str], str], token_id: str = "5") -> Callable[[str], bytes]:
    def mutate(c: Lines):
        index = c.index(S, token_id)
        c.lines[index] = change(c.lines[index])

    return edit(mutate)


def move_range_below_its_first_word(c: Lines) -> None:
    line = c.lines.pop(c.index(S, "10-11"))
    c.insert_after(S, "10", line)


def comment_only_block(c: Lines) -> None:
    first = c.sentence_lines(S)[0]
    c.lines[first:first] = ["# comment = a block with no token line", ""]


def duplicate_sent_id(c: Lines) -> None:
    sent_id = next(c.lines[i] for i in c.sentence_lines(0) if c.lines[i].startswith("# sent_id"))
    c.lines[next(i for i in c.sentence_lines(S) if c.lines[i].startswith("# sent_id"))] = sent_id


def drop_comment(prefix: str) -> Callable[[Lines], None]:
    def mutate(c: Lines):
        del c.lines[next(i for i in c.sentence_lines(S) if c.lines[i].startswith(prefix))]

    return mutate


def replace_bytes(old: bytes, new: bytes, count: int = 1) -> Callable[[str], bytes]:
    return lambda t: t.encode("utf-8").replace(old, new, count)


@dataclass
class Case:
    name: str
    rule: str  # the validator's test id (or the project rule)
    kind: str  # checked | good | tolerated | unchecked | project
    build: Callable[[str], bytes]
    what: str


def _cases() -> List[Case]:
    c = Case
    return [
        # ---- valid variants
        c("clean", "", "good", lambda t: t.encode("utf-8"), "the slice as it is"),
        c("enhanced_graph", "", "good", enhanced(), "DEPS = HEAD:DEPREL on every word"),
        c("empty_node", "", "good", enhanced(lambda l: l.insert_after(S, "3", EMPTY_NODE)), "an empty node in an enhanced graph"),
        c("misc_warning_only", "empty-misc", "good", cell(MISC, "Gloss=x|"), "an empty MISC attribute (a validator warning, not an error)"),
        # ---- level 1: lines and columns
        c("misplaced_comment", "misplaced-comment", "checked", edit(lambda l: l.insert_after(S, "3", "# note = inside")), "a comment line between token lines"),
        c("pseudo_empty_line", "pseudo-empty-line", "checked",
          edit(lambda l: l.lines.__setitem__(l.sentence_lines(1)[-1] + 1, " ")), "the line ending a sentence is a space"),
        c("comment_only_block", "empty-sentence", "checked", edit(comment_only_block), "a block of comment lines only"),
        c("invalid_line", "invalid-line", "checked", line_bytes(lambda s: "x" + s), "a token line that starts with neither a digit nor #"),
        c("9_columns", "number-of-columns", "checked", line_bytes(lambda s: s.rsplit("\t", 1)[0]), "a token line with 9 columns"),
        c("11_columns", "number-of-columns", "checked", line_bytes(lambda s: s + "\t_"), "a token line with 11 columns"),
        c("spaces_for_tabs", "number-of-columns", "checked", line_bytes(lambda s: s.replace("\t", " ")), "columns separated by spaces"),
        c("invalid_utf8", "invalid-utf", "checked", replace_bytes(b"\tnag\tnag\t", b"\tnag\tn\xffg\t"), "a byte that is not UTF-8 in a LEMMA"),
        c("whitespace_in_xpos", "invalid-whitespace", "checked", cell(XPOS, "PR ON"), "a space in XPOS"),
        c("whitespace_in_mwt_form", "invalid-whitespace-mwt", "checked", cell(FORM, lambda l: l.get(S, "10-11", FORM)[:1] + " " + l.get(S, "10-11", FORM)[1:], "10-11"),
          "a space in a multiword token's FORM"),
        c("empty_column", "empty-column", "checked", cell(LEMMA, ""), "an empty LEMMA (not _)"),
        c("leading_whitespace", "leading-whitespace", "checked", cell(FORM, lambda l: " " + l.get(S, "5", FORM)), "FORM starts with a space"),
        c("trailing_whitespace", "trailing-whitespace", "checked", cell(LEMMA, lambda l: l.get(S, "5", LEMMA) + " "), "LEMMA ends with a space"),
        c("repeated_whitespace", "repeated-whitespace", "checked", cell(FORM, "a  b"), "two spaces in a FORM"),
        # ---- level 1: IDs, ranges, empty nodes
        c("invalid_word_id", "invalid-word-id", "checked", cell(ID, "5a"), "word ID 5a"),
        c("invalid_word_interval", "invalid-word-id", "checked", cell(ID, "10-x", "10-11"), "range 10-x"),
        c("misplaced_word_interval", "misplaced-word-interval", "checked", edit(move_range_below_its_first_word), "a range after its first word"),
        c("misplaced_empty_node", "misplaced-empty-node", "checked",
          enhanced(lambda l: l.insert_after(S, "5", EMPTY_NODE)), "empty node 3.1 after word 5"),
        c("missing_word", "word-id-sequence", "checked", edit(lambda l: l.lines.pop(l.index(S, "4"))), "word 4 left out"),
        c("repeated_word", "word-id-sequence", "checked", edit(lambda l: l.insert_after(S, "4", l.lines[l.index(S, "4")])), "word 4 twice"),
        c("reversed_word_interval", "reversed-word-interval", "checked", cell(ID, "11-10", "10-11"), "range 11-10"),
        c("word_interval_out", "word-interval-out", "checked",
          cell(ID, lambda l: f"10-{len(l.words(S)) + 1}", "10-11"), "a range that ends after the last word"),
        c("overlapping_word_intervals", "overlapping-word-intervals", "checked",
          edit(lambda l: l.insert_after(S, "10", "11-12\tx\t_\t_\t_\t_\t_\t_\t_\t_")), "ranges 10-11 and 11-12"),
        # ---- level 2: fields per token kind
        c("mwt_nonempty_field", "mwt-nonempty-field", "checked", cell(UPOS, "PRON", "10-11"), "a range with a UPOS"),
        c("empty_node_nonempty_field", "empty-node-nonempty-field", "checked",
          enhanced(lambda l: l.insert_after(S, "3", EMPTY_NODE.replace("\t_\t_\t3:dep", "\t3\tdep\t3:dep"))), "an empty node with HEAD and DEPREL"),
        c("unknown_upos", "unknown-upos", "checked", cell(UPOS, "NOUNX"), "UPOS NOUNX"),
        c("empty_xpos", "empty-column", "checked", cell(XPOS, ""), "an empty XPOS (not _)"),
        c("invalid_feature", "invalid-feature", "checked", cell(FEATS, "case=Acc"), "feature name in lower case"),
        c("unsorted_features", "unsorted-features", "checked", cell(FEATS, "PronType=Prs|Case=Acc"), "features out of order"),
        c("repeated_feature", "repeated-feature", "checked", cell(FEATS, "Case=Acc|Case=Acc"), "a feature twice"),
        c("feature_value_lower_case", "invalid-feature", "checked", cell(FEATS, "Case=acc"), "feature value in lower case"),
        c("repeated_feature_value", "repeated-feature-value", "checked", cell(FEATS, "Person=3,3"), "a feature value twice"),
        c("unsorted_feature_values", "unsorted-feature-values", "checked", cell(FEATS, "Person=3,2"), "values out of order"),
        # ---- level 2: HEAD, DEPREL and the tree
        c("head_not_a_number", "invalid-head", "checked", cell(HEAD, "x"), "HEAD x"),
        c("head_underscore", "invalid-head", "checked", cell(HEAD, "_"), "HEAD _ on a word"),
        c("head_negative", "invalid-head", "checked", cell(HEAD, "-1"), "HEAD -1"),
        c("head_decimal", "invalid-head", "checked", cell(HEAD, "1.5"), "HEAD 1.5 (an empty node's ID)"),
        c("head_past_end", "unknown-head", "checked", cell(HEAD, lambda l: str(len(l.words(S)) + 1)), "HEAD past the last word"),
        c("head_self_loop", "head-self-loop", "checked", cell(HEAD, "5"), "a word that is its own head"),
        c("two_roots", "multiple-roots", "checked", edit(lambda l: l.set(S, "1" if l.root(S) != "1" else "2", HEAD, "0")),
          "a second word with HEAD 0"),
        c("no_root", "non-tree", "checked", edit(lambda l: l.set(S, l.root(S), HEAD, "1" if l.root(S) != "1" else "2")), "no word with HEAD 0"),
        c("cycle", "non-tree", "checked", edit(lambda l: (l.set(S, "1", HEAD, "2"), l.set(S, "2", HEAD, "1"))), "words 1 and 2 head each other"),
        c("deprel_underscore", "invalid-deprel", "checked", cell(DEPREL, "_"), "DEPREL _ on a word"),
        c("deprel_bad_form", "invalid-deprel", "checked", cell(DEPREL, "Nsubj"), "DEPREL Nsubj (upper case)"),
        c("deprel_unknown", "unknown-udeprel", "checked", cell(DEPREL, "subject"), "DEPREL subject (not a UD relation)"),
        # ---- level 2: DEPS (enhanced graph)
        c("invalid_deps", "invalid-deps", "checked", enhanced(lambda l: l.set(S, "5", DEPS, "6-obj")), "DEPS 6-obj"),
        c("unsorted_deps", "unsorted-deps", "checked", enhanced(lambda l: l.set(S, "5", DEPS, "6:obj|2:dep")), "DEPS out of order"),
        c("repeated_deps", "repeated-deps", "checked", enhanced(lambda l: l.set(S, "5", DEPS, "6:obj|6:obj")), "the same DEPS twice"),
        c("deps_self_loop", "deps-self-loop", "checked", enhanced(lambda l: l.set(S, "5", DEPS, "5:obj")), "DEPS to the word itself"),
        c("invalid_edeprel", "invalid-edeprel", "checked", enhanced(lambda l: l.set(S, "5", DEPS, "6:Obj")), "enhanced relation Obj"),
        c("unknown_ehead", "unknown-ehead", "checked", enhanced(lambda l: l.set(S, "5", DEPS, "99:obj")), "DEPS head 99"),
        c("deps_only_sometimes", "edeps-only-sometimes", "checked",
          enhanced(lambda l: [l.set(S, l.lines[i].split("\t")[0], DEPS, "_") for i in l.words(S)]), "one sentence without DEPS among enhanced ones"),
        c("empty_node_without_enhanced_graph", "edeps-only-sometimes", "checked",
          edit(lambda l: l.insert_after(S, "3", EMPTY_NODE)), "an empty node in a file with no enhanced graph"),
        c("unconnected_egraph", "unconnected-egraph", "checked", enhanced(lambda l: l.set(S, "5", DEPS, "_")), "a word with no enhanced head"),
        # ---- level 2: MISC
        c("repeated_misc", "repeated-misc", "checked", cell(MISC, "SpaceAfter=No|SpaceAfter=No"), "SpaceAfter twice"),
        # ---- read as the clean file
        c("bom", "invalid-line", "tolerated", lambda t: b"\xef\xbb\xbf" + t.encode("utf-8"), "a byte-order mark"),
        c("crlf", "non-unix-newline", "tolerated", lambda t: t.replace("\n", "\r\n").encode("utf-8"), "CRLF line ends"),
        c("nfd", "unicode-normalization", "tolerated", lambda t: unicodedata.normalize("NFD", t).encode("utf-8"), "text in NFD"),
        c("empty_line_runs", "empty-sentence", "tolerated", lambda t: ("\n" + t.replace("\n\n", "\n\n\n")).encode("utf-8"),
          "empty lines before and between sentences"),
        c("no_final_empty_line", "missing-empty-line", "tolerated", lambda t: t.rstrip("\n").encode("utf-8"), "no empty line after the last sentence"),
        # ---- METADATA, not checked
        c("missing_sent_id", "missing-sent-id", "unchecked", edit(drop_comment("# sent_id")), "a sentence without # sent_id"),
        c("non_unique_sent_id", "non-unique-sent-id", "unchecked", edit(duplicate_sent_id), "two sentences with one # sent_id"),
        c("missing_text", "missing-text", "unchecked", edit(drop_comment("# text")), "a sentence without # text"),
        c("text_form_mismatch", "text-form-mismatch", "unchecked", cell(FORM, "xyz"), "a FORM that is not in # text"),
        # ---- project rules the validator does not have
        c("control_character", "control-character", "project", replace_bytes(b"\tnag\tnag\t", b"\tnag\tn\x07g\t"), "a BEL character in a LEMMA"),
        c("nul_byte", "control-character", "project", replace_bytes(b"\tnag\tnag\t", b"\tnag\tn\x00g\t"), "a NUL byte in a LEMMA"),
        c("empty_file", "no-sentences", "project", lambda t: b"", "an empty file"),
    ]


CASES: Dict[str, Case] = {case.name: case for case in _cases()}


@dataclass
class Verdicts:
    case: Case
    official_ok: bool  # the validator on the file as it is, every test class
    official_rules: Dict[str, int]  # its errors: test id -> level
    ours_ok: bool  # read_conllu
    ours_rule: str
    ours_message: str
    canonical_ok: Optional[bool]  # the validator on the text the reader reads (levels 1-2, as checked)


def verdicts(case: Case, text: str, folder: Path) -> Verdicts:
    from steps.data.readers import read_conllu
    from steps.data.validate import ConlluText, official_errors, official_verdict

    path = folder / f"{case.name}.conllu"
    path.write_bytes(case.build(text))
    official_ok, rules = official_verdict(path)
    try:
        read_conllu(path)
        ours_ok, ours_rule, message = True, "", ""
    except DataError as error:
        ours_ok, ours_rule, message = False, error.rule or "", str(error)
    try:
        canonical = ConlluText(path)
        canonical_ok: Optional[bool] = not official_errors(canonical.lines, str(path))
    except DataError:
        canonical_ok = None  # the reader cannot decode it
    return Verdicts(case, official_ok, rules, ours_ok, ours_rule, message, canonical_ok)


def all_verdicts() -> List[Verdicts]:
    text = real_slice()
    with tempfile.TemporaryDirectory() as folder:
        return [verdicts(case, text, Path(folder)) for case in CASES.values()]


KIND_NOTES = {
    "good": "valid",
    "checked": "both refuse",
    "tolerated": "read as the clean file",
    "unchecked": "METADATA: not checked",
    "project": "project rule",
}


def matrix_markdown() -> str:
    rows = all_verdicts()
    out = [
        f"Rules × verdicts on {len(rows)} files built from the first {SLICE_SENTENCES} sentences of "
        f"`{SLICE_FILE}`, each breaking one rule (generated by `python -m steps.data.conllu_rules --matrix`; "
        "asserted by `tests/test_conllu_validation.py`). *UD validator*: udtools levels 1–2 on the file as it is "
        "(every test class); *ours*: `read_conllu`.",
        "",
        "| file | rule (level: validator test) | what the file breaks | UD validator | ours | |",
        "|---|---|---|---|---|---|",
    ]
    for v in rows:
        if v.case.kind == "project":
            rule = f"project: {v.case.rule}"
        elif v.case.rule in v.official_rules:
            rule = f"{v.official_rules[v.case.rule]}: {v.case.rule}"
        else:  # a warning (not an error) of the validator, or no rule
            rule = v.case.rule or "—"
        official = "accept" if v.official_ok else "reject"
        ours = "accept" if v.ours_ok else f"reject ({v.ours_rule})"
        out.append(f"| {v.case.name} | {rule} | {v.case.what} | {official} | {ours} | {KIND_NOTES[v.case.kind]} |")
    counts = {kind: sum(v.case.kind == kind for v in rows) for kind in KIND_NOTES}
    agree = sum(v.official_ok == v.ours_ok for v in rows)
    out += ["", f"{agree} of {len(rows)} files get the same verdict from both; the others are the "
            f"{counts['tolerated']} read-as-clean, {counts['unchecked']} METADATA and {counts['project']} project-rule rows."]
    return "\n".join(out)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Check CoNLL-U files as the steps read them (the UD validator's levels 1-2), or print the rule matrix.")
    parser.add_argument("files", nargs="*", type=Path, help="CoNLL-U files to check")
    parser.add_argument("--matrix", action="store_true", help="print the rule × verdict table (Markdown)")
    args = parser.parse_args(argv)
    if args.matrix:
        print(matrix_markdown())
        return 0
    from steps.data.readers import read_conllu  # the reader the steps use: its checks, then this module's

    failed = 0
    for path in args.files:
        try:
            read_conllu(path)
            print(f"{path}: passes UD validator levels 1-2")
        except DataError as error:
            failed += 1
            print(error)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
