"""Checks configs/paper_tables.json against the paper text (fast, no torch).

The JSON transcribes Tables 2, 3, 4, 7, 8, 9 of "Syntactic Inductive Bias in
Transformer Language Models: Especially Helpful for Low-Resource Languages?"
from the OCR'd paper text: the file ``_source.file`` names, in the papers folder
(``$SIB_PAPERS_DIR``, by default ``papers/`` beside the data root).
"""
import json
import math
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
JSON_PATH = ROOT / "configs" / "paper_tables.json"
PAPER_FILE = "000_a8413a36ec3ee40e.txt"

TABLES = ["table2", "table3", "table4", "table7", "table8", "table9"]
LANGS = {"wolof", "coptic", "maltese", "uyghur", "ancient_greek"}
OUR_CONDITIONS = ["M", "MP", "MT", "MPT", "MX", "MXP", "MXT", "MXPT"]
PRONTO_CONDITIONS = ["M*", "MX*", "mBERT"] + OUR_CONDITIONS
PARSE_NER_CONDITIONS = ["mBERT", "mBERT-VA", "M", "MP", "MT", "MPT", "MPT-SLA",
                        "MX", "MXP", "MXT", "MXPT", "MXPT-SLA"]

# OCR'd row labels use Greek/Cyrillic look-alikes (μв-М, μΒ-ΜΧΡΤ, ив-мхрт ...)
_TR = str.maketrans({
    "μ": "u", "µ": "u", "и": "u", "И": "u",
    "в": "B", "В": "B", "Β": "B", "м": "M", "М": "M", "Μ": "M",
    "р": "P", "Р": "P", "Ρ": "P", "т": "T", "Т": "T", "Τ": "T",
    "х": "X", "Х": "X", "Χ": "X",
})

# Published "All 5 Avg." (Table 4, rightmost column) values that do NOT equal
# the mean of the 5 PrOnto task averages computable from Tables 4, 7, 8, 9.
# Kept as published; the computed means are recorded here.
# (All of these rows are baselines copied from Gessler (2023).)
KNOWN_ALL5_DISCREPANCIES = {"M*": 69.04, "MX*": 70.44, "mBERT": 68.27}


def norm_label(label):
    s = label.strip().translate(_TR)
    if s.upper().startswith("MBERT"):
        return "mBERT" + s[5:]
    s = s.upper()
    assert s.startswith("UB-"), label
    return s[3:]


@pytest.fixture(scope="module")
def data():
    return json.loads(JSON_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def paper_lines(data, data_root):
    papers = Path(os.environ.get("SIB_PAPERS_DIR", data_root.parent / "papers"))
    path = papers / data["_source"]["file"]
    assert path.is_file(), f"paper text not found: {path} (set SIB_PAPERS_DIR to the folder of the papers)"
    return path.read_text(encoding="utf-8").split("\n")


def table_block(lines, n):
    """Lines of table n: from its 'Model' header line up to its caption."""
    cap = next(i for i, l in enumerate(lines) if l.startswith(f"**Table {n}:**"))
    i = cap - 1
    while not lines[i].startswith("Model\t"):
        i -= 1
    return lines[i:cap], lines[cap]


def block_rows(block):
    rows = {}
    for line in block[1:]:
        if not line.strip():
            continue
        cells = line.split("\t")
        vals = [re.sub(r"</?u>|\*\*", "", c).strip() for c in cells[1:]]
        parsed = [float(v) if v else None for v in vals]
        while parsed and parsed[-1] is None:  # trailing empty layout cells
            parsed.pop()
        rows[norm_label(cells[0])] = parsed
    return rows


def iter_row_tables(d):
    """(name, columns, rows) for every sub-table with per-language rows."""
    for t in TABLES:
        tab = d[t]
        if "tasks" in tab:
            for task, sub in tab["tasks"].items():
                yield f"{t}:{task}", sub["columns"], sub["rows"]
        else:
            yield t, tab["columns"], tab["rows"]


def fmt(v):
    return f"{v:.2f}"


def test_keys_and_metadata(data):
    for t in TABLES:
        assert t in data
        assert data[t]["caption"]
        assert data[t]["metric"] in {"LAS", "F1", "accuracy"}
    assert data["table2"]["metric"] == "LAS" and data["table2"]["task"] == "ud_parsing"
    assert data["table3"]["metric"] == "F1" and data["table3"]["task"] == "ner"
    assert data["table7"]["task"] == "pronto:proper_noun_subject"
    assert data["table8"]["task"] == "pronto:sentence_mood"
    assert data["table9"]["task"] == "pronto:same_arg_count"
    assert set(data["table4"]["tasks"]) == {"nonpronominal_mention", "same_sense"}
    # The paper is named by its file name only, never by a machine path.
    assert "_source" in data and data["_source"]["file"] == PAPER_FILE
    assert data["table2"]["compares_with"] == "dev"  # the reference's "test" file is dev (embur/configs/parser_eval.jsonnet)
    assert all(data[t]["compares_with"] == "test" for t in TABLES if t != "table2")


def test_all_conditions_present(data):
    assert data["table2"]["conditions"] == PARSE_NER_CONDITIONS
    assert data["table3"]["conditions"] == PARSE_NER_CONDITIONS
    for t in ["table4", "table7", "table8", "table9"]:
        assert data[t]["conditions"] == PRONTO_CONDITIONS
    for t in TABLES:
        conds = data[t]["conditions"]
        if "tasks" in data[t]:
            for sub in data[t]["tasks"].values():
                assert list(sub["rows"]) == conds
            assert list(data[t]["all_tasks_avg"]["rows"]) == conds
        else:
            assert list(data[t]["rows"]) == conds
    for name, cols, rows in iter_row_tables(data):
        assert set(cols) <= LANGS | {"avg"}, name
        for cond, row in rows.items():
            assert list(row) == cols, (name, cond)


def test_values_are_numbers_in_range_or_null(data):
    def ok(v):
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                             and 0 <= v <= 100)
    n = 0
    for name, _, rows in iter_row_tables(data):
        for cond, row in rows.items():
            for col, v in row.items():
                assert ok(v), (name, cond, col, v)
                n += 1
    for cond, v in data["table4"]["all_tasks_avg"]["rows"].items():
        assert ok(v), cond
    assert n > 0


