"""What feeding the pretraining loop costs, per micro-batch, for µB-M and the parse-reading conditions.

`pretrain_microbert` collates batches in loader workers (`micro_batch_loader`) and, for conditions
that read the parse (SLA, P, T), also builds their SLA mask and P/T samples there
(`models.prepared_inputs`). On a GPU that work must keep ahead of the step (~6 ms for µB-M at
paper scale), so this measures, on real Wolof treebank rows batched as the loop batches them:

* ``collate_ms``: one worker's time to collate a batch; ``prepare_ms``: to add the parse's inputs;
  ``pack_ms``: to copy it into one buffer; ``worker_ms`` their sum. ``workers_needed_for``: workers that keep up with a given step rate.
* ``receive_ms``: the training process's time to take one ready batch off the loader's queue (the
  worker processes are ahead and idle): unpickling the batch's tensors from shared memory. It grows
  with the number of tensors a batch carries, and it is spent in the loop, so it bounds steps/s;
  rows with ``packed`` hand over one buffer (`steps.pretrain.packing`), the others every tensor.
  ``unpickle_ms``: the same hand-over's receiving side timed in one process, free of the wait for
  a CPU that ``receive_ms`` includes on a busy box.

    SIB_DATA_ROOT=../shared/data python benchmarks/bench_pretrain_loader.py --batch-size 256 --workers 2 \\
        --json docs/benchmarks/pretrain_loader.json

The box's core count and load average are recorded with the figures: on 2 cores, workers and the
timing process share them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from models import MicroBertConfig, parse_condition  # noqa: E402
from models.prepared_inputs import ParseInputs  # noqa: E402
from steps.common.data_root import DataPath  # noqa: E402
from steps.data.inputs import make_instances  # noqa: E402
from steps.data.readers import read_conllu  # noqa: E402
from steps.data.vocab import train_wordpiece  # noqa: E402
from steps.pretrain.collate import PretrainingCollator  # noqa: E402
from steps.pretrain.packing import PackedBatch, pack_batch  # noqa: E402
from steps.pretrain.pretrain import BatchOrder, MicroBatches, micro_batch_loader  # noqa: E402


def treebank_rows(language: str, vocab_size: int):
    if language != "wolof":
        raise SystemExit(f"only wolof is wired in this benchmark, not {language!r}")
    sentences = read_conllu(DataPath("wolof/ud/wo_wtb-ud-train.conllu").resolve())
    tokenizer = train_wordpiece([s["tokens"] for s in sentences], vocab_size=vocab_size)
    rows = make_instances(tokenizer, sentences, True, 128, "wolof train")
    labels = sorted({tag for row in rows for tag in row["xpos"]})
    return tokenizer, rows, labels


def config_for(condition: str, tokenizer, labels) -> MicroBertConfig:
    return MicroBertConfig(**parse_condition(condition).config_fields(), vocab_size=len(tokenizer), num_xpos_labels=len(labels))


class TensorMicroBatches(MicroBatches):
    """The transport before `steps.pretrain.packing`: the batch's tensors handed over one by one."""

    def __getitem__(self, index: int) -> dict:
        return self.batch(index)  # not a packed batch's views: those would share one storage


def dataset(config, tokenizer, rows, labels, batch_size: int, count: int, prepared: bool, packed: bool, seed: int = 42) -> MicroBatches:
    order = BatchOrder(len(rows), batch_size, seed, [len(row["input_ids"]) for row in rows])
    collator = PretrainingCollator(tokenizer, labels)
    kind = MicroBatches if packed else TensorMicroBatches
    return kind(rows, order, collator, seed, 0, count, parse_inputs=ParseInputs(config) if prepared else None)


def per_batch_ms(function, count: int) -> float:
    times = []
    for index in range(count):
        start = time.perf_counter()
        function(index)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def tensors_to(batch: dict, device: torch.device) -> dict:
    """An unpacked batch to ``device``, field by field (its sample dataclasses' tensors one by one;
    a DataLoader pins the batch's tensors, not those inside the dataclasses)."""
    def move(value):
        if dataclasses.is_dataclass(value):
            return dataclasses.replace(value, **{f.name: move(getattr(value, f.name)) for f in dataclasses.fields(value)})
        return value.to(device, non_blocking=True)

    return {key: move(value) for key, value in batch.items()}


