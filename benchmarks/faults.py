"""Fault injection: kill `tango run` at random moments and check that repeating it loses nothing.

    python -m benchmarks.faults [--trials 2] [--seed 0] [--quick] [--experiment FILE]

For each trial a fresh workspace gets the smoke-scale Wolof cell (corpus, word vectors, corpus
parser, parse, vocabulary, pretraining data, pretraining, UD and NER fine-tuning, scoring). Each
`tango run` is watched through its log: when a step starts, the run is killed (SIGKILL to its
whole process group) with probability --kill-probability at a uniform moment of the first 60 % of that
step's duration in the clean run, at most --kills-per-step times per step and trial. The same
`tango run` is then started again, until one finishes without a kill. Many kill points come from
one trial this way, each inside a known step.

Every complete cache entry (``cache-metadata.json`` present, so Tango would use it) of the trial
workspace is then compared with the clean run's entry of the same unique ID: JSON and pickled
results with timings dropped, tensors exactly, other files byte for byte (the workspace path
replaced by a placeholder). Reported (docs/benchmarks/faults.json, no machine paths): kill points
survived, step kinds covered, runs equal to the clean run, complete entries whose result is missing
or different (target 0), and runs that needed a manual step (a `tango run` that failed by itself
and kept failing; target 0).

``--compare-only`` recomputes the comparison and the record from the trials already in ``--work``
(a trial stopped for time counts as unfinished: its complete entries are still compared).

``--quick``: one trial, one kill per step, the first kill probability 1 (a few minutes more than
one clean run). ``--clean-workspace DIR`` reuses an uninterrupted run's workspace of the same
experiment instead of running it again.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from reporting.cache import cache_dirs  # noqa: E402

DEFAULT_EXPERIMENT = "experiments/smoke/wolof_mxpt_sla.jsonnet"
OUTPUT = REPO / "docs" / "benchmarks" / "faults.json"
STARTING = re.compile(r'Starting step "([^"]+)"')
FINISHED = re.compile(r'Finished step "([^"]+)"')
LOG_TIME = re.compile(r"^\[(\d\d/\d\d/\d\d \d\d:\d\d:\d\d)\]")
# Result fields that measure time, not results: left out of the comparison.
TIMING_KEY = re.compile(r"(seconds|per_second|minutes|_time$|^time|wall|resumed_from|duration)")
MAX_UNKILLED_FAILURES = 3  # failed `tango run`s in a row (not killed by us) before a trial counts as needing a hand


def step_kinds(experiment: Path) -> Dict[str, str]:
    """Step name → registered step type, from the experiment file."""
    from tango.common import Params

    return {name: config["type"] for name, config in Params.from_file(str(experiment)).as_dict()["steps"].items()}


def tango_command(experiment: Path, workspace: Path) -> List[str]:
    return [sys.executable, "-m", "tango", "--settings", str(REPO / "tango.yml"), "run", str(experiment),
            "--workspace", str(workspace)]


def environment() -> Dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["COLUMNS"] = "250"  # one log record per line
    for hook in ("SIB_PRETRAIN_CRASH_AFTER_STEP", "SIB_FINETUNE_CRASH_AFTER_EPOCH", "SIB_CORPUS_PARSER_CRASH_AFTER_PHASE",
                 "SIB_PARSE_CRASH_AFTER_BATCH"):
        env.pop(hook, None)
    return env


def run_clean(experiment: Path, workspace: Path, log: Path) -> Dict[str, float]:
    """An uninterrupted run; returns each step's duration in seconds (from its log)."""
    start = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.call(tango_command(experiment, workspace), cwd=REPO, env=environment(), stdout=out,
                               stderr=subprocess.STDOUT)
    if code != 0:
        raise SystemExit(f"the clean run failed (exit {code}); see {log}")
    durations = step_durations(log.read_text(errors="replace"))
    durations["<total>"] = time.perf_counter() - start
    return durations


def step_durations(text: str) -> Dict[str, float]:
    started: Dict[str, datetime] = {}
    durations: Dict[str, float] = {}
    last = None
    for line in text.splitlines():
        stamp = LOG_TIME.match(line)
        if stamp:
            last = datetime.strptime(stamp.group(1), "%m/%d/%y %H:%M:%S")
        if last is None:
            continue
        if (match := STARTING.search(line)):
            started[match.group(1)] = last
        elif (match := FINISHED.search(line)) and match.group(1) in started:
            durations[match.group(1)] = (last - started[match.group(1)]).total_seconds()
    return durations


