"""Regenerate the paper's result tables from whatever the Tango cache holds; trains nothing.

    python -m reporting.tables                      # all experiment files, tables under docs/tables/
    python -m reporting.tables --scale cpu experiments/wolof_m.jsonnet experiments/wolof_random_init.jsonnet

For every experiment file, the config is built into its step graph (same ext vars as ``tango
run``: the environment) and each ``aggregate_cell`` step is looked up in the workspace cache by its
unique id, so a result shows up only if it was computed by the config as it is now. Cells that are
not cached print as "—".

Outputs per scale, under ``--out`` (default ``docs/tables``): ``<table>.md``, ``<table>.tex`` and
``<table>.csv`` for Tables 2, 3, 4 (both tasks) and 7–9, each computed value beside the paper's
published one (``configs/paper_tables.json``), and ``<table>_delta.png``: each condition's
difference from µB-M per language.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from reporting.languages import short_title
from steps.evaluate.scoring import format_mean_sd

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parent.parent
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
}


@dataclass
class Cell:
    """One (table, scale, row, column): the cached aggregate, or None if not cached yet."""

    table: str
    scale: str
    row: str
    column: str
    result: Optional[dict] = None
    experiments: List[str] = field(default_factory=list)

    @property
    def mean(self) -> Optional[float]:
        return self.result["test"]["mean"] if self.result else None


def paper_values(paper: dict, table: str) -> Tuple[List[str], List[str], Dict[str, Dict[str, Optional[float]]]]:
    """(columns, row order, rows) of a paper table; Table 4's two tasks are addressed as table4:<task>."""
    name, _, task = table.partition(":")
    spec = paper[name]
    if task:
        spec = spec["tasks"][task]
    conditions = paper[name].get("conditions") or list(spec["rows"])
    return list(spec["columns"]), list(conditions), spec["rows"]


