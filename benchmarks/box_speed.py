"""How fast a box is at this project's CPU work: one number to read beside a wall time.

    python benchmarks/box_speed.py            # {"box_seconds": 4.1, "threads": 2, ...}

Boxes with the same core count differ by up to ~2× in speed, so a wall time alone says little
about the next box. `benchmarks/time_experiment.py` measures this probe before each run and
keeps it in the record; ``your probe / the record's probe × the record's minutes`` is a fair
first guess at a run's time on your box (the steps are bound by the same kind of work).

The workload is fixed and seeded, and shaped like what the 2-core main command spends its time
on: a BiLSTM of 2×200 over 100-d inputs (the corpus parser's and the UD head's) and a µBERT-sized
transformer encoder (the default `MicroBertConfig` widths: 128 wide, 3 layers, 8 heads, 512
feed-forward), each forward and backward with an Adam update. The figure is the best of
``repeats`` timings, the least disturbed by whatever else the box runs.
"""
from __future__ import annotations

import argparse
import json
import time
from typing import Any, Dict

import torch
from torch import nn

THREADS = 2  # the core count every 2-core record was taken at; fixed so boxes compare


def _models() -> nn.ModuleList:
    lstm = nn.LSTM(100, 200, num_layers=2, bidirectional=True, batch_first=True)
    layer = nn.TransformerEncoderLayer(128, 8, 512, dropout=0.1, batch_first=True)
    return nn.ModuleList([lstm, nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)])


def _one_pass(models: nn.ModuleList, optimizer: torch.optim.Optimizer, words: torch.Tensor, pieces: torch.Tensor) -> None:
    lstm, encoder = models
    loss = lstm(words)[0].pow(2).mean() + encoder(pieces).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def box_seconds(repeats: int = 3, passes: int = 10, threads: int = THREADS) -> float:
    """Seconds for ``passes`` training passes of the fixed workload at ``threads`` threads, the
    best of ``repeats``. The thread setting is restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        generator = torch.Generator().manual_seed(0)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            models = _models()
        optimizer = torch.optim.Adam(models.parameters(), lr=1e-3)
        words = torch.randn(32, 40, 100, generator=generator)  # a batch of sentences, word vectors
        pieces = torch.randn(16, 128, 128, generator=generator)  # a pretraining batch, hidden states
        _one_pass(models, optimizer, words, pieces)  # warm-up: allocator, kernels chosen
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(passes):
                _one_pass(models, optimizer, words, pieces)
            best = min(best, time.perf_counter() - start)
        return best
    finally:
        torch.set_num_threads(before)


def probe(repeats: int = 3, passes: int = 10) -> Dict[str, Any]:
    """The probe as a record's field: seconds, threads, and the workload's size."""
    return {"box_seconds": round(box_seconds(repeats, passes), 3), "threads": THREADS, "passes": passes, "repeats": repeats}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--passes", type=int, default=10)
    args = parser.parse_args(argv)
    print(json.dumps(probe(args.repeats, args.passes)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
