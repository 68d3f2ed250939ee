"""tools/jobs.py on CPU: time-bounded side-by-side runs, and cache entries packed on one machine,
checked and unpacked on another (a tampered or mislabelled entry is refused in one line)."""
import json
import signal
import sys
import time
from pathlib import Path

import pytest

from steps.common.releases import ReleaseRefused, digest_of
from tools import jobs


def test_runs_past_their_budget_are_stopped_with_sigint_and_say_run_again(tmp_path):
    # A run that catches SIGINT writes what a training step writes at its boundary: its checkpoint.
    marker = tmp_path / "checkpoint"
    catcher = [sys.executable, "-c", "import signal, sys, time\n"
               f"signal.signal(signal.SIGINT, lambda *_: (open({str(marker)!r}, 'w').write('step 3'), sys.exit(1)))\n"
               "time.sleep(300)"]
    start = time.monotonic()
    assert jobs.run_side_by_side([catcher, [sys.executable, "-c", "import time; time.sleep(300)"]], budget=2) == jobs.OUT_OF_TIME
    assert time.monotonic() - start < 120 and marker.read_text() == "step 3"
    assert jobs.run_side_by_side([[sys.executable, "-c", "pass"]], budget=30) == 0
    assert jobs.run_side_by_side([[sys.executable, "-c", "raise SystemExit(2)"]], budget=30) == 1


def test_a_failed_run_says_how_it_ended(capsys):
    # A run the kernel kills (its out-of-memory killer sends SIGKILL) is named as killed, not only "failed".
    killed = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    assert jobs.run_side_by_side([killed, [sys.executable, "-c", "raise SystemExit(2)"]], budget=30) == 1
    printed = capsys.readouterr().out
    assert "jobs: failed (killed by SIGKILL; out of memory? dmesg says): " in printed
    assert "jobs: failed (exit status 2): " in printed


