"""Regenerate the paper's result tables from whatever the Tango cache holds; trains nothing.

    python -m reporting.tables                      # experiments/ (seeds/ and paper/ too), tables under workspace/tables/
    python -m reporting.tables --scale cpu experiments/wolof_m.jsonnet experiments/wolof_random_init.jsonnet
    python -m reporting.tables --update-docs        # rewrite the committed record, docs/tables/

A cell is built by its one-seed file in experiments/ and, where run with more seeds, by a file in
experiments/seeds/ (3 or 5 fine-tuning seeds, the same encoder): the table shows the cached result
with the most seeds. For every experiment file, the config is built into its step graph (same ext vars as ``tango
run``: the environment) and each ``aggregate_cell`` step is looked up in the workspace cache by its
unique id, so a result shows up only if it was computed by the config as it is now. Cells that are
not cached print as "—".

Outputs per scale, under ``--out`` (default ``<workspace>/tables``), for each table with a figure:
``<table>.md``, ``<table>.tex`` and ``<table>.csv`` for Tables 2, 3, 4 (both tasks) and 7–9, each
computed value beside the committed record's (``docs/tables``) and the paper's published one
(``configs/paper_tables.json``), each condition's difference from µB-M with a 95 % interval over
seeds (paired by seed), and ``<table>_delta.png``, those differences per language with their
intervals. The related biases and MLM accuracy (``related``, ``mlm_accuracy``) show the paper scale
as one table: each task under the regime of the paper-scale cells.

``--update-docs`` writes the record itself, ``docs/tables``: a cell this cache lacks keeps the
record's value (marked †), so a partial cache never erases results of record.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import statistics
import sys
import textwrap
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from reporting.cells import CSV_FIELDS, PREDICTIONS, Cell, collect_cells, csv_line, exported_cells, merge_record, record_cells
from reporting.graphs import GRID_FOLDERS, REPO
from reporting.languages import short_title, variant_of
from reporting.significance import Difference, paired_difference
from reporting.records import read_jsonl
from steps.evaluate.scoring import format_mean_sd

logger = logging.getLogger(__name__)

PAPER_TABLES = REPO / "configs" / "paper_tables.json"

# Cell ids used by the builder (configs/lib.libsonnet) → where the paper's values live.
TABLE_TITLES = {
    "table2": "Table 2: UD parsing, test LAS (PUNCT/SYM excluded)",
    "table3": "Table 3: WikiAnn NER, span F1",
    "table4:nonpronominal_mention": "Table 4 (left): PrOnto Non-pronominal Mention Count, accuracy",
    "table4:same_sense": "Table 4 (right): PrOnto Same Sense, accuracy",
    "table7": "Table 7: PrOnto Proper Noun Subject, accuracy",
    "table8": "Table 8: PrOnto Sentence Mood, accuracy",
    "table9": "Table 9: PrOnto Same Argument Count, accuracy",
    "tg": "Transformer Grammars (Sartran et al. 2022, Table 1's measure): held-out per-word perplexity (↓; Wolof: corpus-parse dev split, English: EWT test)",
    "tg_agreement": "Transformer Grammars: subject–verb agreement on EWT test, accuracy (↑; the grammatical twin scored higher)",
    "tg_long": "Transformer Grammars at 5× the training steps (2,000 of 32; `experiments/wolof_tg_long.jsonnet`): held-out per-word perplexity (↓; Wolof corpus-parse dev split)",
    "tg_paper_form": "Transformer Grammars as the TG paper defines the three models (Algorithm 1's CNT2, TXL (trees) on the plain linearised tree, unclipped TXL positions; `*_tg_paper_form.jsonnet`): held-out per-word perplexity (↓; Wolof: corpus-parse dev split, English: EWT test)",
    "tg_paper_form_agreement": "Transformer Grammars as the TG paper defines the three models: subject–verb agreement on EWT test, accuracy (↑; the grammatical twin scored higher)",
}

# The TG table is not in the main paper (configs/paper_tables.json): its rows, columns and the TG
# paper's finding live here.  Its paper values are on the PTB / BLLIP, so the "paper" column stays empty.
# "lower_is_better": rank the rows lowest first, as for a perplexity (the line under the table reads "<").
# "baseline" / "contrasts": the paired differences under the table, contrast − baseline by seed.  TG against
# TXL (trees) is the TG paper's comparison (same trees, same budget; composition is the one change);
# TXL (terminals) scores p(x), not a bound on p(x, y), so it is not set against either.
# "paper_contrast": the TG paper's own TG − TXL (trees) on the table's measure (Sartran et al. 2022, Table 1),
# whose sign our paired differences are read against.
TG_TABLE = {"columns": ["wolof", "english"], "rows": ["txl_terminals", "txl_trees", "tg"], "lower_is_better": True,
            "baseline": "txl_trees", "contrasts": ["tg"], "paper_contrast": (61.8 - 61.2, "PTB test perplexity")}
TG_AGREEMENT_TABLE = {**TG_TABLE, "columns": ["english"], "lower_is_better": False,
                      "paper_contrast": (82.5 - 80.2, "SyntaxGym SG score")}
TG_ROW_TITLES = {"tg": "TG", "txl_trees": "TXL (trees)", "txl_terminals": "TXL (terminals)"}
TG_FINDING = (
    "\nTG and TXL (trees) score the joint p(x, y) with one tree (the corpus parser's for Wolof, gold for "
    "English), an upper bound on their string perplexity; TXL (terminals) scores p(x) exactly.  "
    "The TG paper (Sartran et al. 2022, Table 1, PTB test, mean ± sd over 100 models): TXL (trees) 61.2 ± 0.3 < "
    "TG 61.8 ± 0.2 < TXL (terminals) 62.6 ± 0.2 — modelling the trees jointly helps perplexity even as a bound, and "
    "TG's composition bottleneck costs a little perplexity against TXL (trees) (1-1.7 % relative at "
    "sentence level), which the paper traces to weaker lexical copying of rare words; its gains are "
    "on syntactic generalisation and parse reranking instead.  Its PTB has ≈1M training words for "
    "16-layer models of 12M parameters; EWT has 12,544 training trees, and at the paper-scale budget every "
    "English LM here kept a dev point before its last (the budget table): a smaller-data regime than the paper's.\n"
)
TG_AGREEMENT_FINDING = (
    "\nPairs from `build_agreement_pairs` (steps/tg/agreement.py): only the agreeing verb's form differs, and TG and "
    "TXL (trees) compare joint p(x, y) with the same gold tree, not the TG paper's approximate marginalisation over "
    "trees.  The TG paper's nearest figure is the SyntaxGym SG score (Table 1, BLLIP sent., 31 suites of which "
    "agreement is one circuit; mean ± sd over 100 models): TG 82.5 ± 1.6 > TXL (trees) 80.2 ± 1.6 > TXL (terminals) 69.5 ± 2.1 — trees help "
    "syntactic generalisation, and TG's composition helps it further.\n"
)
TG_LONG_FINDING = ("\nThe `tg` table's Wolof column with the LMs trained 5× longer (seed 42 only): whether the three "
                   "models keep their order as they train, or only start from it.\n")
TG_PAPER_FORM_FINDING = ("\nThe `tg` table's comparison with the three models as the TG paper defines them, where the `tg` "
                         "table's are the reference code's (docs/decisions.md, \"Transformer Grammars\"): a CNT2 attends "
                         "to the stack alone (Algorithm 1), TXL (trees) reads each closing nonterminal once, and both TXLs "
                         "tell every distance i − j apart. The same trees, seeds, schedule and stop rule.\n")
TABLE_FINDINGS = {"tg": TG_FINDING, "tg_agreement": TG_AGREEMENT_FINDING, "tg_long": TG_LONG_FINDING,
                  "tg_paper_form": TG_PAPER_FORM_FINDING + TG_FINDING, "tg_paper_form_agreement": TG_AGREEMENT_FINDING}
# Tables outside configs/paper_tables.json.
LOCAL_TABLES = {"tg": TG_TABLE, "tg_agreement": TG_AGREEMENT_TABLE, "tg_long": {**TG_TABLE, "columns": ["wolof"]},
                # "compared_with": the table of the same models in the committed figures' form (form_markdown).
                "tg_paper_form": {**TG_TABLE, "compared_with": "tg"},
                "tg_paper_form_agreement": {**TG_AGREEMENT_TABLE, "compared_with": "tg_agreement"}}


def paper_values(paper: dict, table: str) -> Tuple[List[str], List[str], Dict[str, Dict[str, Optional[float]]]]:
    """(columns, row order, rows) of a paper table; Table 4's two tasks are addressed as table4:<task>."""
    if table in LOCAL_TABLES:
        return list(LOCAL_TABLES[table]["columns"]), list(LOCAL_TABLES[table]["rows"]), {}
    name, _, task = table.partition(":")
    spec = paper[name]
    if task:
        spec = spec["tasks"][task]
    conditions = paper[name].get("conditions") or list(spec["rows"])
    return list(spec["columns"]), list(conditions), spec["rows"]