def receive_ms(items: MicroBatches, workers: int, device: torch.device, worker_ms: float) -> dict:
    """Median time to take a ready batch off a full queue, and (on a GPU) to copy it to the device."""
    loader = iter(micro_batch_loader(items, workers, pin_memory=device.type == "cuda"))
    next(loader)
    ready = min(8 * workers, len(items) - 1)
    # Time for the workers to fill the queue (8 batches in flight each), with a wide margin.
    time.sleep(1.0 + 2.0 * ready * worker_ms / 1e3 / workers)
    takes, copies = [], []
    for _ in range(ready):
        start = time.perf_counter()
        batch = next(loader)
        takes.append(time.perf_counter() - start)
        if device.type == "cuda":
            start = time.perf_counter()
            batch.unpack(device, non_blocking=True) if isinstance(batch, PackedBatch) else tensors_to(batch, device)
            torch.cuda.synchronize(device)
            copies.append(time.perf_counter() - start)
    del loader
    return {"receive_ms": statistics.median(takes) * 1e3, "to_device_ms": statistics.median(copies) * 1e3 if copies else None,
            "batches_timed": ready}


def unpickle_ms(item, count: int) -> float:
    """The receiving side of a worker's hand-over alone, in this process: rebuilding the item's
    tensors from shared memory (what ``receive_ms`` is, minus waiting for the CPU on a busy box)."""
    import pickle
    from multiprocessing.reduction import ForkingPickler

    import torch.multiprocessing  # noqa: F401  (registers the shared-memory reductions of tensors)

    times = []
    for _ in range(count):
        payload = bytes(ForkingPickler.dumps(item))
        start = time.perf_counter()
        pickle.loads(payload)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def tensors_in(batch: dict) -> int:
    return sum(len(dataclasses.fields(value)) if dataclasses.is_dataclass(value) else 1 for value in batch.values())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", default="wolof")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--conditions", nargs="+", default=["M", "MXPT", "MXPT-SLA"])
    parser.add_argument("--batches", type=int, default=20, help="batches timed in-process per row")
    parser.add_argument("--workers", type=int, default=2, help="loader worker processes for the receive timing")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--step-rates", type=float, nargs="+", default=[155.0, 208.0],
                        help="steps/s to size the worker pool for (155: µB-M measured on an H200; 208: the 5-min bar)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # a loader worker's setting
    device = torch.device(args.device)
    tokenizer, rows, labels = treebank_rows(args.language, args.vocab_size)

    results = []
    for condition in args.conditions:
        config = config_for(condition, tokenizer, labels)
        # (parse inputs in the loader, packed): the loop before this benchmark, then each change alone.
        variants = [(False, False), (True, False), (True, True)] if ParseInputs(config) else [(False, False), (False, True)]
        for prepared, packed in variants:
            items = dataset(config, tokenizer, rows, labels, args.batch_size, args.batches + 8 * args.workers + 1, prepared, packed)
            collated = [items.collator([items.rows[r] for r in items.order.indices(i)], seed=i) for i in range(args.batches)]
            collate = per_batch_ms(lambda i: items.collator([items.rows[r] for r in items.order.indices(i)], seed=i), args.batches)
            prepare = per_batch_ms(lambda i: items.parse_inputs(collated[i], i), args.batches) if prepared else 0.0
            ready = [items.parse_inputs(batch, i) if prepared else batch for i, batch in enumerate(collated)]
            pack = per_batch_ms(lambda i: pack_batch(ready[i]), args.batches) if packed else 0.0
            whole = collate + prepare + pack
            row = {
                "condition": condition, "parse_inputs_in_loader": prepared, "packed": packed,
                "tensors_per_batch": 1 if packed else tensors_in(ready[0]),
                "collate_ms": collate, "prepare_ms": prepare, "pack_ms": pack, "worker_ms": whole,
            }
            row["unpickle_ms"] = unpickle_ms(items[0], args.batches)
            row["workers_needed_for"] = {f"{rate:g} steps/s": round(whole * rate / 1e3, 1) for rate in args.step_rates}
            row.update(receive_ms(items, args.workers, device, whole))
            results.append(row)
            print(f"{condition:<10} {'prepared' if prepared else 'in-model':<9} {'packed' if packed else 'tensors':<8}"
                  f"{row['tensors_per_batch']:>3} tensors  "
                  f"collate {collate:6.1f} ms  prepare {row['prepare_ms']:6.1f} ms  pack {pack:4.1f} ms  "
                  f"unpickle {row['unpickle_ms']:5.2f} ms  receive {row['receive_ms']:5.2f} ms  "
                  f"workers for {args.step_rates[0]:g}/s: {row['workers_needed_for'][f'{args.step_rates[0]:g} steps/s']}")
    load = os.getloadavg()
    print(f"batch {args.batch_size}, {len(rows)} treebank rows, {args.workers} workers; load {load[0]:.2f} on {os.cpu_count()} cores")
    if args.json:
        args.json.write_text(json.dumps({
            "language": args.language, "rows": len(rows), "batch_size": args.batch_size, "workers": args.workers,
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "load_average": list(load), "results": results,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
