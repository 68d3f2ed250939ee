"""The training harness shared by µBERT pretraining (`steps.pretrain.pretrain`, which stops at
optimizer-step boundaries) and the fine-tuning loop (`steps.finetune.loop`, epoch boundaries).

It owns what makes a killed run resume bit for bit, so both loops do it one way:

* the checkpoint: model, optimizer, scheduler and the CPU (and CUDA) RNG that drives dropout,
  plus whatever the loop adds (its ``state``, batch order, best weights), written atomically;
* resume: that file loaded with ``weights_only=True`` and every piece put back, RNG included;
* the SIGINT boundary: a SIGINT lets the unit under way (a step, an epoch) finish, the loop writes a
  checkpoint there and the run stops as interrupted, so a stop loses no work;
* crashes: the crash test hook (`SimulatedCrash` after unit N, as if killed there) and the
  non-finite-loss error, raised before any checkpoint could keep the weights it produced.

The loops keep the rest: batches, losses, validation, schedules, when a checkpoint is due.
"""
from __future__ import annotations

import logging
import math
import os
import signal
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import torch

from steps.common.checkpoints import SimulatedCrash, save_atomically


class StopAtBoundary:
    """While training: SIGINT (`tools/jobs.py run` stopping its steps when a job's time
    limit is reached, or Ctrl-C) sets ``requested``; the loop finishes the unit under way, writes a
    checkpoint there and stops (`TrainingHarness.boundary`). A stopped run so loses no work (a
    paper-scale pretraining checkpoints only every 5,000 steps), and its resumed run is the
    uninterrupted one bit for bit, as after any checkpoint. A second SIGINT interrupts at once.
    Outside the main thread signals cannot be caught: then a no-op."""

    def __init__(self) -> None:
        self.requested = False
        self._previous = None

    def __enter__(self) -> "StopAtBoundary":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._request)
        return self

    def _request(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


def read_back(values: Sequence[torch.Tensor]) -> List[float]:
    """Losses (or counts) the loop kept on the device, read back to the host together: one wait for
    the device per read instead of one per step, so a GPU is not held up by the host after each step.
    Scalars and 1-d tensors alike, flattened in order."""
    return torch.cat([value.reshape(-1) for value in values]).tolist() if values else []


def check_finite_loss(value: float, at: str, run: str = "") -> None:
    """Stop a run whose training loss is not finite, naming where (``at``, e.g. "step 4 (epoch 2)").
    The loops call it where they read the loss back, before the checkpoint or validation that would
    keep the weights it produced; ``run`` prefixes the message with the run's name."""
    if not math.isfinite(value):
        raise FloatingPointError(f"{run + ': ' if run else ''}training loss is {value} at {at}; try a lower lr")


class TrainingHarness:
    """One training run's checkpoint file, SIGINT boundary and crash hook; a context manager, which
    catches SIGINT for its block.

    ``unit`` names what the loop checkpoints and stops after ("step", "epoch"); ``crash_env`` is the
    environment variable of the crash test hook: set to N, the run raises `SimulatedCrash` right after
    unit N (after its checkpoint, if one is due), as if the process had been killed there. The hook
    is not part of any cache key."""

    def __init__(self, checkpoint_path: Path, device: torch.device, unit: str, crash_env: str):
        self.path, self.device, self.unit, self.crash_env = Path(checkpoint_path), device, unit, crash_env
        setting = os.environ.get(crash_env)
        self.crash_after: Optional[int] = int(setting) if setting else None
        self._stop = StopAtBoundary()

    def __enter__(self) -> "TrainingHarness":
        self._stop.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.__exit__(*exc)

    @property
    def stop_requested(self) -> bool:
        return self._stop.requested

    def save(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Optional[Any], **extra: Any) -> None:
        """Write the checkpoint atomically: a kill mid-write leaves the previous one whole. ``extra``:
        the loop's own entries (tensors, numbers, strings, lists and dicts of them, so that
        ``weights_only=True`` loads them)."""
        save_atomically({
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict() if scheduler is not None else None,
            # Dropout draws from these: without them a resumed run masks other units than the uninterrupted one.
            "rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
            **extra,
        }, self.path)

    def resume(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Optional[Any]) -> Optional[Dict[str, Any]]:
        """Put the checkpoint's model, optimizer, scheduler and RNG state back and return the whole
        checkpoint (the loop's own entries with it), or None when there is no checkpoint."""
        if not self.path.exists():
            return None
        saved = torch.load(self.path, map_location="cpu", weights_only=True)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        if scheduler is not None:
            scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["rng"])
        # A checkpoint written on a CPU has none; a CPU run ignores a GPU run's.
        if self.device.type == "cuda" and saved.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(saved["cuda_rng"], self.device)
        return saved

    def crashes_after(self, number: int) -> bool:
        return self.crash_after is not None and number == self.crash_after

    def boundary(self, number: int, total: int, finished: bool, log: logging.Logger) -> None:
        """Call at the end of unit ``number`` of ``total``, once its checkpoint (if due) is written:
        raise the crash hook's `SimulatedCrash`, or, when a SIGINT asked for a stop and the run is not
        ``finished``, KeyboardInterrupt. A checkpoint must be written whenever `stop_requested`."""
        if self.crashes_after(number):
            raise SimulatedCrash(f"{self.crash_env}={self.crash_after}: stopping after {self.unit} {number}")
        if self.stop_requested and not finished:
            log.info("interrupted: stopped after %s %d of %d, checkpoint written; run again to resume", self.unit, number, total)
            raise KeyboardInterrupt(f"stopped after {self.unit} {number}, checkpoint written")


__all__ = ["SimulatedCrash", "StopAtBoundary", "TrainingHarness", "check_finite_loss"]
