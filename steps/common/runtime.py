"""Process settings that a step changes only for its own run, and the seeds every training step derives."""
from __future__ import annotations

import contextlib
import hashlib
from typing import Any, Iterator, Optional

import torch


@contextlib.contextmanager
def torch_threads(num_threads: Optional[int]) -> Iterator[None]:
    """Run the block with ``num_threads`` intra-op threads (unchanged if None/0), then restore.

    Steps take ``num_threads`` so that jobs sharing a small machine do not oversubscribe it
    (two 2-thread torch jobs on 2 cores run ~10× slower); it never changes a result, so steps keep
    it out of their cache keys."""
    previous = torch.get_num_threads()
    if num_threads:
        torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def fused_adamw(params: Any, **settings: Any) -> torch.optim.AdamW:
    """``torch.optim.AdamW`` with its fused kernel: the same update as the default for-loop
    implementation (up to float rounding), one kernel for all parameters instead of a dozen small
    ops per tensor (benchmarks/bench_finetune_step.py measures the fine-tuning step)."""
    return torch.optim.AdamW(params, fused=True, **settings)


def derived_seed(seed: int, purpose: str, index: int = 0) -> int:
    """A 63-bit seed for one (purpose, index), independent of everything else that drew before."""
    digest = hashlib.sha256(f"{seed}/{purpose}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1
