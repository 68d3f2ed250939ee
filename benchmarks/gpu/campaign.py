"""The Wolof paper-scale campaign (issue 14) as commands of at most 10 minutes on a lent GPU machine.

Every phase runs steps under a time limit; a phase that runs out of time is simply called again,
and its steps resume (pretraining from its last checkpoint, fine-tuning from its last epoch,
finished steps from the cache). Its exit status says what happened: 0 done, 3 time ran out (call
the same phase again), 1 a step failed.

    levers $OUT     time the pretraining levers (bench_pretrain_step.py) and write M's fastest to levers.json
    compile-levers --to on|off   add torch.compile of the encoder and the P/T losses to levers.json, or drop both
    data            corpus parser (cpu scale), parse of the whole corpus, vocabulary, rows (here, on 2 cores: ~12 min)
    pretrain $OUT   µB-M and µB-MXPT-SLA side by side (--files one of them for a clean wall time)
    finetune $OUT   every fine-tuning step (3 encoders x 5 seeds x UD, NER) in about --jobs processes, then the scores
    pack $OUT       the cache entries written since --since as <= 8 parts of <= 15 MiB (finished ones without their checkpoints;
                    a stopped one with it up to 32 MiB, else it stays on the machine and resumes there on the next call)
    unpack DIR      back here: the parts into ./workspace/cache, where `tango run` of the same files finds them,
                    and the cached steps of --files (default the language's three) on the workspace's record

The machine needs only what the steps read: pretrain and finetune run the named steps through
`run_steps.py`, which computes a dependency only when the cache lacks it (`tango run -s` would first
retrain the corpus parser above the cached pretraining data). `benchmarks/gpu/allocation.sh` is one
whole device call (phases in order until its time is up, then pack) and says what travels with it.
Another language: --language coptic|maltese|uyghur|ancient_greek, and that language's data.

A folder after levers/data/pretrain/finetune ($OUT) takes each command's whole log (`<phase>-<n>.log`,
so a pace line or a stall traceback from `pretrain_microbert` comes back even when progress bars fill
the device tool's output tail); the last lines of each are printed at the end. `--budget SECONDS`
(default 540) bounds each phase below the 10-minute command limit.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import List, Optional, Sequence

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from benchmarks.time_experiment import last_redraw  # noqa: E402
LANGUAGES = ("wolof", "coptic", "maltese", "uyghur", "ancient_greek")  # the paper's five (issue 17)


def language_files(language: str) -> List[str]:
    """A language's paper-scale files: µB-M, µB-MXPT-SLA and random-init."""
    return [f"experiments/paper/{language}_{name}.jsonnet" for name in ("m", "mxpt_sla", "random_init")]


FILES = language_files("wolof")
PRETRAINED = FILES[:2]
OUT_OF_TIME = 3
PART_BYTES = 15 * 2**20  # the device tool brings back files of at most 16 MiB, at most 8 of them


def tango(args: Sequence[str]) -> List[str]:
    return [sys.executable, "-m", "tango", "--settings", str(REPO / "tango.yml"), "run", *args]


LOG_TAIL_LINES = 30


def last_lines(log: Path, count: int = LOG_TAIL_LINES) -> List[str]:
    """A log's last lines as a terminal would show them: of each progress-bar redraw run (\\r), the last."""
    lines = [last_redraw(raw) for raw in log.read_bytes().split(b"\n")]  # bytes: read_text would turn \r into \n
    return [line for line in lines if line.strip()][-count:]


def run_all(commands: Sequence[List[str]], budget: float, log_dir: Optional[Path] = None, phase: str = "phase") -> int:
    """Run commands side by side; past the budget, stop them (SIGINT, then SIGKILL) and return
    OUT_OF_TIME. Steps checkpoint atomically, so a stopped run resumes on the next call.
    ``log_dir``: each command's output goes to ``<log_dir>/<phase>-<n>.log`` instead of the terminal."""
    try:
        return _run_all(commands, budget, log_dir, phase)
    finally:
        for log in sorted(log_dir.glob(f"{phase}-*.log")) if log_dir is not None else []:
            print(f"campaign: last lines of {log.name}:", *last_lines(log), sep="\n  ", flush=True)


