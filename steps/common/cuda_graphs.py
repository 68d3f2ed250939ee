"""A training step replayed as one CUDA graph per batch shape: the lever against a GPU step bound by
its kernel launches.

On a GPU, one UD fine-tuning step of the paper's parser (a µBERT, a 3 × 400 BiLSTM, biaffine
scorers, fused AdamW) is ~770 small kernels, and launching them, not running them, sets its pace
(~30 ms on an H100 at batch 16; docs/engineering.md). torch.compile does not help there: dynamo
leaves every LSTM eager, so the step stays cut into seven graphs. A CUDA graph of the whole step
(forward, backward, gradient clipping, optimizer step) launches all of it at once, cuDNN's LSTMs
included.

A graph replays fixed shapes at fixed addresses. So each batch is copied into static tensors of its
shape, and the task pads lengths up to a multiple so that few shapes recur (the UD step:
``GRAPH_LENGTH_MULTIPLE``). The first ``warmup`` batches of a shape run eagerly (on a side stream, as capture requires); the
next one is captured and every later one replays it. All graphs share one memory pool: a step's
intermediates, its gradients included, are scratch that no other step reads, and steps never run
concurrently. A step that cannot be captured (a host sync inside it) is reported once, and training
goes on eagerly.

Where nothing is captured (a CPU; ``capture=False``) the same static-input step runs eagerly, and
the tests pin it to the plain step: same losses and weights, bit for bit. What changes on a GPU is
only how the kernels are launched, the dropout masks drawn (the graph advances the same generator by
its own offsets) and the summation order that padding brings. The learning rate is captured with
the step, so a schedule that changes it cannot be graphed.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

import torch

logger = logging.getLogger(__name__)

Batch = Dict[str, torch.Tensor]
ShapeKey = Tuple[Tuple[str, Tuple[int, ...], torch.dtype], ...]


@dataclass
class _Shape:
    """The static inputs of one batch shape, how many of its batches ran eagerly, and its graph."""

    inputs: Batch
    eager_steps: int = 0
    graph: Optional["torch.cuda.CUDAGraph"] = None
    loss: Optional[torch.Tensor] = None  # the graph's output: overwritten by every replay
    replays: int = 0


def shape_key(batch: Batch) -> ShapeKey:
    return tuple((name, tuple(value.shape), value.dtype) for name, value in sorted(batch.items()))


class GraphedTrainStep:
    """``step(batch) -> loss``: ``loss_fn(batch).backward()``, ``clip()``, ``optimizer.step()``, the
    loss detached. The caller steps the scheduler and zeroes the gradients (``set_to_none=True``, so
    that the next capture allocates them in the graphs' pool) as it does around a plain step.

    ``capture``: record graphs (default: when ``device`` is a GPU). ``warmup``: eager batches of a
    shape before its capture."""

    def __init__(self, loss_fn: Callable[[Batch], torch.Tensor], clip: Callable[[], None], optimizer: torch.optim.Optimizer,
                 device: torch.device, capture: Optional[bool] = None, warmup: int = 2, log: logging.Logger = logger):
        if warmup < 1:
            raise ValueError(f"a shape needs at least one eager step before its capture, got warmup={warmup}")
        self.loss_fn, self.clip, self.optimizer, self.device = loss_fn, clip, optimizer, torch.device(device)
        self.capture = self.device.type == "cuda" if capture is None else capture
        if self.capture and self.device.type != "cuda":
            raise ValueError(f"CUDA graphs need a CUDA device, not {self.device}")
        self.warmup, self.log = warmup, log
        self.shapes: Dict[ShapeKey, _Shape] = {}
        if self.capture:
            # The optimizer's step counters and update then stay on the device, inside the graph.
            for group in optimizer.param_groups:
                group["capturable"] = True
            self.pool = torch.cuda.graph_pool_handle()
            self.side_stream = torch.cuda.Stream(self.device)

    @property
    def graphs(self) -> int:
        return sum(shape.graph is not None for shape in self.shapes.values())

    def stats(self) -> Dict[str, int]:
        """Shapes seen, graphs captured, steps replayed and steps run eagerly: for a run's metrics."""
        return {"shapes": len(self.shapes), "graphs": self.graphs, "replayed_steps": sum(s.replays for s in self.shapes.values()),
                "eager_steps": sum(s.eager_steps for s in self.shapes.values())}

    def _step(self, inputs: Batch) -> torch.Tensor:
        loss = self.loss_fn(inputs)
        loss.backward()
        self.clip()
        self.optimizer.step()
        return loss.detach()

    def __call__(self, batch: Batch) -> torch.Tensor:
        key = shape_key(batch)
        shape = self.shapes.get(key)
        if shape is None:
            shape = self.shapes[key] = _Shape({name: torch.empty_like(value, device=self.device) for name, value in batch.items()})
        for name, value in batch.items():
            shape.inputs[name].copy_(value, non_blocking=True)
        if shape.graph is None and self.capture and shape.eager_steps >= self.warmup:
            self._record(shape)
        if shape.graph is not None:
            shape.graph.replay()
            shape.replays += 1
            return shape.loss.clone()
        shape.eager_steps += 1
        if not self.capture:
            return self._step(shape.inputs)
        # Eager steps before a capture run on a side stream (CUDA's rule for warm-up), in order with the rest.
        self.side_stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.side_stream):
            loss = self._step(shape.inputs)
        torch.cuda.current_stream(self.device).wait_stream(self.side_stream)
        return loss

    def _record(self, shape: _Shape) -> None:
        """Capture ``shape``'s step (recording runs nothing: the replay that follows is the step). If
        the step cannot be captured, capture is off from then on."""
        self.optimizer.zero_grad(set_to_none=True)
        graph = torch.cuda.CUDAGraph()
        try:
            # thread_local: CUDA calls of other threads (a tracker's, a loader's) may go on during the capture.
            with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
                loss = self._step(shape.inputs)
        except RuntimeError as error:
            self.capture = False
            self.optimizer.zero_grad(set_to_none=True)
            torch.cuda.synchronize(self.device)
            self.log.warning("the training step cannot be captured as a CUDA graph (%s); training goes on eagerly",
                             str(error).splitlines()[0])
            return
        shape.graph, shape.loss = graph, loss


__all__ = ["GraphedTrainStep", "shape_key"]
