"""Long runs as short jobs that resume each other, on this machine or another one.

    python tools/jobs.py run  FILE[:STEP,...] [FILE[:STEP,...] ...] --budget SECONDS [--grace SECONDS] [--out DIR] [-j N]
                              [--stopped-limit MIB] [-w WORKSPACE]
    python tools/jobs.py pack DIR --since UNIX_TIME [--stopped-limit MIB] [-w WORKSPACE]
    python tools/jobs.py unpack DIR [-w WORKSPACE]

``run`` starts one process per target side by side (a model step leaves a GPU mostly idle, so
several share one): ``FILE`` is ``tango run FILE`` and ``FILE:STEP,...`` is ``tango run FILE -s STEP
...``; either computes only what the cache lacks and the wanted results read (`steps.common.compat`:
a machine given the cached pretraining data does not retrain the corpus parser above it). Past ``--budget`` seconds each process gets SIGINT: the training
steps stop at their next step or epoch boundary with a checkpoint (see `steps/common/checkpoints.py`;
one still running ``--grace`` seconds later is killed and goes on from its previous checkpoint),
so the same ``run`` later, here or on another machine given the packed entries, goes on from there.
Exit status: 0 all done, 3 out of time (run it again), 1 a step failed. With ``--out``, each
process's log goes to ``DIR/<n>.log`` and the cache entries the run wrote are packed there.

``pack`` writes the cache entries changed since a time as ``jobs.tar.gz.partNN`` files of at
most 15 MiB (finished entries without their work folders; a stopped one with its checkpoint, up to
``--stopped-limit`` MiB) and ``jobs-manifest.json``: every file's sha256 and the step ID each entry
declares. ``unpack`` checks both before it writes anything: a file that differs from its record, or
an entry whose metadata names another step than its folder or a step version this code does not
compute, is refused in one line. Tango itself caches, resumes and skips what is done; this tool only
bounds the time and moves the entries.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.time_experiment import last_redraw  # noqa: E402
from steps.common.releases import (  # noqa: E402
    METADATA_FILE, ReleaseRefused, digest_of, file_hashes, registered_versions, sha256_of,
)

OUT_OF_TIME = 3
# After SIGINT: a checkpoint of a paper-size model takes a few seconds to write, and a GPU epoch of
# fine-tuning ~10 s; a CPU epoch of the paper's parser head can take minutes (give it --grace).
GRACE_SECONDS = 30
PART_BYTES = 15 * 2**20
MANIFEST = "jobs-manifest.json"
STOPPED_LIMIT_MIB = 32


def target_command(target: str, workspace: Path, parallel: int = 1) -> List[str]:
    """The command of one target: ``FILE`` or ``FILE:STEP,STEP``; ``parallel`` > 1 runs up to that
    many of its steps at once (``tango run -j``: a file's fine-tunes side by side once its encoder is done)."""
    file, _, names = target.partition(":")
    if not Path(file).is_file():
        raise SystemExit(f"{file}: no such experiment file")
    chosen = [option for name in names.split(",") if name for option in ("-s", name)]
    # Tango's CLI with the project's shims loaded first (a machine without cached-path reads files through them).
    tango = [sys.executable, "-c", "import steps, tango.__main__ as cli; cli.main()"]
    return [*tango, "--settings", str(REPO / "tango.yml"), "run", file, *chosen, "-w", str(workspace),
            *(["-j", str(parallel)] if parallel > 1 else [])]


def last_lines(log: Path, count: int = 25) -> List[str]:
    """A log's last lines as a terminal shows them: of each progress-bar redraw run (\\r), the last."""
    lines = [last_redraw(raw) for raw in log.read_bytes().split(b"\n")]  # bytes: read_text would turn \r into \n
    return [line for line in lines if line.strip()][-count:]


def _signal_group(process: subprocess.Popen, signal_number: int) -> None:
    """Send a signal to the process group a run leads (the run and every process it started)."""
    try:
        os.killpg(process.pid, signal_number)
    except ProcessLookupError:
        pass  # the whole group has ended


def _group_alive(process: subprocess.Popen) -> bool:
    """Whether any process of the run's group is still running (the run reaped if it has ended)."""
    process.poll()
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


def run_side_by_side(commands: Sequence[List[str]], budget: float, log_dir: Optional[Path] = None,
                     grace: float = GRACE_SECONDS) -> int:
    """Run the commands at once; past ``budget`` seconds SIGINT them, and SIGKILL those still running
    ``grace`` seconds later (they lose what they did since their last checkpoint, and say so).
    Returns 0, 1 (a command failed) or OUT_OF_TIME."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    logs = []
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        logs = [open(log_dir / f"{number}.log", "ab") for number in range(len(commands))]
    # Each in its own process group, signalled as a whole as a terminal's Ctrl-C signals one: the step
    # processes of `tango run -j` are children of the run, and each must stop at its own boundary.
    processes = [subprocess.Popen(command, cwd=REPO, env=env, stdout=logs[n] if logs else None,
                                  stderr=subprocess.STDOUT if logs else None, start_new_session=True)
                 for n, command in enumerate(commands)]
    for log in logs:
        log.close()  # the children hold their own descriptors
    deadline, status = time.monotonic() + budget, 0
    try:
        while any(p.poll() is None for p in processes):
            if time.monotonic() > deadline:
                status = OUT_OF_TIME
                break
            time.sleep(0.5)
    finally:
        for p in processes:
            _signal_group(p, signal.SIGINT)
        end_of_grace = time.monotonic() + grace
        while time.monotonic() < end_of_grace and any(_group_alive(p) for p in processes):
            time.sleep(0.5)
        for number, p in enumerate(processes):
            if _group_alive(p):
                print(f"jobs: run {number} did not stop within {grace:.0f} s of its SIGINT and was killed; it goes on "
                      f"from its last checkpoint (a longer --grace lets a step reach its next boundary)", flush=True)
            _signal_group(p, signal.SIGKILL)
            p.wait()
        for number, _ in enumerate(commands):
            if log_dir is not None:
                print(f"jobs: last lines of {number}.log:", *last_lines(log_dir / f"{number}.log"), sep="\n  ", flush=True)
    if status == OUT_OF_TIME:
        print(f"jobs: the budget of {budget:.0f} s is spent; run the same command again to go on", flush=True)
        return OUT_OF_TIME
    failed = [(c, p.returncode) for c, p in zip(commands, processes) if p.returncode != 0]
    for command, returncode in failed:
        print(f"jobs: failed ({how_it_ended(returncode)}): {' '.join(command)}", flush=True)
    return 1 if failed else 0


def how_it_ended(returncode: int) -> str:
    """A failed run's exit in words; a run killed from outside (before its budget) says by what."""
    if returncode >= 0:
        return f"exit status {returncode}"
    name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else f"signal {-returncode}"
    if -returncode == signal.SIGKILL:
        # Nothing here sends SIGKILL before the budget is spent: on Linux it is most often the kernel's OOM killer.
        return f"killed by {name}; out of memory? dmesg says"
    return f"killed by {name}"


def _entry_files(entry: Path, finished: bool) -> Dict[str, str]:
    """{path under the cache folder: sha256} of what travels of an entry (a finished one without
    its work folder, which holds only its last checkpoint; a lock never)."""
    files = file_hashes(entry)
    return {f"{entry.name}/{name}": digest for name, digest in files.items()
            if name != "lock" and not (finished and name.split("/")[0] == "work")}


def _changed_since(entry: Path, since: float) -> bool:
    """Whether any file of the entry was written at or after ``since``: a stopped run resumed in the
    same workspace writes only its checkpoint, deep in the folder, so the folder's own time stays."""
    return any(p.stat().st_mtime >= since for p in entry.rglob("*") if p.is_file() and p.name != "lock")


def pack(workspace: Path, out: Path, since: float, stopped_limit: int = STOPPED_LIMIT_MIB * 2**20) -> List[Path]:
    """The cache entries written after ``since`` as parts under ``out`` with their manifest."""
    cache = Path(workspace) / "cache"
    entries = sorted(p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".") and _changed_since(p, since)) \
        if cache.is_dir() else []
    manifest: Dict[str, Dict] = {}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for entry in entries:
            finished = (entry / METADATA_FILE).is_file()
            files = _entry_files(entry, finished)
            size = sum((cache / name).stat().st_size for name in files)
            if not finished and size > stopped_limit:
                print(f"jobs: {entry.name} stays here (stopped, {size / 2**20:.0f} MiB over {stopped_limit / 2**20:.0f})", flush=True)
                continue
            declared = json.loads((entry / METADATA_FILE).read_text())["step"] if finished else entry.name
            manifest[entry.name] = {"finished": finished, "step": declared, "files": files, "sha256": digest_of(files)}
            for name in files:
                tar.add(cache / name, arcname=f"cache/{name}")
    out.mkdir(parents=True, exist_ok=True)
    data = buffer.getvalue()
    parts = []
    for number, start in enumerate(range(0, len(data), PART_BYTES)):
        part = out / f"jobs.tar.gz.part{number:02d}"
        part.write_bytes(data[start : start + PART_BYTES])
        parts.append(part)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    print(f"jobs: {len(manifest)} cache entries in {len(parts)} parts ({len(data) / 2**20:.1f} MiB)", flush=True)
    return parts


