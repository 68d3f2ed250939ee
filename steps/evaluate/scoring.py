"""Table cells as DAG nodes.

A fine-tuning step (``finetune_ud_parser``, ``finetune_ner``, ``finetune_pronto``) writes a
``metrics.json`` naming its ``primary_metric`` and its dev/test figures (in percent). ``score_cell`` turns one
such result into one scored cell of a paper table for one seed; ``aggregate_cell`` combines the
seeds of a cell into mean ± sd. ``python -m reporting.tables`` finds the ``aggregate_cell`` steps of
every experiment file in the cache and writes the tables.
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any, Dict, List, Optional

from tango import JsonFormat, Step

from steps.common.data_root import DataError

def cell_value(metrics: Dict[str, Any], split: str, where: str) -> Optional[float]:
    """The primary metric of one split; None if the split was not scored. Fine-tuning steps
    report every figure in percent, like the paper's tables."""
    try:
        metric = metrics["primary_metric"]
    except KeyError:
        raise DataError(f"{where}: metrics.json has no primary_metric") from None
    scores = metrics.get(split)
    if not scores:
        return None
    if metric not in scores:
        raise DataError(f"{where}: {split} scores have no {metric!r} (have {sorted(scores)})")
    return float(scores[metric])


def score(metrics: Dict[str, Any], where: str, table: str, row: str, column: str, scale: str, seed: int,
          metric: Optional[str] = None) -> Dict[str, Any]:
    """`score_cell`'s result from a fine-tune's ``metrics.json`` (``where`` names it in errors); also
    what an exported seed (docs/predictions/) scores to, its cache gone (reporting.cells.exported_cells)."""
    if metric is not None:
        metrics = dict(metrics, primary_metric=metric)
    return {
        "table": table, "row": row, "column": column, "scale": scale, "seed": seed,
        "task": metrics.get("task"), "metric": metrics.get("primary_metric"),
        "test": cell_value(metrics, "test", where),
        "dev": cell_value(metrics, "dev", where),
        "encoder": metrics.get("encoder"),
        "train_seconds": metrics.get("train_seconds"),
    }


def aggregate(scores: List[Dict[str, Any]]) -> Dict[str, Any]:
    """`aggregate_cell`'s result: mean ± sample sd of one cell's seed scores (`score`)."""
    if not scores:
        raise ValueError("aggregate_cell needs at least one score")
    key = {field: scores[0][field] for field in ("table", "row", "column", "scale", "task", "metric")}
    for entry in scores[1:]:
        other = {field: entry[field] for field in key}
        if other != key:
            raise ValueError(f"cannot aggregate different cells: {key} vs {other}")
    seeds = [entry["seed"] for entry in scores]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"cell {key['table']}/{key['row']}/{key['column']}: repeated seeds {seeds}")
    result: Dict[str, Any] = dict(key, seeds=seeds, n=len(scores))
    for split in ("test", "dev"):
        values = [entry[split] for entry in scores if entry[split] is not None]
        result[split] = {
            "values": values,
            "mean": statistics.fmean(values) if values else None,
            "sd": statistics.stdev(values) if len(values) > 1 else (0.0 if values else None),
        }
    result["train_seconds"] = [entry.get("train_seconds") for entry in scores]
    return result


@Step.register("score_cell")
class ScoreCell(Step):
    """One seed's score for one cell: (table, row, column) at a scale, with the seed recorded."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = JsonFormat()
    # `metric` picks another figure than the result's primary one (the MLM-accuracy bins); left at
    # None it is not hashed, so existing cells keep their ids.
    SKIP_DEFAULT_ARGUMENTS = {"metric": None}

    def run(  # type: ignore[override]
        self, finetuned: Path, table: str, row: str, column: str, scale: str, seed: int, metric: Optional[str] = None
    ) -> Dict[str, Any]:
        metrics_file = Path(finetuned) / "metrics.json"
        if not metrics_file.exists():
            raise DataError(f"{metrics_file}: fine-tuning result has no metrics.json")
        return score(json.loads(metrics_file.read_text()), str(metrics_file), table, row, column, scale, seed, metric)


@Step.register("aggregate_cell")
class AggregateCell(Step):
    """Mean ± sample sd over the seeds of one cell (sd is 0 for a single seed)."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = JsonFormat()

    def run(self, scores: List[Dict[str, Any]]) -> Dict[str, Any]:  # type: ignore[override]
        return aggregate(scores)


def format_mean_sd(mean: Optional[float], sd: Optional[float], n: int) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "—"
    return f"{mean:.2f}" if n <= 1 else f"{mean:.2f} ± {sd:.2f}"
