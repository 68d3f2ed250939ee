"""Band attention (Edman et al., §2.2, NLM-A): every layer attends only within a band around the query.

W is added to the scaled scores of every layer through `AttentionModifier.score_bias` (the same hook
as every other variant): 0 inside the band, ``finfo.min`` outside.  The band is over positions,
[CLS] and [SEP] included, and it stays on at fine-tuning (the exported encoder carries the variant).

Which band: Eq. 2 literally says |i−j| ≤ c, but the paper's example (6 layers of context 5 reach the
13th position) needs a half-width of (c−1)/2, so that is the default (``band_reading="half_width"``);
``band_reading="literal"`` is the literal reading.  One variant per c in {5, 9, 13}: conditions
"M-A5", "M-A9", "M-A13" (the condition suffix is "A<c>").
"""

from __future__ import annotations

import torch

from ..trees import additive_attention_mask
from .base import AttentionInputs, AttentionModifier, register_attention

BAND_CONTEXTS = (5, 9, 13)
BAND_READINGS = ("half_width", "literal")


def band_half_width(context: int, reading: str = "half_width") -> int:
    """How far a query may look each way: (c−1)/2 (default) or c (Eq. 2 read literally)."""
    if reading not in BAND_READINGS:
        raise ValueError(f"band_reading must be one of {BAND_READINGS}, got {reading!r}")
    if reading == "literal":
        return context
    if context % 2 == 0:
        raise ValueError(f"a centred band needs an odd context size, got {context}")
    return (context - 1) // 2


def band_allowed_mask(length: int, half_width: int, device=None) -> torch.Tensor:
    """(T, T) bool: key j is visible to query i iff |i − j| ≤ half_width."""
    positions = torch.arange(length, device=device)
    return (positions[:, None] - positions[None, :]).abs() <= half_width


def band_context(variant_name: str) -> int:
    """"band13" → 13."""
    return int(variant_name.removeprefix("band"))


def _register(context: int) -> None:
    @register_attention(f"band{context}", condition_suffix=f"A{context}", needs_parse=False)
    def band_attention(inputs: AttentionInputs, config) -> AttentionModifier:
        half_width = band_half_width(context, getattr(config, "band_reading", "half_width"))
        allowed = band_allowed_mask(inputs.attention_mask.shape[1], half_width, inputs.attention_mask.device)
        # (1, 1, T, T): the same band for every row and head; padding keys stay masked separately.
        return AttentionModifier(score_bias=additive_attention_mask(allowed[None], inputs.dtype))


for _context in BAND_CONTEXTS:
    _register(_context)
