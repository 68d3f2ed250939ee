"""X: XPOS tagging from a scalar mix of all layers, on gold-tagged rows (Gessler & Schneider, §4.2)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..word_encoder import ScalarMix, mean_pool_words  # defined once, shared with the fine-tuning heads
from .base import IGNORE_INDEX, PER_LABELLED_ROW, ObjectiveInputs, ObjectiveLoss, PretrainingObjective, register_objective


def sequence_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """AllenNLP `sequence_cross_entropy_with_logits(average="batch")`: mean over tokens within each
    sequence, then over sequences that have any labelled token.  0 (in the graph) when none do."""
    token_loss = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=ignore_index, reduction="none")
    labelled = (labels != ignore_index).to(token_loss.dtype)
    per_sequence = (token_loss * labelled).sum(-1) / labelled.sum(-1).clamp(min=1)
    has_labels = labelled.sum(-1) > 0
    if not bool(has_labels.any()):
        return logits.sum() * 0.0
    return per_sequence[has_labels].mean()


class MicroBertXposHead(nn.Module):
    """XPOS tagger of the reference code: ScalarMix over embeddings + all layers, subwords mean-pooled per word,
    [CLS]/[SEP] dropped, Linear(hidden, #xpos).  Mixing before pooling equals pooling before mixing
    (both are linear) and pools once instead of L+1 times."""

    def __init__(self, config):
        super().__init__()
        self.scalar_mix = ScalarMix(config.num_hidden_layers + 1)
        self.classifier = nn.Linear(config.hidden_size, config.num_xpos_labels)

    def forward(self, hidden_states: Sequence[torch.Tensor], token_spans: torch.Tensor) -> torch.Tensor:
        """token_spans (B, W+2, 2) with [CLS] first → logits (B, W, #xpos) for word slots 1..W."""
        words = mean_pool_words(self.scalar_mix(hidden_states), token_spans)[:, 1:-1]
        return self.classifier(words)


@register_objective
class XposTagging(PretrainingObjective):
    letter = "X"
    name = "xpos"
    batch_fields = ("token_spans", "xpos")
    needs_gold_xpos = True
    # `sequence_cross_entropy` averages per row, then over labelled rows.
    dev_average = PER_LABELLED_ROW
    label_field = "xpos"

    def build_head(self) -> nn.Module:
        return MicroBertXposHead(self.config)

    def needs_hidden_states(self) -> bool:
        return True

    def loss(self, head: nn.Module, inputs: ObjectiveInputs) -> ObjectiveLoss:
        xpos = inputs.batch["xpos"]
        logits = head(inputs.encoded.hidden_states, inputs.batch["token_spans"])
        return ObjectiveLoss(sequence_cross_entropy(logits[:, : xpos.shape[1]], xpos))