def _run_all(commands: Sequence[List[str]], budget: float, log_dir: Optional[Path], phase: str) -> int:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    logs = []
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        logs = [open(log_dir / f"{phase}-{number}.log", "a", encoding="utf-8") for number in range(len(commands))]
    processes = [subprocess.Popen(command, cwd=REPO, env=env, stdout=logs[n] if logs else None, stderr=subprocess.STDOUT if logs else None)
                 for n, command in enumerate(commands)]
    for log in logs:
        log.close()  # the children hold their own descriptors
    deadline = time.monotonic() + budget
    while any(p.poll() is None for p in processes):
        if time.monotonic() > deadline:
            for p in processes:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
            grace = time.monotonic() + 20
            while time.monotonic() < grace and any(p.poll() is None for p in processes):
                time.sleep(0.5)
            for p in processes:
                if p.poll() is None:
                    p.kill()
            print(f"campaign: budget of {budget:.0f} s spent; call the same phase again to resume", flush=True)
            return OUT_OF_TIME
        time.sleep(0.5)
    failed = [" ".join(c) for c, p in zip(commands, processes) if p.returncode != 0]
    for command in failed:
        print(f"campaign: failed: {command}", flush=True)
    return 1 if failed else 0


def phase_commands(phase: str, files: Sequence[str]) -> List[List[str]]:
    if phase == "data":
        # One file builds the shared data steps; the random-init file adds nothing but its tokenizer,
        # which is the same step.
        return [tango([files[0], "-s", "pretraining_data"])]
    if phase == "pretrain":
        # Not `tango run -s`: it would also ensure the corpus parser above the cached pretraining data.
        return [run_steps_command(file, ["pretrained_model"]) for file in files if "random_init" not in file]
    raise ValueError(f"{phase}: not a phase of side-by-side commands (finetune runs finetune_stages)")


def run_steps_command(file: str, names: Sequence[str]) -> List[str]:
    return [sys.executable, str(REPO / "tools" / "run_steps.py"), file, *names]