SPOT = {
    "table2": [("M", "wolof", "77.71"), ("mBERT", "coptic", "14.43"),
               ("MXPT", "avg", "78.24"), ("MXPT-SLA", "ancient_greek", "81.17")],
    "table3": [("MT", "maltese", "89.46"), ("MX", "uyghur", "89.75"),
               ("mBERT-VA", "avg", "78.17")],
    "table4:nonpronominal_mention": [("M*", "ancient_greek", "52.59"),
                                     ("MX", "ancient_greek", "57.49"),
                                     ("MXP", "coptic", "53.34"), ("MT", "avg", "50.06")],
    "table4:same_sense": [("mBERT", "wolof", "66.49"), ("MP", "coptic", "58.15"),
                          ("MXPT", "uyghur", "56.81"), ("MPT", "avg", "56.23")],
    "table7": [("mBERT", "wolof", "91.65"), ("MXT", "uyghur", "73.53"),
               ("MXPT", "ancient_greek", "80.80")],
    "table8": [("M", "ancient_greek", "91.98"), ("MX", "coptic", "92.24"),
               ("MX*", "ancient_greek", "91.56")],
    "table9": [("M*", "coptic", "62.70"), ("MPT", "ancient_greek", "53.13"),
               ("MXPT", "wolof", "57.54")],
}


def test_spot_checks_against_paper_text(data, paper_lines):
    subs = {name: rows for name, _, rows in iter_row_tables(data)}
    for name, checks in SPOT.items():
        n = int(name.split(":")[0][len("table"):])
        block, _ = table_block(paper_lines, n)
        text = "\n".join(block)
        for cond, col, s in checks:
            assert s in text, (name, s)
            assert fmt(subs[name][cond][col]) == s, (name, cond, col)
    all5 = {"M*": "68.65", "mBERT": "67.92", "MXPT": "67.30"}
    text4 = "\n".join(table_block(paper_lines, 4)[0])
    for cond, s in all5.items():
        assert s in text4
        assert fmt(data["table4"]["all_tasks_avg"]["rows"][cond]) == s


def test_every_cell_matches_paper_text(data, paper_lines):
    """Full cross-check: re-parse each table block and compare every cell."""
    for t in TABLES:
        n = int(t[len("table"):])
        block, caption = table_block(paper_lines, n)
        assert data[t]["caption"] in caption
        parsed = block_rows(block)
        assert list(parsed) == data[t]["conditions"], t
        for cond, vals in parsed.items():
            if "tasks" in data[t]:
                expect = []
                for task in ["nonpronominal_mention", "same_sense"]:
                    expect += list(data[t]["tasks"][task]["rows"][cond].values())
                expect.append(data[t]["all_tasks_avg"]["rows"][cond])
            else:
                expect = list(data[t]["rows"][cond].values())
            vals = vals + [None] * (len(expect) - len(vals))
            assert vals == expect, (t, cond)


def test_row_averages(data):
    for name, _, rows in iter_row_tables(data):
        for cond, row in rows.items():
            if row.get("avg") is None:
                continue
            cells = [v for c, v in row.items() if c != "avg" and v is not None]
            mean = sum(cells) / len(cells)
            assert abs(mean - row["avg"]) <= 0.02, (name, cond, row["avg"], mean)


def test_all5_average(data):
    """Table 4 'All 5 Avg.' vs mean of the 5 PrOnto task averages."""
    t4 = data["table4"]
    for cond, published in t4["all_tasks_avg"]["rows"].items():
        task_means = [t4["tasks"][t]["rows"][cond]["avg"] for t in t4["tasks"]]
        for t in ["table7", "table8", "table9"]:
            row = data[t]["rows"][cond]
            task_means.append(sum(row.values()) / len(row))
        mean = sum(task_means) / len(task_means)
        if cond in KNOWN_ALL5_DISCREPANCIES:
            # known discrepancy: published value kept, computed mean recorded
            assert math.isclose(mean, KNOWN_ALL5_DISCREPANCIES[cond], abs_tol=0.01)
            assert abs(mean - published) > 0.02
        else:
            assert abs(mean - published) <= 0.02, (cond, published, mean)
