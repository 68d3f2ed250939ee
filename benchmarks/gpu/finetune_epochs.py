"""What a fine-tuning epoch costs on a GPU, from the runs' own records: training and dev evaluation.

    python benchmarks/gpu/finetune_epochs.py RECORDS... --processes 10 --label paper_tenth --note "…" \\
        [--json docs/benchmarks/gpu_finetune.jsonl]

RECORDS are a GPU job's fine-tuning logs (the ``logs/<n>.log`` of ``tools/jobs.py run --out``, or any
``tango run`` log) or finished steps' ``metrics.json``. Each epoch's history record gives its
seconds; since the loop records ``dev_seconds`` (the dev evaluation's share) the training share is
the rest. Older records lack it: there the untrained model's evaluation (epoch 0, nothing but a dev
pass) stands in, marked ``dev_from_epoch_0``. One record per task (UD parsing, NER): medians over
every epoch after 0 of every run given, the runs' count, and how many fine-tunes shared the GPU
(``--processes``: the call ran them side by side, one CPU thread each). Why it exists: the paper
regime's UD parser needs up to 300 epochs per seed, so its epoch time decides whether the
paper-scale cells fit a GPU job's time limit.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

EPOCH_LINE = re.compile(r"(parser|NER) epoch (\d+): (\{.*?\})(?: \(best\))?\s*(?:\S+\.py:\d+)?\s*$")
TASKS = {"parser": "ud_parsing", "NER": "ner"}


def histories(path: Path) -> Dict[str, List[dict]]:
    """{task: [history record, …]} of one log or metrics.json, epoch 0 included (numbered as logged)."""
    if path.name.endswith(".json"):
        metrics = json.loads(path.read_text(encoding="utf-8"))
        return {metrics["task"]: metrics["history"]}
    found: Dict[str, Dict[int, dict]] = {}
    # Progress bars redraw with carriage returns; each epoch's log line ends one redraw.
    for line in path.read_text(encoding="utf-8", errors="replace").replace("\r", "\n").splitlines():
        match = EPOCH_LINE.search(line)
        if match:
            record = {"epoch": int(match.group(2)), **json.loads(match.group(3))}
            found.setdefault(TASKS[match.group(1)], {})[record["epoch"]] = record  # a resumed run logs an epoch once more
    return {task: [by_epoch[e] for e in sorted(by_epoch)] for task, by_epoch in found.items()}


def epoch_costs(paths: Sequence[Path], processes: int, label: str, gpu: Optional[str], note: str = "") -> List[dict]:
    """One record per task found in ``paths``: median epoch, dev and training seconds over the epochs after 0."""
    runs: Dict[str, List[List[dict]]] = {}
    for path in paths:
        for task, history in histories(path).items():
            runs.setdefault(task, []).append(history)
    records = []
    for task, task_runs in sorted(runs.items()):
        epochs = [r for history in task_runs for r in history if r["epoch"] > 0]
        if not epochs:
            raise SystemExit(f"{task}: no epoch after 0 in {', '.join(str(p) for p in paths)}")
        logged_dev = all("dev_seconds" in r for r in epochs)
        if logged_dev:
            dev = [r["dev_seconds"] for r in epochs]
        else:  # before the loop logged it: the untrained model's dev pass
            dev = [r["seconds"] for history in task_runs for r in history if r["epoch"] == 0]
        epoch = statistics.median(r["seconds"] for r in epochs)
        dev_median = statistics.median(dev) if dev else None
        steps = sorted({b["step"] - a["step"] for history in task_runs for a, b in zip(history, history[1:]) if "step" in a and "step" in b})
        train = statistics.median(r["seconds"] - r["dev_seconds"] for r in epochs) if logged_dev else (
            None if dev_median is None else epoch - dev_median)
        per_epoch = steps[len(steps) // 2] if steps else None
        records.append({
            "task": task, "label": label, "gpu": gpu, "processes_side_by_side": processes, "runs": len(task_runs),
            "epochs_timed": len(epochs), "epoch_seconds": epoch, "dev_seconds": dev_median, "dev_from_epoch_0": not logged_dev,
            "train_seconds": train, "batches_per_epoch": per_epoch,
            "train_ms_per_step": None if train is None or not per_epoch else 1000 * train / per_epoch,
            "sources": [p.name if p.name != "metrics.json" else str(Path(*p.parts[-4:-1])) for p in paths], "note": note,
        })
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, nargs="+", help="fine-tuning logs or metrics.json files")
    parser.add_argument("--processes", type=int, required=True, help="fine-tunes that shared the GPU at once")
    parser.add_argument("--label", required=True, help="the fine-tuning regime (e.g. paper_tenth; NER's is cpu_x2 in the same call)")
    parser.add_argument("--gpu", help="the GPU's name (the call's logs/gpu.csv)")
    parser.add_argument("--note", default="", help="which code it measured")
    parser.add_argument("--json", type=Path, help="append the records here")
    args = parser.parse_args(argv)
    from reporting.records import append_jsonl

    records = epoch_costs(args.records, args.processes, args.label, args.gpu, args.note)
    for record in records:
        print(f"{record['task']}: epoch {record['epoch_seconds']:.1f} s (dev {record['dev_seconds']:.1f} s, "
              f"{record['runs']} runs, {record['processes_side_by_side']} side by side)", flush=True)
    if args.json:  # as they are: the runs' threads are not this process's (one a fine-tune in a campaign)
        append_jsonl(args.json, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
