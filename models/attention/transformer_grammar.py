"""Transformer Grammars: STACK/COMPOSE attention and tree-depth relative positions (TG paper §2,
Algorithm 1), plus the plain causal mask of the two Transformer-XL baselines.

Both enter attention through `AttentionModifier.score_bias` (0 / finfo.min).  Types come from the ids
(`action_types`, layout in ``config.tg_num_terminals`` / ``config.tg_num_labels``; see
`steps.tg.actions`), so the variants need no parse and no extra batch field.

**The mask without a stack.**  Algorithm 1 walks the sequence with a stack; the same mask has a
closed form that is a handful of (B, T, T) tensor operations per batch (no per-sentence Python):

* depth: with c_i = #ONT − #CNT1 strictly before i (open constituents at i), a terminal or ONT has
  depth c_i + 1, a CNT1 c_i and a CNT2 c_i + 1 (both the depth of their ONT); ``<s>`` 0.
* popped_at[j]: the COMPOSE that pops j off the stack.  An ONT is popped by its own CNT1; a
  terminal or CNT1 by the CNT1 closing its parent.  That CNT1 is the first CNT1 after j at depth
  depth(j) (ONT) or depth(j) − 1 (others): no other constituent at that depth can close while
  j's enclosing one is open.  ``<s>`` and unclosed constituents are never popped (T).
* STACK row i: j ≤ i, popped_at[j] > i, and j is not a CNT2 (never pushed) unless j = i: the
  reference code's CNT2 also attends to itself (``config.tg_cnt2_attends_self``, default True);
  Algorithm 1's attends to the stack alone (False).
* COMPOSE row i (a CNT1): exactly what it pops, {j pushed : popped_at[j] = i}, i.e. its ONT and
  its direct children still on the stack, plus itself.

Every quantity at row i depends only on positions ≤ i, so the mask is causal and a prefix's mask
is the prefix of the full mask (what generation relies on).  ``tests/test_transformer_grammar.py``
checks it cell by cell on the paper's Figure 2 and against a direct stack simulation.
"""

from __future__ import annotations

import torch

from .base import AttentionInputs, AttentionModifier, register_attention

# Token types.
PAD, SOS, TERMINAL, ONT, CNT1, CNT2 = 0, 1, 2, 3, 4, 5

# Relative positions (Sartran et al., §2.2), clipped to [−1, 62] as the reference `masking_rules.cc`
# does, embedded as R + 1 in a table of 64.
RELATIVE_POSITION_MIN, RELATIVE_POSITION_MAX = -1, 62
NUM_RELATIVE_POSITIONS = RELATIVE_POSITION_MAX - RELATIVE_POSITION_MIN + 1


def action_types(input_ids: torch.Tensor, num_terminals: int, num_labels: int, sos_id: int = 1, pad_id: int = 0) -> torch.Tensor:
    """Type of every id: ids < V are terminals ([CLS] = <s>, [PAD] = padding), then L ONT, L CNT1, L CNT2."""
    offset = input_ids - num_terminals
    types = torch.where(
        offset >= 0, ONT + torch.div(offset, num_labels, rounding_mode="floor").clamp(max=2), torch.full_like(input_ids, TERMINAL)
    )
    types = torch.where(input_ids == sos_id, torch.full_like(types, SOS), types)
    return torch.where(input_ids == pad_id, torch.full_like(types, PAD), types)


def tree_depths(types: torch.Tensor) -> torch.Tensor:
    """(B, T) depth of every position (``<s>`` 0, children one deeper than their ONT, CNT1/CNT2 at
    their ONT's depth); 0 at padding."""
    opens = (types == ONT).long()
    closes = (types == CNT1).long()
    open_before = torch.cumsum(opens, -1) - opens
    close_before = torch.cumsum(closes, -1) - closes
    level = open_before - close_before
    depth = torch.where(types == CNT1, level, level + 1)
    return torch.where((types == SOS) | (types == PAD), torch.zeros_like(depth), depth)


