"""Where Wolof µB-M's missing LAS go, from the cache: five encoders × five
fine-tuning regimes (experiments/decomposition/decomposition.libsonnet), and each factor's effect as a paired
difference over the fine-tuning seeds the two cells share.

    python -m reporting.tables [--update-docs]  # also writes workspace/tables/decomposition/ (docs/decomposition/)
    python -m reporting.report                  # section "Where the Wolof gap is"

The factors, one at a time:

* pretraining at all: cpu µBERT − random-init (same vocabulary, same fine-tuning);
* position embeddings: cpu_relpos − cpu (the reference code's relative_key_query positions, its BertConfig, against stock BERT's absolute ones);
* pretraining compute: long − cpu (the same 11k rows, 27× the rows seen);
* the paper's pretraining: paper − long (the whole 34k-sentence corpus, the reference's schedule of 62,500 steps × 256),
  paper − cpu (both at once, where no long cell is cached beside it) and paper − random-init
  (against no pretraining);
* the fine-tuning regime, for each encoder: cpu_x2 − cpu (length alone), paper_tenth − cpu and
  paper − paper_tenth;
* the head's fidelity to AllenNLP's: paper_tenth_reference − paper_tenth (the embedder's scalar mix
  without the embedding layer; the parser's variational dropout);
* the NER optimizer's: paper_ner_decay − paper (AllenNLP's ``adamw`` weight decay, 0.01, where the NER
  step's default is 0), for the `paper` encoder's NER cell alone.

Beside each cell, the fine-tuning steps it ran and its best epoch (mean over seeds), from every
seed's ``metrics.json``: how much of the paper regime's 60,000-step allowance early stopping used.
Like the paper tables, a cell this cache lacks keeps the committed record's value, marked †.
"""
from __future__ import annotations

import csv
import io
import json
import re
import statistics
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from reporting.cells import CSV_FIELDS, PREDICTIONS, Cell, collect_cells, dev_values_text, merge_record, record_cells
from reporting.graphs import REPO, FileGraph, cached_result, display_path, load_graphs
from reporting.significance import paired_difference
from steps.common.formats import DamagedCacheEntry
from steps.evaluate.scoring import format_mean_sd

FOLDER = REPO / "experiments" / "decomposition"
RECORD = "decomposition"  # the file stem
DOCS = REPO / "docs" / "decomposition"  # the committed record (not under docs/tables: its cells are no paper table's)
RUNS_CSV = REPO / "docs" / "runs.csv"  # every committed fine-tuning run, one row each (reporting.report)
# Grid cells whose fine-tunes are another file's own steps (same unique IDs, tests/data/step_ids.json), by
# (encoder, regime): that file's row in runs.csv, (scale, row). The long encoder under the cpu regime is
# experiments/long_pretraining/wolof_m.jsonnet, whose predictions are not committed.
SAME_STEPS_IN_RUNS = {("long", "cpu"): ("cpu", "M-long")}
ENCODERS = ("random-init", "cpu", "cpu_relpos", "long", "paper")
REGIMES = ("cpu", "cpu_x2", "paper_tenth", "paper_tenth_reference", "paper", "paper_ner_decay")
# Regimes that change one task of another regime, run for some encoders only: {regime: (encoders, tables)}.
NARROW_REGIMES = {"paper_ner_decay": (("paper",), ("decomposition:ner",))}
TASKS = {"decomposition:ud": ("UD", "test LAS"), "decomposition:ner": ("NER", "test F1")}
# The paper's table of each grid task: the paper-scale µB-M file's cells there are the grid's `paper` encoder's fine-tunes.
PAPER_SCALE_TABLES = {"decomposition:ud": "table2", "decomposition:ner": "table3"}
PAPER = {"decomposition:ud": 77.71, "decomposition:ner": 83.40}  # the paper's Wolof µB-M (Tables 2, 3)
FACTORS = (  # (what, cell, baseline), cells as (encoder, regime); "*" takes each regime / encoder
    ("pretraining at all (cpu − random-init)", ("cpu", "*"), ("random-init", "*")),
    ("the reference's relative positions, not absolute ones (cpu_relpos − cpu)", ("cpu_relpos", "*"), ("cpu", "*")),
    ("27× the pretraining rows (long − cpu)", ("long", "*"), ("cpu", "*")),
    ("the paper's corpus and schedule (paper − long)", ("paper", "*"), ("long", "*")),
    ("the paper's pretraining, all of it (paper − cpu)", ("paper", "*"), ("cpu", "*")),
    ("the paper's pretraining against none (paper − random-init)", ("paper", "*"), ("random-init", "*")),
    ("fine-tuning twice as long, 40 epochs (cpu_x2 − cpu regime)", ("*", "cpu_x2"), ("*", "cpu")),
    ("the paper's head and rates, 30 epochs (paper_tenth − cpu regime)", ("*", "paper_tenth"), ("*", "cpu")),
    ("AllenNLP's embedder mix and dropout (paper_tenth_reference − paper_tenth)", ("*", "paper_tenth_reference"), ("*", "paper_tenth")),
    ("the full paper regime (paper − paper_tenth)", ("*", "paper"), ("*", "paper_tenth")),
    ("the reference's NER weight decay, 0.01 (paper_ner_decay − paper)", ("*", "paper_ner_decay"), ("*", "paper")),
)
EXTRA_FIELDS = ["steps_run", "best_epoch"]


