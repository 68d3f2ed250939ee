"""The cells of the result tables: one (table, scale, row, column) each, with the aggregate_cell
result the workspace cache holds for it or the committed record's (``docs/tables``, CSV); the
paper tables (`reporting.tables`) and the Wolof gap decomposition (`reporting.decomposition`)
both read and write them through here."""
from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from reporting.graphs import REPO, FileGraph, cached_result, display_path, load_graphs
from reporting.significance import Difference
from steps.common.formats import DamagedCacheEntry

PREDICTIONS = REPO / "docs" / "predictions"  # tools/export_predictions.py's committed runs


@dataclass
class Cell:
    """One (table, scale, row, column): the cached aggregate, or None if not cached yet."""

    table: str
    scale: str
    row: str
    column: str
    result: Optional[dict] = None
    experiments: List[str] = field(default_factory=list)
    planned_seeds: List[int] = field(default_factory=list)  # every seed its experiment files fine-tune
    recorded: bool = False  # the result is the committed record's (docs/tables), not this cache's
    damaged: Optional[str] = None  # why the cached entry could not be used (shown as "—", reported)

    @property
    def mean(self) -> Optional[float]:
        return self.result["test"]["mean"] if self.result else None


def collect_cells(experiment_files: Sequence[Path], workspace_dir: Path,
                  graphs: Optional[Sequence[FileGraph]] = None) -> Tuple[List[Cell], List[Tuple[Path, str]]]:
    """Every aggregate_cell of the experiment files, with its cached result if there is one, and
    the (file, error) of each experiment file that could not be built. ``graphs``: the files'
    graphs if the caller has them already (reporting.graphs.load_graphs)."""
    if graphs is None:
        graphs = load_graphs(experiment_files, workspace_dir)
    wanted = {display_path(path) for path in experiment_files}
    cells: Dict[Tuple[str, str, str, str], Cell] = {}
    problems: List[Tuple[Path, str]] = []
    for graph in graphs:
        if graph.path not in wanted:
            continue
        if graph.error:
            problems.append((Path(graph.path), graph.error))
            continue
        for found in graph.cells:
            key = tuple(found[k] for k in ("table", "scale", "row", "column"))
            cell = cells.setdefault(key, Cell(*key))
            cell.experiments.append(graph.path)
            cell.planned_seeds = sorted(set(cell.planned_seeds) | {seed for seed in found.get("seeds", []) if seed is not None})
            # Several files can build one cell with other seeds (experiments/: one seed; benchmarks/seeds:
            # 3 or 5): the cached result with the most seeds is the cell's.
            try:
                result = checked_aggregate(cached_result(workspace_dir, found["unique_id"]),
                                           Path(workspace_dir) / "cache" / found["unique_id"])
            except DamagedCacheEntry as error:
                if cell.result is None:
                    cell.damaged = str(error)
                continue
            if result is not None and (cell.result is None or result["n"] > cell.result["n"]):
                cell.result, cell.damaged = result, None
    return list(cells.values()), problems


def checked_aggregate(result: Optional[dict], entry: Path) -> Optional[dict]:
    """An aggregate_cell result as the tables use it, or DamagedCacheEntry: a table never shows a
    number from an entry that does not hold what aggregate_cell writes."""
    if result is None:
        return None
    try:
        n, seeds, test = result["n"], result["seeds"], result["test"]
        values, mean = test["values"], test["mean"]
        sound = (isinstance(n, int) and n == len(seeds) >= 1 and all(isinstance(v, (int, float)) for v in values)
                 and (mean is None if not values else isinstance(mean, (int, float)) and abs(statistics.fmean(values) - mean) < 1e-9))
    except (KeyError, TypeError):
        sound = False
    if not sound:
        raise DamagedCacheEntry(f"{entry}: damaged cache entry, not an aggregate_cell result; "
                                f"delete this folder and run again to recompute it")
    return result


CSV_FIELDS = ["table", "scale", "row", "column", "ours_mean", "ours_sd", "seeds", "paper", "test_values", "source",
              "delta", "delta_from", "delta_ci95", "delta_seeds", "delta_note", "dev_values"]


def dev_values_text(result: Optional[Dict]) -> str:
    """A cell's per-seed dev scores for the record, so a lost cache does not take them with it."""
    values = ((result or {}).get("dev") or {}).get("values") or []
    return " ".join("" if v is None else f"{v:.4f}" for v in values) if all(v is not None for v in values) else ""