TABLE_FOLDERS = ("experiments",)
NOT_TABLE_FOLDERS = GRID_FOLDERS  # grids beside the paper tables, with tables of their own


def difference_baseline(table: str) -> Tuple[str, Optional[List[str]]]:
    """(the row every difference in ``table`` is taken from, the rows that get one; None: every other
    row): µB-M in the paper's tables, a local table's own "baseline" / "contrasts"."""
    spec = LOCAL_TABLES.get(table, {})
    return spec.get("baseline", "M"), spec.get("contrasts")


def table_files() -> List[Path]:
    """The files whose cells make the paper tables: experiments/ (one seed), experiments/seeds/ and
    experiments/paper/ (scale "gpu-<regime>": their own tables beside the cpu ones), not the grids of
    NOT_TABLE_FOLDERS."""
    skipped = [REPO / folder for folder in NOT_TABLE_FOLDERS]
    return [path for folder in TABLE_FOLDERS for path in sorted((REPO / folder).rglob("*.jsonnet"))
            if not any(path.is_relative_to(folder) for folder in skipped)]


def _mean_of(values: Iterable[Optional[float]]) -> Optional[float]:
    values = list(values)
    return statistics.fmean(values) if values and all(v is not None for v in values) else None


def _cell_text(cell: Optional[Cell], mark_recorded: bool = True) -> str:
    if cell is not None and cell.damaged:
        return "damaged"
    if cell is None or cell.result is None:
        return "—"
    test = cell.result["test"]
    return format_mean_sd(test["mean"], test["sd"], cell.result["n"]) + (" †" if cell.recorded and mark_recorded else "")


@dataclass
class Entry:
    """One column of one row: our text and mean, the paper's value, the record's text (where shown)
    and the paired difference from µB-M (None for the M row, for avg, or without both results); in a
    corpus variant's column ("coptic_leakfree"), the paired difference from the same row on the
    language's own corpus."""

    text: str
    mean: Optional[float]
    paper: Optional[float]
    record: Optional[str] = None
    delta: Optional[Difference] = None
    variant_delta: Optional[Difference] = None


def build_table(table: str, scale: str, cells: Sequence[Cell], paper: dict, record: Optional[Sequence[Cell]] = None):
    """(columns, rows of (row name, [Entry per column])) for one table/scale. ``record``: the
    committed cells, shown beside ours."""
    columns, paper_rows, paper_cells = paper_values(paper, table)
    languages = [c for c in columns if c != "avg"]
    ours = {(c.row, c.column): c for c in cells if c.table == table and c.scale == scale}
    recorded = None if record is None else {(c.row, c.column): c for c in record if c.table == table and c.scale == scale}
    extra_columns = sorted({col for (_, col) in list(ours) + list(recorded or {}) if col not in columns})
    languages += extra_columns
    columns = languages + (["avg"] if "avg" in columns else [])
    rows = list(paper_rows) + sorted({row for (row, _) in list(ours) + list(recorded or {})} - set(paper_rows))
    baseline_row, contrasts = difference_baseline(table)
    table_rows = []
    for row in rows:
        entries = []
        for column in columns:
            published = paper_cells.get(row, {}).get(column)
            if column == "avg":
                mean = _mean_of(ours[(row, c)].mean if (row, c) in ours else None for c in languages if c not in extra_columns)
                record_mean = None if recorded is None else _mean_of(
                    recorded[(row, c)].mean if (row, c) in recorded else None for c in languages if c not in extra_columns)
                entries.append(Entry(format_mean_sd(mean, None, 1), mean, published,
                                     None if recorded is None else format_mean_sd(record_mean, None, 1)))
                continue
            cell, baseline = ours.get((row, column)), ours.get((baseline_row, column))
            delta = variant_delta = None
            compared = row != baseline_row and (contrasts is None or row in contrasts)
            if compared and cell and cell.result and baseline and baseline.result:
                delta = paired_difference(cell.result, baseline.result)
            base = ours.get((row, variant_of(column)[0])) if column in extra_columns else None
            if cell and cell.result and base and base.result:
                variant_delta = paired_difference(cell.result, base.result)
            entries.append(Entry(_cell_text(cell), cell.mean if cell else None, published,
                                 None if recorded is None else _cell_text(recorded.get((row, column)), mark_recorded=False),
                                 delta, variant_delta))
        table_rows.append((row, entries))
    return columns, table_rows


def _row_title(row: str) -> str:
    if row in TG_ROW_TITLES:
        return TG_ROW_TITLES[row]
    return f"µB-{row}" if _is_condition(row) else row


