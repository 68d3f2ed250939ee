"""M: masked language modelling with a tied, bias-free output layer, as in the reference code."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers.models.bert.modeling_bert import BertPredictionHeadTransform

from .base import IGNORE_INDEX, PER_MASKED_TOKEN, ObjectiveInputs, ObjectiveLoss, PretrainingObjective, register_objective


class MicroBertMLMHead(nn.Module):
    """Linear → GELU → LayerNorm → tied word-embedding matmul, with **no output bias**, as in the reference code.

    Stock `BertLMPredictionHead` always carries a vocabulary bias, hence this small head.  It is applied
    only to the masked positions (the loss is identical; the V-sized matmul shrinks ~7×).
    """

    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)

    def forward(self, hidden_states: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        return self.transform(hidden_states) @ word_embeddings.t()


@register_objective
class MaskedLanguageModelling(PretrainingObjective):
    letter = "M"
    name = "mlm"
    batch_fields = ("labels",)
    dev_average = PER_MASKED_TOKEN
    label_field = "labels"
    masked_lm = True

    def build_head(self) -> nn.Module:
        return MicroBertMLMHead(self.config)

    def loss(self, head: nn.Module, inputs: ObjectiveInputs) -> ObjectiveLoss:
        labels = inputs.batch["labels"]
        masked = labels != IGNORE_INDEX
        logits = head(inputs.encoded.last_hidden_state[masked], inputs.word_embeddings)
        return ObjectiveLoss(F.cross_entropy(logits, labels[masked]) if bool(masked.any()) else logits.sum() * 0.0)
