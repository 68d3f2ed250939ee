"""The Wolof paper-scale campaign (issue 14) as commands of at most 10 minutes on a lent GPU machine.

Every phase is a `tango run` under a time limit; a phase that runs out of time is simply called
again, and its steps resume (pretraining from its last checkpoint, finished steps from the cache).
Its exit status says what happened: 0 done, 3 time ran out (call the same phase again).

    # here, once: the language's data travels inside the checkout (ignored by git, carried by the device tool)
    mkdir -p shared/data && cp -r ../shared/data/wolof shared/data/ && echo /shared/ >> .git/info/exclude
    # another language: --language coptic|maltese|uyghur|ancient_greek on every phase below, and
    # copy that language's folder instead (its UD, corpus and WikiAnn: 8-73 MB, under the 64 MiB
    # carry for all but Uyghur's 73 MB of HTML, which then goes as shared/data/uyghur/{ud,wikiann}
    # plus a tarred corpus, unpacked there by the data phase's caller)
    # on the GPU machine, in the repo root (each line one device call of <= 10 minutes):
    python benchmarks/gpu/campaign.py data       # corpus parser (cpu scale), parse of the whole corpus, vocabulary, rows
    python benchmarks/gpu/campaign.py pretrain $OUT  # µB-M and µB-MXPT-SLA side by side on the one GPU; repeat until 0
    python benchmarks/gpu/campaign.py finetune   # 30 fine-tunes (3 encoders x 5 seeds x UD, NER) with tango -j
    python benchmarks/gpu/campaign.py pack $OUT  # the new cache entries as <= 8 parts of <= 15 MiB under $OUT
    # back here:
    python benchmarks/gpu/campaign.py unpack <files_at of the pack call>    # into ./workspace/cache
    tango run benchmarks/gpu/wolof_m_paper_scale.jsonnet                # finds every step cached

A folder after data/pretrain/finetune ($OUT) takes each command's whole log (`<phase>-<n>.log`, so
a pace line or a stall traceback from `pretrain_microbert` comes back even when progress bars fill
the device tool's output tail); the last lines of each are printed at the end.
`--budget SECONDS` (default 540) bounds each phase below the 10-minute command limit. The
experiment files are benchmarks/gpu/<language>_{m,mxpt_sla,random_init}_paper_scale.jsonnet for
`--language` (default wolof); pass `--files` to run others (e.g. the "paper" regime).
"""
from __future__ import annotations

import argparse
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
    return [f"benchmarks/gpu/{language}_{name}_paper_scale.jsonnet" for name in ("m", "mxpt_sla", "random_init")]


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


def phase_commands(phase: str, files: Sequence[str], jobs: int) -> List[List[str]]:
    if phase == "data":
        # One file builds the shared data steps; the random-init file adds nothing but its tokenizer,
        # which is the same step.
        return [tango([files[0], "-s", "pretraining_data"])]
    if phase == "pretrain":
        return [tango([file, "-s", "pretrained_model"]) for file in files if "random_init" not in file]
    if phase == "finetune":
        return [tango([file, "-j", str(jobs)]) for file in files]
    raise ValueError(phase)


def pack(workspace: Path, out: Path, since: float) -> List[Path]:
    """Cache entries written after `since` (plus the step-info database), tarred and cut into parts."""
    cache = workspace / "cache"
    entries = sorted(p for p in cache.iterdir() if p.is_dir() and p.stat().st_mtime >= since) if cache.is_dir() else []
    out.mkdir(parents=True, exist_ok=True)
    archive = out / "campaign.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for entry in entries:
            tar.add(entry, arcname=f"cache/{entry.name}")
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=["data", "pretrain", "finetune", "pack", "unpack"])
    parser.add_argument("folder", nargs="?", type=Path,
                        help="pack: where the parts go ($OUT); unpack: where they are; other phases: where the logs go ($OUT)")
    parser.add_argument("--budget", type=float, default=540.0, help="seconds per phase (below the 600 s command limit)")
    parser.add_argument("--language", choices=LANGUAGES, default="wolof", help="whose paper-scale files to run")
    parser.add_argument("--files", nargs="+", help="experiment files (default: the language's three)")
    parser.add_argument("--jobs", type=int, default=15, help="fine-tuning steps at once (one CPU thread each)")
    parser.add_argument("--workspace", type=Path, default=REPO / "workspace")
    parser.add_argument("--since", type=float, default=0.0, help="pack: only entries modified after this Unix time")
    args = parser.parse_args(argv)
    args.files = args.files or language_files(args.language)
    os.environ.setdefault("SIB_DATA_ROOT", str(REPO / "shared" / "data"))
    if args.phase == "pack":
        if args.folder is None:
            parser.error("pack needs the output folder ($OUT)")
        pack(args.workspace, args.folder, args.since)
        return 0
    if args.phase == "unpack":
        if args.folder is None:
            parser.error("unpack needs the folder holding the parts")
        return unpack(args.folder, args.workspace)
    return run_all(phase_commands(args.phase, args.files, args.jobs), args.budget, args.folder, args.phase)


if __name__ == "__main__":
    sys.exit(main())