def files() -> List[Path]:
    return sorted(FOLDER.glob("*.jsonnet"))


def regimes_of(table: str) -> List[str]:
    """The grid's regime columns for one task."""
    return [r for r in REGIMES if r not in NARROW_REGIMES or table in NARROW_REGIMES[r][1]]


def grid_files() -> List[str]:
    """The file name of every (encoder, regime) cell the grid has."""
    return sorted(f"wolof_{encoder.replace('-', '_')}_{regime}.jsonnet" for regime in REGIMES
                  for encoder in NARROW_REGIMES.get(regime, (ENCODERS,))[0])


def _finetune_runs(graphs: Sequence[FileGraph], workspace_dir: Path) -> Dict[Tuple[str, str, str], List[dict]]:
    """{(table, encoder, regime): [each cached seed's fine-tuning metrics.json]}."""
    found: Dict[Tuple[str, str, str], Dict[str, dict]] = {}
    for graph in graphs:
        for cell in graph.cells:
            if not cell["table"].startswith("decomposition:"):
                continue
            task = "ud_parser" if cell["table"].endswith(":ud") else "ner"
            for name, (_, unique_id) in graph.steps.items():
                if not re.fullmatch(rf"{task}_s\d+", name):  # the fine-tuning of one seed (lib.libsonnet's names)
                    continue
                try:
                    location = cached_result(workspace_dir, unique_id)
                except DamagedCacheEntry:  # the cell itself reports it
                    location = None
                metrics = Path(location) / "metrics.json" if location is not None else None
                if metrics is not None and metrics.exists():  # keyed by step ID: a run two graphs share counts once
                    found.setdefault((cell["table"], cell["row"], cell["scale"]), {})[unique_id] = json.loads(metrics.read_text())
    return {key: list(runs.values()) for key, runs in found.items()}


def _finetune_effort(runs: Dict[Tuple[str, str, str], List[dict]]) -> Dict[Tuple[str, str, str], Tuple[float, float]]:
    """{(table, encoder, regime): (mean steps run, mean best epoch)} over the cached fine-tunings."""
    return {key: (_mean_of_known(m.get("steps") for m in seeds), _mean_of_known(m.get("best_epoch") for m in seeds))
            for key, seeds in runs.items()}


# The dev curve of each task: (history field of x, of y, axis labels). UD's x is the step, as the
# paper regimes' epochs are 200 batches and the cpu ones' a pass over the train split (75).
CURVE_FIELDS = {"decomposition:ud": ("step", "las", "fine-tuning step", "dev LAS"),
                "decomposition:ner": ("epoch", "dev_f1", "epoch", "dev span F1")}


def dev_curves(runs: Dict[Tuple[str, str, str], List[dict]]) -> Dict[str, Dict[Tuple[str, str], List[Tuple[float, float, int]]]]:
    """{table: {(encoder, regime): [(x, mean dev over the seeds that reached x, how many)]}}."""
    curves: Dict[str, Dict[Tuple[str, str], List[Tuple[float, float, int]]]] = {}
    for (table, encoder, regime), seeds in runs.items():
        x_field, y_field = CURVE_FIELDS[table][:2]
        at: Dict[float, List[float]] = {}
        for metrics in seeds:
            for record in metrics.get("history") or []:
                if isinstance(record.get(x_field), (int, float)) and isinstance(record.get(y_field), (int, float)):
                    at.setdefault(record[x_field], []).append(record[y_field])
        if at:
            curves.setdefault(table, {})[(encoder, regime)] = [(x, statistics.fmean(ys), len(ys)) for x, ys in sorted(at.items())]
    return curves


