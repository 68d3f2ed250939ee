"""Time one pretraining step (forward + backward + AdamW step) per condition on CPU.

All models run in one process on the same synthetic batch: random token ids with realistic padding,
MLM labels at 15% of real tokens, random subword-level dependency trees (multi-piece words attach their
pieces to the first piece, heads are mostly near their dependents) and XPOS labels.  The reference
point is a stock `transformers.BertForMaskedLM` of the same size on the same input ids and labels.

Edman et al.'s conditions (Edman et al., §2) join them: M-A13 (band attention), H (its step includes the
collator's gather of the batch's soft labels from a `SoftLabelTable`, which `precompute_soft_labels`
caches and which is built here, untimed, for the batch's rows from a trigram model counted over
4,000 synthetic Zipf-distributed rows) and C5/C13 (one c-token row per masked target, so their step is
also given per target token, next to µB-M's).  The machine's load average is recorded with the
timings, since a shared box slows every row alike but not every run alike.

    python benchmarks/bench_pretrain_step.py --steps 10 --json /tmp/bench.json

On a GPU (the speed levers: bf16 autocast, fused AdamW, torch.compile of the encoder),
every combination asked for runs as its own row, e.g. "µB-M [bf16, fused]" or
"µB-M [bf16, fused, compile reduce-overhead]"; each timed step waits for the device to finish:

    python benchmarks/bench_pretrain_step.py --device cuda --batch-size 256 --length 64 --steps 30 --warmup 5 \
        --conditions M MXPT-SLA --precision fp32 bf16 --optimizer default fused \
        --compile none reduce-overhead --json OUT.json

With ``--parse-in-loader``, a parse-reading condition gets a second row, "(parse in loader)", whose
batch already carries its SLA mask and P/T samples, as `pretrain_microbert`'s loader workers build
them (`models.prepared_inputs`); that row times what the training process is left with.

A compiled row compiles the encoder as `pretrain_microbert` does (`compile_module`: dynamic
sequence length) during its warm-up steps, which are not timed; its first step, compile included,
is recorded apart. Rows that differ only in the optimizer compile the same encoder graph, which
Inductor's on-disk cache serves the second time. How long a condition takes to compile, from
scratch and on a CPU (``--scalar-cpu-kernels``: Inductor's vectorised C++ fails to build on some
boxes), one process a condition so that neither reuses the other's kernels:

    for c in M MXPT-SLA; do python benchmarks/bench_pretrain_step.py --conditions $c --batch-size 64 --length 64 \\
        --compile none default --compile-objectives --scalar-cpu-kernels --fresh-compile --optimizer fused \\
        --steps 4 --warmup 2 --json docs/benchmarks/pretrain_compile_cpu.jsonl; done
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Optional

import torch
from transformers import BertConfig, BertForMaskedLM, BertModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from models import MicroBertConfig, MicroBertForPretraining, MicroBertModel  # noqa: E402
from models.prepared_inputs import ParseInputs  # noqa: E402
from steps.pretrain.packing import pack_batch  # noqa: E402

DEFAULT_CONDITIONS = ["M", "MX", "MP", "MT", "MXPT", "MPT-SLA", "MXPT-SLA", "MS-G", "M-A13", "H", "C5", "C13"]
PER_TARGET_TOKEN = ("M", "C5", "C13")  # conditions also reported per masked target token


def synthetic_trigram_model(vocab_size: int, rows: int, seed: int):
    """A trigram model counted over random rows with Zipf-like ids (as sparse as a real corpus'
    counts, roughly), for timing H's soft labels."""
    from models.ngram import TrigramModel

    generator = torch.Generator().manual_seed(seed + 1)
    lengths = torch.randint(5, 40, (rows,), generator=generator).tolist()
    ranks = (torch.rand(sum(lengths), generator=generator) ** 3 * (vocab_size - 5)).long() + 5
    out, start = [], 0
    for n in lengths:
        out.append([1] + ranks[start : start + n].tolist() + [2])
        start += n
    return TrigramModel.from_rows(out, vocab_size)


def random_sentence(rng: random.Random, max_subwords: int):
    """Word piece counts and subword heads (1-based positions, 0 = ROOT) of one random sentence."""
    pieces, total = [], 0
    while True:
        count = rng.choices([1, 2, 3], weights=[0.7, 0.2, 0.1])[0]
        if total + count > max_subwords or (len(pieces) >= 4 and rng.random() < 1 / 25):
            break
        pieces.append(count)
        total += count
    num_words = len(pieces)
    # Attach words in random order, each to a nearby already-attached word: an acyclic, mostly local tree.
    order = list(range(num_words))
    rng.shuffle(order)
    word_head = [0] * num_words
    attached = [order[0]]
    for word in order[1:]:
        word_head[word] = 1 + min(attached, key=lambda other: abs(other - word) + rng.random() * 4)
        attached.append(word)
    first_piece = [1 + sum(pieces[:w]) for w in range(num_words)]
    heads = []
    for word, count in enumerate(pieces):
        head_word = word_head[word]
        heads.append(0 if head_word == 0 else first_piece[head_word - 1])
        heads.extend([first_piece[word]] * (count - 1))
    spans = [(first_piece[w], first_piece[w] + pieces[w] - 1) for w in range(num_words)]
    return heads, spans


