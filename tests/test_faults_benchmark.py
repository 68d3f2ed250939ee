"""benchmarks/faults.py: how it reads step timings from a Tango log and compares cache entries."""
from __future__ import annotations

import json
from pathlib import Path

from benchmarks.faults import compare_workspaces, step_durations

LOG = """[11/23/26 11:26:56] INFO     ● Starting step "corpus"...   site-packages/tango/step.py:761
[11/23/26 11:27:01] INFO     ✓ Finished step "corpus"   site-packages/tango/step.py:774
[11/23/26 11:27:01] INFO     ● Starting step "corpus_parser"...   site-packages/tango/step.py:761
[11/23/26 11:29:37] INFO     ✓ Finished step "corpus_parser"   site-packages/tango/step.py:774
"""


def test_step_durations_from_the_log():
    assert step_durations(LOG) == {"corpus": 5.0, "corpus_parser": 156.0}


def entry(workspace, unique_id, metrics, complete=True, extra=None):
    folder = workspace / "cache" / unique_id / "result"
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "predicted.conllu").write_text(f"1\tword\t{workspace}/x\n")  # the workspace path is normalised
    if extra:
        (folder / extra).write_text("x")
    if complete:
        (workspace / "cache" / unique_id / "cache-metadata.json").write_text("{}")


def test_entries_equal_up_to_timings_and_workspace_path(tmp_path):
    clean, trial = tmp_path / "clean", tmp_path / "trial"
    entry(clean, "A", {"las": 71.5, "train_seconds": 3.0, "history": [{"epoch": 1, "seconds": 2.0}]})
    entry(trial, "A", {"las": 71.5, "train_seconds": 9.0, "history": [{"epoch": 1, "seconds": 5.0}]})
    entry(clean, "B", {"f1": 40.0})
    entry(trial, "B", {"f1": 40.0}, complete=False)  # not complete: missing, not wrong
    result = compare_workspaces(trial, clean)
    assert result["entries_compared"] == 1 and result["differing_entries"] == {} and result["missing_entries"] == ["B"]


def test_a_different_figure_or_a_missing_file_is_a_wrong_entry(tmp_path):
    clean, trial = tmp_path / "clean", tmp_path / "trial"
    entry(clean, "A", {"las": 71.5})
    entry(trial, "A", {"las": 71.4})
    entry(clean, "B", {"f1": 40.0}, extra="predicted-test.bio")
    entry(trial, "B", {"f1": 40.0})
    differing = compare_workspaces(trial, clean)["differing_entries"]
    assert differing["A"] == "result/metrics.json differs"
    assert "missing ['result/predicted-test.bio']" in differing["B"]


def test_recorded_encoder_location_is_the_cached_one_whichever_run_computed_it():
    from steps.common.formats import cached_location

    entry = Path("ws", "cache", "PretrainMicrobert-002-abc")
    assert cached_location(entry / "work" / "result") == str(entry / "result")
    assert cached_location(entry / "work" / "encoder" / "x") == str(entry / "result" / "x")
    assert cached_location(entry / "result") == str(entry / "result")
    assert cached_location("bert-base-multilingual-cased") == "bert-base-multilingual-cased"