@lru_cache(maxsize=None)
def _is_condition(row: str) -> bool:
    """A µBERT condition ("MXPT-SLA"; the paper's starred "M*", "MX*"), spelled canonically."""
    from models import parse_condition  # imports torch: only when a table is rendered

    name = row[:-1] if row.endswith("*") else row
    try:
        return parse_condition(name).name == name
    except ValueError:
        return False


def _paper_text(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.2f}"


SD_LABEL = "mean ± sd over seeds"  # a cell's "±": the sample sd of its seeds' figures
CI_LABEL = "Δ ± 95% CI"  # a difference's "±": the paired t-interval (reporting/significance.py)


def provenance(texts: Sequence[str], where: str = "docs/tables/") -> Tuple[bool, str]:
    """(mark each cell, the table's provenance line) for the cell texts of one table: one line when
    every figure shares its provenance (no marks), else the † legend (record cells marked)."""
    shown = [t for t in texts if t not in ("—", "damaged", "")]
    recorded = [t for t in shown if "†" in t]
    if shown and len(recorded) == len(shown):
        return False, f"Provenance: every figure is the committed record ({where}), not recomputed by the cache that wrote this."
    if not recorded:
        return False, "Provenance: every figure is from the cache that wrote this." if shown else ""
    return True, RECORD_KEPT_NOTE


def unmarked(text: str) -> str:
    return text.replace(" †", "").replace("†", "")


def to_markdown(title: str, columns, table_rows, baseline: str = "µB-M") -> str:
    with_record = any(entry.record is not None for _, entries in table_rows for entry in entries)
    per_column = ["ours", "docs", "paper"] if with_record else ["ours", "paper"]
    # The avg column is computed from the others: its provenance is theirs.
    marks, provenance_line = provenance([e.text for _, entries in table_rows for c, e in zip(columns, entries) if c != "avg"])
    header = f"| model ({SD_LABEL}) | " + " | ".join(f"{short_title(c)}{_note_mark(c)} {per_column[0]} | " + " | ".join(per_column[1:]) for c in columns) + " |"
    rule = "|---|" + "---|" * len(per_column) * len(columns)
    lines = [f"### {title}", "", header, rule]
    for row, entries in table_rows:
        # A language with a data note carries its mark beside every one of its values.
        marked = [(e.text if marks else unmarked(e.text)) + (_note_mark(c) if e.mean is not None and _note_mark(c) else "")
                  for c, e in zip(columns, entries)]
        texts = [(m, e.record, _paper_text(e.paper)) if with_record else (m, _paper_text(e.paper)) for m, e in zip(marked, entries)]
        lines.append(f"| {_row_title(row)} | " + " | ".join(" | ".join(t) for t in texts) + " |")
    notes = [f"{_note_mark(c)} {short_title(c)}: {_table_note(c)}." for c in columns if _table_note(c)]
    if with_record:
        notes.append("ours: this workspace's cache; docs: the committed record (docs/tables); paper: the published value.")
    if any(e.text == "—" for _, entries in table_rows for e in entries):
        notes.append("— not in this cache (not run yet, or run with another config).")
    if any(e.text == "damaged" for _, entries in table_rows for e in entries):
        notes.append("damaged: the cache entry exists but its result cannot be read; see the command's output.")
    if provenance_line:
        notes.append(provenance_line)
    text = "\n".join(lines) + "\n" + ("\n" + " ".join(notes) + "\n" if notes else "")
    return text + delta_markdown(columns, table_rows, baseline) + variant_markdown(columns, table_rows)


def ranking_markdown(table: str, columns, table_rows) -> str:
    """For the tables outside the paper's (`LOCAL_TABLES`): each column's rows, best first, so the
    ranking stands beside the related paper's finding under it."""
    if table not in LOCAL_TABLES:
        return ""
    lower = LOCAL_TABLES[table]["lower_is_better"]
    orders = []
    for index, column in enumerate(columns):
        ranked = sorted(((entries[index].mean, row) for row, entries in table_rows if entries[index].mean is not None),
                        reverse=not lower)
        if len(ranked) > 1:
            orders.append(f"{short_title(column)} " + (" < " if lower else " > ").join(f"{_row_title(row)} {mean:.2f}" for mean, row in ranked))
    return f"\nHere, best first: {'; '.join(orders)}.\n" if orders else ""


def contrast_markdown(table: str, columns, table_rows) -> str:
    """For a local table with a "paper_contrast": each column's paired difference read against the
    related paper's: which model it favours, whether its interval excludes 0, and whether that is the
    paper's direction ("" without a difference)."""
    spec = LOCAL_TABLES.get(table, {})
    if "paper_contrast" not in spec:
        return ""
    published, measure = spec["paper_contrast"]
    better = lambda d: (d < 0) == spec["lower_is_better"]  # noqa: E731  (is the contrast row the better one?)
    baseline, readings = _row_title(spec["baseline"]), []
    for row, entries in table_rows:
        for column, entry in zip(columns, entries):
            d = entry.delta
            if d is None or d.mean is None:
                continue
            winner = _row_title(row) if better(d.mean) else baseline
            agrees = "the paper's direction" if better(d.mean) == better(published) else "against the paper's direction"
            if d.half_width is None:
                reading = f"{winner} better, no interval to tell a direction"
            elif abs(d.mean) > d.half_width:
                reading = f"{winner} better, its interval excludes 0: {agrees}"
            else:
                reading = f"{winner} better on average, its interval includes 0: no direction at 95 %"
            readings.append(f"{short_title(column)} {d.text()}: {reading}")
    if not readings:
        return ""
    paper_winner = _row_title(spec["contrasts"][0]) if better(published) else baseline
    return (f"\n{_row_title(spec['contrasts'][0])} − {baseline} against the TG paper's {published:+.1f} ({measure}, "
            f"{paper_winner} better): " + "; ".join(readings) + ".\n")


def form_markdown(table: str, scale: str, cells: Sequence[Cell]) -> str:
    """For a local table with a "compared_with" table (the same models in another form): each row
    here − the same row there, per column, paired by seed ("" where no pair has both figures).
    ``cells``: this cache's first, then the record's, so ours win."""
    other = LOCAL_TABLES.get(table, {}).get("compared_with")
    if other is None:
        return ""
    found: Dict[Tuple[str, str, str], Cell] = {}
    for cell in cells:
        if cell.scale == scale and cell.table in (table, other) and cell.result:
            found.setdefault((cell.table, cell.row, cell.column), cell)
    columns, lines = LOCAL_TABLES[table]["columns"], []
    for row in LOCAL_TABLES[table]["rows"]:
        pairs = [(found.get((table, row, column)), found.get((other, row, column))) for column in columns]
        texts = [paired_difference(here.result, there.result).text() if here and there else "—" for here, there in pairs]
        if any(text != "—" for text in texts):
            lines.append(f"| {_row_title(row)} | " + " | ".join(texts) + " |")
    if not lines:
        return ""
    return "\n".join(["", f"Against the same models in the `{other}` table's form (this table − `{other}`, {CI_LABEL}: the "
                       "mean over the shared seeds ± the t-interval), paired by seed:", "",
                       f"| model ({CI_LABEL}) | " + " | ".join(short_title(c) for c in columns) + " |",
                       "|---|" + "---|" * len(columns)] + lines) + "\n"