class Attempt:
    """One `tango run` in its own process group, its log followed as it grows."""

    def __init__(self, experiment: Path, workspace: Path, log: Path):
        self.log = log
        self.out = log.open("w")
        self.process = subprocess.Popen(tango_command(experiment, workspace), cwd=REPO, env=environment(),
                                        stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)
        self.read = 0
        self.started = time.perf_counter()

    def new_lines(self) -> List[str]:
        text = self.log.read_text(errors="replace")
        complete = text[: text.rfind("\n") + 1]
        lines = complete[self.read:].splitlines()
        self.read = len(complete)
        return lines

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.out.close()

    def finish(self) -> int:
        code = self.process.wait()
        self.out.close()
        return code


def run_trial(experiment: Path, workspace: Path, logs: Path, kinds: Dict[str, str], clean: Dict[str, float],
              rng: random.Random, kills_per_step: int, kill_probability: float, long_step_seconds: float,
              long_step_kills: int, progress: Path) -> Dict[str, Any]:
    """Kill-and-repeat until a run finishes; returns the kill points and run counts (also saved to
    ``progress`` after every run, so a benchmark stopped for time keeps its kill points)."""
    kills: List[Dict[str, Any]] = []
    killed_per_step: Dict[str, int] = {}
    unkilled_failures = runs = 0
    while True:
        runs += 1
        attempt = Attempt(experiment, workspace, logs / f"run{runs:02d}.log")
        running: Optional[str] = None
        step_start = 0.0
        kill_at: Optional[float] = None
        outcome = None
        while outcome is None:
            for line in attempt.new_lines():
                if (match := STARTING.search(line)):
                    running, step_start, kill_at = match.group(1), time.perf_counter(), None
                    # A kill in a long step that cannot resume mid-way costs up to its whole duration.
                    most = long_step_kills if clean.get(running, 0.0) > long_step_seconds else kills_per_step
                    if killed_per_step.get(running, 0) < most and rng.random() < kill_probability:
                        # A uniform moment of the step's clean duration (a short step: within 1 s).
                        # The early 60 %: a rerun is often faster than the clean run (warm caches, less
                        # load), and a kill planned past the step's end is no kill point.
                        kill_at = step_start + rng.uniform(0.02, 0.6) * max(clean.get(running, 1.0), 1.0)
                elif (match := FINISHED.search(line)) and match.group(1) == running:
                    running, kill_at = None, None
            if kill_at is not None and time.perf_counter() >= kill_at and attempt.process.poll() is None:
                attempt.kill()
                killed_per_step[running] = killed_per_step.get(running, 0) + 1
                kills.append({"run": runs, "step": running, "kind": kinds.get(running, "?"),
                              "seconds_into_step": round(time.perf_counter() - step_start, 2),
                              "seconds_into_run": round(time.perf_counter() - attempt.started, 2)})
                print(f"  run {runs}: killed in {running} ({kinds.get(running)}) after "
                      f"{kills[-1]['seconds_into_step']} s", flush=True)
                outcome = "killed"
            elif attempt.process.poll() is not None:
                outcome = attempt.finish()
            else:
                time.sleep(0.2)
        progress.write_text(json.dumps({"kills": kills, "runs": runs, "finished": outcome == 0,
                                        "unkilled_failures": unkilled_failures + (outcome not in (0, "killed"))}, indent=2))
        if outcome == 0:
            break
        if outcome != "killed":
            unkilled_failures += 1
            print(f"  run {runs}: failed by itself (exit {outcome})", flush=True)
            if unkilled_failures >= MAX_UNKILLED_FAILURES:
                return {"kills": kills, "runs": runs, "finished": False, "unkilled_failures": unkilled_failures}
    return {"kills": kills, "runs": runs, "finished": True, "unkilled_failures": unkilled_failures}


# ------------------------------------------------------------------------------ comparing entries


