"""Two `tango run`s on one workspace share a step: it runs once and both runs finish.

The shared step (a stand-in written to a module here) holds until the test releases it, and the
test releases it only once the second run has logged that it is waiting for the first run's step,
so the runs overlap on it every time. Stock Tango 1.3.2 fails the second run here with "unexpected
state 'running'" (``benchmarks/concurrency.py`` measures that on real experiments); the patched
``LocalWorkspace.step_starting`` (steps/common/compat.py) makes it wait and read the entry.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from conftest import SUBPROCESS_TIMEOUT_S

REPO = Path(__file__).resolve().parents[1]

STEPS = '''
import os, time
from pathlib import Path
from tango import Step


@Step.register("shared_slow_step_for_concurrency_test")
class SharedSlow(Step):
    DETERMINISTIC = True
    CACHEABLE = True

    def run(self, text: str) -> str:
        with open(os.environ["COMPUTED_LOG"], "a") as log:
            log.write(f"{os.getpid()}\\n")
        release = Path(os.environ["RELEASE_FILE"])
        deadline = time.monotonic() + 120
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return text.upper()


@Step.register("own_step_for_concurrency_test")
class Own(Step):
    DETERMINISTIC = True
    CACHEABLE = True

    def run(self, shared: str, name: str) -> str:
        return f"{shared}+{name}"
'''


def _experiment(path: Path, name: str) -> Path:
    path.write_text(json.dumps({"steps": {
        "shared": {"type": "shared_slow_step_for_concurrency_test", "text": "wolof"},
        name: {"type": "own_step_for_concurrency_test", "shared": {"type": "ref", "ref": "shared"}, "name": name},
    }}))
    return path


def test_two_runs_share_a_step_it_runs_once_and_both_finish(tmp_path):
    module = tmp_path / "concurrency_test_steps.py"
    module.write_text(STEPS)
    computed_log, release = tmp_path / "computed.log", tmp_path / "release"
    env = dict(os.environ, COMPUTED_LOG=str(computed_log), RELEASE_FILE=str(release), OMP_NUM_THREADS="1")
    workspace = tmp_path / "ws"

    def start(name: str):
        log = tmp_path / f"{name}.log"
        command = ["tango", "run", str(_experiment(tmp_path / f"{name}.json", name)), "-w", str(workspace), "-i", str(module)]
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT), log

    first, first_log = start("first")
    deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S  # tango startup is slow on a loaded machine
    while not computed_log.exists():  # the first run is inside the shared step
        assert first.poll() is None and time.monotonic() < deadline, first_log.read_text()[-2000:]
        time.sleep(0.2)
    second, second_log = start("second")
    while "waiting for another run's 'shared'" not in second_log.read_text(errors="replace"):
        assert second.poll() is None and time.monotonic() < deadline, second_log.read_text()[-2000:]
        time.sleep(0.2)
    release.touch()
    assert first.wait(timeout=SUBPROCESS_TIMEOUT_S) == 0 and second.wait(timeout=SUBPROCESS_TIMEOUT_S) == 0
    first_text, second_text = first_log.read_text(), second_log.read_text()
    assert len(computed_log.read_text().split()) == 1  # the shared step ran once
    assert 'Finished step "shared"' in first_text and 'Finished step "shared"' not in second_text
    assert "failed" not in first_text + second_text
    assert 'Finished step "first"' in first_text and 'Finished step "second"' in second_text
    results = sorted(p.name.split("-")[0] for p in (workspace / "cache").iterdir() if (p / "cache-metadata.json").exists())
    assert results == ["Own", "Own", "SharedSlow"]