def table_markdown(table: str, title: str, columns, table_rows, scale: Optional[str] = None,
                   cells: Sequence[Cell] = ()) -> str:
    """One table as the tables' .md files and RESULTS.md show it: the table, its ranking (local
    tables only), the same models in another form (`form_markdown`, from ``cells`` of ``scale``)
    and its finding, if any."""
    baseline = _row_title(difference_baseline(table)[0])
    return (to_markdown(title, columns, table_rows, baseline) + ranking_markdown(table, columns, table_rows)
            + contrast_markdown(table, columns, table_rows) + (form_markdown(table, scale, cells) if scale else "")
            + TABLE_FINDINGS.get(table, ""))


def variant_markdown(columns, table_rows) -> str:
    """Each corpus variant's column − the same row on its language's own corpus, mean ± 95 %
    t-interval over seeds, paired by seed ("" if no such pair is cached)."""
    languages = [c for c in columns if c != "avg"]
    variants = [(i, c, variant_of(c)[0]) for i, c in enumerate(languages) if variant_of(c)[0] in languages]
    lines = []
    for row, entries in table_rows:
        for index, column, base in variants:
            if entries[index].variant_delta is not None:
                lines.append(f"| {_row_title(row)} | {short_title(column)} − {short_title(base)} | {entries[index].variant_delta.text()} |")
    if not lines:
        return ""
    return ("\nA corpus variant against the language's own corpus (same condition and fine-tuning seeds), "
            f"paired by seed:\n\n| model | columns | {CI_LABEL} |\n|---|---|---|\n" + "\n".join(lines) + "\n")


def _table_note(column: str) -> str:
    """A language's data note (configs/languages.libsonnet `table_note`), also for its corpus
    variants' columns ("coptic_leakfree"); "" for none."""
    from reporting.languages import languages

    facts = languages()
    if column in facts:
        return facts[column].get("table_note", "")
    language, variant = variant_of(column)
    return facts[language].get("variant_notes", {}).get(variant) or facts[language].get("table_note", "") if language else ""


def _note_mark(column: str) -> str:
    return "‡" if _table_note(column) else ""


def delta_markdown(columns, table_rows, baseline: str = "µB-M") -> str:
    """Each condition − the table's baseline row (µB-M), mean ± 95 % t-interval over seeds, paired by
    seed ("" if none)."""
    languages = [c for c in columns if c != "avg"]
    shown = [(row, entries[: len(languages)]) for row, entries in table_rows if any(e.delta for e in entries)]
    if not shown:
        return ""
    lines = ["", f"Difference from {baseline} (Δ ± 95% CI: the mean over the shared seeds ± the t-interval), paired by seed:", "",
             f"| model ({CI_LABEL}) | " + " | ".join(short_title(c) for c in languages) + " |", "|---|" + "---|" * len(languages)]
    for row, entries in shown:
        lines.append(f"| {_row_title(row)} | " + " | ".join(e.delta.text() if e.delta else "—" for e in entries) + " |")
    return "\n".join(lines) + "\n"


def to_latex(title: str, columns, table_rows) -> str:
    def escape(text: str) -> str:
        return text.replace("±", r"$\pm$").replace("—", "--").replace("µ", r"$\mu$").replace("_", r"\_").replace("†", r"$^\dagger$")

    spec = "l" + "rr" * len(columns)
    lines = [r"\begin{table}", r"\centering", rf"\begin{{tabular}}{{{spec}}}", r"\hline",
             "Model & " + " & ".join(rf"\multicolumn{{2}}{{c}}{{{escape(short_title(c))}}}" for c in columns) + r" \\",
             " & " + " & ".join(["ours & paper"] * len(columns)) + r" \\", r"\hline"]
    for row, entries in table_rows:
        lines.append(escape(_row_title(row)) + " & " + " & ".join(f"{escape(e.text)} & {escape(_paper_text(e.paper))}" for e in entries) + r" \\")
    lines += [r"\hline", r"\end{tabular}", rf"\caption{{{escape(title)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


RECORD_KEPT_NOTE = "† not in the cache that wrote this table: the committed record's value, kept."
def to_csv(table: str, scale: str, columns, table_rows, cells: Sequence[Cell]) -> str:
    by_key = {(c.row, c.column): c for c in cells if c.table == table and c.scale == scale}
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_FIELDS)
    baseline = difference_baseline(table)[0]
    for row, entries in table_rows:
        for column, entry in zip(columns, entries):
            writer.writerow(csv_line(table, scale, row, column, by_key.get((row, column)), entry.mean, entry.paper, entry.delta,
                                     baseline))
    return out.getvalue()


def paper_delta(paper_rows: Dict[str, Dict[str, Optional[float]]], row: str, column: str,
                baseline: str = "M") -> Optional[float]:
    """The paper's own difference for one cell: its published value minus its published baseline's
    (µB-M's); None where the paper has either figure missing. ``paper_rows``: `paper_values`' rows."""
    ours, base = paper_rows.get(row, {}).get(column), paper_rows.get(baseline, {}).get(column)
    return None if ours is None or base is None else ours - base


def _has_delta(entry) -> bool:
    """Whether a table entry has a difference from the baseline to draw."""
    return bool(entry.delta and entry.delta.mean is not None)


