"""Pretrainings sharing one GPU, from a job's own logs: each run's steps, pace and dev MLM loss.

    python benchmarks/gpu/side_by_side.py LOGS_DIR --smi SMI_CSV --command "…" \\
        [--alone M=153.8 --alone MXPT-SLA=38.2 --alone-source "…"] [--note "…"] \\
        [--json docs/benchmarks/gpu_side_by_side.jsonl]

LOGS_DIR is the ``logs/`` folder of ``tools/jobs.py run --out`` (one ``<n>.log`` per target); SMI_CSV
the samples of ``nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader
-l 15`` taken during the job (an optional first line of ``name, driver_version, memory.total`` names
the device). Each pretraining logs its pace once a minute ("step N/M: R steps/s … in this window");
the first window of a process holds its start-up (loader workers, compile, CUDA-graph recordings) and
is left out of the pace. Why it exists: a µBERT step leaves a GPU mostly idle, so the paper-scale
pretrainings run side by side, and whether that pays is read from these records.
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

from reporting.records import append_jsonl, command_files  # noqa: E402

CONDITION = re.compile(r"pretraining (\S+): \d+ parameters")
RESUMED = re.compile(r"resuming from step (\d+)")
WINDOW = re.compile(r"step (\d+)/\d+: ([\d.]+) steps/s")
DEV = re.compile(r"step (\d+): (\{\"dev_mlm_loss\".*?\})")
STOPPED = re.compile(r"stopped after step (\d+)")
STAMP = re.compile(r"\[(\d\d/\d\d/\d\d \d\d:\d\d:\d\d)\]")


def pretraining_run(log: Path) -> Optional[dict]:
    """One pretraining's figures from its log, or None where the log holds no pretraining."""
    text = log.read_bytes().decode("utf-8", errors="replace").replace("\r", "\n")  # progress-bar redraws
    condition = CONDITION.search(text)
    if condition is None:
        return None
    windows = [(int(step), float(rate)) for step, rate in WINDOW.findall(text)]
    dev = {int(step): json.loads(record) for step, record in DEV.findall(text)}
    stopped = STOPPED.findall(text)
    resumed = RESUMED.search(text)
    last = int(stopped[-1]) if stopped else max([*dev, *(step for step, _ in windows)], default=0)
    return {
        "condition": condition.group(1),
        "steps": [int(resumed.group(1)) if resumed else 0, last],
        "finished": not stopped,
        "pace_windows_steps_per_second": [rate for _, rate in windows[1:]],
        "dev_mlm_loss": {str(step): round(record["dev_mlm_loss"], 4) for step, record in sorted(dev.items())},
    }


def utilisation(smi: Path) -> dict:
    """Median GPU utilisation (%) of the samples from the first busy one to the last, and the device's name."""
    lines = [line for line in smi.read_text(encoding="utf-8").splitlines() if line.strip()]
    device = lines.pop(0).split(",")[0].strip() if lines and not lines[0][:1].isdigit() else None
    samples = [int(line.split(",")[1].strip().rstrip(" %")) for line in lines if not line.startswith("name")]
    busy = [n for n, value in enumerate(samples) if value > 0]
    training = samples[busy[0] : busy[-1] + 1] if busy else []
    return {"device": device, "samples": samples,
            "median_while_training": statistics.median(training) if training else None}


def record(logs: Path, smi: Path, command: str, alone: Dict[str, float], alone_source: str, note: str = "",
           device: Optional[str] = None, every: int = 15) -> dict:
    """The job's record: its runs, the GPU's utilisation and, where each run's pace alone is given, the
    work of all runs together in units of one run at a time (median windows)."""
    targets = command_files(command)
    runs = []
    for log in sorted(Path(logs).glob("*.log"), key=lambda p: int(p.stem) if p.stem.isdigit() else p.stem):
        if (run := pretraining_run(log)) is not None:
            if log.stem.isdigit() and int(log.stem) < len(targets):
                run = {"experiment": targets[int(log.stem)], **run}
            runs.append(run)
    if not runs:
        raise SystemExit(f"{logs}: no pretraining log (*.log with a 'pretraining CONDITION: N parameters' line)")
    gpu = utilisation(smi)
    shares = {run["condition"]: round(statistics.median(run["pace_windows_steps_per_second"]) / alone[run["condition"]], 2)
              for run in runs if run["condition"] in alone and run["pace_windows_steps_per_second"]}
    return {
        "device": device or gpu["device"],
        "command": command,
        "side_by_side": len(runs),
        "runs": runs,
        "gpu_utilisation_percent": {"samples_every_s": every, "median_while_training": gpu["median_while_training"],
                                    "samples": gpu["samples"]},
        "alone_steps_per_second": {**alone, "source": alone_source} if alone else {},
        "share_of_alone_pace": shares,
        "together_times_one_at_a_time": round(sum(shares.values()), 2) if len(shares) == len(runs) else None,
        "note": note,
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", type=Path, help="tools/jobs.py run --out's logs/ folder")
    parser.add_argument("--smi", type=Path, required=True, help="nvidia-smi samples (timestamp, utilization.gpu, memory.used)")
    parser.add_argument("--command", required=True, help="the job's command, as recorded")
    parser.add_argument("--device", help="the device's name, where the samples lack it")
    parser.add_argument("--alone", action="append", default=[], metavar="CONDITION=STEPS_PER_S",
                        help="a condition's pace alone on a GPU, for its share side by side")
    parser.add_argument("--alone-source", default="", help="where the paces alone come from")
    parser.add_argument("--note", default="")
    parser.add_argument("--json", type=Path, help="append the record to this JSONL file")
    args = parser.parse_args(argv)
    alone = {}
    for item in args.alone:
        condition, _, pace = item.partition("=")
        alone[condition] = float(pace)
    result = record(args.logs, args.smi, args.command, alone, args.alone_source, args.note, args.device)
    print(json.dumps({k: v for k, v in result.items() if k != "gpu_utilisation_percent"}, indent=1))
    if args.json:
        append_jsonl(args.json, [result])
    return 0


if __name__ == "__main__":
    sys.exit(main())
