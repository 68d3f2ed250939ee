"""Copy every cached fine-tuning result's predictions and metrics to docs/predictions/, so that
readers re-score them without the cache (``python -m steps.evaluate.rescore docs/predictions/``).

    SIB_DATA_ROOT=../shared/data python tools/export_predictions.py [experiment files…] [--scale LABEL …]

For each ``score_cell`` step of the experiment files (default: all of experiments/) of the given
scale labels (default: the paper-scale cells, ``gpu-<regime>``) whose fine-tuning result is in the
workspace cache and holds predictions (an MLM-accuracy score has none), writes
``<out>/<scale>/<table>/<row>/<column>/seed<seed>/`` (`cell_folder`) with ``metrics.json`` and the
``predicted-{dev,test}.{conllu,bio}`` files there are, gzipped (``.gz``, no timestamp: the same
predictions give the same bytes; a parse compresses about 8-fold, and the record stays small).

The copied ``metrics.json`` names its encoder by cache entry (``<unique id>/result``, no machine
path), and records the cell it fills (``cell``: scale, table, row, column, seed) and the sha256 of
the encoder's weights as the workspace holds them (``encoder_sha256``). A release of those weights
(``python -m reporting.cache release``) lists the committed cell among its downstream figures.
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

CELL_FIELDS = ("scale", "table", "row", "column", "seed")  # a score cell's place in the tables
PREDICTION_FILES = ("predicted-dev.conllu", "predicted-test.conllu", "predicted-dev.bio", "predicted-test.bio")


def write_gzip(source: Path, destination: Path) -> None:
    """``source`` gzipped to ``destination`` with no name or time in the header (reproducible bytes)."""
    with open(source, "rb") as raw, open(destination, "wb") as out, gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as packed:
        shutil.copyfileobj(raw, packed)


def encoder_entry(encoder: str) -> Optional[str]:
    """``<unique id>/...`` of an encoder named by a path into a Tango cache (``.../cache/<id>/result``),
    else None (an HF model name, a folder outside any cache)."""
    parts = Path(encoder).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "cache":
            return Path(*parts[i + 1:]).as_posix()
    return None


def encoder_weights(folder: Path) -> Optional[Path]:
    """The weights file of an encoder folder, or of a pretraining result holding one in ``encoder/``
    (the folder the fine-tuning loaded: `resolve_encoder_dir`); None where there is none."""
    from steps.finetune.encoders import resolve_encoder_dir

    if not folder.exists():
        return None
    try:
        weights = Path(resolve_encoder_dir(folder)) / "model.safetensors"
    except FileNotFoundError:
        return None
    return weights if weights.is_file() else None


def export_result(result: Path, destination: Path, cell: Optional[dict] = None, cache_dir: Optional[Path] = None) -> List[str]:
    """Copy one fine-tuning result's prediction files (gzipped) and metrics.json. An encoder named by
    a cache path is kept as ``<unique id>/result`` (any other absolute path by its last component),
    so no machine path is committed; with ``cache_dir``, the sha256 of that entry's weights there is
    recorded as ``encoder_sha256``, and ``cell`` (the score cell's scale, table, row, column and seed)
    as ``cell``. A result without prediction files (nothing to re-score) is not copied: returns []."""
    from steps.common.data_root import sha256_hex
    present = [name for name in PREDICTION_FILES if (result / name).exists()]
    if not present:
        return []
    destination.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in present:
        write_gzip(result / name, destination / f"{name}.gz")
        copied.append(f"{name}.gz")
    metrics = json.loads((result / "metrics.json").read_text())
    encoder = metrics.get("encoder")
    if isinstance(encoder, str):
        entry = encoder_entry(encoder)
        if entry is not None:
            metrics["encoder"] = entry
            weights = encoder_weights(Path(cache_dir) / entry) if cache_dir is not None else None
            if weights is not None:
                metrics["encoder_sha256"] = sha256_hex(weights)
        elif os.path.isabs(encoder):
            metrics["encoder"] = Path(encoder).name
    if cell is not None:
        metrics["cell"] = {key: cell[key] for key in CELL_FIELDS}
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
            exported += bool(export_result(Path(workspace.step_cache[finetuned]), args.out / cell_folder(step.kwargs),
                                           cell=step.kwargs, cache_dir=args.workspace / "cache"))
    print(f"exported {exported} fine-tuning results to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
