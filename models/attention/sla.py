"""Syntax-aware local attention (SLA; paper Appendix A.1, Eq. 4-8).

Each layer mixes plain attention with attention restricted to keys within tree distance δ of a
window around the query, through a learned per-token gate: the gated branch of `AttentionModifier`.
The mask semantics live in `trees.sla_allowed_mask` (tested there against a brute-force version).
"""

from __future__ import annotations

import torch

from ..trees import TreeStructure, additive_attention_mask, sla_allowed_mask
from .base import AttentionInputs, AttentionModifier, register_attention


def sla_allowed(heads: torch.Tensor, config, structure: TreeStructure | None = None) -> torch.Tensor:
    """Boolean (B, T, T) SLA mask of Eq. 5 from `heads`, with the config's δ and window."""
    return sla_allowed_mask(
        heads,
        config.sla_max_distance,
        window=config.sla_window,
        reference_window=config.sla_reference_window,
        structure=structure,
    )


def sla_additive_mask(heads: torch.Tensor, config, structure: TreeStructure | None = None, dtype=torch.float32) -> torch.Tensor:
    """Additive (B, 1, T, T) SLA mask M of Eq. 5 from `heads`, with the config's δ and window."""
    return additive_attention_mask(sla_allowed(heads, config, structure), dtype)


def sla_allowed_for_structure(structure: TreeStructure, config) -> dict[str, torch.Tensor]:
    """The boolean mask as the encoder's ``sla_mask``, built before the model (a quarter of the
    additive mask's bytes; the encoder turns it into the additive one)."""
    return {"sla_mask": sla_allowed(structure.heads, config, structure)}


@register_attention("sla", condition_suffix="SLA", needs_parse=True, needs_gates=True, prepare=sla_allowed_for_structure)
def syntax_aware_local_attention(inputs: AttentionInputs, config) -> AttentionModifier:
    return AttentionModifier(gated_mask=sla_additive_mask(inputs.heads, config, inputs.structure, inputs.dtype))