def collect_cells(experiment_files: Sequence[Path], workspace_dir: Path) -> Tuple[List[Cell], List[Tuple[Path, str]]]:
    """Every aggregate_cell of the experiment files, with its cached result if there is one, and
    the (file, error) of each experiment file that could not be built."""
    import steps  # noqa: F401  (registers the step classes)
    from tango.common import Params
    from tango.step_graph import StepGraph
    from tango.workspaces import LocalWorkspace

    from steps.evaluate.scoring import AggregateCell

    workspace = LocalWorkspace(workspace_dir)
    cells: Dict[Tuple[str, str, str, str], Cell] = {}
    problems: List[Tuple[Path, str]] = []
    for path in experiment_files:
        try:
            params = Params.from_file(path, ext_vars=dict(os.environ))
            graph = StepGraph.from_params(params.pop("steps"))
        except Exception as error:  # a broken or data-less experiment must not hide the others
            problems.append((Path(path), f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"))
            continue
        for step in graph.values():
            if not isinstance(step, AggregateCell):
                continue
            first_score = step.kwargs["scores"][0]
            key = tuple(first_score.kwargs[k] for k in ("table", "scale", "row", "column"))
            cell = cells.setdefault(key, Cell(*key))
            cell.experiments.append(str(path))
            if cell.result is None and step in workspace.step_cache:
                cell.result = workspace.step_cache[step]
    return list(cells.values()), problems


def _mean_of(values: Iterable[Optional[float]]) -> Optional[float]:
    values = list(values)
    return statistics.fmean(values) if values and all(v is not None for v in values) else None


def build_table(table: str, scale: str, cells: Sequence[Cell], paper: dict):
    """Rows of (row name, [(ours text, ours mean, paper value) per column]) for one table/scale."""
    columns, paper_rows, paper_cells = paper_values(paper, table)
    languages = [c for c in columns if c != "avg"]
    ours = {(c.row, c.column): c for c in cells if c.table == table and c.scale == scale}
    extra_columns = sorted({col for (_, col) in ours if col not in columns})
    languages += extra_columns
    columns = languages + (["avg"] if "avg" in columns else [])
    rows = list(paper_rows) + sorted({row for (row, _) in ours} - set(paper_rows))
    table_rows = []
    for row in rows:
        entries = []
        for column in columns:
            published = paper_cells.get(row, {}).get(column)
            if column == "avg":
                mean = _mean_of(ours[(row, c)].mean if (row, c) in ours else None for c in languages if c not in extra_columns)
                text = format_mean_sd(mean, None, 1)
            else:
                cell = ours.get((row, column))
                mean = cell.mean if cell else None
                text = format_mean_sd(mean, cell.result["test"]["sd"], cell.result["n"]) if cell and cell.result else "—"
            entries.append((text, mean, published))
        table_rows.append((row, entries))
    return columns, table_rows


def _row_title(row: str) -> str:
    return row if row.startswith(("mBERT", "random")) or row not in _CONDITION_LIKE else f"µB-{row}"


_CONDITION_LIKE = {"M", "MP", "MT", "MPT", "MPT-SLA", "MX", "MXP", "MXT", "MXPT", "MXPT-SLA", "M*", "MX*"}


def _paper_text(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.2f}"


def to_markdown(title: str, columns, table_rows) -> str:
    header = "| model | " + " | ".join(f"{short_title(c)} ours | paper" for c in columns) + " |"
    rule = "|---|" + "---|---|" * len(columns)
    lines = [f"### {title}", "", header, rule]
    for row, entries in table_rows:
        lines.append(f"| {_row_title(row)} | " + " | ".join(f"{text} | {_paper_text(paper)}" for text, _, paper in entries) + " |")
    return "\n".join(lines) + "\n"


def to_latex(title: str, columns, table_rows) -> str:
    def escape(text: str) -> str:
        return text.replace("±", r"$\pm$").replace("—", "--").replace("µ", r"$\mu$").replace("_", r"\_")

    spec = "l" + "rr" * len(columns)
    lines = [r"\begin{table}", r"\centering", rf"\begin{{tabular}}{{{spec}}}", r"\hline",
             "Model & " + " & ".join(rf"\multicolumn{{2}}{{c}}{{{escape(short_title(c))}}}" for c in columns) + r" \\",
             " & " + " & ".join(["ours & paper"] * len(columns)) + r" \\", r"\hline"]
    for row, entries in table_rows:
        lines.append(escape(_row_title(row)) + " & " + " & ".join(f"{escape(text)} & {escape(_paper_text(paper))}" for text, _, paper in entries) + r" \\")
    lines += [r"\hline", r"\end{tabular}", rf"\caption{{{escape(title)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def to_csv(table: str, scale: str, columns, table_rows, cells: Sequence[Cell]) -> str:
    by_key = {(c.row, c.column): c for c in cells if c.table == table and c.scale == scale}
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["table", "scale", "row", "column", "ours_mean", "ours_sd", "seeds", "paper"])
    for row, entries in table_rows:
        for column, (_, mean, paper) in zip(columns, entries):
            cell = by_key.get((row, column))
            sd = cell.result["test"]["sd"] if cell and cell.result else None
            seeds = " ".join(map(str, cell.result["seeds"])) if cell and cell.result else ""
            writer.writerow([table, scale, row, column, "" if mean is None else f"{mean:.4f}",
                             "" if sd is None else f"{sd:.4f}", seeds, "" if paper is None else paper])
    return out.getvalue()


def delta_plot(path: Path, title: str, columns, table_rows) -> bool:
    """Bar chart of (condition − µB-M) per language for our computed values; False if nothing to plot."""
    languages = [c for c in columns if c != "avg"]
    ours = {row: [mean for _, mean, _ in entries] for row, entries in table_rows}
    if "M" not in ours:
        return False
    baseline = ours["M"]
    series = {}
    for row, means in ours.items():
        if row == "M":
            continue
        deltas = [None if (m is None or b is None) else m - b for m, b in zip(means, baseline)][: len(languages)]
        if any(d is not None for d in deltas):
            series[row] = deltas
    if not series:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(1.2 + 1.1 * len(languages) * max(1, len(series)) ** 0.5, 3.2))
    width = 0.8 / len(series)
    for index, (row, deltas) in enumerate(series.items()):
        xs = [i + index * width for i, d in enumerate(deltas) if d is not None]
        axis.bar(xs, [d for d in deltas if d is not None], width=width, label=_row_title(row))
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(languages))])
    axis.set_xticklabels([short_title(c) for c in languages])
    axis.set_ylabel("Δ vs µB-M")
    axis.set_title(title, fontsize=9)
    axis.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def write_tables(cells: Sequence[Cell], out_dir: Path, scales: Optional[Sequence[str]] = None) -> Dict[str, List[Path]]:
    """Write every table for every scale that has cells; returns {scale: written files}."""
    paper = json.loads(PAPER_TABLES.read_text())
    written: Dict[str, List[Path]] = {}
    for scale in sorted({c.scale for c in cells} if scales is None else scales):
        directory = out_dir / scale
        directory.mkdir(parents=True, exist_ok=True)
        files = written.setdefault(scale, [])
        for table, title in TABLE_TITLES.items():
            columns, table_rows = build_table(table, scale, cells, paper)
            stem = table.replace(":", "_")
            full_title = f"{title} — {scale} scale"
            for suffix, text in (("md", to_markdown(full_title, columns, table_rows)),
                                 ("tex", to_latex(full_title, columns, table_rows)),
                                 ("csv", to_csv(table, scale, columns, table_rows, cells))):
                target = directory / f"{stem}.{suffix}"
                target.write_text(text, encoding="utf-8")
                files.append(target)
            png = directory / f"{stem}_delta.png"
            if delta_plot(png, full_title, columns, table_rows):
                files.append(png)
            elif png.exists():
                png.unlink()  # a plot from an older cache state would now be wrong
    return written


