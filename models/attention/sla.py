"""Syntax-aware local attention (SLA; paper Appendix A.1, Eq. 4-8; SPEC §F).

Each layer mixes plain attention with attention restricted to keys within tree distance δ of a
window around the query, through a learned per-token gate: the gated branch of `AttentionModifier`.
The mask semantics live in `trees.sla_allowed_mask` (tested there against a brute-force version).
"""

from __future__ import annotations

import torch

from ..trees import TreeStructure, additive_attention_mask, sla_allowed_mask
from .base import AttentionInputs, AttentionModifier, register_attention


def sla_additive_mask(heads: torch.Tensor, config, structure: TreeStructure | None = None, dtype=torch.float32) -> torch.Tensor:
    """Additive (B, 1, T, T) SLA mask M of Eq. 5 from `heads`, with the config's δ and window."""
    allowed = sla_allowed_mask(
        heads,
        config.sla_max_distance,
        window=config.sla_window,
        reference_window=config.sla_reference_window,
        structure=structure,
    )
    return additive_attention_mask(allowed, dtype)


@register_attention("sla", condition_suffix="SLA", needs_parse=True, needs_gates=True)
def syntax_aware_local_attention(inputs: AttentionInputs, config) -> AttentionModifier:
    return AttentionModifier(gated_mask=sla_additive_mask(inputs.heads, config, inputs.structure, inputs.dtype))