def file_graph(file: str):
    """An experiment file's step graph (a path relative to the repository)."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401  (registers the steps; compat shims first)

    return StepGraph.from_params(Params.from_file(REPO / file).pop("steps"))


def finetune_stages(files: Sequence[str], jobs: int) -> List[List[List[str]]]:
    """The finetune phase as two stages of side-by-side `run_steps` commands: every file's
    fine-tuning steps spread over about `jobs` commands, then each file's scores and table cells.
    Not `tango run -j`: it would ensure the corpus parser above the cached inputs first."""
    tuning, scoring = [], []
    for file in files:
        graph = file_graph(file)
        names = [name for name, step in graph.items() if type(step).__name__.startswith("Finetune")]
        groups = max(1, min(len(names), round(jobs / len(files))))
        tuning += [run_steps_command(file, names[start::groups]) for start in range(groups)]
        cells = [name for name, step in graph.items() if type(step).__name__ in ("ScoreCell", "AggregateCell")]
        scoring.append(run_steps_command(file, cells))
    return [tuning, scoring]


LEVERS_FILE = REPO / "configs" / "levers.json"  # the paper scale's levers (configs/scales.libsonnet; they re-key pretraining)
BENCH = [sys.executable, str(REPO / "benchmarks" / "bench_pretrain_step.py"), "--batch-size", "256", "--length", "64",
         "--steps", "30", "--warmup", "5", "--conditions", "M", "MXPT-SLA", "--parse-in-loader"]
# Eager rows first (seconds); the compiled ones compile twice (M and MXPT-SLA) and may not fit.
LEVER_RUNS = (("eager", ["--precision", "fp32", "bf16", "--optimizer", "default", "fused", "--compile", "none"]),
              ("compiled", ["--precision", "bf16", "--optimizer", "fused", "--compile", "reduce-overhead"]))


def chosen_levers(results: Sequence[dict], condition: str = "M") -> dict:
    """pretrain_microbert's lever arguments of `condition`'s fastest row over the benchmark runs
    (bench_pretrain_step.py's JSON), defaults left out: {} when plain fp32 eager wins."""
    from benchmarks.bench_pretrain_step import lever_variants

    best = None
    for result in results:
        for suffix, precision, fused, mode in lever_variants(result["precision"], result["optimizer"], result["compile"]):
            median = result["median_seconds"].get(f"µB-{condition}{suffix}")
            if median is not None and (best is None or median < best[0]):
                best = (median, precision, fused, mode)
    if best is None:
        raise ValueError(f"no µB-{condition} row in the benchmark results")
    _, precision, fused, mode = best
    return {**({"precision": precision} if precision != "fp32" else {}), **({"fused_optimizer": True} if fused else {}),
            **({"compile_encoder": {"mode": mode}} if mode is not None else {})}


def choose_levers(out: Path, budget: float, device: str = "cuda", extra: Sequence[str] = (),
                  levers_file: Path = LEVERS_FILE, runs=LEVER_RUNS) -> int:
    """Time every lever on the device (`runs`, within `budget` seconds) and write M's fastest
    combination to `levers_file` (and `out`), so the pretraining phase after it runs with them."""
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + budget
    results = []
    for name, arguments in runs:
        record = out / f"gpu_pretrain_step_{name}.json"
        left = deadline - time.monotonic()
        if left < 10:
            print(f"campaign: no time left for the {name} lever rows", flush=True)
            break
        command = [*BENCH, "--device", device, *arguments, *extra, "--json", str(record)]
        with open(out / f"levers-{name}.log", "w", encoding="utf-8") as log:
            try:
                subprocess.run(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, timeout=left, check=False)
            except subprocess.TimeoutExpired:
                print(f"campaign: the {name} lever rows ran out of time", flush=True)
        print(f"campaign: last lines of levers-{name}.log:", *last_lines(out / f"levers-{name}.log", 12), sep="\n  ", flush=True)
        if record.is_file():
            results.append(json.loads(record.read_text()))
    if not results:
        print("campaign: no lever rows finished; levers left as they were", flush=True)
        return 1
    levers = chosen_levers(results)
    levers_file.write_text(json.dumps(levers, indent=2) + "\n")
    (out / levers_file.name).write_text(levers_file.read_text())
    print(f"campaign: levers for the paper-scale pretraining: {levers or 'none (plain fp32, eager)'}", flush=True)
    return 0


COMPILE_LEVERS = {"compile_encoder": {"mode": "reduce-overhead"}, "compile_objectives": {}}


def set_compile_levers(enabled: bool, levers_file: Optional[Path] = None) -> dict:
    """Add torch.compile of the encoder and the P/T losses to `levers_file`'s levers, or drop both
    (a pretraining that failed compiled retries eager), leaving the eager levers as they are."""
    levers_file = levers_file or LEVERS_FILE
    levers = json.loads(levers_file.read_text()) if levers_file.is_file() else {}
    levers = {key: value for key, value in levers.items() if key not in COMPILE_LEVERS}
    if enabled:
        levers.update(COMPILE_LEVERS)
    levers_file.write_text(json.dumps(levers, indent=2) + "\n")
    return levers


# A stopped entry travels with its checkpoint up to this size: a µBERT pretraining's (~20 MB) does;
# a paper-regime parser's (~190 MB: weights, best weights, Adam state) would take more than the
# 8 parts a call brings back, so it stays in the machine's workspace and resumes there on the next
# call while the machine is warm (ignored paths persist between calls).
STOPPED_LIMIT = 32 * 2**20


def pack(workspace: Path, out: Path, since: float, stopped_limit: int = STOPPED_LIMIT) -> List[Path]:
    """Cache entries written after `since`, tarred and cut into parts: a finished entry without its
    work folder, an unfinished one (a stopped pretraining) with it, unless that folder is over
    `stopped_limit` bytes: then the entry stays behind, named in the output."""
    cache = workspace / "cache"
    entries = sorted(p for p in cache.iterdir() if p.is_dir() and p.stat().st_mtime >= since) if cache.is_dir() else []
    from reporting.cache import folder_size

    stopped = {e: folder_size(e / "work") for e in entries if not (e / "cache-metadata.json").is_file()}
    for entry, size in stopped.items():
        if size > stopped_limit:
            print(f"campaign: {entry.name} stays on this machine (stopped, checkpoint {size / 2**20:.0f} MiB): "
                  "the next call resumes it while the machine is warm", flush=True)
    entries = [e for e in entries if stopped.get(e, 0) <= stopped_limit]
    out.mkdir(parents=True, exist_ok=True)
    archive = out / "campaign.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for entry in entries:
            # A finished entry's work folder holds only its last checkpoint (20 MB for a µBERT):
            # an unfinished one travels with it, to resume from.
            finished = (entry / "cache-metadata.json").is_file()
            tar.add(entry, arcname=f"cache/{entry.name}",
                    filter=lambda info: None if finished and info.name.split("/")[2:3] == ["work"] else info)
    data = archive.read_bytes()
    archive.unlink()
    parts = []
    for number, start in enumerate(range(0, len(data), PART_BYTES)):
        part = out / f"campaign.tar.gz.part{number:02d}"
        part.write_bytes(data[start : start + PART_BYTES])
        parts.append(part)
    if len(parts) > 8:
        raise SystemExit(f"{len(parts)} parts: more than the 8 files a device call brings back; pack in two calls")
    print(f"campaign: {len(entries)} cache entries in {len(parts)} parts ({len(data) / 2**20:.1f} MiB)")
    return parts


def unpack(folder: Path, workspace: Path) -> int:
    parts = sorted(folder.glob("campaign.tar.gz.part*"))
    if not parts:
        raise SystemExit(f"{folder}: no campaign.tar.gz.part* files")
    joined = workspace / "campaign.tar.gz"
    workspace.mkdir(parents=True, exist_ok=True)
    joined.write_bytes(b"".join(part.read_bytes() for part in parts))
    with tarfile.open(joined) as tar:
        names = [m.name for m in tar.getmembers() if m.name.startswith("cache/") and m.name.count("/") == 1]
        tar.extractall(workspace, filter="data")
    joined.unlink()
    print(f"campaign: {len(names)} cache entries unpacked into {workspace / 'cache'}")
    return 0


def adopt(workspace: Path, steps) -> int:
    """Record the given steps whose entries sit in `workspace`'s cache (unpacked from a device
    call) in its step-info database, as `tango run` would on meeting them: the report lists a
    workspace's runs from that database, and entries copied in had no record there. A stopped run
    (a checkpoint, no result) is recorded as incomplete, with its config: `reporting.cache
    unfinished` reads its seed and length there. Returns how many were recorded."""
    from tango.workspaces import LocalWorkspace

    local = LocalWorkspace(workspace)
    present = [step for step in steps if step in local.step_cache or local.step_dir(step).is_dir()]
    for step in present:
        local.step_info(step)
    return len(present)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=["levers", "compile-levers", "data", "pretrain", "finetune", "pack", "unpack"])
    parser.add_argument("folder", nargs="?", type=Path,
                        help="pack: where the parts go ($OUT); unpack: where they are; other phases: where the logs go ($OUT)")
    parser.add_argument("--budget", type=float, default=540.0, help="seconds per phase (below the 600 s command limit)")
    parser.add_argument("--language", choices=LANGUAGES, default="wolof", help="whose paper-scale files to run")
    parser.add_argument("--files", nargs="+", help="experiment files (default: the language's three)")
    parser.add_argument("--jobs", type=int, default=15, help="fine-tuning steps at once (one CPU thread each)")
    parser.add_argument("--workspace", type=Path, default=REPO / "workspace")
    parser.add_argument("--lever-runs", nargs="+", choices=[name for name, _ in LEVER_RUNS],
                        help="levers: which benchmark runs (default all; the compiled one compiles twice)")
    parser.add_argument("--since", type=float, default=0.0, help="pack: only entries modified after this Unix time")
    parser.add_argument("--to", choices=["on", "off"], help="compile-levers: add the compile levers to levers.json, or drop them")
    args = parser.parse_args(argv)
    args.files = args.files or language_files(args.language)
    os.environ.setdefault("SIB_DATA_ROOT", str(REPO / "shared" / "data"))
    if args.phase == "pack":
        if args.folder is None:
            parser.error("pack needs the output folder ($OUT)")
        pack(args.workspace, args.folder, args.since)
        return 0
    if args.phase == "levers":
        if args.folder is None:
            parser.error("levers needs the output folder ($OUT)")
        runs = [run for run in LEVER_RUNS if run[0] in (args.lever_runs or [name for name, _ in LEVER_RUNS])]
        return choose_levers(args.folder, args.budget, runs=runs)
    if args.phase == "compile-levers":
        if args.to is None:
            parser.error("compile-levers needs --to on or --to off")
        print(f"campaign: levers now {set_compile_levers(args.to == 'on')}", flush=True)
        return 0
    if args.phase == "unpack":
        if args.folder is None:
            parser.error("unpack needs the folder holding the parts")
        unpack(args.folder, args.workspace)
        steps = {step.unique_id: step for file in args.files for step in file_graph(file).values()}  # files share steps
        print(f"campaign: {adopt(args.workspace, steps.values())} cached or stopped steps of {', '.join(args.files)} on record")
        return 0
    if args.phase == "finetune":
        deadline = time.monotonic() + args.budget
        for number, stage in enumerate(finetune_stages(args.files, args.jobs)):
            status = run_all(stage, deadline - time.monotonic(), args.folder, f"finetune{number}")
            if status != 0:
                return status
        return 0
    return run_all(phase_commands(args.phase, args.files), args.budget, args.folder, args.phase)


if __name__ == "__main__":
    sys.exit(main())