def normalised(value: Any, workspace: Path) -> Any:
    import torch

    if isinstance(value, dict):
        return {k: normalised(v, workspace) for k, v in value.items() if not (isinstance(k, str) and TIMING_KEY.search(k))}
    if isinstance(value, (list, tuple)):
        return [normalised(v, workspace) for v in value]
    if isinstance(value, str):
        return value.replace(str(workspace.resolve()), "<workspace>").replace(str(workspace), "<workspace>")
    if isinstance(value, Path):
        return normalised(str(value), workspace)
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), value.detach().cpu().numpy().tobytes())
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return (type(value).__name__, normalised(vars(value), workspace))
    return value


def load_file(path: Path, workspace: Path) -> Any:
    """A result file as a comparable value (own workspaces only: pickles are trusted here)."""
    name = path.name
    if name.endswith(".json"):
        return normalised(json.loads(path.read_text()), workspace)
    if name.endswith(".dill") or name.endswith(".dill.gz"):
        import dill

        with (gzip.open(path, "rb") if name.endswith(".gz") else path.open("rb")) as f:
            return normalised(dill.load(f), workspace)
    if name.endswith(".pt") or name.endswith(".bin"):
        import torch

        try:
            return normalised(torch.load(path, map_location="cpu", weights_only=True), workspace)
        except Exception:  # Stanza's model files hold its config objects
            return normalised(torch.load(path, map_location="cpu", weights_only=False), workspace)
    data = path.read_bytes()
    try:
        return normalised(data.decode("utf-8"), workspace)
    except UnicodeDecodeError:
        return data


# Not results: the lock, the work folder, Tango's metadata; result-files.json lists the sizes of the
# result files, and metrics.json's size changes with its timings (the files themselves are compared).
SKIPPED_ENTRY_FILES = {"lock", "work", "cache-metadata.json", "result-files.json"}


def compare_entry(ours: Path, clean: Path, ours_ws: Path, clean_ws: Path) -> Optional[str]:
    """None if the entry equals the clean one; else what differs."""
    skip = SKIPPED_ENTRY_FILES

    def files(root: Path) -> Dict[str, Path]:
        return {str(p.relative_to(root)): p for p in sorted(root.rglob("*"))
                if p.is_file() and p.relative_to(root).parts[0] not in skip}

    mine, theirs = files(ours), files(clean)
    if set(mine) != set(theirs):
        return f"files differ: missing {sorted(set(theirs) - set(mine))}, extra {sorted(set(mine) - set(theirs))}"
    for name in theirs:
        try:
            if load_file(mine[name], ours_ws) != load_file(theirs[name], clean_ws):
                return f"{name} differs"
        except Exception as error:  # unreadable: a partial or broken entry
            return f"{name} unreadable: {type(error).__name__}: {str(error)[:120]}"
    return None


def compare_workspaces(trial_ws: Path, clean_ws: Path) -> Dict[str, Any]:
    ours, clean = cache_dirs(trial_ws), cache_dirs(clean_ws)
    differing = {}
    for unique_id in sorted(set(ours) & set(clean)):
        problem = compare_entry(ours[unique_id], clean[unique_id], trial_ws, clean_ws)
        if problem:
            differing[unique_id] = problem
    return {"entries_compared": len(set(ours) & set(clean)), "missing_entries": sorted(set(clean) - set(ours)),
            "extra_entries": sorted(set(ours) - set(clean)), "differing_entries": differing}


