"""What W&B (on by default, offline; steps/common/tracking.py) costs the README main command's
biggest step: µB-MXPT-SLA pretraining, a few hundred steps with W&B on and off, alternated.

    SIB_DATA_ROOT=../shared/data python benchmarks/wandb_overhead.py --workspace ../ws_cold \\
        --steps 300 --repeats 2 --json docs/benchmarks/wandb_overhead.json

The workspace must hold the main command's data steps (a cold run of it). Each run is
``tango run experiments/wolof_mxpt_sla.jsonnet -s pretrained_model`` with ``max_steps`` set to
``--steps`` plus the run's number (the W&B switch is not in the cache key, so each run needs a key
of its own; one step more or less is noise). Recorded per run: W&B on or off, the step's in-loop
tokens/s (its metrics.json) and the step's wall seconds. Run on idle cores: nothing else timed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXPERIMENT = "experiments/wolof_mxpt_sla.jsonnet"


def run_once(workspace: Path, steps: int, wandb_on: bool) -> dict:
    overrides = json.dumps({"steps.pretrained_model.training.max_steps": steps,
                            "steps.pretrained_model.training.validate_every": steps})
    env = dict(os.environ, SIB_WANDB="on" if wandb_on else "off", PYTHONUNBUFFERED="1")
    before = set((workspace / "cache").iterdir())
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "tango", "--settings", str(REPO / "tango.yml"), "run", EXPERIMENT,
                    "-s", "pretrained_model", "-o", overrides, "-w", f"local://{workspace.resolve()}"],
                   cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    # Another run may share the workspace: this run's entry is the new pretraining of `steps` steps.
    new = [p for p in set((workspace / "cache").iterdir()) - before if p.name.startswith("PretrainMicrobert")
           and (p / "result" / "metrics.json").exists()
           and json.loads((p / "result" / "metrics.json").read_text())["training"]["max_steps"] == steps]
    if len(new) != 1:
        raise SystemExit(f"expected one new pretraining entry of {steps} steps, found {[p.name for p in new]}")
    metrics = json.loads((new[0] / "result" / "metrics.json").read_text())
    last = metrics["history"][-1]
    return {"wandb": wandb_on, "steps": steps, "tokens_per_second": round(last["tokens_per_second"], 1),
            "loop_seconds": round(last["wall_seconds"], 1), "run_seconds": round(wall, 1), "entry": new[0].name}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2, help="on/off pairs")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    runs = []
    for repeat in range(args.repeats):
        for wandb_on in (True, False) if repeat % 2 == 0 else (False, True):
            runs.append(run_once(args.workspace, args.steps + len(runs), wandb_on))
            print(json.dumps(runs[-1]), flush=True)
    mean = {flag: statistics.fmean(r["tokens_per_second"] for r in runs if r["wandb"] == flag) for flag in (True, False)}
    record = {"what": __doc__.splitlines()[0], "experiment": EXPERIMENT, "runs": runs,
              "tokens_per_second": {"wandb_on": round(mean[True], 1), "wandb_off": round(mean[False], 1)},
              "on_over_off_time": round(mean[False] / mean[True], 3),
              "load_average": os.getloadavg(), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
              "date": time.strftime("%Y-%m-%d")}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(record, indent=2) + "\n")
    print(f"W&B on: {mean[True]:.0f} tokens/s, off: {mean[False]:.0f} tokens/s; time on/off {record['on_over_off_time']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
