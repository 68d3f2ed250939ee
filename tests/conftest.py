"""Shared test setup: tests read real data from ../shared/data through the data root."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Optional

import pytest

# The suite runs in one pytest-xdist worker per core (pytest.ini). Each worker, and every `tango run`
# it starts, keeps to one torch thread, so that two workers on two cores do not oversubscribe them.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)

from tango import Step

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO.parent / "shared" / "data").resolve()
os.environ.setdefault("SIB_DATA_ROOT", str(SHARED_DATA))
DATA_ROOT = Path(os.environ["SIB_DATA_ROOT"]).resolve()
# W&B tracking (steps.common.tracking) is off in tests, whatever the caller's environment says;
# tests/test_tracking.py turns it on for itself. Subprocesses (tango run) inherit this.
os.environ["SIB_WANDB"] = "off"
# Subprocess timeouts guard against hangs, not speed (benchmarks hold those): a 2-core box that is also
# running a campaign takes the smoke DAG past 10 minutes, so the guard is generous and overridable.
SUBPROCESS_TIMEOUT_S = float(os.environ.get("SIB_TEST_SUBPROCESS_TIMEOUT_S", "1800"))
if not (DATA_ROOT / "wolof" / "ud").is_dir():
    raise pytest.UsageError(f"test data not found under {DATA_ROOT}: set SIB_DATA_ROOT (e.g. ../shared/data)")


@pytest.fixture(scope="session")
def data_root() -> Path:
    return DATA_ROOT


@pytest.fixture(scope="session")
def wolof_dev_sentences():
    from steps.data.readers import read_conllu

    return read_conllu(DATA_ROOT / "wolof" / "ud" / "wo_wtb-ud-dev.conllu")


@pytest.fixture(scope="session")
def small_wolof_tokenizer(wolof_dev_sentences):
    """A real WordPiece vocabulary small enough that many words split into several pieces."""
    from steps.data.vocab import train_wordpiece

    return train_wordpiece([s["tokens"] for s in wolof_dev_sentences], vocab_size=400)


@pytest.fixture
def resumed_run_matches(monkeypatch):
    """``check(make_step, workspace_dir, crash_after, reference)``: run ``make_step()`` in a fresh
    workspace with the fine-tuning loop's crash hook set to epoch ``crash_after``, run it again
    there, and assert that the resumed run's metrics (timings aside) and predicted files equal the
    uninterrupted ``reference`` result's and that its checkpoint was removed. Returns its metrics."""
    import json

    from tango.workspaces import LocalWorkspace

    from steps.finetune.loop import CHECKPOINT_NAME, CRASH_AFTER_EPOCH_ENV

    # Timings, and what a resumed process counts of its own part of the run.
    timings = {"seconds", "train_seconds", "wall_seconds", "eval_seconds", "dev_seconds", "parse_seconds", "train_tokens_per_second",
               "resumed_from", "cuda_graphs"}

    def untimed(value):
        if isinstance(value, dict):
            return {k: untimed(v) for k, v in value.items() if k not in timings}
        return [untimed(v) for v in value] if isinstance(value, list) else value

    def check(make_step, workspace_dir: Path, crash_after: int, reference: Path):
        workspace = LocalWorkspace(workspace_dir)
        monkeypatch.setenv(CRASH_AFTER_EPOCH_ENV, str(crash_after))
        with pytest.raises(Exception, match=f"stopping after epoch {crash_after}"):
            make_step().result(workspace)
        assert len(list(workspace_dir.rglob(CHECKPOINT_NAME))) == 1
        monkeypatch.delenv(CRASH_AFTER_EPOCH_ENV)
        resumed = make_step().result(workspace)
        assert not list(workspace_dir.rglob(CHECKPOINT_NAME))  # removed once the result is written
        metrics, expected = (json.loads((result / "metrics.json").read_text()) for result in (resumed, reference))
        assert expected["resumed_from"] == [] and untimed(metrics) == untimed(expected)
        files = sorted(path.name for path in reference.iterdir())
        assert sorted(path.name for path in resumed.iterdir()) == files and len(files) > 1
        for name in set(files) - {"metrics.json"}:  # predictions, byte for byte
            assert (resumed / name).read_bytes() == (reference / name).read_bytes(), name
        return metrics

    return check


from steps.common.formats import DirectoryFormat  # noqa: E402  (after the environment is set up above)


@Step.register("fake_ud_finetune")
class FakeUdFinetune(Step):
    """A fine-tuning result without the fine-tuning: metrics.json with a given test LAS (dev = LAS + 1),
    for tests of what reads cells (tables, cache integrity)."""

    DETERMINISTIC = True
    CACHEABLE = True
    FORMAT = DirectoryFormat()

    def run(self, las: float, seed: int, steps: Optional[int] = None, best_epoch: Optional[int] = None,  # type: ignore[override]
            history: Optional[List[Dict[str, float]]] = None) -> Path:
        out = self.work_dir / "out"
        out.mkdir(exist_ok=True)
        (out / "metrics.json").write_text(json.dumps({
            "task": "ud_parsing", "primary_metric": "las", "seed": seed, "dev": {"las": las + 1}, "test": {"las": las},
            "steps": steps, "best_epoch": best_epoch, "history": history or []}))
        return out
