"""The n-gram side of condition H (Edman et al., §2.3, NLM-H), as two cached steps:

- build_trigram_model: the subword trigram LM of the pretraining rows.  It reads only those rows
  and the vocabulary, so every H pretraining run and the trigram row of the MLM-accuracy table of a
  language and scale share one model.
- precompute_soft_labels: that model's soft label at every word position of the pretraining rows
  (train and dev).  Scoring ~8k candidates per masked position is most of an H step's extra cost on
  2 cores (+42 % in the real loop when the collator did it); a gather from this table is
  not.  The label of a position depends only on its row's original ids (the model reads the
  unmasked neighbours), so the table holds exactly what the collator computed per batch.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import torch
from tango import Step
from tango.common import Tqdm
from tango.format import DillFormat

from models.ngram import SoftLabelTable, TrigramModel
from steps.data.vocab import load_tokenizer


@Step.register("build_trigram_model")
class BuildTrigramModel(Step):
    """Count the trigrams of the training rows ([CLS] [CLS] … [SEP] [SEP]) into a `TrigramModel`."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"

    def run(self, pretraining_data: Dict[str, Any], tokenizer: Path, discount: float = 0.75) -> TrigramModel:  # type: ignore[override]
        vocab_size = len(load_tokenizer(Path(tokenizer)))
        model = TrigramModel.from_rows((row["input_ids"] for row in pretraining_data["train"]), vocab_size, discount)
        self.logger.info("trigram model: %d bigrams, %d trigrams over %d ids", len(model.bigram_keys), len(model.trigram_keys), vocab_size)
        return model


def soft_label_candidates(tokenizer) -> torch.Tensor:
    """(V,) bool: the ids a soft label may put mass on, every id but the tokenizer's special ones."""
    candidates = torch.ones(len(tokenizer), dtype=torch.bool)
    candidates[sorted(set(tokenizer.all_special_ids))] = False
    return candidates


@Step.register("precompute_soft_labels")
class PrecomputeSoftLabels(Step):
    """Every word position's top-100 soft label (min-max, power 6, renormalised) as a `SoftLabelTable`
    (~600 bytes a position: ~140 MB for Wolof's ~230k subwords)."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DillFormat()

    def run(self, trigram_model: TrigramModel, pretraining_data: Dict[str, Any], tokenizer: Path) -> SoftLabelTable:  # type: ignore[override]
        loaded = load_tokenizer(Path(tokenizer))
        if trigram_model.vocab_size != len(loaded):
            raise ValueError(f"the trigram model counts {trigram_model.vocab_size} ids, the tokenizer has {len(loaded)}")
        rows = [row["input_ids"] for split in ("train", "dev") for row in pretraining_data[split]]
        with Tqdm.tqdm(total=len(set(map(tuple, rows))), desc="soft labels (distinct rows)") as progress:
            table = SoftLabelTable.from_rows(trigram_model, rows, soft_label_candidates(loaded), progress=progress.update)
        self.logger.info("soft labels of %d positions in %d distinct rows (of %d)", len(table), len(table.offsets), len(rows))
        return table