def check_manifest(manifest: Dict[str, Dict], staged: Path, versions: Dict[str, str]) -> None:
    """`ReleaseRefused` unless every packed entry under ``staged/cache`` matches its record."""
    for name, entry in sorted(manifest.items()):
        if digest_of(entry["files"]) != entry["sha256"]:
            raise ReleaseRefused(f"{MANIFEST}: {name}'s file hashes do not give its recorded sha256")
        if entry["step"] != name:
            raise ReleaseRefused(f"{MANIFEST}: folder {name} declares step {entry['step']}")
        for file, expected in sorted(entry["files"].items()):
            if not file.startswith(f"{name}/"):
                raise ReleaseRefused(f"{MANIFEST}: {file} lies outside the folder of {name}")
            path = staged / "cache" / file
            if not path.is_file():
                raise ReleaseRefused(f"{file}: missing from the packed parts")
            if sha256_of(path) != expected:
                raise ReleaseRefused(f"{file}: sha256 {sha256_of(path)[:16]}… differs from the {expected[:16]}… in {MANIFEST}")
        metadata = staged / "cache" / name / METADATA_FILE
        if entry["finished"] and not metadata.is_file():
            raise ReleaseRefused(f"{name}: packed as finished without its {METADATA_FILE}")
        if entry["finished"] and json.loads(metadata.read_text()).get("step") != name:
            raise ReleaseRefused(f"{name}/{METADATA_FILE}: names step {json.loads(metadata.read_text()).get('step')}, not {name}")
        step_class, version = (name.split("-") + ["", ""])[:2]
        if versions.get(step_class) != version:
            raise ReleaseRefused(f"{name}: made by {step_class} version {version}; this code's is {versions.get(step_class)}")
    extra = {p.relative_to(staged / "cache").as_posix() for p in (staged / "cache").rglob("*") if p.is_file()} \
        - {file for entry in manifest.values() for file in entry["files"]}
    if extra:
        raise ReleaseRefused(f"{sorted(extra)[0]}: in the packed parts but not in {MANIFEST}")


