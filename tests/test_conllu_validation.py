"""CoNLL-U files are checked against the UD validator's levels 1 and 2 (steps/data/validate.py).

Files built from the first sentences of the Wolof UD dev file, each breaking one validator rule
(steps/data/conllu_rules.py), are given to the official validator (udtools, levels 1-2, on the file
as it is) and to ``read_conllu``; they must agree on every file, except the documented kinds:
read-as-clean variants, METADATA tests the project does not check, and the project's own rules.
"""
from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from steps.common.data_root import DataError
from steps.data.conllu_rules import CASES, S, Lines, main, real_slice, verdicts
from steps.data.readers import read_conllu
from steps.data.validate import PROJECT_RULES, check_conllu, official_verdict

BY_KIND = {kind: sorted(name for name, case in CASES.items() if case.kind == kind)
           for kind in ("good", "checked", "tolerated", "unchecked", "project")}


@pytest.fixture(scope="module")
def slice_text() -> str:
    text = real_slice()
    lines = Lines(text)
    assert "\n22-24\t" in text and lines.index(S, "10-11")  # ranges to break
    return text


@pytest.fixture(scope="module")
def clean_sentences(slice_text, tmp_path_factory):
    path = tmp_path_factory.mktemp("clean") / "clean.conllu"
    path.write_text(slice_text, encoding="utf-8")
    return read_conllu(path)


def assert_one_line(message: str, path: Path) -> None:
    assert "\n" not in message, message
    assert message.startswith(f"{path}:"), message


@pytest.mark.parametrize("name", BY_KIND["good"])
def test_valid_files_are_accepted_by_both(name, slice_text, clean_sentences, tmp_path):
    v = verdicts(CASES[name], slice_text, tmp_path)
    assert v.official_ok and v.ours_ok, (v.official_rules, v.ours_message)
    # Empty nodes, DEPS and MISC are not read: the words read as the clean slice's.
    assert read_conllu(tmp_path / f"{name}.conllu") == clean_sentences


@pytest.mark.parametrize("name", BY_KIND["checked"])
def test_both_refuse_a_file_that_breaks_a_checked_rule(name, slice_text, tmp_path):
    case = CASES[name]
    v = verdicts(case, slice_text, tmp_path)
    # The file breaks the rule it is built for (the validator says so) ...
    assert not v.official_ok and case.rule in v.official_rules, v.official_rules
    # ... and the reader refuses it in one line, naming the line and a rule the validator reports.
    assert not v.ours_ok
    assert_one_line(v.ours_message, tmp_path / f"{name}.conllu")
    assert v.ours_rule in v.official_rules, (v.ours_message, v.official_rules)
    assert v.ours_message.endswith(f"(level {v.official_rules[v.ours_rule]}: {v.ours_rule})")


@pytest.mark.parametrize("name", BY_KIND["tolerated"])
def test_read_as_clean_variants(name, slice_text, clean_sentences, tmp_path):
    case = CASES[name]
    v = verdicts(case, slice_text, tmp_path)
    assert not v.official_ok and case.rule in v.official_rules, v.official_rules  # refused as it is
    assert v.canonical_ok  # the text the reader reads passes
    assert v.ours_ok and read_conllu(tmp_path / f"{name}.conllu") == clean_sentences


@pytest.mark.parametrize("name", BY_KIND["unchecked"])
def test_metadata_rules_are_not_checked(name, slice_text, tmp_path):
    case = CASES[name]
    v = verdicts(case, slice_text, tmp_path)
    assert not v.official_ok and case.rule in v.official_rules, v.official_rules
    assert v.canonical_ok and v.ours_ok  # the only errors are METADATA ones


@pytest.mark.parametrize("name", BY_KIND["project"])
def test_project_rules_refuse_what_the_validator_lets_through(name, slice_text, tmp_path):
    case = CASES[name]
    v = verdicts(case, slice_text, tmp_path)
    assert v.official_ok
    assert not v.ours_ok and v.ours_rule == case.rule in PROJECT_RULES
    assert_one_line(v.ours_message, tmp_path / f"{name}.conllu")
    assert v.ours_message.endswith(f"(project rule: {case.rule})")


def test_the_matrix_covers_the_rules():
    checked_rules = {CASES[name].rule for name in BY_KIND["checked"]}
    assert len(BY_KIND["checked"]) >= 50 and len(checked_rules) >= 40
    # Every validator test the reader names by itself is one the cases exercise.
    from steps.data.validate import OFFICIAL_RULE_LEVELS

    assert set(OFFICIAL_RULE_LEVELS) <= checked_rules


