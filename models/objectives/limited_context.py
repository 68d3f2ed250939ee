"""C<c>: limited-context MLM (Edman et al., §2.1, NLM-C).

Each target token is seen in a window of c tokens centred on it, and only the centre is masked;
where the window runs past the sentence, it is padded with boundary tokens: [CLS] (BOS) on the
left, [SEP] (EOS) on the right.  For c = 5 and "[CLS] it is sunny today [SEP]", the target "it"
gives "[CLS] [CLS] [MASK] is sunny" — the paper's example, with [CLS]/[SEP] for ⟨s⟩/⟨/s⟩.

The targets are the positions the collator masked (the same 15 % draw, and 80/10/10 corruption of
the centre, as M), so C sees as many targets per batch as M, each with c tokens of context: the
objective reshapes the encoder's input to one row of c tokens per target (`encoder_inputs`) and
scores every row's centre.  It replaces the sentence layout, so it trains alone (``standalone``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .base import (
    IGNORE_INDEX,
    PER_MASKED_TOKEN,
    ObjectiveInputs,
    ObjectiveLoss,
    PretrainingObjective,
    objective_sizes,
    register_objective,
)
from .mlm import MicroBertMLMHead

# The tokenizer's fixed special ids (steps.data.vocab: [PAD] [CLS] [SEP] [UNK] [MASK] = 0-4).
CLS_ID, SEP_ID = 1, 2


def limited_context_windows(
    original_ids: torch.Tensor,
    centre_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    targets: torch.Tensor,
    context: int,
    cls_id: int = CLS_ID,
    sep_id: int = SEP_ID,
) -> torch.Tensor:
    """(N, c) windows: row n holds ``original_ids[b, p−h … p+h]`` for target n = (b, p), h = (c−1)/2,
    with positions before the row's start read as ``cls_id``, those at or past its length
    (``attention_mask`` sum) as ``sep_id``, and the centre replaced by ``centre_ids[b, p]``.

    targets: (N, 2) long (row, position), e.g. ``labels.ne(-100).nonzero()``.
    """
    if context % 2 == 0 or context < 1:
        raise ValueError(f"a centred window needs an odd size, got {context}")
    half = context // 2
    rows, centres = targets[:, 0], targets[:, 1]
    positions = centres[:, None] + torch.arange(-half, half + 1, device=targets.device)  # (N, c)
    lengths = attention_mask.sum(1)[rows][:, None]
    inside = original_ids[rows[:, None], positions.clamp(0, original_ids.shape[1] - 1)]
    windows = torch.where(positions < 0, cls_id, torch.where(positions >= lengths, sep_id, inside))
    windows[:, half] = centre_ids[rows, centres]
    return windows


@register_objective
class LimitedContextMLM(PretrainingObjective):
    letter = "C"
    name = "mlm"
    batch_fields = ("labels",)
    dev_average = PER_MASKED_TOKEN
    label_field = "labels"
    masked_lm = True
    sized = True
    standalone = True

    def __init__(self, config):
        super().__init__(config)
        self.context = objective_sizes(config.pretraining_objectives)[self.letter]
        if self.context % 2 == 0:
            raise ValueError(f"C{self.context}: the window is centred on its target, so its size must be odd")

    def build_head(self) -> nn.Module:
        return MicroBertMLMHead(self.config)

    def encoder_inputs(self, batch) -> dict[str, torch.Tensor]:
        labels = batch["labels"]
        original = torch.where(labels != IGNORE_INDEX, labels, batch["input_ids"])
        targets = (labels != IGNORE_INDEX).nonzero()
        windows = limited_context_windows(original, batch["input_ids"], batch["attention_mask"], targets, self.context)
        return {"input_ids": windows, "attention_mask": torch.ones_like(windows)}

    def loss(self, head: nn.Module, inputs: ObjectiveInputs) -> ObjectiveLoss:
        labels = inputs.batch["labels"]
        targets = labels[labels != IGNORE_INDEX]  # row-major, the order `nonzero` gave the windows
        centres = inputs.encoded.last_hidden_state[:, self.context // 2]
        logits = head(centres, inputs.word_embeddings)
        return ObjectiveLoss(F.cross_entropy(logits, targets) if targets.numel() else logits.sum() * 0.0)