def delta_plot(path: Path, title: str, columns, table_rows, baseline: str = "M",
               paper_rows: Optional[Dict[str, Dict[str, Optional[float]]]] = None) -> bool:
    """Bars of (condition − the baseline row, µB-M) per language with their 95 % paired intervals; a hatched bar has
    no interval (one seed). A black cross on a bar is the paper's own Δ for that cell (its condition's published value
    minus its µB-M's), so a reader sees at a glance whether the paper's figure falls inside our interval. False if
    nothing to plot."""
    languages = [c for c in columns if c != "avg"]
    series = {row: entries[: len(languages)] for row, entries in table_rows
              if row != baseline and any(_has_delta(e) for e in entries[: len(languages)])}
    if not series:
        return False
    # A language no condition has a Δ for yet (a corpus variant with only its µB-M) would be an empty group.
    shown_columns = [i for i in range(len(languages)) if any(_has_delta(e[i]) for e in series.values())]
    languages = [languages[i] for i in shown_columns]
    series = {row: [entries[i] for i in shown_columns] for row, entries in series.items()}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(max(5.0, 1.2 + 1.1 * len(languages) * max(1, len(series)) ** 0.5), 3.2 + 0.1 * len(series)))
    width = 0.8 / len(series)
    published = []  # (x, the paper's Δ) of each bar whose cell the paper has
    hatched = False
    for index, (row, entries) in enumerate(series.items()):
        shown = [(i, e.delta) for i, e in enumerate(entries) if _has_delta(e)]
        bars = axis.bar([i + index * width for i, _ in shown], [d.mean for _, d in shown], width=width, label=_row_title(row),
                        yerr=[float("nan") if d.half_width is None else d.half_width for _, d in shown], capsize=2, error_kw={"linewidth": 0.8})
        for bar, (_, d) in zip(bars, shown):
            if d.half_width is None:
                bar.set_hatch("//")
                hatched = True
        for bar, (i, _) in zip(bars, shown):
            theirs = paper_delta(paper_rows or {}, row, languages[i], baseline)
            if theirs is not None:
                published.append((bar.get_x() + bar.get_width() / 2, theirs))
    if published:
        axis.scatter(*zip(*published), marker="x", color="black", s=18, linewidths=1, zorder=3, label="paper's Δ")
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(languages))])
    axis.set_xticklabels([short_title(c) for c in languages])
    axis.set_ylabel(f"Δ vs {_row_title(baseline)} (95 % CI, paired)")
    # a long table title wraps to the figure's width (about 15 characters an inch at this size)
    axis.set_title(textwrap.fill(title, int(figure.get_figwidth() * 15)) + ("\nhatched: one seed, no interval" if hatched else ""),
                   fontsize=8)
    axis.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


# The tables whose models are language models over trees: their caveat cites a TG figure, not µB-M's.
TG_TABLES = tuple(LOCAL_TABLES)


def undertrained_note(cells: Sequence[Cell], table: str = "table2") -> str:
    """A cpu table's one-line caveat with the figure that shows it: for the TG tables, TXL (terminals)'s
    perplexity at cpu scale against the paper-scale budget's; for the others, µB-M's MLM accuracy
    against a trigram LM's (the record's cells count: ``cells`` may be merged with it)."""
    by_key = {(c.table, c.scale, c.row, c.column): c for c in cells if c.result}
    if table in TG_TABLES:
        language = LOCAL_TABLES[table]["columns"][0]
        # Each perplexity table cites its own TXL (terminals), the agreement tables their perplexity
        # table's; tg_long has no paper scale, so it is set against the `tg` table's.
        source = "tg_paper_form" if table.startswith("tg_paper_form") else "tg_long" if table == "tg_long" else "tg"
        small = by_key.get((source, "cpu", "txl_terminals", language))
        paper_table = "tg" if source == "tg_long" else source
        paper = by_key.get((paper_table, "paper", "txl_terminals", language))
        if small is not None and paper is not None:
            return (f"_cpu scale: undertrained demonstrations, not the TG paper's models: TXL (terminals) reads "
                    f"{short_title(language)} per-word perplexity {small.mean:.2f} here, {paper.mean:.2f} at the "
                    f"paper-scale budget (`{paper_table}` table, paper scale)._")
        return "_cpu scale: undertrained demonstrations (a few hundred steps), not the TG paper's models._"
    mlm = {(c.row, c.column): c for c in by_key.values() if c.table == "mlm:accuracy" and c.scale == "cpu"}
    for (row, language), cell in sorted(mlm.items()):
        trigram = mlm.get(("trigram-LM", language))
        if row == "M" and trigram is not None:
            return (f"_cpu scale: undertrained demonstrations, not the paper's models: µB-M guesses {cell.mean:.2f} % of "
                    f"masked {short_title(language)} dev tokens, a trigram LM {trigram.mean:.2f} % (MLM accuracy table)._")
    return "_cpu scale: undertrained demonstrations (a few thousand pretraining steps on 10,000 sentences), not the paper's models._"


def with_cpu_notes(text: str, cells: Sequence[Cell]) -> str:
    """``text`` with each cpu-scale table's caveat (`undertrained_note`) under its heading."""
    by_title = {title: table for table, title in TABLE_TITLES.items()}
    lines = []
    for line in text.split("\n"):
        lines.append(line)
        if line.startswith("### ") and line.rstrip().endswith("— cpu scale"):
            title = line[4:].rstrip().rsplit(" — ", 1)[0]
            lines += ["", undertrained_note(cells, by_title.get(title, "table2"))]
    return "\n".join(lines)


def write_tables(cells: Sequence[Cell], out_dir: Path, scales: Optional[Sequence[str]] = None,
                 record: Optional[Sequence[Cell]] = None) -> Dict[str, List[Path]]:
    """Write every table with a figure (this cache's or ``record``'s) for every scale that has cells;
    returns {scale: written files}. A table without one is not written (its files from an older
    state are removed). ``record``: committed cells to show beside ours (not when writing the record
    itself)."""
    paper = json.loads(PAPER_TABLES.read_text())
    written: Dict[str, List[Path]] = {}
    with_record = list(cells) + list(record or [])
    for scale in sorted({c.scale for c in cells} if scales is None else scales):
        directory = out_dir / scale
        files = written.setdefault(scale, [])
        for table, title in TABLE_TITLES.items():
            stem = table.replace(":", "_")
            if not _scored(with_record, scale, [table]):
                _drop_stale(directory / f"{stem}{suffix}" for suffix in (".md", ".tex", ".csv", "_delta.png"))
                continue
            directory.mkdir(parents=True, exist_ok=True)
            columns, table_rows = build_table(table, scale, cells, paper, record)
            full_title = f"{title} — {scale} scale"
            markdown = table_markdown(table, full_title, columns, table_rows, scale, with_record)
            if scale == "cpu":
                markdown = with_cpu_notes(markdown, list(cells) + list(record or []))
            for suffix, text in (("md", markdown),
                                 ("tex", to_latex(full_title, columns, table_rows)),
                                 ("csv", to_csv(table, scale, columns, table_rows, cells))):
                target = directory / f"{stem}.{suffix}"
                target.write_text(text, encoding="utf-8")
                files.append(target)
            png = directory / f"{stem}_delta.png"
            if delta_plot(png, full_title, columns, table_rows, difference_baseline(table)[0], paper_values(paper, table)[2]):
                files.append(png)
            elif png.exists():
                png.unlink()  # a plot from an older cache state would now be wrong
    return written