def test_error_names_the_line_and_the_validator_test(slice_text, tmp_path):
    # A rule only the validator checks (the reader has no check of its own for DEPREL).
    lines = Lines(slice_text)
    index = lines.index(S, "5")
    lines.set(S, "5", 7, "Nsubj")
    path = tmp_path / "wo_wtb-ud-dev.conllu"
    path.write_text(lines.text(), encoding="utf-8")
    with pytest.raises(DataError) as error:
        read_conllu(path)
    message = str(error.value)
    assert message.startswith(f"{path}:{index + 1}: ") and message.endswith("(level 2: invalid-deprel)"), message
    assert "\n" not in message


def test_line_numbers_are_the_files_after_tolerated_layout(slice_text, tmp_path):
    # Extra empty lines and CRLF are read as the clean file; the error still names the file's line.
    lines = Lines(slice_text)
    lines.set(S, "5", 3, "NOUNX")
    text = "\n\n" + lines.text().replace("\n\n", "\n\n\n")
    line = text.split("\n").index(lines.lines[lines.index(S, "5")]) + 1
    path = tmp_path / "shifted.conllu"
    path.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    with pytest.raises(DataError, match=rf"^{path}:{line}: .*\(level 2: unknown-upos\)$"):
        read_conllu(path)


def test_the_real_treebanks_and_committed_predictions_pass_fast(data_root, monkeypatch, tmp_path):
    from steps.data import validate

    monkeypatch.setattr(validate, "_PASSED", set())  # each file validated here, not remembered
    repo = Path(__file__).resolve().parents[1]
    committed = sorted((repo / "docs" / "predictions").rglob("predicted-test.conllu.gz"))[:2]  # gzipped in the record
    for number, packed in enumerate(committed):
        unpacked = tmp_path / f"committed{number}" / "predicted-test.conllu"
        unpacked.parent.mkdir()
        unpacked.write_bytes(gzip.decompress(packed.read_bytes()))
    files = sorted((data_root / "wolof" / "ud").glob("*.conllu")) + sorted(tmp_path.glob("committed*/predicted-test.conllu"))
    assert len(files) == 5
    for path in files:
        start = time.perf_counter()
        check_conllu(path)
        seconds = time.perf_counter() - start
        assert seconds < 10, f"{path}: {seconds:.1f} s"
        assert official_verdict(path)[0]  # the validator agrees, every test class included


def test_command_line_checks_files(data_root, tmp_path, capsys):
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n2\tb\t_\tX\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    assert main([str(data_root / "wolof" / "ud" / "wo_wtb-ud-dev.conllu"), str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("passes UD validator levels 1-2") and out[1].startswith(f"{bad}:2: ") and "multiple-roots" in out[1]


def test_a_missing_validator_is_named_with_its_install_command(slice_text, tmp_path, monkeypatch):
    import sys

    from steps.data import validate

    monkeypatch.setitem(sys.modules, "udtools", None)  # as on a machine without the package
    monkeypatch.setitem(sys.modules, "udtools.state", None)
    validate._validator.cache_clear()
    try:
        with pytest.raises(ModuleNotFoundError, match=r"udtools \(requirements.txt\); pip install -r requirements.txt"):
            validate.official_errors(slice_text.splitlines(), "dev.conllu")
    finally:
        validate._validator.cache_clear()


def test_a_missing_dependency_of_the_validator_is_named(slice_text, monkeypatch):
    """udtools installed without its own udapi (wheels carried without their dependencies): the
    line names udapi, not udtools, which is there."""
    import sys

    from steps.data import validate

    for name in [name for name in sys.modules if name.split(".")[0] in ("udtools", "udapi")]:
        monkeypatch.delitem(sys.modules, name)  # so that udtools is imported afresh, and fails
    monkeypatch.setitem(sys.modules, "udapi", None)
    validate._validator.cache_clear()
    try:
        with pytest.raises(ModuleNotFoundError, match=r"^the official UD validator cannot be imported: udtools needs udapi, "
                                                      r"which is not installed; pip install -r requirements.txt$"):
            validate.official_errors(slice_text.splitlines(), "dev.conllu")
    finally:
        validate._validator.cache_clear()
