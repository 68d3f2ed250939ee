"""Process settings that a step changes only for its own run, and the seeds every training step derives."""
from __future__ import annotations

import contextlib
import hashlib
import os
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


DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: Optional[str] = "auto") -> torch.device:
    """The device a step runs on: ``"auto"`` (or None) takes the GPU when there is one, ``"cpu"`` and
    ``"cuda"`` force one. Where a step runs never changes what it means, so steps keep ``device``
    out of their cache keys and record the device they used in their metrics."""
    device = device or "auto"
    if device not in DEVICES and not device.startswith("cuda:"):
        raise ValueError(f"unknown device {device!r}; known: {', '.join(DEVICES)} (or cuda:N)")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but torch sees no GPU here; use \"auto\" or \"cpu\"")
    return torch.device(device)


def device_memory(device: torch.device) -> Optional[int]:
    """Bytes of memory a device has: the GPU's own, else the machine's (None: unknown)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return None


def fused_adamw(params: Any, **settings: Any) -> torch.optim.AdamW:
    """``torch.optim.AdamW`` with its fused kernel: the same update as the default for-loop
    implementation (up to float rounding), one kernel for all parameters instead of a dozen small
    ops per tensor (benchmarks/bench_finetune_step.py measures the fine-tuning step)."""
    return torch.optim.AdamW(params, fused=True, **settings)


# torch.compile keyword arguments a config may set (`compile_module`).
COMPILE_OPTIONS = ("backend", "mode", "dynamic", "fullgraph", "options")


def compile_module(module: torch.nn.Module, options: Optional[dict]) -> torch.nn.Module:
    """``torch.compile`` ``module`` in place (``Module.compile``: its parameter names, state_dict
    and checkpoints stay those of the eager module), or leave it eager when ``options`` is None.

    ``options`` are torch.compile's own keywords (e.g. ``{"mode": "reduce-overhead"}``; the tests use
    ``{"backend": "aot_eager"}``). ``dynamic`` defaults to True: length-bucketed batches then share one
    graph with a symbolic sequence length instead of recompiling for every new length. A GPU lever: a
    µBERT step is a few hundred small kernels, so launches and Python, not arithmetic, bound it there."""
    if options is None:
        return module
    module.compile(**compile_options(options))
    return module


def compile_options(options: dict) -> dict:
    """torch.compile keywords from a config's: checked against `COMPILE_OPTIONS`, dynamic by default."""
    unknown = set(options) - set(COMPILE_OPTIONS)
    if unknown:
        raise ValueError(f"unknown torch.compile option(s) {sorted(unknown)}; known: {', '.join(COMPILE_OPTIONS)}")
    return {"dynamic": True, **options}


def derived_seed(seed: int, purpose: str, index: int = 0) -> int:
    """A 63-bit seed for one (purpose, index), independent of everything else that drew before."""
    digest = hashlib.sha256(f"{seed}/{purpose}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1
