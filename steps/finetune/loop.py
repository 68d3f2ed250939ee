"""The fine-tuning loop of the UD parser, NER and PrOnto steps, with checkpoint/resume.

    task step (data, model, optimizer, callbacks) ──► train(task, work_dir) ──► history, best weights

Epochs of a fixed number of batches; the dev set is scored after every epoch (and, if the task asks,
once before training: epoch 0); the weights of the best dev epoch on the task's metric are kept;
patience stops a run that no longer improves; a non-finite loss stops it with an error at the end
of its epoch, before that epoch's checkpoint.

Every ``checkpoint_every`` epochs (and at the last one) the full state is written atomically to the
step's work directory: model, optimizer, scheduler, the CPU (and CUDA) RNG that drives dropout, the
batch-order stream, the best weights so far, the history. On a GPU at most once a minute
(``checkpoint_interval``): a paper-regime parser's state is ~180 MiB and its epochs take seconds
there. Running the same step again after a kill resumes from the last checkpoint ("resuming
after epoch N" in the log, ``resumed_from`` in the outcome) and, on CPU, ends bit-for-bit where the
uninterrupted run ends. A SIGINT stops the run at the end of the epoch under way, with a checkpoint
there. Checkpoint, resume, SIGINT and crash hook are the training harness's
(`steps.common.training`), shared with pretraining. Tango's ``TorchTrainStep`` is not used: it
resumes by replaying its data loader, which does not restore the RNG streams, so it is not
bit-identical.
"""
from __future__ import annotations

import json
import logging
import math
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import torch
from tango.common import Tqdm

from steps.common.checkpoints import SimulatedCrash  # noqa: F401 (what the crash hook raises; callers catch it from here)
from steps.common.cuda_graphs import GraphedTrainStep
from steps.common.tracking import NullTracker
from steps.common.training import TrainingHarness, check_finite_loss, read_back

logger = logging.getLogger(__name__)

CHECKPOINT_NAME = "finetune-checkpoint.pt"
GPU_CHECKPOINT_INTERVAL = 60.0  # seconds; see `train`
# Test hook: raise `SimulatedCrash` right after epoch N (after its checkpoint, if one is due), as
# if the process had been killed there. Not part of any cache key.
CRASH_AFTER_EPOCH_ENV = "SIB_FINETUNE_CRASH_AFTER_EPOCH"

Batch = Dict[str, torch.Tensor]


class BatchStream:
    """Training batches (lists of example indices) as a stream of passes over the data.

    ``make_pass(generator, number)`` draws pass ``number`` (0, 1, …) from ``generator``, batches in
    the order they are used; an epoch takes the next ``batches_per_epoch`` of the stream, so epochs
    may cut across passes. The stream's state (generator, passes drawn, batches pending) is part of
    the checkpoint, so a resumed run continues the same order."""

    def __init__(self, make_pass: Callable[[torch.Generator, int], List[List[int]]], generator: torch.Generator,
                 batches_per_epoch: int):
        if batches_per_epoch < 1:
            raise ValueError(f"batches_per_epoch must be positive, got {batches_per_epoch}")
        self.make_pass, self.generator, self.batches_per_epoch = make_pass, generator, batches_per_epoch
        self.passes = 0
        self.pending: List[List[int]] = []

    def next_epoch(self) -> List[List[int]]:
        batches = []
        while len(batches) < self.batches_per_epoch:
            if not self.pending:
                self.pending = list(self.make_pass(self.generator, self.passes))
                self.passes += 1
            batches.append(self.pending.pop(0))
        return batches

    def state_dict(self) -> Dict[str, Any]:
        return {"generator": self.generator.get_state(), "passes": self.passes, "pending": self.pending}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.generator.set_state(state["generator"])
        self.passes, self.pending = state["passes"], [list(batch) for batch in state["pending"]]


@dataclass
class EpochTotals:
    """What one epoch of training summed up, for the task's history fields."""

    loss: float  # summed batch losses
    batches: int
    count: int  # summed `FinetuneTask.count` (words, tokens); 0 without one
    steps: int  # optimizer steps since the start of training


