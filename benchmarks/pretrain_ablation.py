"""Pretraining settings compared on one cached dataset: dev MLM loss per validation and time.

Runs the `pretrain_microbert` step itself (in a scratch workspace, so the project cache is not
filled with variants) on the `pretraining_data` of an experiment file, which must already be in
the workspace cache (`tango run <experiment> -s pretraining_data`). Appends one JSON record per
run to ``--json``:

    python benchmarks/pretrain_ablation.py experiments/wolof_m.jsonnet --batch-size 64 --max-steps 1500 --lr 1e-3
    python benchmarks/pretrain_ablation.py experiments/wolof_m.jsonnet --batch-size 64 --max-steps 1500 --lr 3e-3
    # H, its soft-label table cached too, with batches collated in a loader process beside the step:
    python benchmarks/pretrain_ablation.py experiments/related/wolof_h.jsonnet --max-steps 500 --loader-workers 1

Everything not given is the experiment's own `pretrained_model` setting.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from records import append_record  # noqa: E402  (benchmarks/records.py, beside this script)


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("experiment", type=Path)
    cli.add_argument("--workspace", type=Path, default=REPO / "workspace", help="where pretraining_data is cached")
    cli.add_argument("--condition")
    cli.add_argument("--batch-size", type=int)
    cli.add_argument("--max-steps", type=int)
    cli.add_argument("--lr", type=float)
    cli.add_argument("--no-bucketing", action="store_true")
    cli.add_argument("--loader-workers", type=int, default=0, help="processes collating batches ahead of the step")
    cli.add_argument("--note", help="recorded with the run (e.g. what else ran on the machine)")
    cli.add_argument("--json", type=Path, default=REPO / "docs/benchmarks/pretrain_ablation.jsonl")
    args = cli.parse_args()

    import steps  # noqa: F401  (registers the steps)
    from tango.common import Params
    from tango.step_graph import StepGraph
    from tango.workspaces import LocalWorkspace

    from steps.pretrain.pretrain import PretrainMicrobert, PretrainingConfig

    graph = StepGraph.from_params(Params.from_file(args.experiment).pop("steps"))
    data_step, pretrain_step = graph["pretraining_data"], graph["pretrained_model"]
    workspace = LocalWorkspace(args.workspace)
    if data_step not in workspace.step_cache:
        raise SystemExit(f"{args.experiment}: pretraining_data is not cached in {args.workspace}; run "
                         f"`tango run {args.experiment} -s pretraining_data` first")
    settings = pretrain_step.kwargs["training"].to_dict()
    settings.pop("warmup_steps")
    for name, value in (("batch_size", args.batch_size), ("max_steps", args.max_steps), ("lr", args.lr)):
        if value is not None:
            settings[name] = value
    settings["bucket_by_length"] = not args.no_bucketing
    condition = args.condition or pretrain_step.kwargs["condition"]
    # Condition H also reads its soft-label table, which must be cached beside the data.
    table_step = pretrain_step.kwargs.get("soft_label_table")
    if table_step is not None and table_step not in workspace.step_cache:
        raise SystemExit(f"{args.experiment}: soft_label_table is not cached in {args.workspace}; run "
                         f"`tango run {args.experiment} -s soft_label_table` first")
    step = PretrainMicrobert(
        pretraining_data=workspace.step_cache[data_step], tokenizer=workspace.step_cache[graph["tokenizer"]],
        condition=condition, model=pretrain_step.kwargs.get("model") or {}, training=PretrainingConfig(**settings),
        loader_workers=args.loader_workers,
        soft_label_table=None if table_step is None else workspace.step_cache[table_step],
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        result = step.result(LocalWorkspace(Path(scratch)))
        metrics = json.loads((Path(result) / "metrics.json").read_text())
    record = {
        "experiment": args.experiment.name, "condition": condition, "batch_size": settings["batch_size"],
        "max_steps": settings["max_steps"], "lr": settings["lr"], "bucket_by_length": settings["bucket_by_length"],
        "loader_workers": args.loader_workers, "minutes": (time.perf_counter() - start) / 60,
        # The loop's own clock (setup, validation and export excluded) at its last validation.
        "tokens_per_second": round(metrics["history"][-1]["tokens_per_second"]),
        "dev_mlm_loss": {h["step"]: round(h["dev_mlm_loss"], 3) for h in metrics["history"]},
    } | ({"note": args.note} if args.note else {})
    append_record(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