def draw_dev_curves(runs: Dict[Tuple[str, str, str], List[dict]], path: Path, keep_recorded: bool = False) -> Optional[Path]:
    """One PNG, a panel per task, a line per cached (encoder, regime) cell: the mean dev score by
    step over its seeds, the paper's µB-M figure dotted; its lines also go to a ``.json`` sidecar.
    None (nothing written) when no cell is cached. ``keep_recorded`` (the committed record): the
    committed figure's cells stay, redrawn from its sidecar (this cache's win for a cell both have);
    a committed figure without a sidecar cannot be merged and is left as it is (None)."""
    curves = dev_curves(runs)
    if not curves:
        return None
    from reporting.curves import recorded_lines, save_lines

    path = Path(path)
    recorded = recorded_lines(path, keep_recorded)  # lines "<table>|<encoder>|<regime>"
    if recorded is None:
        return None
    for key, points in recorded.items():
        table, encoder, regime = key.split("|")
        curves.setdefault(table, {}).setdefault((encoder, regime), points)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(TASKS), figsize=(11, 3.8))
    for axis, (table, (task, _)) in zip(axes, TASKS.items()):
        x_label, y_label = CURVE_FIELDS[table][2:]
        for (encoder, regime), points in sorted(curves.get(table, {}).items(), key=lambda kv: (ENCODERS.index(kv[0][0]), REGIMES.index(kv[0][1]))):
            seeds = max(n for *_, n in points)
            axis.plot([x for x, *_ in points], [y for _, y, _ in points], linewidth=1.2,
                      label=f"encoder {encoder}, regime {regime} ({seeds} seeds)")
        axis.axhline(PAPER[table], color="black", linestyle=":", linewidth=1, label=f"paper µB-M {PAPER[table]:.2f}")
        axis.set_ylim(bottom=max(0.0, min([y for pts in curves.get(table, {}).values() for _, y, _ in pts[len(pts) // 4:]] or [0]) - 5))
        axis.set_xlabel(x_label)
        axis.set_ylabel(f"{y_label} (mean over seeds)")
        axis.set_title(f"Wolof {task}: {y_label} while fine-tuning", fontsize=9)
        axis.legend(fontsize=6)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    save_lines(path, {f"{table}|{encoder}|{regime}": points for table, cells in curves.items() for (encoder, regime), points in cells.items()})
    return path


def _mean_of_known(values) -> Optional[float]:
    """The mean of the values that are not None; None if there are none."""
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def _grid_graphs(workspace_dir: Path, graphs: Optional[Sequence[FileGraph]]) -> List[FileGraph]:
    """The decomposition files' graphs (from ``graphs`` when given, else built)."""
    paths = files()
    wanted = {display_path(p) for p in paths}
    return [g for g in (load_graphs(paths, workspace_dir) if graphs is None else graphs) if g.path in wanted]


def finetune_runs(workspace_dir: Path, graphs: Optional[Sequence[FileGraph]] = None) -> Dict[Tuple[str, str, str], List[dict]]:
    """Every cached fine-tuning of the grid's cells (``_finetune_runs``), for ``decomposition_cells``
    and ``draw_dev_curves`` to share one read of the metrics files."""
    return _finetune_runs(_grid_graphs(workspace_dir, graphs), workspace_dir)


def decomposition_cells(workspace_dir: Path, graphs: Optional[Sequence[FileGraph]] = None,
                        keep_record: bool = True, runs: Optional[Dict[Tuple[str, str, str], List[dict]]] = None) -> Tuple[List[Cell], Dict]:
    """The grid's cells (cached, else the record's when ``keep_record``) and the fine-tuning effort
    {(table, encoder, regime): (steps run, best epoch)} (cache, else record); ``runs``: the grid's
    fine-tunings when the caller has read them already (``finetune_runs``)."""
    paths = files()
    graphs = _grid_graphs(workspace_dir, graphs)
    cells, _ = collect_cells(paths, workspace_dir, graphs)
    runs = _finetune_runs(graphs, workspace_dir) if runs is None else runs
    # A cell's effort comes from where its value does: a few cached seeds of a cell whose value is
    # the record's must not annotate it (they would pair the record's LAS with another run's epochs).
    cached = {(cell.table, cell.row, cell.scale) for cell in cells if cell.result}
    effort = {key: value + (False,) for key, value in _finetune_effort(runs).items() if key in cached}
    if keep_record:
        cells = merge_record(cells, record_cells(DOCS, pattern=f"{RECORD}.csv"))
        for (table, encoder, regime), value in recorded_effort().items():
            effort.setdefault((table, encoder, regime), value + (True,))
    return cells, effort


def recorded_effort() -> Dict[Tuple[str, str, str], Tuple[Optional[float], Optional[float]]]:
    path = DOCS / f"{RECORD}.csv"
    if not path.exists():
        return {}
    number = lambda text: float(text) if text else None  # noqa: E731
    return {(line["table"], line["row"], line["scale"]): (number(line["steps_run"]), number(line["best_epoch"]))
            for line in csv.DictReader(path.open(encoding="utf-8"))}


def _by_key(cells: Sequence[Cell]) -> Dict[Tuple[str, str, str], Cell]:
    return {(c.table, c.row, c.scale): c for c in cells if c.table in TASKS and c.result}


def factor_rows(cells: Sequence[Cell]) -> List[Tuple[str, str, str, str, str]]:
    """(task, factor, where, Δ text, seeds) for every factor pair with both cells cached."""
    by_key = _by_key(cells)
    rows = []
    for table, (task, _) in TASKS.items():
        for what, (cell_encoder, cell_regime), (base_encoder, base_regime) in FACTORS:
            fixed = REGIMES if cell_encoder != "*" else ENCODERS
            for value in fixed:
                cell_key = (table, value if cell_encoder == "*" else cell_encoder, value if cell_regime == "*" else cell_regime)
                base_key = (table, value if base_encoder == "*" else base_encoder, value if base_regime == "*" else base_regime)
                if cell_key in by_key and base_key in by_key:
                    difference = paired_difference(by_key[cell_key].result, by_key[base_key].result)
                    where = f"regime {value}" if cell_encoder != "*" else f"encoder {value}"
                    recorded = " †" if by_key[cell_key].recorded or by_key[base_key].recorded else ""
                    rows.append((task, what, where, difference.text() + recorded, str(difference.n)))
    return rows


class SeedsSoFar(NamedTuple):
    """(test, dev) of the finished seeds of a cell with no aggregate yet; ``recorded``: read from the
    committed predictions (`recorded_runs`), not from this cache."""

    seeds: List[Tuple[float, Optional[float]]]
    recorded: bool = False


def seeds_so_far(runs: Dict[Tuple[str, str, str], List[dict]], cells: Sequence[Cell],
                 recorded: Optional[Dict[Tuple[str, str, str], List[dict]]] = None) -> Dict[Tuple[str, str, str], SeedsSoFar]:
    """The finished seeds of each cell with no aggregate yet (seeds still running, or run in other caches),
    {(table, encoder, regime): SeedsSoFar}: shown beside the "—" of a cell that is not a cell yet.
    ``recorded`` (`recorded_runs`): the committed seeds this cache has not run (a cell's seeds may
    finish on several machines), marked ``recorded``."""
    done = set(_by_key(cells))
    # Each seed's figure at runs.csv's precision, so that the grid, the headline and the paper's-question
    # table (which reads runs.csv rows) give one mean for the same seeds.
    rounded = lambda value: None if value is None else round(value, 2)  # noqa: E731
    figures = lambda seeds: [(rounded(m["test"][m["primary_metric"]]), rounded((m.get("dev") or {}).get(m["primary_metric"])))  # noqa: E731
                             for m in seeds]
    recorded = recorded or {}
    so_far = {}
    for key in list(runs) + [key for key in recorded if key not in runs]:
        cached = runs.get(key) or []
        ran_here = {run.get("seed") for run in cached}
        earlier = [m for m in recorded.get(key, []) if m.get("seed") not in ran_here]
        if key not in done and (cached or earlier):
            seeds = sorted(cached + earlier, key=lambda m: m.get("seed") or 0)
            so_far[key] = SeedsSoFar(figures(seeds), recorded=bool(earlier))
    return so_far


def recorded_runs(predictions: Path = PREDICTIONS, runs_csv: Path = RUNS_CSV) -> Dict[Tuple[str, str, str], List[dict]]:
    """The committed fine-tunings of the grid's cells, {(table, encoder, regime): [metrics, …]}, from
    ``tools/export_predictions.py``'s folders ``decomposition/<regime>/<ud|ner>/<encoder>/wolof/seed*/``:
    what a new machine's empty cache still knows of runs that finished elsewhere.

    The `paper` encoder's fine-tunes are the paper-scale µB-M file's own steps (experiments/paper and
    experiments/decomposition/wolof_paper_<regime>.jsonnet share their IDs), so that file's committed
    seeds, ``gpu-<regime>/<table2|table3>/M/wolof/seed*/``, count too where the grid's folders lack the seed;
    and so do the runs.csv rows of the other files whose fine-tunes are a grid cell's (``SAME_STEPS_IN_RUNS``)."""
    runs: Dict[Tuple[str, str, str], List[dict]] = {}
    for metrics in sorted((predictions / "decomposition").glob("*/*/*/wolof/seed*/metrics.json")):
        regime, task, encoder = metrics.parts[-6:-3]
        if f"decomposition:{task}" in TASKS and regime in REGIMES and encoder in ENCODERS:
            runs.setdefault((f"decomposition:{task}", encoder, regime), []).append(json.loads(metrics.read_text(encoding="utf-8")))
    for task, table in PAPER_SCALE_TABLES.items():
        for regime in REGIMES:
            key = (task, "paper", regime)
            have = {run.get("seed") for run in runs.get(key, [])}
            for metrics in sorted((predictions / f"gpu-{regime}" / table / "M" / "wolof").glob("seed*/metrics.json")):
                run = json.loads(metrics.read_text(encoding="utf-8"))
                if run.get("seed") not in have:
                    runs.setdefault(key, []).append(run)
    rows = list(csv.DictReader(runs_csv.open(encoding="utf-8"))) if runs_csv.exists() else []
    number = lambda text: float(text) if text else None  # noqa: E731
    for (encoder, regime), (scale, row) in SAME_STEPS_IN_RUNS.items():
        for task, table in PAPER_SCALE_TABLES.items():
            key = (task, encoder, regime)
            have = {run.get("seed") for run in runs.get(key, [])}
            for line in rows:
                if (line["scale"], line["table"], line["row"], line["column"]) == (scale, table, row, "wolof") and int(line["seed"]) not in have:
                    metric = line["metric"]
                    runs.setdefault(key, []).append({"seed": int(line["seed"]), "primary_metric": metric,
                                                     "test": {metric: number(line["test"])}, "dev": {metric: number(line["dev"])}})
                    have.add(int(line["seed"]))
    return runs


def markdown(cells: Sequence[Cell], effort: Dict, so_far: Optional[Dict] = None) -> str:
    """The grid (test mean ± sd, dev, fine-tuning effort per cell) and each factor's paired difference;
    ``so_far`` (`seeds_so_far`): finished seeds of cells with no aggregate, under their "—"."""
    by_key = _by_key(cells)
    # Every figure from the record (cells, and the seeds so far from the committed predictions): one
    # provenance line instead of a † on each.
    shown_so_far = [f for key, f in (so_far or {}).items() if key not in by_key and f.seeds]
    only_record = bool(by_key) and all(c.recorded for c in by_key.values()) and all(f.recorded for f in shown_so_far)
    mark = "" if only_record else " †"
    lines = []
    for table, (task, metric) in TASKS.items():
        lines += [f"{task} {metric} (mean ± sd over seeds; the paper's Wolof µB-M: {PAPER[table]:.2f}); "
                  "under each, dev and the fine-tuning steps run (best epoch):", "",
                  "| encoder (mean ± sd over seeds) | " + " | ".join(f"regime {r}" for r in regimes_of(table)) + " |",
                  "|---|" + "---|" * len(regimes_of(table))]
        for encoder in ENCODERS:
            texts = []
            for regime in regimes_of(table):
                cell = by_key.get((table, encoder, regime))
                if cell is None:
                    finished = (so_far or {}).get((table, encoder, regime))
                    seeds = finished.seeds if finished else []
                    texts.append("—" if not seeds else
                                 f"—<br>{len(seeds)} finished seed{'s' if len(seeds) > 1 else ''}, no aggregate yet: test "
                                 f"{statistics.fmean(t for t, _ in seeds):.2f}"
                                 + (f", dev {statistics.fmean(d for _, d in seeds):.2f}" if all(d is not None for _, d in seeds) else "")
                                 + (mark if finished.recorded else ""))
                    continue
                test, dev = cell.result["test"], cell.result.get("dev") or {}
                steps, best, kept = effort.get((table, encoder, regime), (None, None, False))
                text = format_mean_sd(test["mean"], test["sd"], cell.result["n"]) + (mark if cell.recorded else "")
                text += f"<br>dev {dev['mean']:.2f}" if dev.get("mean") is not None else ""
                text += f"<br>{steps:,.0f} steps (best epoch {best:.1f})" if steps is not None and best is not None else ""
                texts.append(text)
            lines.append(f"| {encoder} | " + " | ".join(texts) + " |")
        lines.append("")
    rows = [row if mark else row[:3] + (row[3].replace(" †", ""),) + row[4:] for row in factor_rows(cells)]
    lines += ["Each factor alone: the difference between two cells, paired by the fine-tuning seeds both share "
              "(mean ± the 95% t-interval):", ""]
    if rows:
        lines += ["| task | factor | where | Δ ± 95% CI | seeds |", "|---|---|---|---|---|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    else:
        lines.append("_no factor has both of its cells cached yet_")
    if only_record:
        lines += ["", "Provenance: every figure is the committed record (docs/decomposition/; the finished seeds of a "
                      "cell with no aggregate: docs/predictions/, docs/runs.csv), not recomputed by the cache that wrote this."]
    elif any(c.recorded for c in by_key.values()) or any(f.recorded for f in shown_so_far):
        lines += ["", "† not in the cache that wrote this: the committed record's value (docs/decomposition/, "
                      "the finished seeds of a cell with no aggregate: docs/predictions/, docs/runs.csv), kept."]
    if any(c.recorded and encoder == "paper" for (_, encoder, _), c in by_key.items()):
        # Same step ID, two pretrainings: a record cell does not say which one it was fine-tuned from.
        lines += ["", "The record's `paper` encoder is the paper-scale µB-M's first pretraining in the cells run before "
                      "the second pretraining, and the released one (releases/wolof/m-paper-s42, that of the paper-scale "
                      "Tables 2 and 3) in those run since (docs/predictions/README.md; the two are compared in "
                      "\"µB-M pretrained again at the paper's scale\")."]
    files_text = ", ".join(f"`{p.name}`" for p in files()[:2])
    lines += ["", f"Cells: `tango run experiments/decomposition/<file>` ({len(files())} files, e.g. {files_text}; "
              "decomposition.libsonnet there says what each encoder and regime is); the random-init, cpu and cpu_relpos "
              "cells of the cpu, cpu_x2 and paper_tenth regimes fit a 2-core machine, as do the `paper` encoder's NER cells "
              "once its release is restored (releases/README.md); the rest need a GPU "
              "(`python tools/jobs.py run experiments/decomposition/<file> --budget SECONDS`)."]
    return "\n".join(lines) + "\n"


def to_csv(cells: Sequence[Cell], effort: Dict) -> str:
    """The record: the tables' CSV fields (reporting.cells.record_cells reads it back) plus steps run
    and best epoch."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_FIELDS + EXTRA_FIELDS)
    number = lambda value: "" if value is None else f"{value:.4f}"  # noqa: E731
    for (table, encoder, regime), cell in sorted(_by_key(cells).items()):
        test = cell.result["test"]
        steps, best, _ = effort.get((table, encoder, regime), (None, None, False))
        row = {"table": table, "scale": regime, "row": encoder, "column": "wolof", "ours_mean": number(test["mean"]),
               "ours_sd": number(test["sd"]), "seeds": " ".join(map(str, cell.result["seeds"])),
               "test_values": " ".join(f"{v:.4f}" for v in test.get("values") or []),
               "source": "record" if cell.recorded else "cache", "dev_values": dev_values_text(cell.result), "steps_run": number(steps), "best_epoch": number(best)}
        writer.writerow([row.get(field, "") for field in CSV_FIELDS + EXTRA_FIELDS])
    return out.getvalue()


def write(cells: Sequence[Cell], effort: Dict, directory: Path, so_far: Optional[Dict] = None) -> List[Path]:
    """decomposition.md and decomposition.csv (the record's form: whole cells only) in ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in ((f"{RECORD}.md", "### Where the Wolof gap is: encoders × fine-tuning regimes\n\n" + markdown(cells, effort, so_far)),
                       (f"{RECORD}.csv", to_csv(cells, effort))):
        (directory / name).write_text(text, encoding="utf-8")
        written.append(directory / name)
    return written