@dataclass
class FinetuneTask:
    """What a fine-tuning step hands to `train`.

    ``loss(model, batch)``: the training loss of a batch made by ``make_batch`` (on the device).
    ``clip_gradients()``: runs after ``backward``, before the optimizer step.
    ``evaluate(model)``: dev figures of the current weights (dropout off, training mode restored by
    the loop); ``metric`` names the one that selects, higher or lower being better. Without
    ``evaluate`` nothing is selected and the last epoch's weights are kept.
    ``train_fields(totals)``: the training fields of a history record (epoch 0 gets zero totals).
    ``count(batch)``: an integer tensor (words, tokens) summed into ``EpochTotals.count``; like the
    loss, it is read once an epoch.
    ``cuda_graphs``: run each training step through `steps.common.cuda_graphs.GraphedTrainStep` (on a
    GPU, one CUDA graph per batch shape; elsewhere the same step eagerly); ``make_batch`` should then
    pad lengths to a few shapes, and the scheduler must keep the learning rate constant.
    """

    name: str
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Optional[torch.optim.lr_scheduler.LRScheduler]
    batches: BatchStream
    make_batch: Callable[[List[int]], Batch]
    loss: Callable[[torch.nn.Module, Batch], torch.Tensor]
    clip_gradients: Callable[[], None]
    train_fields: Callable[[EpochTotals], Dict[str, Any]]
    epochs: int
    evaluate: Optional[Callable[[torch.nn.Module], Dict[str, Any]]] = None
    metric: Optional[str] = None
    higher_is_better: bool = True
    patience: Optional[int] = None
    evaluate_before_training: bool = False
    count: Optional[Callable[[Batch], torch.Tensor]] = None
    cuda_graphs: bool = False


@dataclass
class FinetuneOutcome:
    """The end of a run; the task's model then holds the kept weights."""

    history: List[Dict[str, Any]]
    best_epoch: Optional[int]  # None when nothing was selected (no `evaluate`): the last epoch is kept
    steps: int
    train_seconds: float  # training batches only, summed over resumed runs
    loop_seconds: float  # batches and dev evaluations, summed over resumed runs
    count: int  # `FinetuneTask.count` summed over every training batch
    resumed_from: List[int] = field(default_factory=list)  # the epoch each resumed run started after
    checkpoint: Optional[Path] = None
    graphs: Optional[Dict[str, int]] = None  # `GraphedTrainStep.stats` of this process's run, with cuda_graphs

    def discard_checkpoint(self) -> None:
        """Delete the checkpoint once the step's result is written (it holds several model copies)."""
        if self.checkpoint is not None:
            self.checkpoint.unlink(missing_ok=True)


def to_device(batch: Batch, device: torch.device) -> Batch:
    """A batch's tensors on ``device``. To a GPU they go from pinned memory without a host wait, so
    the host builds the next batch while the device still runs this one's step."""
    if device.type != "cuda":
        return {key: value.to(device) for key, value in batch.items()}
    return {key: value.pin_memory().to(device, non_blocking=True) for key, value in batch.items()}


