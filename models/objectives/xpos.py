"""X: XPOS tagging from a scalar mix of all layers, on gold-tagged rows (SPEC §C)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .base import IGNORE_INDEX, PER_LABELLED_ROW, ObjectiveInputs, ObjectiveLoss, PretrainingObjective, register_objective


class ScalarMix(nn.Module):
    """AllenNLP-style scalar mix: γ · Σ_l softmax(w)_l · h_l, with w = 0 and γ = 1 at init."""

    def __init__(self, num_layers: int):
        super().__init__()
        self.scalar_parameters = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers: Sequence[torch.Tensor]) -> torch.Tensor:
        weights = torch.softmax(self.scalar_parameters, dim=0)
        return self.gamma * torch.einsum("l,l...->...", weights, torch.stack(list(layers)))


def mean_pool_words(token_states: torch.Tensor, token_spans: torch.Tensor) -> torch.Tensor:
    """(B, T, H), inclusive spans (B, S, 2) → (B, S, H) mean over each span's subwords."""
    positions = torch.arange(token_states.shape[1], device=token_states.device)
    inside = (positions >= token_spans[..., :1]) & (positions <= token_spans[..., 1:])  # (B, S, T)
    weights = inside.to(token_states.dtype)
    weights = weights / weights.sum(-1, keepdim=True).clamp(min=1)
    return torch.bmm(weights, token_states)


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
    """XPOS tagger of SPEC §C: ScalarMix over embeddings + all layers, subwords mean-pooled per word,
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
