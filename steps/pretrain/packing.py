"""A collated micro-batch as one byte buffer, for the trip from a loader worker to the device.

Each tensor a DataLoader worker hands over costs the training process a shared-memory rebuild when
it unpickles it (~0.1-0.3 ms a tensor on the 2-core box), then a pinned copy and a host→device copy
each. A batch has 9 tensors, 20 with the parse's inputs (`models.prepared_inputs`), and the loop at
paper scale has ~6 ms a step on a GPU. `pack_batch` copies them into one buffer in the worker;
`PackedBatch.unpack` moves that buffer once and hands back views of it: the same bytes, so the
same batch bit for bit (tested), in one transfer.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch

# Every tensor starts at a multiple of this many bytes, so its view as int64/float64 is aligned.
ALIGNMENT = 8

# (field name or None for a plain tensor, dtype, shape, byte offset)
Slot = Tuple[Optional[str], torch.dtype, Tuple[int, ...], int]


@dataclass
class PackedBatch:
    """buffer: uint8 bytes of every tensor. layout: (key, dataclass type or None, slots) per batch
    field, in the batch's order. tokens: the batch's non-padding positions (counted in the worker,
    so the loop reads no tensor to count them)."""

    buffer: torch.Tensor
    layout: List[Tuple[str, Optional[type], List[Slot]]]
    tokens: int

    def pin_memory(self) -> "PackedBatch":
        return PackedBatch(self.buffer.pin_memory(), self.layout, self.tokens)

    def unpack(self, device: Optional[torch.device] = None, non_blocking: bool = False) -> Dict[str, Any]:
        """The batch, every tensor a view of the buffer (moved to ``device`` in one copy first)."""
        buffer = self.buffer if device is None else self.buffer.to(device, non_blocking=non_blocking)
        batch: Dict[str, Any] = {}
        for key, kind, slots in self.layout:
            tensors = {name: _view(buffer, dtype, shape, offset) for name, dtype, shape, offset in slots}
            batch[key] = tensors[None] if kind is None else kind(**tensors)
        return batch


def _view(buffer: torch.Tensor, dtype: torch.dtype, shape: Tuple[int, ...], offset: int) -> torch.Tensor:
    numel = 1
    for size in shape:
        numel *= size
    return buffer[offset : offset + numel * dtype.itemsize].view(dtype).view(shape)


def pack_batch(batch: Dict[str, Any]) -> PackedBatch:
    """Pack a collated batch: tensors, and dataclasses of tensors (`models.trees.PhraseSamples`, …)."""
    entries: List[Tuple[str, Optional[type], List[Tuple[Optional[str], torch.Tensor]]]] = []
    for key, value in batch.items():
        if isinstance(value, torch.Tensor):
            entries.append((key, None, [(None, value)]))
        elif dataclasses.is_dataclass(value):
            entries.append((key, type(value), [(field.name, getattr(value, field.name)) for field in dataclasses.fields(value)]))
        else:
            raise TypeError(f"cannot pack batch field {key!r} of type {type(value).__name__}")
    layout, offset = [], 0
    for key, kind, tensors in entries:
        slots = []
        for name, tensor in tensors:
            slots.append((name, tensor.dtype, tuple(tensor.shape), offset))
            offset += -(-tensor.numel() * tensor.element_size() // ALIGNMENT) * ALIGNMENT
        layout.append((key, kind, slots))
    buffer = torch.empty(offset, dtype=torch.uint8)
    for (_, _, slots), (_, _, tensors) in zip(layout, entries):
        for (_, dtype, shape, start), (_, tensor) in zip(slots, tensors):
            _view(buffer, dtype, shape, start).copy_(tensor)
    tokens = int(batch["attention_mask"].sum()) if "attention_mask" in batch else 0
    return PackedBatch(buffer, layout, tokens)