def test_the_processes_a_run_started_are_stopped_with_it(tmp_path):
    # `tango run -j` runs each step in a child process: the child, not the run, writes the checkpoint.
    marker = tmp_path / "checkpoint"
    child = ("import signal, sys, time\n"
             f"signal.signal(signal.SIGINT, lambda *_: (open({str(marker)!r}, 'w').write('epoch 7'), sys.exit(1)))\n"
             "time.sleep(300)")
    run = [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"]
    start = time.monotonic()
    assert jobs.run_side_by_side([run], budget=2) == jobs.OUT_OF_TIME
    assert time.monotonic() - start < 60 and marker.read_text() == "epoch 7"


def test_each_runs_log_is_kept_and_its_end_printed_as_a_terminal_shows_it(tmp_path, capsys):
    noisy = [sys.executable, "-c", "import sys; print('start'); sys.stdout.write('10%\\r50%\\r100%\\n')"]
    assert jobs.run_side_by_side([noisy], budget=60, log_dir=tmp_path) == 0
    assert "10%\r50%\r100%" in (tmp_path / "0.log").read_bytes().decode()
    printed = capsys.readouterr().out
    assert "last lines of 0.log:\n  start\n  100%" in printed and "10%" not in printed


def test_targets_are_tango_runs_of_a_file_or_of_its_named_steps(tmp_path):
    experiment = tmp_path / "cell.jsonnet"
    experiment.write_text("{steps: {}}")
    whole = jobs.target_command(str(experiment), tmp_path / "ws")
    named = jobs.target_command(f"{experiment}:pretrained_model,ud_parser_s42", tmp_path / "ws")
    assert whole[1] == "-c" and whole[3] == "--settings" and whole[5:7] == ["run", str(experiment)]
    assert named[7:11] == ["-s", "pretrained_model", "-s", "ud_parser_s42"] and "-j" not in named
    assert jobs.target_command(str(experiment), tmp_path / "ws", parallel=8)[-2:] == ["-j", "8"]
    with pytest.raises(SystemExit, match="no such experiment file"):
        jobs.target_command(str(tmp_path / "missing.jsonnet"), tmp_path / "ws")


FINISHED, STOPPED, OLD = "PretrainMicrobert-002-done", "PretrainMicrobert-002-stopped", "TrainTokenizer-002-old"
STOPPED_CHECKPOINT = Path(STOPPED, "work", "checkpoint.pt").as_posix()  # as the manifest names it, under the cache


@pytest.fixture
def packed(tmp_path):
    """A workspace with an old entry, a finished pretraining and a stopped one, packed since a time."""
    cache = tmp_path / "gpu" / "cache"
    (cache / OLD).mkdir(parents=True)
    (cache / OLD / "cache-metadata.json").write_text(json.dumps({"step": OLD}))
    since = time.time() + 1
    time.sleep(1.1)
    for name, finished in ((FINISHED, True), (STOPPED, False)):
        (cache / name / "work").mkdir(parents=True)
        (cache / name / "work" / "checkpoint.pt").write_bytes(bytes(range(256)) * 4096)  # 1 MiB
        (cache / name / "lock").write_text("")
        if finished:
            (cache / name / "result").mkdir()
            (cache / name / "result" / "model.safetensors").write_bytes(b"weights")
            (cache / name / "cache-metadata.json").write_text(json.dumps({"step": name}))
    parts = jobs.pack(tmp_path / "gpu", tmp_path / "out", since)
    assert parts and all(p.stat().st_size <= jobs.PART_BYTES for p in parts)
    return tmp_path / "out"


def test_pack_and_unpack_round_trip_what_a_run_wrote(packed, tmp_path):
    assert jobs.unpack(packed, tmp_path / "here") == [FINISHED, STOPPED]
    here = tmp_path / "here" / "cache"
    assert sorted(p.name for p in here.iterdir()) == [FINISHED, STOPPED]
    # A finished entry leaves its last checkpoint behind; a stopped one brings it, to go on from.
    assert not (here / FINISHED / "work").exists() and (here / FINISHED / "result" / "model.safetensors").read_bytes() == b"weights"
    assert (here / STOPPED / "work" / "checkpoint.pt").stat().st_size == 2**20 and not (here / STOPPED / "lock").exists()


def _edit_manifest(packed: Path, edit) -> None:
    manifest = json.loads((packed / jobs.MANIFEST).read_text())
    edit(manifest)
    (packed / jobs.MANIFEST).write_text(json.dumps(manifest))


def test_an_entry_that_differs_from_its_record_is_refused_before_anything_is_written(packed, tmp_path, capsys):
    def tamper(manifest):  # a file whose bytes are not the recorded ones (the record re-sealed to match)
        files = manifest[STOPPED]["files"]
        files[STOPPED_CHECKPOINT] = "0" * 64
        manifest[STOPPED]["sha256"] = digest_of(files)

    _edit_manifest(packed, tamper)
    assert jobs.main(["unpack", str(packed), "-w", str(tmp_path / "here")]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and f"{STOPPED_CHECKPOINT}: sha256 " in error and "differs from" in error, error
    assert [p.name for p in (tmp_path / "here" / "cache").iterdir()] == []


@pytest.mark.parametrize("edit, message", [
    (lambda m: m[FINISHED].update(step=STOPPED), "declares step"),
    (lambda m: m[FINISHED].update(sha256="0" * 64), "do not give its recorded sha256"),
    (lambda m: m.update({"PretrainMicrobert-001-x": {**m.pop(FINISHED), "step": "PretrainMicrobert-001-x"}}), "lies outside the folder of PretrainMicrobert-001-x"),
])
def test_an_entry_with_a_broken_record_is_refused(packed, tmp_path, edit, message):
    _edit_manifest(packed, edit)
    with pytest.raises(ReleaseRefused, match=message):
        jobs.unpack(packed, tmp_path / "here")


def test_an_entry_made_by_another_version_of_its_step_is_refused(tmp_path):
    cache = tmp_path / "gpu" / "cache"
    name = "PretrainMicrobert-001-old"
    (cache / name / "result").mkdir(parents=True)
    (cache / name / "cache-metadata.json").write_text(json.dumps({"step": name}))
    jobs.pack(tmp_path / "gpu", tmp_path / "out", 0)
    with pytest.raises(ReleaseRefused, match="made by PretrainMicrobert version 001; this code's is 002"):
        jobs.unpack(tmp_path / "out", tmp_path / "here")


def test_a_run_resumed_in_the_same_workspace_is_packed_again(tmp_path):
    """A stopped entry resumed where it lies changes only its checkpoint: it is packed all the same."""
    entry = tmp_path / "gpu" / "cache" / STOPPED
    (entry / "work").mkdir(parents=True)
    (entry / "work" / "checkpoint.pt").write_bytes(b"step 34884")
    since = time.time() + 1
    time.sleep(1.1)
    (entry / "work" / "checkpoint.pt").write_bytes(b"step 43170")
    jobs.pack(tmp_path / "gpu", tmp_path / "out", since)
    assert jobs.unpack(tmp_path / "out", tmp_path / "here") == [STOPPED]
    assert (tmp_path / "here" / "cache" / STOPPED / "work" / "checkpoint.pt").read_bytes() == b"step 43170"


def test_a_stopped_entry_over_the_limit_stays_unless_the_limit_is_raised(tmp_path, monkeypatch, capsys):
    """A stopped entry larger than --stopped-limit is named and left behind; `run` and `pack` both
    take the limit, so a job that may carry more (a paper-head fine-tune's checkpoint) packs it.
    `run` passes its --grace on too."""
    entry = tmp_path / "gpu" / "cache" / STOPPED
    (entry / "work").mkdir(parents=True)
    (entry / "work" / "checkpoint.pt").write_bytes(b"\0" * (3 * 2**20))
    assert jobs.main(["pack", str(tmp_path / "kept"), "--stopped-limit", "2", "-w", str(tmp_path / "gpu")]) == 0
    assert f"{STOPPED} stays here (stopped, 3 MiB over 2)" in capsys.readouterr().out
    assert json.loads((tmp_path / "kept" / jobs.MANIFEST).read_text()) == {}
    assert jobs.main(["pack", str(tmp_path / "moved"), "--stopped-limit", "4", "-w", str(tmp_path / "gpu")]) == 0
    assert jobs.unpack(tmp_path / "moved", tmp_path / "here") == [STOPPED]

    limits, graces = [], []
    monkeypatch.setattr(jobs, "run_side_by_side", lambda commands, budget, logs, grace: graces.append(grace) or jobs.OUT_OF_TIME)
    monkeypatch.setattr(jobs, "pack", lambda workspace, out, since, limit: limits.append(limit))
    target = "experiments/smoke/wolof_m.jsonnet"
    for extra, limit, grace in (([], jobs.STOPPED_LIMIT_MIB, jobs.GRACE_SECONDS), (["--stopped-limit", "200", "--grace", "240"], 200, 240)):
        assert jobs.main(["run", target, "--budget", "1", "--out", str(tmp_path / "out"), *extra]) == jobs.OUT_OF_TIME
        assert limits.pop() == limit * 2**20 and graces.pop() == grace


def test_a_run_that_outlasts_its_grace_is_killed_and_named(tmp_path, capsys):
    """Past the budget each run gets SIGINT; one still running --grace seconds later (a CPU epoch of
    the paper's parser head takes minutes) is killed, and the job says which and why."""
    deaf = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(300)"]
    stops = [sys.executable, "-c", "import time; time.sleep(300)"]  # KeyboardInterrupt at the SIGINT
    start = time.monotonic()
    assert jobs.run_side_by_side([stops, deaf], budget=1, grace=2) == jobs.OUT_OF_TIME
    assert 2 <= time.monotonic() - start < 60
    out = capsys.readouterr().out
    assert "run 1 did not stop within 2 s of its SIGINT and was killed" in out and "run 0 did not" not in out