def synthetic_batch(batch_size: int, length: int, vocab_size: int, num_xpos: int, seed: int) -> dict:
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    sentences = [random_sentence(rng, rng.randint(length // 4, length - 2)) for _ in range(batch_size)]
    max_words = max(len(spans) for _, spans in sentences)
    batch = {
        "input_ids": torch.zeros(batch_size, length, dtype=torch.long),
        "attention_mask": torch.zeros(batch_size, length, dtype=torch.long),
        "token_type_ids": torch.zeros(batch_size, length, dtype=torch.long),
        "heads": torch.full((batch_size, length), -1, dtype=torch.long),
        "token_spans": torch.zeros(batch_size, max_words + 2, 2, dtype=torch.long),
        "xpos": torch.full((batch_size, max_words), -100, dtype=torch.long),
        "labels": torch.full((batch_size, length), -100, dtype=torch.long),
        "upos_ids": torch.zeros(batch_size, length, dtype=torch.long),  # syntax-guided attention (-G) reads them
    }
    for row, (heads, spans) in enumerate(sentences):
        n = len(heads)
        batch["input_ids"][row, 1 : n + 1] = torch.randint(5, vocab_size, (n,), generator=generator)
        batch["input_ids"][row, 0], batch["input_ids"][row, n + 1] = 1, 2
        batch["attention_mask"][row, : n + 2] = 1
        batch["heads"][row, 1 : n + 1] = torch.tensor(heads)
        batch["upos_ids"][row, 1 : n + 1] = torch.randint(1, 18, (n,), generator=generator)
        batch["token_spans"][row, 1 : len(spans) + 1] = torch.tensor(spans)
        batch["token_spans"][row, len(spans) + 1] = n + 1
        batch["xpos"][row, : len(spans)] = torch.randint(0, num_xpos, (len(spans),), generator=generator)
        masked = torch.rand(n, generator=generator) < 0.15
        masked[torch.randint(0, n, (1,), generator=generator)] = True
        positions = torch.arange(1, n + 1)[masked]
        batch["labels"][row, positions] = batch["input_ids"][row, positions]
    return batch


def count_ops(step) -> dict:
    """One step's aten calls (forward, backward, optimizer), and among them the reads of a value
    back to the host (``aten._local_scalar_dense``: ``.item()``, ``bool()``, ``int()`` of a tensor).
    On a GPU each call is a kernel launch or a view, and each read a sync: what a launch-bound step
    is made of, countable on any device."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        ops = host_reads = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops += 1
            self.host_reads += func is torch.ops.aten._local_scalar_dense.default
            return func(*args, **(kwargs or {}))

    with Counter() as counter:
        step()
    return {"ops": counter.ops, "host_reads": counter.host_reads}


def time_round_robin(steps_by_name: dict, warmup: int, steps: int, first_steps: Optional[dict] = None) -> dict[str, list[float]]:
    """Warm every model up, then time them in turns, so that drifting machine load (other processes on
    a shared box) affects all of them alike. ``first_steps`` gets each row's first warm-up step in
    seconds: a compiled row's includes its compile."""
    for name, step in steps_by_name.items():
        for number in range(warmup):
            start = time.perf_counter()
            step()
            if number == 0 and first_steps is not None:
                first_steps[name] = time.perf_counter() - start
    timings = {name: [] for name in steps_by_name}
    for _ in range(steps):
        for name, step in steps_by_name.items():
            start = time.perf_counter()
            step()
            timings[name].append(time.perf_counter() - start)
    return timings


def finished(device: torch.device) -> None:
    """Wait for the device's queued work, so a timed step is the step and not its launches."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_step(model, optimizer, inputs: dict, loss_of, autocast=None, device=torch.device("cpu")):
    from contextlib import nullcontext

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast or nullcontext():
            loss = loss_of(model(**inputs))
        loss.backward()
        optimizer.step()
        finished(device)

    return step


def make_soft_label_step(model, optimizer, batch: dict, table, rows, autocast=None, device=torch.device("cpu")):
    from contextlib import nullcontext

    def step():
        ids, probs = table.lookup(rows, (batch["labels"].cpu() != -100).nonzero())
        soft = {"soft_label_ids": ids.to(device), "soft_label_probs": probs.to(device)}
        optimizer.zero_grad(set_to_none=True)
        with autocast or nullcontext():
            loss = model(**batch, **soft).loss
        loss.backward()
        optimizer.step()
        finished(device)

    return step


def lever_variants(precisions, optimizers, compile_modes=("none",)):
    """(row-name suffix, precision, fused, compile mode or None) for every combination; the plain one
    keeps the bare name, and an eager row the two-lever name it always had."""
    variants = []
    for precision in precisions:
        for optimizer in optimizers:
            for mode in compile_modes:
                levers = [precision, optimizer] + ([] if mode == "none" else [f"compile {mode}"])
                plain = (precision, optimizer, mode) == ("fp32", "default", "none")
                variants.append(("" if plain else f" [{', '.join(levers)}]", precision, optimizer == "fused",
                                 None if mode == "none" else mode))
    return variants


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--vocab-size", type=int, default=10000)
    parser.add_argument("--num-xpos", type=int, default=40)
    parser.add_argument("--conditions", nargs="+", default=DEFAULT_CONDITIONS)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here (a .jsonl file: appended as one line)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--precision", nargs="+", default=["fp32"], choices=["fp32", "bf16"], help="µB rows in each")
    parser.add_argument("--optimizer", nargs="+", default=["default"], choices=["default", "fused"], help="AdamW kernel(s)")
    parser.add_argument("--compile", nargs="+", default=["none"], dest="compile_modes",
                        choices=["none", "default", "reduce-overhead", "max-autotune-no-cudagraphs"],
                        help="torch.compile mode(s) of the encoder (none: eager)")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile backend (CPU tests: aot_eager)")
    parser.add_argument("--fresh-compile", action="store_true",
                        help="compile from scratch: a new Inductor cache folder, FX-graph and AOTAutograd caches off (a "
                             "compiled row's first step is then its whole compile)")
    parser.add_argument("--scalar-cpu-kernels", action="store_true",
                        help="Inductor generates scalar C++ (cpp.simdlen 0) on a CPU: its vectorised code fails to build "
                             "with torch 2.13 on some boxes (docs/decisions.md, \"CPU tests compile with aot_eager\")")
    parser.add_argument("--compile-objectives", action="store_true",
                        help="compiled rows also compile the P and T losses (pretrain_microbert's compile_objectives, mode default)")
    parser.add_argument("--count-ops", action="store_true",
                        help="also count each eager row's aten calls and host reads in one step (count_ops)")
    parser.add_argument("--parse-in-loader", action="store_true",
                        help="also a row per parse-reading condition whose batch carries its SLA mask and P/T samples, "
                             "built before the step as pretrain_microbert's loader workers do (models.prepared_inputs)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.scalar_cpu_kernels or args.fresh_compile:
        import tempfile

        from torch._functorch import config as functorch_config
        from torch._inductor import config as inductor_config

        if args.scalar_cpu_kernels:
            inductor_config.cpp.simdlen = 0
        if args.fresh_compile:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")
            inductor_config.fx_graph_cache = False
            functorch_config.enable_autograd_cache = False
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    from steps.common.runtime import compile_module, compile_options, fused_adamw
    from steps.pretrain.pretrain import autocast_for

    cpu_batch = synthetic_batch(args.batch_size, args.length, args.vocab_size, args.num_xpos, args.seed)
    batch = {key: value.to(device) for key, value in cpu_batch.items()}
    size = dict(hidden_size=128, num_hidden_layers=3, num_attention_heads=8, intermediate_size=512, vocab_size=args.vocab_size)
    adamw = dict(lr=1e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)

    steps_by_name = {}
    reference = BertForMaskedLM(BertConfig(**size)).train().to(device)
    reference_inputs = {key: batch[key] for key in ("input_ids", "attention_mask", "token_type_ids", "labels")}
    reference_optimizer = torch.optim.AdamW(reference.parameters(), **adamw)
    steps_by_name["HF BertForMaskedLM"] = make_step(reference, reference_optimizer, reference_inputs, lambda out: out.loss, device=device)
    # Encoder-only pair (no MLM head): isolates attention/layer overhead from the head's vocabulary matmul.
    encoder_inputs = {key: batch[key] for key in ("input_ids", "attention_mask", "token_type_ids")}
    hf_encoder = BertModel(BertConfig(**size), add_pooling_layer=False).train()
    our_encoder = MicroBertModel(MicroBertConfig(**size)).train()
    for name, encoder in (("HF BertModel (encoder)", hf_encoder), ("µB encoder", our_encoder)):
        encoder.to(device)
        optimizer = torch.optim.AdamW(encoder.parameters(), **adamw)
        steps_by_name[name] = make_step(encoder, optimizer, encoder_inputs, lambda out: out.last_hidden_state.square().mean(), device=device)
    table = rows = None
    if "H" in args.conditions:  # the precompute_soft_labels step's work, done before timing as the DAG does
        from models.ngram import SoftLabelTable

        rows = [ids[: int(n)].tolist() for ids, n in zip(cpu_batch["input_ids"], cpu_batch["attention_mask"].sum(1))]
        candidates = torch.ones(args.vocab_size, dtype=torch.bool)
        candidates[:5] = False
        table = SoftLabelTable.from_rows(synthetic_trigram_model(args.vocab_size, 4000, args.seed), rows, candidates)
    for condition in args.conditions:
        for suffix, precision, fused, mode in lever_variants(args.precision, args.optimizer, args.compile_modes):
            model = MicroBertForPretraining.from_condition(condition, num_xpos_labels=args.num_xpos, **size).train().to(device)
            if mode is not None:  # as pretrain_microbert's compile_encoder (and compile_objectives) do
                compile_module(model.bert, {"backend": args.compile_backend, **({} if mode == "default" else {"mode": mode})})
                if args.compile_objectives:
                    model.compile_objectives(compile_options({"backend": args.compile_backend}))
            optimizer = (fused_adamw if fused else torch.optim.AdamW)(model.parameters(), **adamw)
            autocast = autocast_for(device, precision)
            if condition == "H":  # gathering the soft labels is the collator's work, every batch: timed with the step
                steps_by_name[f"µB-{condition}{suffix}"] = make_soft_label_step(model, optimizer, batch, table, rows, autocast, device)
            else:
                steps_by_name[f"µB-{condition}{suffix}"] = make_step(model, optimizer, batch, lambda out: out.loss, autocast, device)
            preparer = ParseInputs(model.config)
            if args.parse_in_loader and preparer:  # the same weights, fed what the loader would build (untimed, as there)
                prepared = pack_batch(preparer(cpu_batch, args.seed)).unpack(device)
                steps_by_name[f"µB-{condition}{suffix} (parse in loader)"] = make_step(
                    model, optimizer, prepared, lambda out: out.loss, autocast, device)
    first_steps: dict[str, float] = {}
    results = time_round_robin(steps_by_name, args.warmup, args.steps, first_steps)
    # After timing (a compiled row has compiled by now); a dispatch mode sees a compiled graph's calls too.
    op_counts = {name: count_ops(step) for name, step in steps_by_name.items()} if args.count_ops else {}

    medians = {name: statistics.median(times) for name, times in results.items()}
    targets = int((batch["labels"] != -100).sum())
    per_target = {f"µB-{c}": medians[f"µB-{c}"] / targets for c in PER_TARGET_TOKEN if f"µB-{c}" in medians}
    load = os.getloadavg()
    baseline_m = medians.get("µB-M")
    hf = medians["HF BertForMaskedLM"]
    print(f"batch {args.batch_size}×{args.length}, vocab {args.vocab_size}, threads {torch.get_num_threads()}, "
          f"median of {args.steps} steps after {args.warmup} warm-up")
    width = max(30, *(len(name) + 2 for name in medians))
    print(f"{'model':<{width}}{'ms/step':>10}{'seq/s':>10}{'vs µB-M':>10}{'vs HF':>8}")
    for name, median in medians.items():
        versus_m = f"{median / baseline_m:.2f}×" if baseline_m else "-"
        print(f"{name:<{width}}{median * 1e3:>10.1f}{args.batch_size / median:>10.1f}{versus_m:>10}{median / hf:>7.2f}×")
    for name, seconds in first_steps.items():
        if "compile" in name:
            print(f"{name:<{width}} first step {seconds:.1f} s (its compile included)")
    for name, counted in op_counts.items():
        print(f"{name:<{width}}{counted['ops']:>6} aten calls, {counted['host_reads']:>3} host reads in one step")
    print(f"per masked target token ({targets} in the batch): "
          + ", ".join(f"{name} {seconds * 1e6:.0f} µs" for name, seconds in per_target.items()))
    print(f"load average (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    if args.json:
        record = {
            "batch_size": args.batch_size, "length": args.length, "vocab_size": args.vocab_size,
            "threads": torch.get_num_threads(), "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "precision": args.precision, "optimizer": args.optimizer,
            "compile": args.compile_modes, "compile_backend": args.compile_backend, "compile_objectives": args.compile_objectives,
            "steps": args.steps, "warmup": args.warmup, "scalar_cpu_kernels": args.scalar_cpu_kernels,
            "fresh_compile": args.fresh_compile,
            "first_step_seconds": first_steps,
            "median_seconds": medians, "all_seconds": results, "op_counts": op_counts,
            "target_tokens": targets, "median_seconds_per_target_token": per_target,
            "load_average": list(load), "cpu_count": os.cpu_count(),
            "command": "python benchmarks/bench_pretrain_step.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        }
        if args.json.suffix == ".jsonl":  # a record of several runs: this one appended
            from reporting.records import append_jsonl

            append_jsonl(args.json, [record])
        else:
            args.json.write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