def markdown_summary(cells: Sequence[Cell], scales: Optional[Sequence[str]] = None) -> str:
    """The computed tables (only those with at least one cached cell) as one Markdown string."""
    paper = json.loads(PAPER_TABLES.read_text())
    parts = []
    for scale in sorted({c.scale for c in cells} if scales is None else scales):
        for table, title in TABLE_TITLES.items():
            if not any(c.table == table and c.scale == scale and c.result for c in cells):
                continue
            columns, table_rows = build_table(table, scale, cells, paper)
            shown = [(row, entries) for row, entries in table_rows if any(mean is not None for _, mean, _ in entries) or row in ("M", "MXPT-SLA")]
            parts.append(to_markdown(f"{title} — {scale} scale", columns, shown))
    return "\n".join(parts)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiments", nargs="*", type=Path, help="experiment files (default: experiments/**/*.jsonnet)")
    parser.add_argument("--workspace", type=Path, default=REPO / "workspace")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "tables")
    parser.add_argument("--scale", action="append", help="only these scales (repeatable)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    files = args.experiments or sorted((REPO / "experiments").rglob("*.jsonnet"))
    cells, problems = collect_cells(files, args.workspace)
    # One line per distinct error: a missing treebank otherwise prints once per condition and scale.
    files_by_error: Dict[str, List[str]] = {}
    for path, error in problems:
        files_by_error.setdefault(error, []).append(path.name)
    for error, names in files_by_error.items():
        shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        print(f"skipped {len(names)} experiment file(s) ({shown}): {error}", file=sys.stderr)
    if args.scale:
        cells = [c for c in cells if c.scale in args.scale]
    cached = [c for c in cells if c.result]
    written = write_tables(cells, args.out, args.scale)
    print(f"{len(files)} experiment files, {len(cells)} table cells, {len(cached)} cached")
    for cell in sorted(cached, key=lambda c: (c.scale, c.table, c.row, c.column)):
        print(f"  {cell.scale:6} {cell.table:30} {_row_title(cell.row):14} {cell.column:14} {format_mean_sd(cell.mean, cell.result['test']['sd'], cell.result['n'])}")
    for scale, paths in written.items():
        print(f"{scale}: wrote {len(paths)} files under {args.out / scale}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