def snapshot(model: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """A CPU copy of the weights, kept for the best dev epoch (training goes on in place)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _evaluate(task: FinetuneTask) -> Dict[str, Any]:
    was_training = task.model.training
    try:
        return task.evaluate(task.model)
    finally:
        task.model.train(was_training)


def train(task: FinetuneTask, work_dir: Path, device: torch.device, checkpoint_every: int = 1,
          log: logging.Logger = logger, tracker: NullTracker = NullTracker(),
          checkpoint_interval: Optional[float] = None) -> FinetuneOutcome:
    """Train ``task.model`` in place for ``task.epochs`` epochs (fewer with patience), resuming
    from ``work_dir``'s checkpoint if there is one; load the kept weights and return the outcome.
    Every epoch's history record goes to ``tracker`` (`steps.common.tracking`), keyed by epoch.
    ``checkpoint_interval``: seconds that must pass between two checkpoints that ``checkpoint_every``
    makes due (default: 60 on a GPU, 0 elsewhere); the last epoch's, a patience stop's and a SIGINT's
    (`steps.common.training.StopAtBoundary`) are always written.
    Which epochs are saved never changes what a run computes, only where a resumed one starts."""
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be positive, got {checkpoint_every}")
    if checkpoint_interval is None:
        checkpoint_interval = GPU_CHECKPOINT_INTERVAL if device.type == "cuda" else 0.0
    last_checkpoint = time.monotonic()
    model = task.model
    state: Dict[str, Any] = {"epoch": 0, "steps": 0, "history": [], "best_value": -math.inf, "best_epoch": None,
                             "stopped": False, "train_seconds": 0.0, "loop_seconds": 0.0, "count": 0, "resumed_from": []}
    best_weights: Optional[Dict[str, torch.Tensor]] = None
    checkpoint_path = Path(work_dir) / CHECKPOINT_NAME
    harness = TrainingHarness(checkpoint_path, device, "epoch", CRASH_AFTER_EPOCH_ENV)
    process_start = time.perf_counter()
    saved = harness.resume(model, task.optimizer, task.scheduler)
    if saved is not None:
        task.batches.load_state_dict(saved["batches"])
        best_weights, state = saved["best_weights"], saved["state"]
        state["resumed_from"].append(state["epoch"])
        log.info("%s: resuming after epoch %d (checkpoint %s)", task.name, state["epoch"], checkpoint_path)
    elif task.evaluate_before_training and task.evaluate is not None:
        # Epoch 0 is the untrained model: the floor that fine-tuning must beat.
        if _select(task, state, _evaluate(task), EpochTotals(0.0, 0, 0, 0), time.perf_counter() - process_start, log, tracker):
            best_weights = snapshot(model)
        state["loop_seconds"] += time.perf_counter() - process_start

    # After the resume: the graphs must record the optimizer state the run goes on with.
    graphed = (GraphedTrainStep(lambda batch: task.loss(model, batch), task.clip_gradients, task.optimizer, device, log=log)
               if task.cuda_graphs else None)
    per_epoch = task.batches.batches_per_epoch
    progress = Tqdm.tqdm(total=task.epochs * per_epoch, initial=state["epoch"] * per_epoch, desc=f"fine-tuning {task.name}")
    # The epoch loop under the harness: SIGINT waits for the epoch's end; the bar is closed however it ends.
    with harness, closing(progress):
        while state["epoch"] < task.epochs and not state["stopped"]:
            epoch = state["epoch"] + 1
            epoch_start = time.perf_counter()
            model.train()
            totals = EpochTotals(0.0, 0, 0, state["steps"])
            # The batch losses stay on the device until the epoch ends: reading one per step would make
            # the host wait for each step's kernels before queueing the next (on a GPU, most of a step).
            losses: List[torch.Tensor] = []
            counts: List[torch.Tensor] = []
            for indices in task.batches.next_epoch():
                batch = task.make_batch(indices)
                if graphed is not None:
                    loss = graphed(batch)
                else:
                    loss = task.loss(model, batch)
                    loss.backward()
                    task.clip_gradients()
                    task.optimizer.step()
                if task.scheduler is not None:
                    task.scheduler.step()
                task.optimizer.zero_grad(set_to_none=True)
                losses.append(loss.detach())
                if task.count is not None:
                    counts.append(task.count(batch))
                progress.update(1)
            values = read_back(losses)
            totals.count = sum(read_back(counts))
            for number, value in enumerate(values, totals.steps + 1):
                check_finite_loss(value, f"step {number} (epoch {epoch})", task.name)
                totals.loss += value
            totals.batches, totals.steps = len(values), totals.steps + len(values)
            if values:
                progress.set_postfix(loss=f"{totals.loss / totals.batches:.3f}", epoch=epoch)
            state["train_seconds"] += time.perf_counter() - epoch_start
            state["epoch"], state["steps"], state["count"] = epoch, totals.steps, state["count"] + totals.count
            dev_start = time.perf_counter()
            scores = {**_evaluate(task), "dev_seconds": time.perf_counter() - dev_start} if task.evaluate is not None else {}
            if _select(task, state, scores, totals, time.perf_counter() - epoch_start, log, tracker):
                best_weights = snapshot(model)
            if task.patience is not None and task.evaluate is not None and epoch - (state["best_epoch"] or 0) >= task.patience:
                log.info("%s: no better dev %s for %d epochs: stopping after epoch %d", task.name, task.metric, task.patience, epoch)
                state["stopped"] = True
            state["loop_seconds"] += time.perf_counter() - epoch_start
            due = epoch % checkpoint_every == 0 and time.monotonic() - last_checkpoint >= checkpoint_interval
            if due or epoch == task.epochs or state["stopped"] or harness.stop_requested:
                last_checkpoint = time.monotonic()
                harness.save(model, task.optimizer, task.scheduler, batches=task.batches.state_dict(), best_weights=best_weights,
                             state=state)
            harness.boundary(epoch, task.epochs, epoch == task.epochs or state["stopped"], log)
    if best_weights is not None:
        model.load_state_dict(best_weights)
    return FinetuneOutcome(state["history"], state["best_epoch"], state["steps"], state["train_seconds"],
                           state["loop_seconds"], state["count"], state["resumed_from"], checkpoint_path,
                           graphed.stats() if graphed is not None else None)


def _select(task: FinetuneTask, state: Dict[str, Any], scores: Dict[str, Any], totals: EpochTotals, seconds: float,
            log: logging.Logger, tracker: NullTracker = NullTracker()) -> bool:
    """Append the epoch's history record; True if its dev figure is the best so far (strictly)."""
    epoch = state["epoch"]
    record = {"epoch": epoch, **task.train_fields(totals), **scores, "seconds": seconds}
    state["history"].append(record)
    tracker.log(record, step=epoch)
    # Stored with the sign that makes higher better, so one strict comparison serves both directions.
    improved = False
    if task.evaluate is not None:
        value = scores[task.metric] if task.higher_is_better else -scores[task.metric]
        improved = value > state["best_value"]
    if improved:
        state["best_value"], state["best_epoch"] = value, epoch
    log.info("%s epoch %d: %s%s", task.name, epoch,
             json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in record.items() if k != "epoch"}),
             " (best)" if improved else "")
    return improved


__all__ = ["BatchStream", "CHECKPOINT_NAME", "CRASH_AFTER_EPOCH_ENV", "EpochTotals", "FinetuneOutcome", "FinetuneTask",
           "GPU_CHECKPOINT_INTERVAL", "snapshot", "to_device", "train"]
