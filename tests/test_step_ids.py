"""Cache keys survive refactoring: every step of every experiment file keeps its unique ID.

The record (`tests/data/step_ids.json`, written by `tools/step_ids.py`) changes only in a commit that
changes a step's behaviour on purpose and says which steps it re-keys."""
import json
from pathlib import Path

from tools.step_ids import step_ids

RECORD = Path(__file__).parent / "data" / "step_ids.json"


def test_every_experiment_step_keeps_its_unique_id():
    recorded = json.loads(RECORD.read_text())
    current = step_ids()
    assert sorted(current) == sorted(recorded), "experiment files added or removed: re-record with tools/step_ids.py"
    changed = [f"{file}:{step}: {recorded[file].get(step)} -> {uid}"
               for file, steps in current.items() for step, uid in steps.items() if recorded[file].get(step) != uid]
    assert not changed, f"{len(changed)} step IDs changed, e.g.\n" + "\n".join(changed[:20])


def test_tango_resolves_each_steps_postponed_annotations_once_and_as_typing_does():
    """The compat shim remembers `get_type_hints` per function for Tango's from_params (graph
    building re-resolved the same signatures once per parameter per object); the hints it gives
    are typing's own."""
    import typing

    import tango.common.from_params as from_params
    from tango import Step

    import steps  # noqa: F401  (applies the shim, registers the steps)

    assert from_params.get_type_hints is not typing.get_type_hints
    names = Step.list_available()
    assert len(names) > 20
    for name in names:
        run = Step.by_name(name).run
        hints = from_params.get_type_hints(run)
        assert hints == typing.get_type_hints(run), name
        assert from_params.get_type_hints(run) is hints, name  # resolved once
