"""H: masked LM against n-gram soft labels (Edman et al., §2.3, NLM-H).

The collator (given a `models.ngram.SoftLabelTable`, the cached `precompute_soft_labels` step)
puts each masked position's soft label in the batch: ``soft_label_ids`` / ``soft_label_probs`` (N, 100), in the
row-major order of ``labels != -100``.  The loss is the soft-target cross-entropy
−Σ_c q(c) log p(c) of the tied MLM head at those positions, at full context, with the same 15 %
masking as M.  Its dev loss is the same soft-target cross-entropy.
"""
from __future__ import annotations

import torch
from torch import nn

from .base import IGNORE_INDEX, ObjectiveInputs, ObjectiveLoss, register_objective
from .mlm import MaskedLanguageModelling


def soft_target_cross_entropy(logits: torch.Tensor, ids: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """mean over rows of −Σ_k probs[n,k] · log_softmax(logits[n])[ids[n,k]]."""
    return -(probs * logits.log_softmax(-1).gather(1, ids)).sum(-1).mean()


@register_objective
class SoftLabelMLM(MaskedLanguageModelling):
    """M's head and masking, trained on the n-gram soft labels instead of the one-hot targets."""

    letter = "H"
    batch_fields = ("labels", "soft_label_ids", "soft_label_probs")

    def loss(self, head: nn.Module, inputs: ObjectiveInputs) -> ObjectiveLoss:
        masked = inputs.batch["labels"] != IGNORE_INDEX
        logits = head(inputs.encoded.last_hidden_state[masked], inputs.word_embeddings)
        if not bool(masked.any()):
            return ObjectiveLoss(logits.sum() * 0.0)
        return ObjectiveLoss(soft_target_cross_entropy(logits, inputs.batch["soft_label_ids"], inputs.batch["soft_label_probs"]))
