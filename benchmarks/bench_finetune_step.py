"""Time one UD-parser fine-tuning step (forward + backward + AdamW) on real Wolof-WTB batches.

Compares the parser's BiLSTM and optimizer implementations on the same batches and weights
budget: torch's bidirectional ``nn.LSTM`` on a packed sequence with the for-loop AdamW (the
implementation before FinetuneUdParser VERSION 002) against ``models.word_encoder.BiLSTM`` on
padded words with fused AdamW (the current one). Both compute the same function (see
``tests/test_finetune_parser.py::test_bilstm_on_padded_words_equals_torch_bidirectional_lstm_on_packed_words``).

    SIB_DATA_ROOT=../shared/data python benchmarks/bench_finetune_step.py --encoder workspace/cache/PretrainMicrobert-.../result/encoder \\
        --json docs/benchmarks/finetune_step.json
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from models.biaffine_parser import BiaffineDependencyParser  # noqa: E402
from models.word_encoder import run_packed_lstm  # noqa: E402
from steps.common.data_root import DataPath  # noqa: E402
from steps.pretrain.encoders import encode_words_batch, load_encoder  # noqa: E402
from steps.common.batching import bucketed_batches  # noqa: E402
from steps.finetune.loop import BatchStream  # noqa: E402
from steps.finetune.ud_parser import Split, make_batch  # noqa: E402
from steps.data.readers import read_conllu  # noqa: E402


class PackedLSTM(torch.nn.Module):
    """The previous implementation: one bidirectional nn.LSTM over a packed sequence."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, dropout: float):
        super().__init__()
        self.lstm = torch.nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True,
                                  bidirectional=True, dropout=dropout if num_layers > 1 else 0.0)

    def forward(self, words, word_mask):
        return run_packed_lstm(self.lstm, words, word_mask)


def time_steps(encoder_dir: str, variant: str, split: Split, labels: int, steps: int, warmup: int) -> list:
    encoder, _ = load_encoder(encoder_dir, "global")
    torch.manual_seed(0)
    model = BiaffineDependencyParser(encoder, labels, lstm_hidden=200, lstm_layers=2, arc_dim=100, label_dim=100,
                                     dropout=0.2, input_dropout=0.2)
    if variant == "packed nn.LSTM + for-loop AdamW":
        model.lstm = PackedLSTM(encoder.config.hidden_size, 200, 2, 0.2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=variant.endswith("fused AdamW"))
    lengths = [len(f["input_ids"]) for f in split.features]
    batches = BatchStream(lambda generator, _: bucketed_batches(lengths, 16, generator), torch.Generator().manual_seed(1), 1)
    seconds = []
    for number in range(warmup + steps):
        batch = make_batch(split, batches.next_epoch()[0])
        start = time.perf_counter()
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if number >= warmup:
            seconds.append(time.perf_counter() - start)
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", required=True, help="an exported encoder directory (e.g. a pretrain_microbert result's encoder/)")
    parser.add_argument("--treebank", default="wolof/ud/wo_wtb-ud-train.conllu", help="CoNLL-U under the data root")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    sentences = read_conllu(DataPath(args.treebank).resolve())
    _, tokenizer = load_encoder(args.encoder, "global")
    features = encode_words_batch(tokenizer, [s["tokens"] for s in sentences], 512, None, name=args.treebank)
    labels = sorted({label for s in sentences for label in s["deprel"]})
    split = Split("train", sentences, features)
    split.label_ids = [[labels.index(label) for label in s["deprel"]] for s in sentences]

    results = {}
    # Interleaved rounds, so that a change in machine load hits both variants alike.
    variants = ["packed nn.LSTM + for-loop AdamW", "padded BiLSTM + fused AdamW"]
    samples = {variant: [] for variant in variants}
    for _ in range(2):
        for variant in variants:
            samples[variant] += time_steps(args.encoder, variant, split, len(labels), args.steps // 2, args.warmup)
    for variant in variants:
        results[variant] = {"median_ms": 1000 * statistics.median(samples[variant]), "steps": len(samples[variant])}
        print(f"{variant}: {results[variant]['median_ms']:.0f} ms/step (median of {len(samples[variant])})")
    old, new = (results[v]["median_ms"] for v in variants)
    record = {
        "what": "UD parser fine-tuning step, batch 16 Wolof-WTB train sentences, 2x200 BiLSTM, 100-d biaffines",
        "encoder": args.encoder, "threads": torch.get_num_threads(), "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__, "variants": results, "speedup": old / new,
        "command": "python benchmarks/bench_finetune_step.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    print(f"speed-up: {old / new:.2f}x")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
