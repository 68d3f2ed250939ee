"""Wall time of one `tango run`, with which steps ran and which came from the cache.

    # the README main command, cold (fresh workspace):
    python benchmarks/time_experiment.py experiments/wolof_mxpt_sla.jsonnet --workspace ../ws_cold \\
        --fresh --json docs/benchmarks/main_command_cold.json
    # a second condition afterwards in the same workspace (reuses parse and vocabulary):
    python benchmarks/time_experiment.py experiments/wolof_m.jsonnet --workspace ../ws_cold \\
        --json docs/benchmarks/second_condition.json

The record (JSON) holds the command, wall seconds, per-step "ran" / "cached" and, for steps that
ran, the seconds between Tango's "Starting step" and "Finished step" log lines, and the box's
speed probe taken just before the run (`benchmarks/box_speed.py`, ``box``), so that times from
different boxes can be compared; `python -m reporting.report` puts it into docs/engineering.md.
The log is kept beside the JSON (``.log``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks import box_speed  # noqa: E402

STARTING = re.compile(r"Starting step \"(?P<step>[^\"]+)\"")
FINISHED = re.compile(r"Finished (?:run for )?step \"(?P<step>[^\"]+)\"")
CACHED = re.compile(r"Found output for step \"(?P<step>[^\"]+)\" in cache")


def parse_log(timed_lines):
    """(seconds since start, line) pairs → {step: {"status": "ran"|"cached", "seconds": …}}."""
    started, steps = {}, {}
    for when, line in timed_lines:
        if match := STARTING.search(line):
            started[match["step"]] = when
            steps[match["step"]] = {"status": "ran"}
        elif match := FINISHED.search(line):
            if match["step"] in started:
                steps[match["step"]]["seconds"] = round(when - started[match["step"]], 1)
        elif match := CACHED.search(line):
            steps.setdefault(match["step"], {"status": "cached"})
    return steps


def last_redraw(raw: bytes) -> str:
    """One output line as text, reduced to what a terminal would show after its "\\r" redraws."""
    redraws = [part for part in raw.decode("utf-8", "replace").split("\r") if part.strip()]
    return redraws[-1] if redraws else ""


SITE_PACKAGES = re.compile(r"/\S*?/site-packages/")


def without_machine_paths(line: str, workspace: Path, repo: Path = REPO) -> str:
    """A log line with this machine's paths made relative: the workspace as ``<workspace>/``,
    the repo as its relative paths, installed packages as ``site-packages/``. Committed logs
    must not name where one machine keeps things."""
    line = line.replace(f"{workspace.resolve()}/", "<workspace>/").replace(f"{repo.resolve()}/", "")
    return SITE_PACKAGES.sub("site-packages/", line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", type=Path)
    parser.add_argument("--workspace", type=Path, required=True, help="Tango workspace directory to run in")
    parser.add_argument("--fresh", action="store_true", help="delete the workspace first (a cold run)")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("-j", "--jobs", type=int, help="steps at once (tango run -j), e.g. 8 on a GPU machine")
    args = parser.parse_args()
    if args.fresh and args.workspace.exists():
        shutil.rmtree(args.workspace)
    jobs = ["-j", str(args.jobs)] if args.jobs else []
    box = box_speed.probe()  # before the run: nothing else of ours is using the cores yet
    command = ["tango", "--settings", str(REPO / "tango.yml"), "run", str(args.experiment), *jobs, "-w", f"local://{args.workspace.resolve()}"]
    log_path = args.json.with_suffix(".log")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    timed_lines = []  # step times come from when Tango's log lines arrive, whatever their format
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=os.environ.copy())

        def keep(raw: bytes) -> None:
            when, line = time.perf_counter() - start, last_redraw(raw) + "\n"
            timed_lines.append((when, line))
            log.write(f"[{when:8.1f}s] {without_machine_paths(line, args.workspace)}")

        pending = b""
        # Raw chunks go to the terminal as they come (progress bars stay live); the log keeps one
        # line per "\n" and of a progress bar's "\r" redraws only the last, so it stays readable.
        while chunk := process.stdout.read1(1 << 16):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            *complete, pending = (pending + chunk).split(b"\n")
            for raw in complete:
                keep(raw)
        if pending:
            keep(pending)
        returncode = process.wait()
    wall = time.perf_counter() - start
    record = {
        "command": " ".join(["tango", "run", str(args.experiment), *jobs]),
        "workspace": "fresh" if args.fresh else "existing",
        "returncode": returncode,
        "wall_seconds": round(wall, 1),
        "wall_minutes": round(wall / 60, 2),
        "steps": parse_log(timed_lines),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "box": box,
        "date": datetime.date.today().isoformat(),
    }
    args.json.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "steps"}, indent=2))
    return returncode


if __name__ == "__main__":
    sys.exit(main())