def markdown_summary(cells: Sequence[Cell], scales: Optional[Sequence[str]] = None,
                     tables: Optional[Sequence[str]] = None) -> str:
    """The computed tables (only those with at least one cell with a result) as one Markdown string:
    ``tables`` (default: the paper's, not `LOCAL_TABLES`), each followed by its finding, if any."""
    paper = json.loads(PAPER_TABLES.read_text())
    chosen = [t for t in TABLE_TITLES if t not in LOCAL_TABLES] if tables is None else tables
    parts = []
    for scale in sorted({c.scale for c in cells} if scales is None else scales):
        for table in chosen:
            if not _scored(cells, scale, [table]):
                continue
            columns, table_rows = build_table(table, scale, cells, paper)
            shown = [(row, entries) for row, entries in table_rows if any(e.mean is not None for e in entries) or row in ("M", "MXPT-SLA")]
            parts.append(table_markdown(table, f"{TABLE_TITLES[table]} — {scale} scale", columns, shown, scale, cells))
    return "\n".join(parts)


# The related-biases table: UD LAS, NER F1 and MLM accuracy of every row the related
# experiment files produce (experiments/related/), by condition name, so a new bias's rows (e.g.
# syntax-guided attention, G) appear once its files exist.  Beside it, each related paper's finding.
RELATED_COLUMNS = (("related:ud", "UD LAS"), ("related:ner", "NER F1"), ("mlm:accuracy", "MLM acc."))
MLM_COLUMNS = (("mlm:accuracy", "all"), ("mlm:bin1", "bin 1 (rarest)"), ("mlm:bin2", "bin 2"), ("mlm:bin3", "bin 3"),
               ("mlm:bin4", "bin 4"), ("mlm:bin5", "bin 5"), ("mlm:word_completion", "word completion"))
# One pretraining per encoder: an MLM figure has no seed spread, so its table has no Δ intervals.
MLM_NOTE = ("One pretrained encoder per row (pretraining seed 42), scored on the first 100 UD dev sentences; no seed "
            "spread, so no intervals. The bins cut the vocabulary's types into fifths by training count, so bins 1-4 "
            "hold few dev tokens (the counts are in each `mlm_accuracy` result's metrics.json). Word completion: over "
            "continuation pieces, a guess that makes the word a training word type.")
CORPUS_OVERLAP_JSONL = Path("docs/benchmarks/corpus_overlap.jsonl")


def corpus_overlap_note(scale: str, path: Path = CORPUS_OVERLAP_JSONL) -> str:
    """How much of the scored text stands verbatim in the scale's pretraining corpus
    (tools/corpus_overlap.py), the latest record per language; "" where none is recorded."""
    if not path.exists():
        return ""
    latest = {r["language"]: r for r in read_jsonl(path) if r["scale"] == scale}
    if not latest:
        return ""
    parts = [f"{short_title(language)}: {r['sentences_in_corpus']} of the {r['sentences']} sentences "
             f"({r['tokens_in_corpus']:,} of {r['tokens']:,} tokens) stand verbatim in the corpus's train split "
             f"({r['corpus_train_sentences']:,} sentences)" for language, r in sorted(latest.items())]
    return (" Scored text seen in pretraining (`python tools/corpus_overlap.py FILE`, " + str(path) + "): " + "; ".join(parts)
            + ". A model may recall such a sentence rather than predict it, an n-gram model most of all.")


RELATED_FINDINGS = {
    "A": "Edman et al., band attention NLM-A: below NLM-C on MLM accuracy (and worse as the "
         "window grows), but the best model downstream (NLI, POS), since the band stays on at fine-tuning.",
    "C": "Edman et al., limited context NLM-C: the best neural MLM accuracy, close to the trigram LM with "
         "10k sentences (also on rare-word bins and word completion), but weaker than NLM-A downstream: "
         "fine-tuning sees longer inputs than pretraining did.",
    "H": "Edman et al., n-gram soft labels NLM-H: better than the plain NLM on MLM accuracy and downstream, "
         "less than NLM-A / NLM-C.",
    "ngram": "Edman et al.: with 10k sentences a trigram LM beats a Transformer on MLM accuracy by a wide margin.",
    "G": "Ahmad et al., syntax-augmented mBERT: GAT syntax heads + structural probe improve "
         "cross-lingual transfer by 1.4 (PAWS-X) and 1.6 (MLQA) points on average, more in generalized transfer; "
         "in the language fine-tuned on (English), as in these rows, by at most 0.3 on every task but WikiAnn "
         "NER (83.6 to 84.4 F1; §4.1, Table 2).",
}


def _related_family(row: str) -> Optional[str]:
    """Which related paper a related row comes from: A/C/H (Edman et al.), G (Ahmad et al.), or None."""
    if row.endswith(("-A5", "-A9", "-A13")):
        return "A"
    if row[:1] == "C" and row[1:].isdigit():
        return "C"
    if row == "H" or row.startswith("H-"):
        return "H"
    if row == "trigram-LM":
        return "ngram"
    if "G" in row.split("-")[-1] or "G" in row.split("-")[0]:
        return "G"
    return None


def related_rows(cells: Sequence[Cell], scale: str, tables: Sequence[str]) -> List[str]:
    """µB-M and random-init first, then every other row of these tables, sorted by name."""
    found = {c.row for c in cells if c.scale == scale and c.table in tables}
    return [r for r in ("M", "random-init") if r in found] + sorted(found - {"M", "random-init"})


# The related-bias experiments run on Wolof; other languages get a column once
# one of their cells is cached, so an empty table is one language wide, not five.
RELATED_DEFAULT_LANGUAGES = ("wolof",)


def _related_layout(cells: Sequence[Cell], scale: str, columns):
    """(cells by (table, row, language), languages shown, rows shown) of one related table."""
    tables = [table for table, _ in columns]
    by_key = {(c.table, c.row, c.column): c for c in cells if c.scale == scale and c.table in tables}
    languages = sorted({c.column for c in by_key.values() if c.result is not None}) or list(RELATED_DEFAULT_LANGUAGES)
    # The paper-scale Table 2/3 files score their encoders' MLM accuracy too: such a row (µB-MX, …)
    # belongs to the MLM-accuracy table once it has a figure, not to the related biases'.
    related = {c.row for c in cells if c.table.startswith("related:")}  # at any scale: their cells carry the regime's
    paper_rows = {c.row for c in cells if c.table in ("table2", "table3")} - related
    only_mlm = all(table.startswith("mlm:") for table in tables)
    shown = [row for row in related_rows(cells, scale, tables) if row not in paper_rows
             or (only_mlm and any(c.result is not None for (_, r, _), c in by_key.items() if r == row))]
    return by_key, languages, shown


def _related_delta(by_key, table: str, row: str, language: str) -> Optional[Difference]:
    """A related row's paired difference from µB-M in one column, where both have a result."""
    cell, baseline = by_key.get((table, row, language)), by_key.get((table, "M", language))
    if row == "M" or not (cell and cell.result and baseline and baseline.result):
        return None
    return paired_difference(cell.result, baseline.result)


