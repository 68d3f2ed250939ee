"""Time one UD-parser fine-tuning step (forward + backward + AdamW) on real Wolof-WTB batches.

Compares implementations of the step on the same batches and weights budget: torch's bidirectional
``nn.LSTM`` on a packed sequence with the for-loop AdamW (``packed``, the implementation before
FinetuneUdParser VERSION 002) or with fused AdamW (``packed-fused``: on a GPU one cuDNN call a layer
for both directions, the "packed LSTM" lever) against ``models.word_encoder.BiLSTM`` on padded words
with fused AdamW (``current``: two cuDNN calls and two gathers a layer), and the current one with batches
padded to a few shapes and each step one CUDA graph per shape (``graphed``, `steps.common.cuda_graphs`; timed
once every shape's graph is captured; on a CPU the same step runs eagerly); all compute the same function (see
``tests/test_finetune_parser.py::test_bilstm_on_padded_words_equals_torch_bidirectional_lstm_on_packed_words``).
``--compile MODE ...`` adds the current one with the whole parser under torch.compile (``none``
is eager; ``--compile-backend aot_eager`` runs it on a CPU without code generation): on a GPU the
step is bound by the host's launches (docs/benchmarks/gpu_finetune.jsonl: ~34 ms alone on an H100),
which compilation is the lever against. On a GPU each step's time runs to the device finishing it.
Each compiled variant's record says into how many graphs dynamo cut the step and why
(``torch._dynamo.explain``): a CUDA graph covers one graph, so every break is launches left eager.

    SIB_DATA_ROOT=../shared/data python benchmarks/bench_finetune_step.py --encoder workspace/cache/PretrainMicrobert-.../result/encoder \\
        --json docs/benchmarks/finetune_step.json
    python benchmarks/bench_finetune_step.py --encoder ENCODER --head paper --device cuda --variants current \\
        --compile none default --json gpu_finetune_step.json     # the paper head on a GPU, eager and compiled
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Optional

import torch
import torch._dynamo

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from models.biaffine_parser import BiaffineDependencyParser  # noqa: E402
from models.word_encoder import run_packed_lstm  # noqa: E402
from steps.common.data_root import DataPath  # noqa: E402
from steps.finetune.encoders import encode_words_batch, load_encoder  # noqa: E402
from steps.common.batching import bucketed_batches  # noqa: E402
from steps.common.cuda_graphs import GraphedTrainStep  # noqa: E402
from steps.common.runtime import compile_module  # noqa: E402
from steps.finetune.loop import BatchStream, to_device  # noqa: E402
from steps.finetune.ud_parser import GRAPH_LENGTH_MULTIPLE, Split, make_batch  # noqa: E402
from steps.data.readers import read_conllu  # noqa: E402


class PackedLSTM(torch.nn.Module):
    """The previous implementation: one bidirectional nn.LSTM over a packed sequence."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, dropout: float):
        super().__init__()
        self.lstm = torch.nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True,
                                  bidirectional=True, dropout=dropout if num_layers > 1 else 0.0)

    def forward(self, words, word_mask):
        return run_packed_lstm(self.lstm, words, word_mask)


HEADS = {  # the BiLSTM and dropout of the cpu regime's head and of the paper's (reference AllenNLP configs)
    "cpu": {"lstm_hidden": 200, "lstm_layers": 2, "dropout": 0.2, "input_dropout": 0.2},
    "paper": {"lstm_hidden": 400, "lstm_layers": 3, "dropout": 0.3, "input_dropout": 0.3},
}
PACKED, PACKED_FUSED, CURRENT = "packed nn.LSTM + for-loop AdamW", "packed nn.LSTM + fused AdamW", "padded BiLSTM + fused AdamW"
GRAPHED = "padded BiLSTM + fused AdamW, a CUDA graph per batch shape"
VARIANTS = {"packed": PACKED, "packed-fused": PACKED_FUSED, "current": CURRENT, "graphed": GRAPHED}


def build_parser(encoder_dir: str, variant: str, labels: int, head: str) -> BiaffineDependencyParser:
    encoder, _ = load_encoder(encoder_dir, "global")
    torch.manual_seed(0)
    settings = HEADS[head]
    model = BiaffineDependencyParser(encoder, labels, arc_dim=100, label_dim=100, **settings)
    if variant in (PACKED, PACKED_FUSED):
        model.lstm = PackedLSTM(encoder.config.hidden_size, settings["lstm_hidden"], settings["lstm_layers"], settings["dropout"])
    return model


def train_batches(split: Split) -> BatchStream:
    lengths = [len(f["input_ids"]) for f in split.features]
    return BatchStream(lambda generator, _: bucketed_batches(lengths, 16, generator), torch.Generator().manual_seed(1), 1)


def graph_breaks(encoder_dir: str, variant: str, split: Split, labels: int, head: str, device: str) -> dict:
    """How dynamo cuts one training forward (loss included) of ``variant``: graphs, breaks and their
    distinct reasons (first line each)."""
    model = build_parser(encoder_dir, variant, labels, head).to(device)
    batch = to_device(make_batch(split, train_batches(split).next_epoch()[0]), torch.device(device))
    explained = torch._dynamo.explain(lambda **inputs: model(**inputs).loss)(**batch)
    reasons = sorted({str(reason.reason).strip().splitlines()[0] for reason in explained.break_reasons})
    return {"graphs": explained.graph_count, "graph_breaks": explained.graph_break_count, "reasons": reasons}


