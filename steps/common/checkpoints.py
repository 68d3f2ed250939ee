"""Checkpoint files that survive a kill, shared by pretraining, the corpus parser steps and the
fine-tuning loop."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Optional

import torch


class SimulatedCrash(RuntimeError):
    """Raised by the steps' crash test hooks, as if the process had been killed there."""


def save_atomically(obj: Any, path: Path) -> None:
    """``torch.save`` to a side file, then rename: a kill mid-write leaves the old checkpoint whole."""
    partial = path.with_name(path.name + ".partial")
    torch.save(obj, partial)
    os.replace(partial, path)


class PhaseLog:
    """Which phases of a multi-phase step are finished, in a JSON file of the step's work dir.

    A phase is recorded (atomically, after its outputs are on disk) with a small record such as
    its timings; a resumed run skips the recorded phases and redoes the first unrecorded one from
    its start. Phases whose library cannot resume mid-way (Stanza's tagger) keep their results
    bit-identical this way, at the cost of redoing at most one phase."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.phases: Dict[str, Dict[str, Any]] = json.loads(self.path.read_text()) if self.path.exists() else {}

    def __contains__(self, phase: str) -> bool:
        return phase in self.phases

    def get(self, phase: str) -> Optional[Dict[str, Any]]:
        return self.phases.get(phase)

    def record(self, phase: str, info: Dict[str, Any]) -> None:
        self.phases[phase] = dict(info)
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(self.phases, indent=2))
        os.replace(partial, self.path)


__all__ = ["PhaseLog", "SimulatedCrash", "save_atomically"]
