"""The control encoder: a randomly initialised µBERT (`random_init_encoder`), laid out as a
``pretrain_microbert`` result. Loading an encoder for fine-tuning is `steps.finetune.encoders`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

import torch
from tango import Step

from steps.common.formats import DirectoryFormat
from steps.data.vocab import load_tokenizer


@Step.register("random_init_encoder")
class RandomInitEncoder(Step):
    """A randomly initialised µBERT with the same vocabulary and architecture as a pretrained
    condition: the control that shows what pretraining buys. Same result layout as
    ``pretrain_microbert`` (``encoder/`` with tokenizer, ``metrics.json``)."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DirectoryFormat()

    def run(  # type: ignore[override]
        self, tokenizer: Path, condition: str = "M", model: Optional[Dict[str, Any]] = None, seed: int = 42
    ) -> Path:
        from models import MicroBertForPretraining, parse_condition

        loaded_tokenizer = load_tokenizer(Path(tokenizer))
        fields = dict(model or {}, vocab_size=len(loaded_tokenizer))
        if parse_condition(condition).needs_gold_xpos:
            fields["num_xpos_labels"] = 1  # the XPOS head is not exported; any size will do
        torch.manual_seed(seed)
        pretraining_model = MicroBertForPretraining.from_condition(condition, **fields)
        result = self.work_dir / "result"
        pretraining_model.export_encoder(result / "encoder")
        loaded_tokenizer.save_pretrained(str(result / "encoder"))
        (result / "metrics.json").write_text(json.dumps({"random_init": True, "condition": condition, "seed": seed}, indent=2))
        return result


__all__ = ["RandomInitEncoder"]
