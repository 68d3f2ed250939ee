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
