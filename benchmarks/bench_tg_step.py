"""Time one training step (forward + backward + AdamW step) of TG against TXL(trees) on CPU.

Both models run in one process, alternating, on the same batch: the action sequences of real Wolof
UD trees (first ``--batch-size`` sentences of the train split, words cut into 3-character pieces),
so the TG step includes computing its STACK/COMPOSE mask and depth relative positions from the ids.
Bar: TG ≤ 1.5 × TXL(trees).

    SIB_DATA_ROOT=../shared/data python benchmarks/bench_tg_step.py --steps 20 --threads 2 --json docs/benchmarks/tg_step.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from models.transformer_grammar import TransformerGrammarLM, lm_config, next_action_labels  # noqa: E402
from steps.common.data_root import DataPath  # noqa: E402
from steps.data.readers import read_conllu  # noqa: E402
from steps.tg.actions import ActionLayout, projectivize, tree_actions  # noqa: E402
from steps.tg.language_model import pad_batch  # noqa: E402

NUM_TERMINALS = 8000


def wolof_batch(batch_size: int) -> torch.Tensor:
    layout = ActionLayout(NUM_TERMINALS)
    sequences = []
    for sentence in read_conllu(DataPath("wolof/ud/wo_wtb-ud-train.conllu").resolve())[:batch_size]:
        heads, _ = projectivize(sentence["head"])
        pieces = [[5 + hash(word[i:i + 3]) % (NUM_TERMINALS - 5) for i in range(0, len(word), 3)] or [3] for word in sentence["tokens"]]
        sequences.append(tree_actions(pieces, heads, sentence["deprel"], layout))
    return pad_batch(sequences)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    input_ids = wolof_batch(args.batch_size)
    layout = ActionLayout(NUM_TERMINALS)
    labels = next_action_labels(input_ids, NUM_TERMINALS, layout.num_labels)
    models, optimizers = {}, {}
    for kind in ("tg", "txl_trees"):
        torch.manual_seed(0)
        models[kind] = TransformerGrammarLM(lm_config(kind, layout.vocab_size, NUM_TERMINALS, layout.num_labels)).train()
        optimizers[kind] = torch.optim.AdamW(models[kind].parameters(), lr=1e-4)
    times = {kind: [] for kind in models}
    for step in range(args.steps + 2):  # two warm-up steps each
        for kind, model in models.items():
            start = time.perf_counter()
            model(input_ids, labels).loss.backward()
            optimizers[kind].step()
            optimizers[kind].zero_grad(set_to_none=True)
            if step >= 2:
                times[kind].append(time.perf_counter() - start)
    median = {kind: statistics.median(values) for kind, values in times.items()}
    result = {
        "batch": list(input_ids.shape),
        "threads": args.threads,
        "steps": args.steps,
        "median_seconds": median,
        "tg_over_txl_trees": median["tg"] / median["txl_trees"],
        "bar": 1.5,
        "relative_form": models["tg"].relative_form,
        "load_average": list(os.getloadavg()),  # a shared box slows both alike, not every run alike
        "machine": platform.platform(),
        "torch": torch.__version__,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
