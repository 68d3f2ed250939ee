"""Weights & Biases for every training step (pretraining, UD parser, NER, PrOnto): one hook.

    with tracked_run(self, wandb, kind="pretrain", config=run_info) as tracker:
        tracker.log({"dev/loss": 1.2}, step=500)
        tracker.summary({"test_las": 71.0})

On by default and **offline** (``WANDB_MODE=offline`` unless set; ``wandb sync <dir>`` uploads
later), writing under ``<workspace>/wandb/``. Off with one setting: ``SIB_WANDB=off`` in the
environment, or the step argument ``wandb: false``. The argument is in each step's
``SKIP_ID_ARGUMENTS``: watching a run never changes its result, so it never re-keys a step.
Where ``wandb`` is not installed, a step says so once and trains untracked: a missing observer
must not stop a long run.

A run is named ``<language>-<condition>-<scale>-<task>-s<seed>`` and grouped by experiment
(``<language>-<condition>-<scale>``; ``WANDB_RUN_GROUP`` overrides). The labels come from the
``wandb`` argument, which the builder (``configs/lib.libsonnet``) fills with the experiment's
language, condition (table row) and scale; a step has no other way to know them. The W&B run id
*is* the step's unique ID (the cache entry's folder name), and the config carries it as
``step_unique_id``, so a W&B run leads back to its cache entry; a resumed step resumes its run.
"""
from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterator, Mapping, Optional, Union

logger = logging.getLogger(__name__)

WANDB_SWITCH_ENV = "SIB_WANDB"  # "off" (or 0/false/no/disabled) turns every training step's W&B run off
OFF_VALUES = {"off", "0", "false", "no", "disabled"}
PROJECT_ENV, DEFAULT_PROJECT = "WANDB_PROJECT", "syntactic-inductive-bias"
# What the builder may put in a step's `wandb` argument.
LABEL_KEYS = ("language", "condition", "scale", "task", "group")

WandbSetting = Union[bool, Dict[str, Any], None]


def tracking_enabled(setting: WandbSetting = None) -> bool:
    """False if the step argument says ``false`` or the environment says off; else True."""
    if setting is False:
        return False
    if os.environ.get(WANDB_SWITCH_ENV, "").strip().lower() in OFF_VALUES:
        return False
    return os.environ.get("WANDB_MODE", "").strip().lower() != "disabled"


def run_labels(setting: WandbSetting, task: str, seed: Optional[int]) -> Dict[str, str]:
    """name and group of a step's run from the builder's labels (absent ones are left out)."""
    labels = dict(setting) if isinstance(setting, Mapping) else {}
    unknown = set(labels) - set(LABEL_KEYS)
    if unknown:
        raise ValueError(f"unknown wandb label(s) {sorted(unknown)}; known: {', '.join(LABEL_KEYS)}")
    experiment = [str(labels[key]) for key in ("language", "condition", "scale") if labels.get(key) is not None]
    group = os.environ.get("WANDB_RUN_GROUP") or labels.get("group") or ("-".join(experiment) or None)
    name = "-".join(experiment + [str(labels.get("task") or task)] + ([f"s{seed}"] if seed is not None else []))
    return {"name": name, "group": group, **{key: str(labels[key]) for key in ("language", "condition", "scale") if key in labels}}


class NullTracker:
    """What a step gets when tracking is off: every call does nothing."""

    run = None

    def log(self, metrics: Mapping[str, Any], step: Optional[int] = None) -> None:
        pass

    def summary(self, metrics: Mapping[str, Any]) -> None:
        pass


class WandbTracker(NullTracker):
    def __init__(self, run):
        self.run = run

    def log(self, metrics: Mapping[str, Any], step: Optional[int] = None) -> None:
        numbers = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if numbers:
            self.run.log(numbers, step=step)

    def summary(self, metrics: Mapping[str, Any]) -> None:
        self.run.summary.update(dict(metrics))


def _runs_dir(step) -> Path:
    """The folder W&B writes its ``wandb/`` folder in: a local workspace's own, so runs land in
    ``<workspace>/wandb/offline-run-<time>-<unique id>``; else the step's work directory."""
    workspace_dir = getattr(step.workspace, "dir", None)
    return Path(workspace_dir) if workspace_dir is not None else Path(step.work_dir)


@lru_cache(maxsize=None)
def _warn_untracked(reason: str) -> None:
    """One warning a process (per reason): tracking is on, but W&B cannot be imported."""
    logger.warning("W&B tracking is on but wandb cannot be imported (%s): training untracked; "
                   "pip install -r requirements.txt, or %s=off to say so", reason, WANDB_SWITCH_ENV)


@contextmanager
def tracked_run(step, setting: WandbSetting, task: str, config: Mapping[str, Any], seed: Optional[int] = None
                ) -> Iterator[NullTracker]:
    """A W&B run for one execution of a training ``step`` (see the module docstring), finished on
    exit; a `NullTracker` when tracking is off or W&B is not installed."""
    if not tracking_enabled(setting):
        yield NullTracker()
        return
    try:
        import wandb
    except ImportError as missing:
        _warn_untracked(str(missing))
        yield NullTracker()
        return

    os.environ.setdefault("WANDB_MODE", "offline")
    labels = run_labels(setting, task, seed)
    try:
        step_config = dict(step.config)  # the experiment file's settings of this step
    except ValueError:  # a step built in Python, not from a config
        step_config = {}
    directory = _runs_dir(step)
    directory.mkdir(parents=True, exist_ok=True)
    run = wandb.init(
        project=os.environ.get(PROJECT_ENV, DEFAULT_PROJECT),
        id=step.unique_id, resume=None if os.environ["WANDB_MODE"] == "offline" else "allow", name=labels["name"], group=labels["group"], job_type=task,
        dir=str(directory),
        config={**step_config, **config, **{k: labels[k] for k in ("language", "condition", "scale") if k in labels},
                "step_unique_id": step.unique_id, "step_class": step.class_name, "step_name": step.name, "task": task,
                "seed": seed, "run_name": labels["name"], "run_group": labels["group"]},
        reinit="create_new", settings=wandb.Settings(silent=True, console="off"),
    )
    logger.info("W&B run %s (%s) in %s", labels["name"], os.environ["WANDB_MODE"], run.dir)
    try:
        yield WandbTracker(run)
    finally:
        run.finish()


def summarize(tracker: NullTracker, result: Path) -> Path:
    """Put a fine-tuning result's dev and test figures (its metrics.json) in the run's summary;
    returns ``result``."""
    if tracker.run is not None:
        import json

        metrics = json.loads((Path(result) / "metrics.json").read_text())
        tracker.summary({key: metrics[key] for key in ("dev", "test", "best_epoch", "primary_metric") if key in metrics})
    return result


__all__ = ["summarize", "NullTracker", "WANDB_SWITCH_ENV", "WandbTracker", "run_labels", "tracked_run", "tracking_enabled"]