def csv_line(table: str, scale: str, row: str, column: str, cell: Optional[Cell], mean: Optional[float] = None,
             paper: Optional[float] = None, delta: Optional[Difference] = None, delta_from: str = "M") -> list:
    """One cell as a CSV_FIELDS row, the form `record_cells` reads back (``mean``: the shown mean, e.g.
    an avg column's; default the cell's own; ``delta``: the paired difference from row ``delta_from``)."""
    result = cell.result if cell else None
    if mean is None and result:
        mean = result["test"]["mean"]
    number = lambda value: "" if value is None else f"{value:.4f}"  # noqa: E731
    return [table, scale, row, column, number(mean), number(result["test"]["sd"] if result else None),
            " ".join(map(str, result["seeds"])) if result else "", "" if paper is None else paper,
            " ".join(f"{v:.4f}" for v in result["test"].get("values") or []) if result else "",
            ("record" if cell.recorded else "cache") if result else ("damaged" if cell and cell.damaged else ""),
            number(delta.mean if delta else None), delta_from if delta else "", number(delta.half_width if delta else None),
            delta.n if delta and delta.mean is not None else "", delta.note if delta else "",
            dev_values_text(result)]


def record_cells(record_dir: Path, pattern: str = "*/*.csv") -> List[Cell]:
    """The committed cells (``docs/tables/<scale>/<table>.csv``) as Cells; per-seed values where the
    CSV has them (older records hold mean, sd and seeds only)."""
    cells = []
    for path in sorted(Path(record_dir).glob(pattern)):
        for line in csv.DictReader(path.open(encoding="utf-8")):
            if line["column"] == "avg" or not line["ours_mean"]:
                continue
            seeds = [int(s) for s in line["seeds"].split()]
            values = [float(v) for v in (line.get("test_values") or "").split()] or None
            if values is None and len(seeds) == 1:
                values = [float(line["ours_mean"])]  # one seed: its value is the mean
            sd = float(line["ours_sd"]) if line["ours_sd"] else None
            result = {"seeds": seeds, "n": len(seeds), "test": {"mean": float(line["ours_mean"]), "sd": sd, "values": values}}
            dev = [float(v) for v in (line.get("dev_values") or "").split()]
            if dev:
                result["dev"] = {"mean": statistics.fmean(dev), "sd": statistics.stdev(dev) if len(dev) > 1 else 0.0, "values": dev}
            cells.append(Cell(line["table"], line["scale"], line["row"], line["column"], result, recorded=True))
    return cells


def merge_record(cells: Sequence[Cell], record: Sequence[Cell]) -> List[Cell]:
    """This cache's cells, and the record's where the cache has no result for that cell or one
    with fewer seeds (a one-seed run does not replace a 3-seed result of record)."""
    merged = {(c.table, c.scale, c.row, c.column): c for c in cells}
    for cell in record:
        key = (cell.table, cell.scale, cell.row, cell.column)
        if key not in merged or merged[key].result is None or merged[key].result["n"] < cell.result["n"]:
            merged[key] = cell
    return list(merged.values())


def exported_scores(predictions: Path) -> Iterator[Tuple[dict, dict]]:
    """(metrics, score) of each seed under ``predictions`` (docs/predictions/) whose ``metrics.json``
    names the score cell it fills (``cell``: scale, table, row, column, seed; tools/export_predictions.py),
    scored as its score_cell step would (steps.evaluate.scoring.score)."""
    from steps.evaluate.scoring import score

    for path in sorted(Path(predictions).rglob("metrics.json")) if Path(predictions).is_dir() else []:
        metrics = json.loads(path.read_text(encoding="utf-8"))
        if metrics.get("cell") and metrics.get("primary_metric"):
            yield metrics, score(metrics, str(path), **metrics["cell"])


def exported_cells(predictions: Path, cells: Sequence[Cell]) -> List[Cell]:
    """The cells with no result here whose every planned seed is exported under ``predictions``, each
    aggregated from those seeds as its own steps would (`exported_scores`, then
    steps.evaluate.scoring.aggregate): a cell whose seeds were fine-tuned in separate caches, so no one
    cache holds its aggregate. A cell still missing one of its seeds gets none (the question reads its
    finished seeds instead)."""
    from steps.evaluate.scoring import aggregate

    found: Dict[Tuple[str, str, str, str], Dict[int, dict]] = {}
    for _, seed_score in exported_scores(predictions):
        key = tuple(seed_score[k] for k in ("table", "scale", "row", "column"))
        found.setdefault(key, {})[int(seed_score["seed"])] = seed_score
    assembled = []
    for cell in cells:
        seeds = found.get((cell.table, cell.scale, cell.row, cell.column), {})
        if cell.result is None and cell.planned_seeds and set(cell.planned_seeds) <= set(seeds):
            result = aggregate([seeds[seed] for seed in sorted(cell.planned_seeds)])
            assembled.append(Cell(cell.table, cell.scale, cell.row, cell.column, result, list(cell.experiments),
                                  list(cell.planned_seeds), recorded=True))
    return assembled