def unpack(folder: Path, workspace: Path) -> List[str]:
    """The packed entries of ``folder`` into ``workspace``'s cache, once all of them check out.
    Returns their step IDs."""
    parts = sorted(Path(folder).glob("jobs.tar.gz.part*"))
    manifest_file = Path(folder) / MANIFEST
    if not parts or not manifest_file.is_file():
        raise SystemExit(f"{folder}: no jobs.tar.gz.part* files with a {MANIFEST}")
    manifest = json.loads(manifest_file.read_text())
    cache = Path(workspace) / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache))
    try:
        with tarfile.open(fileobj=io.BytesIO(b"".join(part.read_bytes() for part in parts)), mode="r:gz") as tar:
            tar.extractall(staged, filter="data")
        check_manifest(manifest, staged, registered_versions())
        for name in manifest:
            target = cache / name
            if target.exists() and (target / METADATA_FILE).is_file():
                continue  # already finished here
            if target.exists():
                shutil.rmtree(target)
            (staged / "cache" / name).rename(target)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return sorted(manifest)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run targets side by side for at most --budget seconds")
    run.add_argument("targets", nargs="+", help="FILE (tango run FILE) or FILE:STEP,STEP (those steps and what they need)")
    run.add_argument("--budget", type=float, required=True, help="seconds before the runs are stopped at their next boundary")
    run.add_argument("--out", type=Path, help="where logs and the packed entries go")
    run.add_argument("-j", "--parallel", type=int, default=1, help="steps each target runs at once (tango run -j)")
    run.add_argument("--grace", type=float, default=GRACE_SECONDS,
                     help=f"seconds a run has after its SIGINT to reach a step or epoch boundary before it is killed "
                          f"(default {GRACE_SECONDS})")
    pack_parser = commands.add_parser("pack", help="pack the cache entries changed since --since")
    pack_parser.add_argument("out", type=Path)
    pack_parser.add_argument("--since", type=float, default=0.0)
    unpack_parser = commands.add_parser("unpack", help="check and unpack packed entries into the workspace's cache")
    unpack_parser.add_argument("folder", type=Path)
    for sub in (run, pack_parser):
        sub.add_argument("--stopped-limit", type=int, default=STOPPED_LIMIT_MIB,
                         help=f"MiB a stopped entry may take to travel (default {STOPPED_LIMIT_MIB}; a stopped paper-head "
                              "UD fine-tune holds ~181)")
    for sub in (run, pack_parser, unpack_parser):
        sub.add_argument("-w", "--workspace", type=Path, default=REPO / "workspace")
    args = parser.parse_args(argv)
    if args.command == "pack":
        pack(args.workspace, args.out, args.since, args.stopped_limit * 2**20)
        return 0
    if args.command == "unpack":
        try:
            names = unpack(args.folder, args.workspace)
        except ReleaseRefused as refused:
            print(f"refused: {refused}", file=sys.stderr)
            return 2
        print(f"jobs: {len(names)} cache entries unpacked into {args.workspace / 'cache'}")
        return 0
    since = time.time()
    status = run_side_by_side([target_command(t, args.workspace, args.parallel) for t in args.targets], args.budget,
                              args.out / "logs" if args.out else None, args.grace)
    if args.out is not None:
        pack(args.workspace, args.out, since, args.stopped_limit * 2**20)
    return status


if __name__ == "__main__":
    sys.exit(main())
