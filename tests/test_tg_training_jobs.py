"""`train_tg_lm` as short jobs: kill and SIGINT resume bit for bit, and a cache key that
checkpoint_every leaves alone. Real steps on 60 Wolof UD trees (50 train, 10 dev), a few steps
each, on CPU."""
from __future__ import annotations

import json
import signal

import pytest
import torch

from steps.common.checkpoints import SimulatedCrash
from steps.tg.language_model import (
    CHECKPOINT_NAME, CRASH_AFTER_STEP_ENV, TrainTgLanguageModel,
)
from test_transformer_grammar import wolof_trees

TIMINGS = {"seconds", "seconds_per_step", "resumed_from"}


@pytest.fixture(scope="module")
def actions():
    from steps.tg.actions import BuildTgActions

    sentences = wolof_trees(60)
    trees = {"train": sentences[:50], "dev": sentences[50:]}
    return BuildTgActions(trees=trees).run(trees=trees)


def train(actions, work_dir, kind="txl_terminals", **settings):
    """One run in ``work_dir`` (created if need be; a second run there resumes): its result directory."""
    settings = {"max_steps": 9, "batch_size": 8, "device": "cpu", **settings}
    step = TrainTgLanguageModel(actions=actions, kind=kind, **settings)
    step.work_dir_for_run = work_dir
    work_dir.mkdir(parents=True, exist_ok=True)
    return step.run(actions=actions, kind=kind, **settings)


def metrics(result):
    return json.loads((result / "metrics.json").read_text())


def untimed(record):
    return {k: v for k, v in record.items() if k not in TIMINGS}


def weights(result):
    return (result / "model.safetensors").read_bytes()


def test_a_killed_run_resumes_and_ends_bit_for_bit_where_the_uninterrupted_one_ends(actions, tmp_path, monkeypatch):
    """50 rows in batches of 8 are 7 batches a pass: killed after step 8, the run resumes from its
    step-6 checkpoint with one batch of pass 1 pending, and must draw pass 2 at step 8 as before."""
    settings = dict(kind="tg", checkpoint_every=3)
    reference = train(actions, tmp_path / "uninterrupted", **settings)
    monkeypatch.setenv(CRASH_AFTER_STEP_ENV, "8")
    with pytest.raises(SimulatedCrash, match="stopping after step 8"):
        train(actions, tmp_path / "killed", **settings)
    saved = torch.load(tmp_path / "killed" / CHECKPOINT_NAME, weights_only=True)
    assert saved["state"]["step"] == 6 and saved["state"]["epoch"] == 1 and len(saved["state"]["pending"]) == 1
    monkeypatch.delenv(CRASH_AFTER_STEP_ENV)
    resumed = train(actions, tmp_path / "killed", **settings)
    assert metrics(resumed)["resumed_from"] == [6] and metrics(reference)["resumed_from"] == []
    assert untimed(metrics(resumed)) == untimed(metrics(reference))
    assert metrics(reference)["epochs"] == 2 and metrics(reference)["steps"] == 9
    assert weights(resumed) == weights(reference)


def test_sigint_stops_at_the_step_boundary_with_a_checkpoint_and_the_resumed_run_is_the_uninterrupted_one(
        actions, tmp_path, monkeypatch):
    """SIGINT during step 3's forward (a job's time running out): step 3 finishes, a checkpoint is
    written there although none is due, the run stops; run again, it ends on the uninterrupted weights."""
    from models.transformer_grammar import TransformerGrammarLM

    settings = dict(max_steps=5, checkpoint_every=100)
    reference = train(actions, tmp_path / "uninterrupted", **settings)
    forward, calls = TransformerGrammarLM.forward, []

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            signal.raise_signal(signal.SIGINT)
        return forward(self, *args, **kwargs)

    handler = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(TransformerGrammarLM, "forward", interrupted)
    with pytest.raises(KeyboardInterrupt, match="stopped after step 3"):
        train(actions, tmp_path / "interrupted", **settings)
    assert signal.getsignal(signal.SIGINT) is handler
    assert torch.load(tmp_path / "interrupted" / CHECKPOINT_NAME, weights_only=True)["state"]["step"] == 3
    monkeypatch.setattr(TransformerGrammarLM, "forward", forward)
    resumed = train(actions, tmp_path / "interrupted", **settings)
    assert metrics(resumed)["resumed_from"] == [3]
    assert untimed(metrics(resumed)) == untimed(metrics(reference)) and weights(resumed) == weights(reference)


def test_checkpoint_every_is_not_in_the_cache_key(actions):
    base = dict(actions=actions, kind="tg", max_steps=9)
    assert TrainTgLanguageModel(**base, checkpoint_every=7).unique_id == TrainTgLanguageModel(**base).unique_id


def test_bad_settings_are_refused_in_one_line(actions, tmp_path):
    with pytest.raises(ValueError, match="must be positive"):
        train(actions, tmp_path / "b", checkpoint_every=0)
    assert not list(tmp_path.rglob(CHECKPOINT_NAME))
