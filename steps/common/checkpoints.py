"""Checkpoint files that survive a kill, shared by pretraining and the fine-tuning loop."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch


class SimulatedCrash(RuntimeError):
    """Raised by the steps' crash test hooks, as if the process had been killed there."""


def save_atomically(obj: Any, path: Path) -> None:
    """``torch.save`` to a side file, then rename: a kill mid-write leaves the old checkpoint whole."""
    partial = path.with_name(path.name + ".partial")
    torch.save(obj, partial)
    os.replace(partial, path)


__all__ = ["SimulatedCrash", "save_atomically"]
