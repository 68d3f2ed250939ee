"""build_trigram_model: the subword trigram LM of the pretraining rows (Edman et al. NLM-H; SPEC §K).

It reads only the pretraining rows and the vocabulary, so every H pretraining run and the trigram
row of the MLM-accuracy table of a language and scale share one cached model.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

from tango import Step

from models.ngram import TrigramModel
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