def _ranking_lines(by_key, languages, rows, column) -> List[str]:
    """The rows ordered by their mean in the table's first column, per language, to set beside the
    related papers' findings (e.g. Edman et al.'s NLM < NLM-H < NLM-A < NLM-C ≈ SLM)."""
    table, name = column
    lines = []
    for language in languages:
        ranked = sorted(((by_key[(table, row, language)].mean, row) for row in rows
                         if (table, row, language) in by_key and by_key[(table, row, language)].result), reverse=True)
        if len(ranked) > 2:
            order = " > ".join(f"{_row_title(row)} {mean:.2f}" for mean, row in ranked)
            lines += ["", f"Here, {short_title(language)} {name}, best first: {order}."]
    return lines


def related_markdown(cells: Sequence[Cell], scale: str, columns=RELATED_COLUMNS, title: str = "", note: str = "",
                     deltas: bool = True) -> str:
    by_key, languages, rows = _related_layout(cells, scale, columns)
    label = SD_LABEL if deltas else "one run each"
    header = f"| model ({label}) | " + " | ".join(f"{short_title(lang)} {name}" for lang in languages for _, name in columns)
    lines = [f"### {title} — {scale} scale", "", header + " |", "|---|" + "---|" * (len(languages) * len(columns))]
    all_texts = {row: [_cell_text(by_key.get((table, row, lang))) for lang in languages for table, _ in columns] for row in rows}
    marks, provenance_line = provenance([t for texts in all_texts.values() for t in texts])
    for row in rows:
        texts = all_texts[row] if marks else [unmarked(t) for t in all_texts[row]]
        lines.append(f"| {_row_title(row)} | " + " | ".join(texts) + " |")
    if not any(cell.result for cell in by_key.values()):
        lines += ["", "— not in this cache (not run yet, or run with another config)."]
    if provenance_line:
        lines += ["", provenance_line]
    if any(table in RELATED_TASKS for table, _ in columns) and regime_note(scale):
        lines += ["", regime_note(scale)]
    if note:
        lines += ["", note + (corpus_overlap_note(scale) if columns == MLM_COLUMNS else "")]
    lines += _ranking_lines(by_key, languages, rows, columns[0])
    families = list(dict.fromkeys(f for f in map(_related_family, rows) if f in RELATED_FINDINGS))
    if families:
        lines += ["", "What each related paper found, for comparison:", ""]
        lines += [f"- {', '.join(_row_title(r) for r in rows if _related_family(r) == family)}: {RELATED_FINDINGS[family]}"
                  for family in families]
    if not deltas:
        return "\n".join(lines) + "\n"
    deltas = [f"| {_row_title(row)} | {short_title(lang)} {name} | {delta.text()} |"
              for row in rows for lang in languages for table, name in columns
              for delta in [_related_delta(by_key, table, row, lang)] if delta is not None]
    if deltas:
        lines += ["", "Difference from µB-M (Δ ± 95% CI: the mean over the shared seeds ± the t-interval), paired by seed:", "",
                  f"| model | column | {CI_LABEL} |", "|---|---|---|"] + deltas
    return "\n".join(lines) + "\n"


def related_csv(cells: Sequence[Cell], scale: str, columns) -> str:
    """Every cell a related table shows, in the paper tables' CSV form (CSV_FIELDS), so
    `record_cells` reads them back when the cache that made them is gone."""
    by_key, languages, rows = _related_layout(cells, scale, columns)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_FIELDS)
    for row in rows:
        for language in languages:
            for table, _ in columns:
                writer.writerow(csv_line(table, stored_scale(table, scale), row, language, by_key.get((table, row, language)),
                                         delta=_related_delta(by_key, table, row, language)))
    return out.getvalue()


# A paper-scale file's UD and NER cells carry their fine-tuning regime in their scale ("gpu-<regime>"),
# its MLM cells the pretraining scale's "paper". The related tables show the paper scale as one table:
# each task under the regime its paper-scale cells are fine-tuned with (scales.libsonnet `chosen`).
PAPER_VIEW = "paper"
RELATED_TASKS = {"related:ud": "ud", "related:ner": "ner"}


@lru_cache(maxsize=1)
def chosen_regimes() -> Dict[str, str]:
    """{task: regime} of the paper scale's cells (configs/scales.libsonnet `paper.chosen`)."""
    from rjsonnet import evaluate_file

    return json.loads(evaluate_file(str(REPO / "configs" / "scales.libsonnet")))[PAPER_VIEW]["chosen"]


def stored_scale(table: str, scale: str) -> str:
    """The scale a related cell shown at ``scale`` is recorded under: a paper-scale UD / NER cell's
    regime label, else ``scale`` itself."""
    if scale == PAPER_VIEW and table in RELATED_TASKS:
        return "gpu-" + chosen_regimes()[RELATED_TASKS[table]]
    return scale


def related_view(cells: Sequence[Cell]) -> List[Cell]:
    """The cells as the related tables show them: a related UD / NER cell fine-tuned under the paper
    scale's chosen regime is shown at scale "paper", beside the MLM cells of the same encoders."""
    def shown(cell: Cell) -> Cell:
        if cell.table in RELATED_TASKS and cell.scale == stored_scale(cell.table, PAPER_VIEW):
            return replace(cell, scale=PAPER_VIEW)
        return cell
    return [shown(cell) for cell in cells]


def regime_note(scale: str) -> str:
    """The related table's line naming each task's fine-tuning regime at the paper scale."""
    if scale != PAPER_VIEW:
        return ""
    regimes = chosen_regimes()
    return (f"UD LAS fine-tuned under the `{regimes['ud']}` regime, NER F1 under `{regimes['ner']}` "
            "(configs/scales.libsonnet): the regimes of the paper-scale Table 2 and 3 cells.")


RELATED_TABLES = (("related", RELATED_COLUMNS, "Related biases: UD LAS, NER F1, MLM accuracy (%)", {}),
                  ("mlm_accuracy", MLM_COLUMNS, "MLM accuracy (%), one token masked at a time, by training-frequency bin",
                   {"note": MLM_NOTE, "deltas": False}))


def related_scales(cells: Sequence[Cell], with_results: bool = False) -> List[str]:
    """The scales with a cell (``with_results``: a cell with a result) in a related table."""
    tables = {table for table, _ in RELATED_COLUMNS + MLM_COLUMNS}
    return sorted({c.scale for c in cells if c.table in tables and (c.result or not with_results)})


def _scored(cells: Sequence[Cell], scale: str, tables: Iterable[str]) -> bool:
    """Whether any cell of these tables at ``scale`` has a result."""
    tables = set(tables)
    return any(c.result is not None for c in cells if c.scale == scale and c.table in tables)


def related_summary(cells: Sequence[Cell]) -> str:
    """Each related table of every scale with a result in it, as one Markdown string (the paper
    scale as one table: `related_view`)."""
    cells = related_view(cells)
    return "\n".join(related_markdown(cells, scale, columns, title, **extra)
                     for scale in related_scales(cells, with_results=True) for _, columns, title, extra in RELATED_TABLES
                     if _scored(cells, scale, (table for table, _ in columns)))


