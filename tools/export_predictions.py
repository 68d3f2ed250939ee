"""Copy every cached fine-tuning result's predictions and metrics to docs/predictions/, so that
readers re-score them without the cache (``python -m steps.evaluate.rescore docs/predictions/``).

    SIB_DATA_ROOT=../shared/data python tools/export_predictions.py [experiment files…] [--scale LABEL …]

For each ``score_cell`` step of the experiment files (default: all of experiments/) of the given
scale labels (default: the paper-scale cells, ``gpu-<regime>``) whose fine-tuning result is in the
workspace cache and holds predictions (an MLM-accuracy score has none), writes
``<out>/<scale>/<table>/<row>/<column>/seed<seed>/`` (`cell_folder`) with ``metrics.json`` and the
``predicted-{dev,test}.{conllu,bio}`` files there are, gzipped (``.gz``, no timestamp: the same
predictions give the same bytes; a parse compresses about 8-fold, and the record stays small).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
from pathlib import Path
from typing import List, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PREDICTION_FILES = ("predicted-dev.conllu", "predicted-test.conllu", "predicted-dev.bio", "predicted-test.bio")


def write_gzip(source: Path, destination: Path) -> None:
    """``source`` gzipped to ``destination`` with no name or time in the header (reproducible bytes)."""
    with open(source, "rb") as raw, open(destination, "wb") as out, gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as packed:
        shutil.copyfileobj(raw, packed)


def export_result(result: Path, destination: Path) -> List[str]:
    """Copy one fine-tuning result's prediction files (gzipped) and metrics.json; an encoder named by
    an absolute (cache) path is kept by its last component only, so no machine path is committed.
    A result without prediction files (nothing to re-score) is not copied: returns []."""
    present = [name for name in PREDICTION_FILES if (result / name).exists()]
    if not present:
        return []
    destination.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in present:
        write_gzip(result / name, destination / f"{name}.gz")
        copied.append(f"{name}.gz")
    metrics = json.loads((result / "metrics.json").read_text())
    if isinstance(metrics.get("encoder"), str) and os.path.isabs(metrics["encoder"]):
        metrics["encoder"] = Path(metrics["encoder"]).name
    (destination / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return copied + ["metrics.json"]


def selected(scale: str, scales: Optional[Sequence[str]] = None) -> bool:
    """Whether a score cell of scale label ``scale`` is exported: one of ``scales``, or by default a
    paper-scale cell (``gpu-<regime>``: the whole-corpus µBERTs, each task under its regime)."""
    return scale in scales if scales else scale.startswith("gpu-")


def cell_folder(cell: dict) -> Path:
    """``<scale>/<table>/<row>/<column>/seed<seed>``; a grid's table "<grid>:<task>" (the gap
    decomposition's "decomposition:ud") gives ``<grid>/<scale>/<task>/…``, with no colon in a path."""
    grid, _, task = cell["table"].rpartition(":")
    head = Path(grid, cell["scale"], task) if grid else Path(cell["scale"], task)
    return head / cell["row"] / cell["column"] / f"seed{cell['seed']}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    import steps  # noqa: F401  (registers the step classes)
    from tango.common import Params
    from tango.step_graph import StepGraph
    from tango.workspaces import LocalWorkspace

    from steps.evaluate.scoring import ScoreCell

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiments", nargs="*", type=Path)
    parser.add_argument("--scale", nargs="+", help="score cells of these scale labels (default: every gpu-<regime>)")
    parser.add_argument("--workspace", type=Path, default=REPO / "workspace")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "predictions")
    args = parser.parse_args(argv)
    workspace = LocalWorkspace(args.workspace)
    exported = 0
    for path in args.experiments or sorted((REPO / "experiments").rglob("*.jsonnet")):
        graph = StepGraph.from_params(Params.from_file(path, ext_vars=dict(os.environ)).pop("steps"))
        for step in graph.values():
            if not isinstance(step, ScoreCell) or not selected(step.kwargs["scale"], args.scale):
                continue
            finetuned = step.kwargs["finetuned"]
            if finetuned not in workspace.step_cache:
                continue
            exported += bool(export_result(Path(workspace.step_cache[finetuned]), args.out / cell_folder(step.kwargs)))
    print(f"exported {exported} fine-tuning results to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