def time_steps(encoder_dir: str, variant: str, split: Split, labels: int, steps: int, warmup: int, head: str = "cpu",
               device: str = "cpu", compile_options: Optional[dict] = None, graph_stats: Optional[dict] = None) -> list:
    """Seconds of each of ``steps`` training steps after ``warmup`` untimed ones. The graphed variant
    first passes ``GraphedTrainStep.warmup + 1`` times untimed over the very batches it then times,
    so that every timed step replays a captured graph; its counts go to ``graph_stats``."""
    model = build_parser(encoder_dir, variant, labels, head).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=variant != PACKED)
    compile_module(model, compile_options)
    stream = train_batches(split)
    on_gpu = torch.device(device).type == "cuda"
    order = [stream.next_epoch()[0] for _ in range(warmup + steps)]
    if variant == GRAPHED:
        step = GraphedTrainStep(lambda batch: model(**batch).loss, lambda: None, optimizer, torch.device(device))
        order = order[:warmup] + order[warmup:] * (step.warmup + 1) + order[warmup:]
        warmup = len(order) - steps
        multiple = GRAPH_LENGTH_MULTIPLE
    else:
        multiple = 1

        def step(batch):
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            return loss
    seconds = []
    for number, indices in enumerate(order):
        batch = to_device(make_batch(split, indices, multiple), torch.device(device))
        start = time.perf_counter()
        step(batch)
        optimizer.zero_grad(set_to_none=True)
        if on_gpu:
            torch.cuda.synchronize()
        if number >= warmup:
            seconds.append(time.perf_counter() - start)
    if variant == GRAPHED and graph_stats is not None:
        graph_stats.update(step.stats())
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", required=True, help="an exported encoder directory (e.g. a pretrain_microbert result's encoder/)")
    parser.add_argument("--treebank", default="wolof/ud/wo_wtb-ud-train.conllu", help="CoNLL-U under the data root")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first (compiled variants compile in them)")
    parser.add_argument("--head", choices=sorted(HEADS), default="cpu")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=["packed", "current"])
    parser.add_argument("--compile", nargs="+", default=[], metavar="MODE",
                        help="also time the current step with the parser under torch.compile in these modes (none: eager)")
    parser.add_argument("--compile-backend", help="torch.compile backend (aot_eager on a CPU: no code generation)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    sentences = read_conllu(DataPath(args.treebank).resolve())
    _, tokenizer = load_encoder(args.encoder, "global")
    features = encode_words_batch(tokenizer, [s["tokens"] for s in sentences], 512, None, name=args.treebank)
    labels = sorted({label for s in sentences for label in s["deprel"]})
    split = Split("train", sentences, features)
    split.label_ids = [[labels.index(label) for label in s["deprel"]] for s in sentences]

    # name: (the step it times, torch.compile options or None for eager)
    chosen = [VARIANTS[name] for name in args.variants]
    variants = {step: (step, None) for step in chosen}
    for mode in args.compile:
        if mode == "none":
            variants[CURRENT] = (CURRENT, None)
            continue
        options = {"mode": mode, **({"backend": args.compile_backend} if args.compile_backend else {})}
        variants[f"{CURRENT}, compiled ({mode})"] = (CURRENT, options)
    results = {}
    # Interleaved rounds, so that a change in machine load hits every variant alike.
    samples = {variant: [] for variant in variants}
    graphs = {variant: {} for variant in variants}
    for _ in range(2):
        for variant, (step, options) in variants.items():
            if options is not None:
                torch._dynamo.reset()  # each compiled variant compiles afresh, in its own warm-up
            samples[variant] += time_steps(args.encoder, step, split, len(labels), args.steps // 2, args.warmup,
                                           args.head, args.device, options, graphs[variant])
    for variant, (step, options) in variants.items():
        results[variant] = {"median_ms": 1000 * statistics.median(samples[variant]), "steps": len(samples[variant])}
        print(f"{variant}: {results[variant]['median_ms']:.0f} ms/step (median of {len(samples[variant])})")
        if graphs[variant]:
            results[variant]["graphs"] = graphs[variant]  # the second round's
            print(f"  {graphs[variant]['graphs']} graphs over {graphs[variant]['shapes']} batch shapes")
        if options is not None:
            torch._dynamo.reset()
            results[variant]["dynamo"] = graph_breaks(args.encoder, step, split, len(labels), args.head, args.device)
            print(f"  dynamo: {results[variant]['dynamo']['graphs']} graphs, {results[variant]['dynamo']['graph_breaks']} breaks: "
                  + "; ".join(results[variant]["dynamo"]["reasons"]))
    names = list(variants)
    old, new = results[names[0]]["median_ms"], results[names[-1]]["median_ms"]
    settings = HEADS[args.head]
    device = torch.device(args.device)
    record = {
        "what": (f"UD parser fine-tuning step, batch 16 Wolof-WTB train sentences, {settings['lstm_layers']}x{settings['lstm_hidden']} "
                 f"BiLSTM, 100-d biaffines"),
        "encoder": args.encoder, "threads": torch.get_num_threads(), "machine": platform.processor() or platform.machine(),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "variants": results, "speedup": old / new,
        "command": "python benchmarks/bench_finetune_step.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    print(f"speed-up, {names[-1]} against {names[0]}: {old / new:.2f}x")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