def write_related_tables(cells: Sequence[Cell], out_dir: Path, scales: Optional[Sequence[str]] = None) -> List[Path]:
    """related.md/.csv (UD LAS, NER F1, MLM accuracy) and mlm_accuracy.md/.csv (overall, 5 frequency
    bins, word completion) for every scale with a related figure (the paper scale as one table:
    `related_view`); a table without one is not written. Pass the cache's cells merged with the
    record's (`merge_record`) to keep the record's rows (marked †)."""
    cells = related_view(cells)
    written, found = [], related_scales(cells)
    for scale in found if scales is None else [s for s in scales if s in found]:
        directory = out_dir / scale
        for stem, columns, title, extra in RELATED_TABLES:
            targets = (directory / f"{stem}.md", directory / f"{stem}.csv")
            if not _scored(cells, scale, (table for table, _ in columns)):
                _drop_stale(targets)
                continue
            directory.mkdir(parents=True, exist_ok=True)
            markdown = related_markdown(cells, scale, columns, title, **extra)
            for target, text in zip(targets, (with_cpu_notes(markdown, cells) if scale == "cpu" else markdown,
                                              related_csv(cells, scale, columns))):
                target.write_text(text, encoding="utf-8")
                written.append(target)
    return written


def _drop_stale(targets: Iterable[Path]) -> None:
    """Remove the files of a table that now has no figure: an older cache state's would be wrong."""
    for target in targets:
        if target.exists():
            target.unlink()


DOCS_TABLES = REPO / "docs" / "tables"


def recorded_cells(cells: Sequence[Cell]) -> List[Cell]:
    """The committed record's cells: docs/tables' CSVs, and those of ``cells`` whose every seed is
    exported to docs/predictions/ although no cache holds their aggregate (`exported_cells`)."""
    return record_cells(DOCS_TABLES) + exported_cells(PREDICTIONS, cells)


def table1_markdown() -> str:
    """Paper Table 1 from the data root (no cache): each of the paper's five languages' unlabeled
    train tokens as load_corpus counts them (its own split if the corpus is pre-split, else the
    reference's 90/10 document split; Coptic under the reference reader: lacunae one word, 200-token cut), the
    paper's count, and one line on why they differ."""
    from reporting.languages import paper_languages
    from steps.common.data_root import DataPath
    from steps.data.readers import given_splits, join_lacunae, read_corpus_documents, split_documents

    lines = ["### Table 1: unlabeled train tokens, here and in the paper", "",
             "| language | train tokens here | paper | Δ % | why |", "|---|---|---|---|---|"]
    for name, facts in paper_languages().items():
        documents = read_corpus_documents(DataPath(f"{name}/corpus"), facts["corpus_format"])
        splits = given_splits(documents) or split_documents(documents)
        reference = name == "coptic"  # lib.libsonnet reference_reader: lacunae one word, 200-token cut
        ours = sum(len(join_lacunae(sentence)[:200] if reference else sentence) for _, doc in splits["train"] for sentence in doc)
        paper = facts["paper_train_tokens"]
        lines.append(f"| {facts['title']} | {ours:,} | {paper:,} | {100 * (ours - paper) / paper:+.2f} | {facts.get('table1_note', '')} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiments", nargs="*", type=Path, help="experiment files (default: experiments/ but its decomposition/ and long_pretraining/ grids)")
    parser.add_argument("--workspace", type=Path, default=REPO / "workspace")
    parser.add_argument("--out", type=Path, help="output folder (default: <workspace>/tables; docs/tables with --update-docs)")
    parser.add_argument("--update-docs", action="store_true",
                        help="write the committed record, docs/tables (cells this cache lacks keep their recorded values)")
    parser.add_argument("--scale", action="append", help="only these scales (repeatable)")
    parser.add_argument("--table1", action="store_true", help="only Table 1 (corpus sizes), counted from the data root")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if args.table1:
        target = (DOCS_TABLES if args.update_docs else (args.out or args.workspace / "tables")) / "table1.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(table1_markdown(), encoding="utf-8")
        print(f"wrote {target}")
        return 0
    out = args.out or (DOCS_TABLES if args.update_docs else args.workspace / "tables")
    files = args.experiments or table_files()
    cells, problems = collect_cells(files, args.workspace)
    # One line per distinct error: a missing treebank otherwise prints once per condition and scale.
    files_by_error: Dict[str, List[str]] = {}
    for path, error in problems:
        files_by_error.setdefault(error, []).append(path.name)
    for error, names in files_by_error.items():
        shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        print(f"skipped {len(names)} experiment file(s) ({shown}): {error}", file=sys.stderr)
    record = recorded_cells(cells)
    if args.scale:
        cells = [c for c in cells if c.scale in args.scale]
        record = [c for c in record if c.scale in args.scale]
    cached = [c for c in cells if c.result]
    # The record's cells join this cache's when the record itself is rewritten; else they are shown beside.
    shown = merge_record(cells, record) if args.update_docs else cells
    if args.update_docs:
        written = write_tables(shown, out, args.scale)
    else:
        written = write_tables(cells, out, args.scale or sorted({c.scale for c in cells + record}), record)
    for path in write_related_tables(shown, out, args.scale):
        written.setdefault(path.parent.name, []).append(path)
    if not args.experiments:  # the Wolof gap decomposition, beside the tables
        from reporting import decomposition

        runs = decomposition.finetune_runs(args.workspace)
        grid, effort = decomposition.decomposition_cells(args.workspace, runs=runs)
        target = decomposition.DOCS if args.update_docs else out / "decomposition"
        so_far = decomposition.seeds_so_far(runs, grid, decomposition.recorded_runs())
        written.setdefault("decomposition", []).extend(decomposition.write(grid, effort, target, so_far))
    damaged = [c for c in cells if c.damaged]
    print(f"{len(files)} experiment files, {len(cells)} table cells: {len(cached)} cached, "
          f"{len(cells) - len(cached) - len(damaged)} not cached (shown as —), {len(damaged)} damaged")
    for cell in damaged:
        print(f"  damaged: {cell.scale} {cell.table} {_row_title(cell.row)} {cell.column}: {cell.damaged}", file=sys.stderr)
    for cell in sorted(cached, key=lambda c: (c.scale, c.table, c.row, c.column)):
        print(f"  {cell.scale:6} {cell.table:30} {_row_title(cell.row):14} {cell.column:14} {format_mean_sd(cell.mean, cell.result['test']['sd'], cell.result['n'])}")
    for scale, paths in written.items():
        if not paths:
            print(f"{scale}: no table with a figure yet, nothing written")
            continue
        folders = sorted({str(path.parent) for path in paths})
        print(f"{scale}: wrote {len(paths)} files under {', '.join(folders)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
