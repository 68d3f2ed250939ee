"""W&B through the one shared hook (steps/common/tracking.py): offline runs written under the
workspace for pretraining and the three fine-tuning tasks, each carrying its step's unique ID,
named and grouped by the builder's labels; switching it off or labelling a run never re-keys a step.

The only test with tracking on (tests/conftest.py turns it off for every other test)."""
from __future__ import annotations

import pytest
from tango.workspaces import LocalWorkspace

from steps.common.data_root import DataPath
from steps.common import tracking
from steps.common.tracking import NullTracker, run_labels, tracked_run, tracking_enabled
from steps.finetune.ner import FinetuneNer, NerConfig
from steps.finetune.pronto import FinetunePronto, PrOntoConfig
from steps.finetune.ud_parser import FinetuneUdParser, ParserTrainingConfig
from test_finetune_ner import wikiann_slice  # noqa: F401  (fixture)
from test_finetune_parser import treebank_slice  # noqa: F401  (fixture)
from test_pretrain import make_step as pretraining_step, pretraining_data, tokenizer_dir  # noqa: F401  (fixtures)
from test_pronto import SAMPLE, excerpt

LABELS = {"language": "wolof", "condition": "M", "scale": "smoke"}


def test_switch_and_labels(monkeypatch):
    monkeypatch.delenv("SIB_WANDB")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_RUN_GROUP", raising=False)
    assert tracking_enabled(None) and tracking_enabled(LABELS) and not tracking_enabled(False)
    monkeypatch.setenv("SIB_WANDB", "off")
    assert not tracking_enabled(LABELS)
    assert run_labels(LABELS, "ner", 42) == {"name": "wolof-M-smoke-ner-s42", "group": "wolof-M-smoke", **LABELS}
    assert run_labels(None, "pretrain", None) == {"name": "pretrain", "group": None}
    with pytest.raises(ValueError, match="unknown wandb label"):
        run_labels({"lang": "wolof"}, "ner", 1)


def test_a_machine_without_wandb_trains_untracked_and_says_so_once(monkeypatch, caplog):
    """Tracking on by default, W&B not installed (a GPU image without it): the step runs with the
    null tracker and one warning naming the package and the switch, instead of failing at its start."""
    import sys

    monkeypatch.delenv("SIB_WANDB")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` raises ImportError
    tracking._warn_untracked.cache_clear()
    with caplog.at_level("WARNING", logger="steps.common.tracking"):
        for _ in range(2):
            with tracked_run(object(), LABELS, "ner", {}, seed=42) as tracker:
                assert type(tracker) is NullTracker and tracker.run is None
    [warning] = [r.getMessage() for r in caplog.records]
    assert "wandb cannot be imported" in warning and "training untracked" in warning and "SIB_WANDB=off" in warning


def offline_runs(workspace_dir):
    """{step unique id: (run folder, run record, config, history rows)} of the offline runs under
    <workspace>/wandb, read back from each run's .wandb log with W&B's own reader."""
    import json

    from wandb.proto import wandb_internal_pb2
    from wandb.sdk.internal import datastore

    runs = {}
    for run_dir in (workspace_dir / "wandb").glob("offline-run-*"):
        [log] = run_dir.glob("run-*.wandb")
        store = datastore.DataStore()
        store.open_for_scan(str(log))
        run, history = None, []
        while (data := store.scan_data()) is not None:
            record = wandb_internal_pb2.Record()
            record.ParseFromString(data)
            if record.WhichOneof("record_type") == "run":
                run = record.run
            elif record.WhichOneof("record_type") == "history":
                history.append({item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item})
        config = {item.key: json.loads(item.value_json) for item in run.config.update}
        runs[config["step_unique_id"]] = (run_dir.name, run, config, history)
    return runs


def test_offline_runs_for_pretraining_and_every_fine_tuning_task(
    pretraining_data, tokenizer_dir, treebank_slice, wikiann_slice, data_root, tmp_path, monkeypatch,  # noqa: F811
):
    monkeypatch.setenv("SIB_WANDB", "on")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_RUN_GROUP", raising=False)
    workspace = LocalWorkspace(tmp_path / "ws")

    pretrain = pretraining_step(pretraining_data, tokenizer_dir, "M", max_steps=2, validate_every=2)
    labelled = pretraining_step(pretraining_data, tokenizer_dir, "M", max_steps=2, validate_every=2)
    labelled.kwargs["wandb"] = dict(LABELS)
    assert labelled.unique_id == pretrain.unique_id  # the setting is not in the cache key
    encoder = labelled.result(workspace)

    ud = FinetuneUdParser(
        encoder=encoder, train=DataPath(str(treebank_slice["train"])), dev=DataPath(str(treebank_slice["dev"])),
        test=DataPath(str(treebank_slice["test"])), num_threads=1, wandb=dict(LABELS),
        config=ParserTrainingConfig(epochs=1, batches_per_epoch=2, lstm_hidden=8, lstm_layers=1, arc_dim=8, label_dim=8, seed=3),
    )
    ner = FinetuneNer(
        encoder=encoder, train=DataPath(str(wikiann_slice["train"])), dev=DataPath(str(wikiann_slice["dev"])),
        test=DataPath(str(wikiann_slice["test"])), num_threads=1, wandb=dict(LABELS),
        config=NerConfig(epochs=1, patience=1, lstm_hidden=8, lstm_layers=1, max_length=128, seed=3),
    )
    task = "proper_noun_subject"
    sample = data_root / SAMPLE
    pronto = FinetunePronto(
        encoder=encoder, task=task, num_threads=1, wandb=dict(LABELS, language="spanish"),
        config=PrOntoConfig(epochs=1, batch_size=16, max_length=64, seed=7),
        **{split: excerpt(sample, tmp_path, task, split, n) for split, n in (("train", 32), ("dev", 16), ("test", 16))},
    )
    for step in (ud, ner, pronto):
        without = step.__class__(**dict(step.kwargs, wandb=False))
        assert without.unique_id == step.unique_id
        step.result(workspace)

    runs = offline_runs(workspace.dir)
    expected = {
        pretrain.unique_id: ("wolof-M-smoke-pretrain-s5", "pretrain"),
        ud.unique_id: ("wolof-M-smoke-ud_parser-s3", "ud_parser"),
        ner.unique_id: ("wolof-M-smoke-ner-s3", "ner"),
        pronto.unique_id: ("spanish-M-smoke-pronto_proper_noun_subject-s7", f"pronto_{task}"),
    }
    assert set(runs) == set(expected)
    for unique_id, (name, task_label) in expected.items():
        folder, run, config, history = runs[unique_id]
        assert folder.endswith("-" + unique_id) and run.run_id == unique_id  # the W&B run id is the cache entry's name
        assert run.display_name == name and run.run_group == name.rsplit("-", 2)[0]  # <language>-<condition>-<scale>
        assert config["task"] == task_label and history
    assert runs[pretrain.unique_id][2]["training"]["max_steps"] == 2  # the step's config
    assert runs[pretrain.unique_id][3][-1]["dev/dev_mlm_loss"] > 0 and runs[pretrain.unique_id][3][-1]["_step"] == 2
    assert runs[ud.unique_id][2]["training"]["lstm_hidden"] == 8
    assert [row["_step"] for row in runs[ud.unique_id][3]] == [0, 1] and "las" in runs[ud.unique_id][3][-1]  # epochs 0 and 1