def popped_at(types: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
    """(B, T) position of the COMPOSE that pops each position off the stack; T if none does."""
    length = types.shape[-1]
    positions = torch.arange(length, device=types.device)
    target = torch.where(types == ONT, depth, depth - 1)
    target = torch.where((types == SOS) | (types == PAD), torch.full_like(target, -2), target)
    # closer[b, j, k]: k is a CNT1 after j at j's target depth; the first such k pops j.
    closer = (
        (types[:, None, :] == CNT1)
        & (depth[:, None, :] == target[:, :, None])
        & (positions[None, None, :] > positions[None, :, None])
    )
    first = torch.where(closer, positions, torch.full_like(positions, length)).amin(-1)
    return first


def tg_attention_mask(types: torch.Tensor, cnt2_attends_self: bool = True) -> torch.Tensor:
    """(B, T, T) boolean STACK/COMPOSE mask A of Algorithm 1 (A[b, i, j]: i may attend to j).

    ``cnt2_attends_self``: a CNT2 row also holds its own position (the reference code's); False is
    Algorithm 1's, whose CNT2 attends to the stack only (never empty: ``<s>`` is never popped).
    Padding rows attend to themselves only, so that no row is empty.
    """
    length = types.shape[-1]
    positions = torch.arange(length, device=types.device)
    depth = tree_depths(types)
    pops = popped_at(types, depth)
    query = positions[:, None]
    key = positions[None, :]
    diagonal = (query == key)[None]
    pushed = ((types != CNT2) & (types != PAD))[:, None, :]  # a CNT2 never enters the stack
    itself = diagonal if cnt2_attends_self else diagonal & (types != CNT2)[:, :, None]
    stack_rows = ((key <= query)[None] & (pops[:, None, :] > query[None]) & pushed) | itself
    compose_rows = ((pops[:, None, :] == query[None]) & pushed) | diagonal
    mask = torch.where((types == CNT1)[:, :, None], compose_rows, stack_rows)
    return torch.where((types == PAD)[:, :, None], diagonal.expand_as(mask), mask)


def causal_attention_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, T, T) boolean left-to-right mask (j ≤ i); padding rows attend to themselves only."""
    length = attention_mask.shape[-1]
    positions = torch.arange(length, device=attention_mask.device)
    causal = (positions[None, :] <= positions[:, None])[None]
    valid = attention_mask.bool()
    diagonal = (positions[None, :] == positions[:, None])[None]
    return torch.where(valid[:, :, None], causal & valid[:, None, :], diagonal)


def tg_relative_positions(types: torch.Tensor) -> torch.Tensor:
    """(B, T, T) R_ij = depth(i) − depth(j), clipped to [−1, 62] (only read where A_ij = 1)."""
    depth = tree_depths(types)
    return (depth[:, :, None] - depth[:, None, :]).clamp(RELATIVE_POSITION_MIN, RELATIVE_POSITION_MAX)


def linear_relative_positions(batch_size: int, length: int, device=None, clip: bool = True) -> torch.Tensor:
    """(B, T, T) Transformer-XL relative positions i − j, clipped to the same range as TG's; with
    ``clip=False`` only from below (j > i is masked anyway), so they span [−1, T − 1] as a
    Transformer-XL's do."""
    positions = torch.arange(length, device=device)
    relative = (positions[:, None] - positions[None, :]).clamp(RELATIVE_POSITION_MIN, RELATIVE_POSITION_MAX if clip else None)
    return relative[None].expand(batch_size, length, length)


def additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Boolean (B, T, T) → additive (B, 1, T, T): 0 where allowed, finfo.min elsewhere."""
    bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return bias.masked_fill_(~mask, torch.finfo(dtype).min)[:, None]


def types_from_inputs(inputs: AttentionInputs, config) -> torch.Tensor:
    if inputs.input_ids is None:
        raise ValueError("Transformer-Grammar attention reads the action types from input_ids")
    return action_types(inputs.input_ids, config.tg_num_terminals, config.tg_num_labels)


@register_attention("tg", condition_suffix="TG", needs_parse=False)
def stack_compose_attention(inputs: AttentionInputs, config) -> AttentionModifier:
    mask = tg_attention_mask(types_from_inputs(inputs, config), getattr(config, "tg_cnt2_attends_self", True))
    return AttentionModifier(score_bias=additive(mask, inputs.dtype))


@register_attention("causal", condition_suffix="CAUSAL", needs_parse=False)
def causal_attention(inputs: AttentionInputs, config) -> AttentionModifier:
    return AttentionModifier(score_bias=additive(causal_attention_mask(inputs.attention_mask), inputs.dtype))
