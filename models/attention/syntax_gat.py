"""Syntax-guided attention "G" (syntax-augmented mBERT; Ahmad et al., 2021, §2.2-2.3).

A graph-attention network (GAT) over the shared raw token embeddings plus a UPOS embedding, each
node attending only to nodes within tree distance δ in the tree below:

* [CLS] is the root (depth 0); the sentence root and [SEP] are its children;
* the subword tree of `models.trees` below that: non-first pieces are children of their word's
  first piece, and a multi-piece root word hangs from [CLS] by its first piece.

Its output G (B, T, k·d_g, LayerNorm-ed) enters attention through per-layer Linear maps into the
first ``n_syn`` heads of every layer: added to their **keys and values** (the reference code's
fusion, default) or to their **queries and keys** (the paper's Eq. 3, ``gat_fusion="query_key"``).
The structural-probe loss on G (the S objective, `models.objectives.structural_probe`) reads the
states and the tree distances this builder leaves in ``AttentionInputs.side_outputs``.

Sizes follow the reference's rule, not mBERT's numbers: each GAT head is as wide as an encoder head
(``gat_head_size`` None; 16 for µB, 64 for mBERT), L_G = 4 layers of k = 4 heads.
[CLS], [SEP] and padding share UPOS id 0, whose embedding is zero (``padding_idx``); the reference
gives [CLS] and [SEP] tags of their own, learned like the 17 UPOS ones.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..trees import NO_PATH, TreeStructure, _float_distance_from_ancestors
from .base import AttentionInputs, AttentionModifier, register_attention

# The 17 UD v2 universal POS tags; id 0 = none ([CLS], [SEP], padding, "_" or anything else).
UPOS_TAGS = (
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT",
    "SCONJ", "SYM", "VERB", "X",
)
UPOS_INDEX = {tag: i + 1 for i, tag in enumerate(UPOS_TAGS)}
GAT_FUSIONS = ("key_value", "query_key")  # the code's, the paper's


def upos_id(tag: str) -> int:
    return UPOS_INDEX.get(tag, 0)


def subword_upos_ids(word_tags, word_spans) -> list[int]:
    """Word-level UPOS tags + inclusive subword spans (positions 1..n) → ids of positions 1..n:
    every piece carries its word's tag."""
    ids = [0] * (word_spans[-1][1] if word_spans else 0)
    for tag, (first, last) in zip(word_tags, word_spans):
        ids[first - 1 : last] = [upos_id(tag)] * (last - first + 1)
    return ids


