"""Two overlapping `tango run`s on one workspace: shared steps run once, both
runs finish, and every result equals a sequential run's.

    SIB_DATA_ROOT=../shared/data OMP_NUM_THREADS=1 python benchmarks/concurrency.py

Cases, each on a fresh workspace under --scratch (default: a temporary folder):

- ``sequential``: ``tango run A`` then ``tango run B``, the reference;
- ``concurrent``: A and B started at the same moment, default executor;
- ``parallel_j2``: ``tango run -j 2 B`` (Tango's multicore executor: each step in its own
  ``tango run -s`` process) started together with ``tango run A``;
- ``stock_tango``: as ``concurrent`` but with Tango 1.3.2's own ``LocalWorkspace.step_starting``
  (``steps.common.compat.STOCK_STEP_STARTING``), to show what the patch fixes; the first run is
  stopped once the second has ended (--skip-stock leaves this case out).

A step's computations are counted from the runs' logs ("Finished step" and "Step … failed" lines,
mapped to unique IDs through each file's step graph). Results are compared entry by entry with the sequential
workspace's: every file of every cache entry, JSON with its timing fields dropped, pickles and
gzip files by their decompressed bytes. Writes ``docs/benchmarks/concurrency.json`` (with
``summary_lines`` for docs/RELIABILITY.md).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_FILES = ("experiments/smoke/wolof_m.jsonnet", "experiments/smoke/wolof_mxpt_sla.jsonnet")
OUTPUT = REPO / "docs" / "benchmarks" / "concurrency.json"
# A step computed in a run ends in one of these (a run that waited for another's result and then
# read it logs "Starting step" too, but neither of these).
COMPUTED = re.compile(r'Finished step "([^"]+)"|Step "([^"]+)" failed')
# Fields that time a run rather than describe its result.
TIMING_KEY = re.compile(r"seconds|minutes|per_s|_time$|^time|throughput|elapsed|date", re.IGNORECASE)
# Tango with the stock step_starting, for the stock_tango case.
STOCK_TANGO = ("import sys; import steps.common.compat as compat; from tango.workspaces import LocalWorkspace; "
               "LocalWorkspace.step_starting = compat.STOCK_STEP_STARTING; from tango.__main__ import main; "
               "sys.argv = ['tango'] + sys.argv[1:]; main()")


def tango_command(experiment: str, workspace: Path, parallelism: int = 0, stock: bool = False) -> List[str]:
    prefix = [sys.executable, "-c", STOCK_TANGO] if stock else ["tango"]
    return prefix + ["run", experiment, "-w", str(workspace)] + (["-j", str(parallelism)] if parallelism else [])


def start(command: Sequence[str], log: Path) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def run_case(name: str, workspace: Path, logs: Path, runs: Sequence[dict], together: bool,
             stop_first_when_second_ends: bool = False) -> dict:
    """Run ``runs`` ({experiment, parallelism, stock}) one after another or all at once."""
    started, processes, results = time.monotonic(), [], []
    for index, run in enumerate(runs):
        log = logs / f"{name}_{index}.log"
        process = start(tango_command(run["experiment"], workspace, run.get("parallelism", 0), run.get("stock", False)), log)
        processes.append((run, log, process, time.monotonic()))
        if not together:
            process.wait()
    if stop_first_when_second_ends:
        processes[1][2].wait()
        if processes[0][2].poll() is None:
            processes[0][2].terminate()
    for run, log, process, run_started in processes:
        rc = process.wait()
        text = log.read_text(errors="replace")
        results.append(dict(run, rc=rc, log=log.name, wall_seconds=round(time.monotonic() - run_started, 1),
                            computed_steps=[a or b for a, b in COMPUTED.findall(text)],
                            unexpected_state_errors=len(re.findall(r"unexpected state", text)),
                            waited_for_other_run=len(re.findall(r"waiting for another run's", text)) > 0,
                            summary=_summary_line(text)))
    return dict(name=name, together=together, wall_seconds=round(time.monotonic() - started, 1), runs=results)


def _summary_line(log_text: str) -> str:
    """Tango's closing table caption, e.g. "✓ 14 succeeded" or "✗ 1 failed, ✓ 6 succeeded, 7 not run"."""
    found = re.findall(r"((?:✗ \d+ failed, )?✓ \d+ succeeded(?:, \d+ not run)?|✗ \d+ failed(?:, \d+ not run)?)", log_text)
    return found[-1] if found else ""


