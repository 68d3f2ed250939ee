"""How much the relative-position scores matter to TG (`relative_form` of models/transformer_grammar.py).

Trains TG on EWT gold trees (first ``--train`` train sentences) with the paper's Transformer-XL
scores, with the earlier simplification (one learned bias per layer, head and depth difference) and
with no relative positions, same seed, batches and budget, and prints held-out per-word perplexity
(joint bound) on the first ``--test`` test sentences.  Small on purpose (minutes on a CPU); the
cpu-scale comparison is a run of experiments/english_tg.jsonnet with ``relative_form`` switched.

    SIB_DATA_ROOT=../shared/data python benchmarks/tg_relative_positions_ablation.py --steps 400 \
        --json docs/benchmarks/tg_relative_positions.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from models.transformer_grammar import TransformerGrammarLM, lm_config, next_action_labels  # noqa: E402
from steps.common.batching import bucketed_batches  # noqa: E402
from steps.common.data_root import DataPath  # noqa: E402
from steps.data.readers import read_conllu  # noqa: E402
from steps.tg.actions import BuildTgActions  # noqa: E402
from steps.tg.language_model import model_sequences, pad_batch, sentence_nll  # noqa: E402


VARIANTS = {"transformer_xl": ("transformer_xl", True), "bias": ("bias", True), "none": ("transformer_xl", False)}


def train_and_score(actions, variant: str, steps: int, batch_size: int, seed: int = 42) -> float:
    layout = actions["layout"]
    form, relative = VARIANTS[variant]
    torch.manual_seed(seed)
    config = lm_config("tg", len(actions["vocabulary"]), layout["num_terminals"], layout["num_labels"], relative_form=form)
    config.tg_relative_positions = relative
    model = TransformerGrammarLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sequences = model_sequences(actions, "train", "tg")
    generator = torch.Generator().manual_seed(seed)
    batches = []
    model.train()
    for _ in range(steps):
        if not batches:
            batches = bucketed_batches([len(s) for s in sequences], batch_size, generator)
        input_ids = pad_batch([sequences[i] for i in batches.pop()])
        model(input_ids, next_action_labels(input_ids, layout["num_terminals"], layout["num_labels"])).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    model.eval()
    nll = sum(sentence_nll(model, model_sequences(actions, "test", "tg")))
    return math.exp(nll / sum(row["words"] for row in actions["test"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--train", type=int, default=3000)
    parser.add_argument("--test", type=int, default=300)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    read = lambda split: read_conllu(DataPath(f"english/ud/en_ewt-ud-{split}.conllu").resolve())  # noqa: E731
    trees = {"train": read("train")[: args.train], "test": read("test")[: args.test]}
    actions = BuildTgActions(trees=trees).run(trees=trees)
    result = {variant: train_and_score(actions, variant, args.steps, args.batch_size) for variant in VARIANTS}
    record = json.dumps({"steps": args.steps, "batch_size": args.batch_size, "train": args.train, "test": args.test,
                         "per_word_perplexity": result}, indent=2)
    print(record)
    if args.json:
        args.json.write_text(record + "\n")


if __name__ == "__main__":
    main()