def gat_tree_distance(
    heads: torch.Tensor, attention_mask: torch.Tensor, structure: TreeStructure | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(distance (B, T, T) long, depth (B, T) long) in the module docstring's tree.

    [CLS] (position 0) has depth 0, [SEP] (the last real position) depth 1, a subword its depth in
    `TreeStructure` (sentence root 1).  Between two subwords D is their tree distance; any path
    through [CLS] or [SEP] has length depth(i) + depth(j) (their LCA is [CLS]).  The diagonal is
    0 everywhere; other pairs with a padding position get `NO_PATH`.  Every real position other
    than [CLS]/[SEP] must be a tree node (raises otherwise: rows without a parse cannot use G).
    """
    structure = structure if structure is not None else TreeStructure.from_heads(heads)
    is_node = structure.is_node
    real = attention_mask.bool()
    positions = torch.arange(real.shape[1], device=real.device)
    is_sep = positions[None, :] == (real.sum(-1, keepdim=True) - 1)
    is_cls = (positions[None, :] == 0) & real
    # Eager only: under torch.compile this read-back would split the encoder's graph (see trees.sla_allowed_mask).
    if not torch.compiler.is_compiling() and (
        bool((real & ~(is_node | is_sep | is_cls)).any()) or bool((is_node & (is_sep | is_cls | ~real)).any())
    ):
        raise ValueError("syntax-guided attention needs a tree node (heads ≥ 0) at every real position but [CLS]/[SEP]")
    depth = structure.depth + is_sep.long()
    node_distance = _float_distance_from_ancestors(structure.ancestors, is_node, structure.depth).round().long()
    node_pair = is_node[:, :, None] & is_node[:, None, :]
    distance = torch.where(node_pair, node_distance, depth[:, :, None] + depth[:, None, :])
    distance = distance.masked_fill(~(real[:, :, None] & real[:, None, :]), NO_PATH)
    distance.diagonal(dim1=1, dim2=2).zero_()
    return distance, depth


def gat_allowed_mask(distance: torch.Tensor, max_distance: int) -> torch.Tensor:
    """(B, T, T) bool: GAT node i may attend to node j iff D(i, j) ≤ δ (the diagonal always)."""
    return distance <= max_distance


def gat_head_size(config) -> int:
    return config.gat_head_size or config.hidden_size // config.num_attention_heads


def gat_output_size(config) -> int:
    return config.gat_heads * gat_head_size(config)


class GraphAttentionLayer(nn.Module):
    """k heads of the reference's additive GAT attention, vectorised over heads:
    e_ij = LeakyReLU₀.₂(a₁·Wh_i + a₂·Wh_j) on allowed pairs, softmax over j, dropout, output
    Σ_j α_ij Wh_j with no activation; heads concatenated, then dropout."""

    def __init__(self, input_size: int, heads: int, head_size: int, dropout: float):
        super().__init__()
        self.heads, self.head_size = heads, head_size
        self.projection = nn.Linear(input_size, heads * head_size, bias=False)
        self.source_score = nn.Parameter(torch.empty(heads, head_size))
        self.target_score = nn.Parameter(torch.empty(heads, head_size))
        # Xavier-uniform of a (head_size, 1) vector with gain 1.414, per head (as the reference).
        bound = 1.414 * math.sqrt(6.0 / (head_size + 1))
        nn.init.uniform_(self.source_score, -bound, bound)
        nn.init.uniform_(self.target_score, -bound, bound)
        self.dropout = nn.Dropout(dropout)

    def forward(self, states: torch.Tensor, blocked: torch.Tensor) -> torch.Tensor:
        """states (B, T, in), blocked (B, 1, T, T) additive 0 / finfo.min → (B, T, heads·head_size)."""
        batch_size, length = states.shape[:2]
        projected = self.projection(states).view(batch_size, length, self.heads, self.head_size).transpose(1, 2)
        source = torch.einsum("bhtd,hd->bht", projected, self.source_score)
        target = torch.einsum("bhtd,hd->bht", projected, self.target_score)
        scores = F.leaky_relu(source[..., :, None] + target[..., None, :], 0.2) + blocked
        probabilities = self.dropout(torch.softmax(scores, dim=-1))
        output = torch.matmul(probabilities, projected).transpose(1, 2).reshape(batch_size, length, -1)
        return self.dropout(output)


class SyntaxGuidedAttention(nn.Module):
    """The encoder-owned parameters of G: UPOS embedding, GAT layers, LayerNorm and the per-layer
    fusion maps G → (n_syn · head_dim) for the two attention inputs the fusion names."""

    def __init__(self, config):
        super().__init__()
        if config.gat_fusion not in GAT_FUSIONS:
            raise ValueError(f"gat_fusion must be one of {GAT_FUSIONS}, got {config.gat_fusion!r}")
        if not 1 <= config.gat_syntax_heads <= config.num_attention_heads:
            raise ValueError(f"gat_syntax_heads must be in 1..{config.num_attention_heads}, got {config.gat_syntax_heads}")
        self.max_distance = config.gat_max_distance
        self.num_heads = config.num_attention_heads
        self.syntax_heads = config.gat_syntax_heads
        self.encoder_head_size = config.hidden_size // config.num_attention_heads
        size, head_size = gat_output_size(config), gat_head_size(config)
        self.upos_embeddings = nn.Embedding(len(UPOS_TAGS) + 1, config.hidden_size, padding_idx=0) if config.gat_use_upos else None
        self.layers = nn.ModuleList(
            GraphAttentionLayer(config.hidden_size if i == 0 else size, config.gat_heads, head_size, config.hidden_dropout_prob)
            for i in range(config.gat_layers)
        )
        self.layer_norm = nn.LayerNorm(size, eps=config.layer_norm_eps)
        targets = ("key", "value") if config.gat_fusion == "key_value" else ("query", "key")
        self.fusion = nn.ModuleDict({
            target: nn.ModuleList(nn.Linear(size, self.syntax_heads * self.encoder_head_size) for _ in range(config.num_hidden_layers))
            for target in targets
        })

    def states(self, token_embeddings: torch.Tensor, upos_ids: torch.Tensor | None, allowed: torch.Tensor) -> torch.Tensor:
        """G (B, T, size) from raw token embeddings (B, T, hidden), UPOS ids and the allowed mask."""
        states = token_embeddings
        if self.upos_embeddings is not None:
            if upos_ids is None:
                raise ValueError("this syntax-guided attention embeds UPOS tags (gat_use_upos) but got no `upos_ids`")
            states = states + self.upos_embeddings(upos_ids)
        blocked = torch.zeros(allowed.shape, dtype=states.dtype, device=states.device)
        blocked = blocked.masked_fill(~allowed, torch.finfo(states.dtype).min)[:, None]
        for layer in self.layers:
            states = layer(states, blocked)
        return self.layer_norm(states)

    def offsets(self, states: torch.Tensor, target: str) -> list[torch.Tensor] | None:
        """Per encoder layer, the (B, heads, T, head_dim) offset: G's projection in the first n_syn heads."""
        if target not in self.fusion:
            return None
        batch_size, length = states.shape[:2]
        zeros = states.new_zeros(batch_size, self.num_heads - self.syntax_heads, length, self.encoder_head_size)
        result = []
        for projection in self.fusion[target]:
            syntax = projection(states).view(batch_size, length, self.syntax_heads, self.encoder_head_size).transpose(1, 2)
            result.append(torch.cat([syntax, zeros], dim=1) if zeros.shape[1] else syntax)
        return result


@register_attention("syntax_gat", condition_suffix="G", needs_parse=True, module=SyntaxGuidedAttention)
def syntax_guided_attention(inputs: AttentionInputs, config) -> AttentionModifier:
    module: SyntaxGuidedAttention = inputs.module
    if inputs.input_ids is None or inputs.word_embeddings is None:
        raise ValueError("syntax-guided attention embeds `input_ids` with the encoder's word embeddings; pass input_ids")
    distance, depth = gat_tree_distance(inputs.heads, inputs.attention_mask, inputs.structure)
    states = module.states(inputs.word_embeddings(inputs.input_ids), inputs.upos_ids, gat_allowed_mask(distance, module.max_distance))
    inputs.side_outputs.update(syntax_states=states, syntax_distance=distance, syntax_depth=depth)
    return AttentionModifier(
        query_offset=module.offsets(states, "query"),
        key_offset=module.offsets(states, "key"),
        value_offset=module.offsets(states, "value"),
    )


# --------------------------------------------------------------------------------------------------
# Structural probe (Hewitt & Manning; Ahmad et al., §2.4)
# --------------------------------------------------------------------------------------------------


class StructuralProbe(nn.Module):
    """Rank-r probes B₁, B₂ on G: d̂²_ij = ‖B₁(g_i − g_j)‖², deptĥ_i = ‖B₂ g_i‖²."""

    def __init__(self, input_size: int, rank: int):
        super().__init__()
        self.distance_probe = nn.Linear(input_size, rank, bias=False)
        self.depth_probe = nn.Linear(input_size, rank, bias=False)

    def forward(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """states (B, T, size) → (squared distances (B, T, T), squared depths (B, T))."""
        projected = self.distance_probe(states)
        # ‖p_i − p_j‖² = ‖p_i‖² + ‖p_j‖² − 2 p_i·p_j: one batched matmul instead of a (B, T, T, r) tensor.
        norms = projected.pow(2).sum(-1)
        squared = norms[:, :, None] + norms[:, None, :] - 2 * torch.matmul(projected, projected.transpose(1, 2))
        return squared.clamp(min=0), self.depth_probe(states).pow(2).sum(-1)


def build_structural_probe(config) -> StructuralProbe:
    """Probes of rank ``gat_probe_rank`` (None: one GAT head's width, the reference's head_dim × 1)."""
    return StructuralProbe(gat_output_size(config), config.gat_probe_rank or gat_head_size(config))


def structural_probe_losses(
    predicted_distance: torch.Tensor,
    predicted_depth: torch.Tensor,
    distance: torch.Tensor,
    depth: torch.Tensor,
    token_mask: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(L_dist, L_depth) of Ahmad et al., §2.4: per sentence Σ_ij |D_ij − d̂²_ij| / n² and Σ_i |depth_i −
    deptĥ_i| / n over its n real positions ([CLS] and [SEP] included), then the mean over sentences.
    The targets are D and depth themselves (not squared), as in the reference and Hewitt & Manning."""
    mask = token_mask.to(predicted_distance.dtype)
    pairs = mask[:, :, None] * mask[:, None, :]
    count = mask.sum(-1).clamp(min=1)
    distance_loss = ((predicted_distance - distance.to(mask.dtype)).abs() * pairs).sum((1, 2)) / count.pow(2)
    depth_loss = ((predicted_depth - depth.to(mask.dtype)).abs() * mask).sum(-1) / count
    return distance_loss.mean(), depth_loss.mean()


def structural_probe_loss(probe: StructuralProbe, side_outputs: dict, attention_mask: torch.Tensor, weight: float) -> torch.Tensor:
    """α (L_dist + L_depth) on the GAT states a `syntax_guided_attention` call left in ``side_outputs``."""
    if "syntax_states" not in side_outputs:
        raise ValueError("the structural probe needs the GAT states of syntax-guided attention (syntax_attention='syntax_gat')")
    predicted_distance, predicted_depth = probe(side_outputs["syntax_states"])
    distance_loss, depth_loss = structural_probe_losses(
        predicted_distance, predicted_depth, side_outputs["syntax_distance"], side_outputs["syntax_depth"], attention_mask.bool()
    )
    return weight * (distance_loss + depth_loss)


__all__ = [
    "GAT_FUSIONS", "GraphAttentionLayer", "StructuralProbe", "SyntaxGuidedAttention", "UPOS_TAGS", "build_structural_probe", "gat_allowed_mask",
    "gat_output_size", "gat_tree_distance", "structural_probe_loss", "structural_probe_losses", "subword_upos_ids", "upos_id",
]