def executions(case: dict, graphs: Dict[str, Dict[str, List[str]]]) -> Dict[str, int]:
    """{unique id: how many times a run of this case started it}."""
    counts: Dict[str, int] = {}
    for run in case["runs"]:
        steps = graphs[run["experiment"]]
        for step_name in run["computed_steps"]:
            unique_id = steps[step_name][1]
            counts[unique_id] = counts.get(unique_id, 0) + 1
    return counts


def compare_entries(reference: Path, other: Path, unique_ids: Sequence[str]) -> dict:
    """Files of each cache entry that differ between two workspaces, compared as benchmarks/faults.py
    compares a killed run with a clean one (timings dropped, workspace paths masked, tensors exact)."""
    from benchmarks.faults import SKIPPED_ENTRY_FILES, load_file

    compared, differing, missing = 0, [], []
    for unique_id in unique_ids:
        left, right = reference / "cache" / unique_id, other / "cache" / unique_id
        if not (left / "cache-metadata.json").exists() or not (right / "cache-metadata.json").exists():
            missing.append(unique_id)
            continue
        names = sorted({p.relative_to(d).as_posix() for d in (left, right) for p in d.rglob("*")
                        if p.is_file() and p.relative_to(d).parts[0] not in SKIPPED_ENTRY_FILES})
        for name in names:
            compared += 1
            if not (left / name).exists() or not (right / name).exists() or \
                    load_file(left / name, reference) != load_file(right / name, other):
                differing.append(f"{unique_id}/{name}")
    return dict(files_compared=compared, files_differing=differing, entries_missing=missing)


def table_figures(workspace: Path, unique_ids: Sequence[str], classes: Dict[str, str]) -> Dict[str, dict]:
    """{unique id: (test, dev) of each score_cell}: the numbers the tables are made of."""
    figures = {}
    for unique_id in unique_ids:
        if classes[unique_id] == "ScoreCell":
            path = workspace / "cache" / unique_id / "data.json"
            if path.exists():
                score = json.loads(path.read_text())
                figures[unique_id] = {"cell": f"{score['table']}/{score['row']}/{score['column']}",
                                      "test": score["test"], "dev": score["dev"]}
    return figures


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(DEFAULT_FILES))
    parser.add_argument("--scratch", type=Path, help="where the workspaces go (default: a temporary folder)")
    parser.add_argument("--skip-stock", action="store_true", help="leave out the stock-Tango case")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    first, second = args.experiments
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="concurrency-"))
    scratch.mkdir(parents=True, exist_ok=True)

    from reporting.graphs import build_graph

    graphs = {path: build_graph(REPO / path).steps for path in (first, second)}
    classes = {uid: cls for steps in graphs.values() for cls, uid in steps.values()}
    shared = sorted({uid for _, uid in graphs[first].values()} & {uid for _, uid in graphs[second].values()})
    every = sorted(classes)

    plans = []
    if not args.skip_stock:
        plans.append(("stock_tango", [dict(experiment=first, stock=True), dict(experiment=second, stock=True)], True, True))
    plans += [("concurrent", [dict(experiment=first), dict(experiment=second)], True, False),
              ("parallel_j2", [dict(experiment=first), dict(experiment=second, parallelism=2)], True, False),
              ("sequential", [dict(experiment=first), dict(experiment=second)], False, False)]
    cases = []
    for name, runs, together, stop_first in plans:
        print(f"{name}: {', '.join(r['experiment'] + (' -j 2' if r.get('parallelism') else '') for r in runs)}", flush=True)
        record = scratch / f"{name}.json"  # a case already run in this scratch folder is not run again
        if record.exists():
            case = json.loads(record.read_text())
        else:
            case = run_case(name, scratch / name, scratch, runs, together, stop_first)
            record.write_text(json.dumps(case))
        counts = executions(case, graphs)
        case["shared_step_executions"] = {uid: counts.get(uid, 0) for uid in shared}
        case["steps_run_twice"] = sorted(uid for uid, n in counts.items() if n > 1)
        case["all_runs_finished"] = all(r["rc"] == 0 and "failed" not in r["summary"] for r in case["runs"])
        print(f"  {case['wall_seconds']} s, finished: {case['all_runs_finished']}, "
              f"run twice: {case['steps_run_twice']}", flush=True)
        cases.append(case)

    reference = next(c for c in cases if c["name"] == "sequential")
    reference_figures = table_figures(scratch / "sequential", every, classes)
    for case in cases:
        if case is reference:
            continue
        case["versus_sequential"] = compare_entries(scratch / "sequential", scratch / case["name"], every)
        figures = table_figures(scratch / case["name"], every, classes)
        case["table_figures_equal"] = bool(figures) and figures == reference_figures

    summary = {
        "command": "python benchmarks/concurrency.py",
        "experiments": [first, second],
        "shared_steps": {uid: classes[uid] for uid in shared},
        "table_figures_sequential": reference_figures,
        "cases": cases,
        "tango_locks": TANGO_LOCKS,
    }
    summary["summary_lines"] = summary_lines(summary)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("\n".join(summary["summary_lines"]))
    return 0 if all(c["all_runs_finished"] and not c["steps_run_twice"] and c.get("table_figures_equal", True)
                    and not c.get("versus_sequential", {}).get("files_differing")
                    for c in cases if c["name"] != "stock_tango") else 1