# ------------------------------------------------------------------------------ main


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kills-per-step", type=int, default=2, help="kills at most per step and trial")
    parser.add_argument("--kill-probability", type=float, default=0.8, help="chance that a starting step gets a kill")
    parser.add_argument("--long-step-seconds", type=float, default=120.0)
    parser.add_argument("--long-step-kills", type=int, default=1, help="kills at most per trial in a step longer than --long-step-seconds")
    parser.add_argument("--quick", action="store_true", help="one trial, one kill per step")
    parser.add_argument("--clean-log", type=Path, help="the log of the reused clean run (its step durations)")
    parser.add_argument("--compare-only", action="store_true", help="compare the trials already in --work (outcomes saved there)")
    parser.add_argument("--clean-workspace", type=Path, help="reuse this uninterrupted run's workspace")
    parser.add_argument("--work", type=Path, help="where workspaces and logs go (default: a temporary folder, kept)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    if args.quick:
        args.trials, args.kills_per_step, args.kill_probability = 1, 1, 1.0
    experiment = (REPO / args.experiment).resolve()
    work = args.work or Path(tempfile.mkdtemp(prefix="faults-"))
    work.mkdir(parents=True, exist_ok=True)
    kinds = step_kinds(experiment)
    rng = random.Random(args.seed)
    started = time.perf_counter()

    if args.clean_workspace:
        clean_ws = args.clean_workspace.resolve()
        clean = step_durations(args.clean_log.read_text(errors="replace")) if args.clean_log else {}
        clean_source = "reused (an uninterrupted run of the same experiment, given by --clean-workspace)"
    else:
        clean_ws = work / "clean"
        print(f"clean run in {clean_ws}", flush=True)
        clean = run_clean(experiment, clean_ws, work / "clean.log")
        clean_source = "run"
    print("clean step durations (s):", json.dumps(clean), flush=True)

    trials = []
    for number in range(1, args.trials + 1):
        trial_ws = work / f"trial{number}"
        saved = work / f"trial{number}-outcome.json"
        if args.compare_only:
            outcome = json.loads(saved.read_text())
        else:
            shutil.rmtree(trial_ws, ignore_errors=True)
            logs = work / f"trial{number}-logs"
            logs.mkdir(exist_ok=True)
            print(f"trial {number} in {trial_ws}", flush=True)
            outcome = run_trial(experiment, trial_ws, logs, kinds, clean, rng, args.kills_per_step, args.kill_probability,
                                args.long_step_seconds, args.long_step_kills, saved)
        comparison = compare_workspaces(trial_ws, clean_ws)
        outcome.update(comparison)
        outcome["equal_to_clean"] = outcome["finished"] and not comparison["differing_entries"] and \
            not comparison["missing_entries"] and not comparison["extra_entries"]
        trials.append(outcome)
        print(f"trial {number}: {len(outcome['kills'])} kills, {outcome['runs']} runs, equal to clean: "
              f"{outcome['equal_to_clean']}, differing: {comparison['differing_entries']}", flush=True)

    kills = [kill for trial in trials for kill in trial["kills"]]
    summary = {
        "kill_points": len(kills),
        "kill_points_survived": sum(len(t["kills"]) for t in trials if t["equal_to_clean"]),
        "step_kinds_killed": sorted({kill["kind"] for kill in kills}),
        # Kills after which the same `tango run` went on by itself, with every complete entry equal
        # to the clean run's (counts an unfinished trial's kills whose rerun has started).
        "kill_points_recovered": sum(1 for t in trials if not t["differing_entries"] and not t["unkilled_failures"]
                                     for kill in t["kills"] if kill["run"] < t["runs"] or t["finished"]),
        "trials": len(trials),
        "trials_equal_to_clean": sum(t["equal_to_clean"] for t in trials),
        "complete_entries_wrong_or_missing": sum(len(t["differing_entries"]) for t in trials),
        # A trial whose own runs kept failing (not one stopped for time: see "unfinished_trials").
        "runs_needing_a_manual_step": sum(t["unkilled_failures"] >= MAX_UNKILLED_FAILURES for t in trials),
        "unfinished_trials": sum(not t["finished"] for t in trials),
        "runs_failing_by_themselves": sum(t["unkilled_failures"] for t in trials),
        "tango_runs": sum(t["runs"] for t in trials),
    }
    record = {
        "benchmark": "benchmarks/faults.py",
        "command": "python -m benchmarks.faults " + " ".join(
            "<folder>" if a.startswith("/") or "/tmp" in a else a for a in (argv if argv is not None else sys.argv[1:])),
        "experiment": args.experiment,
        "seed": args.seed,
        "kills_per_step": args.kills_per_step,
        "kill_probability": args.kill_probability,
        "long_step_seconds": args.long_step_seconds,
        "long_step_kills": args.long_step_kills,
        "clean_run": clean_source,
        "clean_step_seconds": {k: round(v, 1) for k, v in clean.items()},
        "summary": summary,
        "trials": [{k: v for k, v in t.items()} for t in trials],
        "wall_minutes": round((time.perf_counter() - started) / 60, 1),
        "date": datetime.now().strftime("%Y-%m-%d"),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(summary, indent=2), flush=True)
    return record


if __name__ == "__main__":
    main()
