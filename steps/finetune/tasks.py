"""The downstream tasks: the fine-tuning step classes whose results are table cells.

A fine-tuning step class registers here with `downstream_task` beside its ``Step.register``;
``python -m reporting.cache`` then lists its results (and checkpoints) as cells, with nothing else
in Python to edit. The builder's side is one entry in ``tasks`` of ``configs/lib.libsonnet``
(``docs/extending.md``; ``tests/test_toy_task.py`` adds a task from a test file).
"""
from __future__ import annotations

from typing import Callable, Dict, TypeVar

# Step class name (the first part of its results' unique ids) → task name (the builder's entry).
DOWNSTREAM_TASKS: Dict[str, str] = {}

StepClass = TypeVar("StepClass", bound=type)


def downstream_task(name: str) -> Callable[[StepClass], StepClass]:
    """Class decorator: the step class's results are cells of the downstream task ``name``."""

    def register(cls: StepClass) -> StepClass:
        if cls.__name__ in DOWNSTREAM_TASKS:
            raise ValueError(f"step class {cls.__name__} is already registered as task {DOWNSTREAM_TASKS[cls.__name__]!r}")
        DOWNSTREAM_TASKS[cls.__name__] = name
        return cls

    return register


__all__ = ["DOWNSTREAM_TASKS", "downstream_task"]
