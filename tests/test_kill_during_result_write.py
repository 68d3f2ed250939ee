"""A `tango run` killed while Tango writes a step's result must not block the next run
(steps/common/compat.py; found by benchmarks/faults.py)."""
from __future__ import annotations

from tango import Step
from tango.step_info import StepState
from tango.workspaces import LocalWorkspace

import steps  # noqa: F401  (applies the Tango shims)


@Step.register("test_kill_during_write_constant")
class Constant(Step):
    DETERMINISTIC = True
    CACHEABLE = True

    def run(self, value: int) -> int:  # type: ignore[override]
        return value


def test_a_result_write_cut_short_by_a_kill_is_redone_by_the_next_run(tmp_path):
    workspace = LocalWorkspace(tmp_path)
    step = Constant(value=7)
    # What a killed run leaves: step info "running", the lock file (its flock gone with the
    # process), and a half-written result without cache-metadata.json.
    workspace.step_starting(step)
    step_dir = workspace.step_cache.step_dir(step)
    (step_dir / "data.dill").write_bytes(b"")
    workspace.locks.pop(step).release()
    assert workspace.step_info(step).state == StepState.INCOMPLETE  # not "running" (Tango 1.3.2 unpatched)
    fresh = LocalWorkspace(tmp_path)  # the next `tango run`
    assert step.result(fresh) == 7
    assert fresh.step_info(step).state == StepState.COMPLETED
    assert Constant(value=7).result(LocalWorkspace(tmp_path)) == 7