TANGO_LOCKS = (
    "Tango 1.3.2's LocalWorkspace keeps one file lock per step, <workspace>/cache/<unique id>/lock "
    "(filelock, an flock on Linux), taken in step_starting and released in step_finished/step_failed; "
    "a step's result becomes visible only when cache-metadata.json is renamed into place after the "
    "format has written it. Stock step_starting reads the step's state before taking the lock: a "
    "second run reaching a step another run is computing fails it ('unexpected state running') and "
    "skips its dependents; two runs that both find it incomplete both compute it, and the later one "
    "fails on 'already exists! Will not overwrite'. steps/common/compat.py takes the lock first, waits "
    "for it, and then reuses the entry if the other run completed it. The lock covers one step's cache "
    "entry (its work/ folder, checkpoints included, and result); it does not cover stepinfo.sqlite "
    "(sqlite's own locking), runs/ or latest/, nor files outside the workspace."
)


def summary_lines(summary: dict) -> List[str]:
    lines = []
    names = " and ".join(f"`{Path(p).stem}`" for p in summary["experiments"])
    lines.append(f"Concurrent runs (`{summary['command']}`): {names} at smoke scale on one fresh workspace, "
                 f"{len(summary['shared_steps'])} shared steps "
                 f"({', '.join(sorted(set(summary['shared_steps'].values())))}).")
    lines.append("")
    lines.append("| case | runs | wall s | both finished | shared steps run | steps run twice | table figures = sequential | files ≠ sequential |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for case in summary["cases"]:
        runs = " + ".join(f"`{Path(r['experiment']).stem}`" + (" `-j 2`" if r.get("parallelism") else "")
                          + (" (stock)" if r.get("stock") else "") for r in case["runs"])
        runs += " at once" if case["together"] else ", one after the other"
        ran = case["shared_step_executions"]
        shared_text = f"{sum(ran.values())} runs of {len(ran)}"
        versus = case.get("versus_sequential")
        differing = "reference" if versus is None else f"{len(versus['files_differing'])} of {versus['files_compared']}"
        lines.append(
            f"| {case['name']} | {runs} | {case['wall_seconds']:.0f} | {'yes' if case['all_runs_finished'] else 'no'} "
            f"| {shared_text} | {len(case['steps_run_twice'])} "
            f"| {'reference' if versus is None else ('yes' if case['table_figures_equal'] else 'no')} "
            f"| {differing} |")
    stock = next((c for c in summary["cases"] if c["name"] == "stock_tango"), None)
    if stock:
        second = stock["runs"][1]
        lines.append("")
        lines.append(f"With Tango's stock `step_starting` the second run ended with \"{second['summary'] or 'rc ' + str(second['rc'])}\" "
                     f"({second['unexpected_state_errors']} 'unexpected state' errors); the first run was stopped then.")
    lines.append("")
    lines.append(summary["tango_locks"])
    return lines


if __name__ == "__main__":
    sys.exit(main())
