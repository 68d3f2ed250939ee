"""The slowest batch of a pretraining epoch, as a loader worker builds it (the MXPT-SLA stall at paper scale).

Pretraining batches are length-bucketed, so each epoch of the paper-scale Wolof data has a bucket of
its longest rows (256 rows padded to 475 subwords). Loader workers build batches ahead of the loop
(`steps.pretrain.pretrain.micro_batch_loader`), but the loop takes them in order: a batch that takes a
worker longer than the loop needs to use up the workers × `LOADER_PREFETCH` batches queued ahead of it
stalls the loop. On an H100 that was MXPT-SLA's parse inputs for the long bucket, ~3 s an epoch.

This builds every batch of one epoch of an experiment file's pretraining exactly as a worker does
(collate, parse inputs, pack; one thread), from the file's cached inputs, and writes the tail: mean,
median, 99th percentile and slowest batch, the worker-seconds of an epoch, and the two step rates that
matter: above ``stalls_above`` steps/s the slowest batch outlasts the queue (the loop waits), and above
``workers_keep_up_to`` steps/s the workers cannot keep pace on average. Both assume the workers run at
this box's speed, one core each.

    SIB_DATA_ROOT=../shared/data python benchmarks/bench_loader_epoch.py \\
        experiments/paper/wolof_mxpt_sla.jsonnet -w workspace --json docs/benchmarks/loader_epoch.jsonl --note "..."
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.records import append_record  # noqa: E402


def epoch_timings(experiment: Path, workspace_dir: Path, epoch: int = 0, condition: str | None = None,
                  step_name: str = "pretrained_model") -> dict:
    """Per-batch build times of one epoch of ``experiment``'s pretraining (its condition unless
    ``condition`` is given), from the inputs cached in ``workspace_dir``."""
    from benchmarks.gpu.pace import cached_pretraining
    from models.prepared_inputs import ParseInputs
    from steps.data.vocab import load_tokenizer
    from steps.pretrain.pretrain import LOADER_PREFETCH, MicroBatches, batch_order, pretraining_collator

    step, kwargs = cached_pretraining(experiment, workspace_dir, step_name)
    data, tokenizer = kwargs["pretraining_data"], load_tokenizer(Path(kwargs["tokenizer"]))
    training, condition = kwargs["training"], condition or kwargs["condition"]
    labels = list(data["xpos_labels"])
    # The step's own model config (condition, overrides, vocabulary), as its loader workers get it.
    config = step._build_model(condition, kwargs.get("model") or {}, len(tokenizer), len(labels), training.seed).config
    rows = data["train"]
    order = batch_order(rows, training)
    collator = pretraining_collator(tokenizer, labels, training, kwargs.get("soft_label_table"))
    parse_inputs = ParseInputs(config)
    batches = MicroBatches(rows, order, collator, training.seed, epoch * order.batches_per_epoch, order.batches_per_epoch,
                           parse_inputs=parse_inputs if parse_inputs else None)
    seconds, lengths = [], []
    for index in range(len(batches)):
        start = time.perf_counter()
        batches[index]  # what a worker hands over: collated, parse inputs built, packed
        seconds.append(time.perf_counter() - start)
        lengths.append(max(len(rows[i]["input_ids"]) for i in order.indices(batches.first + index)))
    slowest = max(range(len(seconds)), key=seconds.__getitem__)
    workers = kwargs.get("loader_workers", 0)
    queued = workers * LOADER_PREFETCH
    mean = statistics.mean(seconds)
    return {
        "experiment": str(experiment.relative_to(REPO) if experiment.is_absolute() else experiment),
        "condition": condition, "epoch": epoch, "batches": len(seconds), "batch_size": order.batch_size,
        "mean_ms": 1e3 * mean, "median_ms": 1e3 * statistics.median(seconds),
        "p99_ms": 1e3 * sorted(seconds)[min(len(seconds) - 1, int(0.99 * len(seconds)))],
        "slowest_ms": 1e3 * seconds[slowest], "slowest_padded_length": lengths[slowest],
        "epoch_worker_seconds": sum(seconds), "loader_workers": workers, "queued_batches": queued,
        "stalls_above_steps_per_second": queued / seconds[slowest] if queued else None,
        "workers_keep_up_to_steps_per_second": workers / mean if workers else None,
        "torch_threads": torch.get_num_threads(), "torch": torch.__version__, "cpu_count": os.cpu_count(),
        "machine": platform.processor() or platform.machine(), "load_average": list(os.getloadavg()),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", type=Path)
    parser.add_argument("-w", "--workspace", type=Path, required=True, help="the workspace whose cache holds the inputs")
    parser.add_argument("--epoch", type=int, default=0)
    parser.add_argument("--condition", help="time another condition's batches on the same data (default: the file's)")
    parser.add_argument("--json", type=Path, help="append the record here as one JSON line")
    parser.add_argument("--note", help="kept in the record: which code it measured")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # a loader worker's setting
    record = epoch_timings(args.experiment, args.workspace, args.epoch, args.condition)
    if args.note:
        record["note"] = args.note
    print(f"{record['condition']}: {record['batches']} batches of epoch {record['epoch']}, mean {record['mean_ms']:.0f} ms, "
          f"median {record['median_ms']:.0f} ms, p99 {record['p99_ms']:.0f} ms, slowest {record['slowest_ms']:.0f} ms "
          f"(padded to {record['slowest_padded_length']}); {record['epoch_worker_seconds']:.1f} worker-s an epoch. "
          f"With {record['loader_workers']} workers × {record['queued_batches'] // max(record['loader_workers'], 1)} queued: "
          f"the slowest batch stalls a loop faster than {record['stalls_above_steps_per_second'] or 0:.0f} steps/s; "
          f"the workers keep up to {record['workers_keep_up_to_steps_per_second'] or 0:.0f} steps/s")
    if args.json:
        append_record(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
