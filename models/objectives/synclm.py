"""SynCLM contrastive objectives (paper Appendix A.2, Eq. 10-12; Zhang et al., 2022).

All functions are batched: samples come from `trees.sample_phrase_triples` / `trees.sample_tree_sets`
flattened over the batch, and every loss is one vectorised computation over all of them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..trees import PhraseSamples, TreeSamples, sample_phrase_triples, sample_tree_sets
from .base import PER_BATCH, ObjectiveInputs, ObjectiveLoss, PretrainingObjective, register_objective

PHRASE_SIMILARITIES = ("paper", "reference")


def masked_jsd(
    p: torch.Tensor,
    q: torch.Tensor,
    key_mask: torch.Tensor | None = None,
    eps: float = 1e-6,
    normalize_by_keys: bool = False,
) -> torch.Tensor:
    """Jensen-Shannon divergence between distributions over the last dim (the reference's `masked_jsd`).

    Probabilities are clamped to ≥ `eps`; JSD = ½KL(p‖m) + ½KL(q‖m) with m = (p+q)/2, summed over the
    keys where `key_mask` is True (padding keys do not count).  With `normalize_by_keys` the sum is
    divided by the number of such keys, as the reference code does.  Natural log, so the
    value lies in [0, ln 2].
    """
    p = p.clamp(min=eps)
    q = q.clamp(min=eps)
    m = 0.5 * (p + q)
    per_key = 0.5 * (p * (p.log() - m.log()) + q * (q.log() - m.log()))
    if key_mask is not None:
        key_mask = key_mask.to(per_key.dtype).expand_as(per_key)
        per_key = per_key * key_mask
    jsd = per_key.sum(-1)
    if normalize_by_keys:
        num_keys = key_mask.sum(-1) if key_mask is not None else torch.full_like(jsd, p.shape[-1])
        jsd = jsd / num_keys.clamp(min=1)
    return jsd


def info_nce_loss(
    positive_similarity: torch.Tensor,
    negative_similarity: torch.Tensor,
    negative_mask: torch.Tensor,
    temperature: float = 0.1,
) -> torch.Tensor:
    """InfoNCE, paper Eq. 10, averaged over samples.

    positive_similarity (N,), negative_similarity (N, K), negative_mask (N, K) bool.  Masked-out
    negative slots get a −inf logit, so they contribute nothing.  With no samples the loss is an
    exact 0 that still belongs to the graph.
    """
    if positive_similarity.numel() == 0:
        return positive_similarity.sum() * 0.0 + negative_similarity.sum() * 0.0
    negatives = negative_similarity.masked_fill(~negative_mask, float("-inf"))
    logits = torch.cat([positive_similarity[:, None], negatives], dim=1) / temperature
    return -F.log_softmax(logits, dim=-1)[:, 0].mean()


def phrase_similarity(
    query_attention: torch.Tensor,
    other_attention: torch.Tensor,
    key_mask: torch.Tensor,
    similarity: str = "paper",
) -> torch.Tensor:
    """sim_phrase between attention rows.

    ``"paper"``: sim = −JSD (paper Eq. 11), summed over non-padding keys — no division by the number of keys.
    ``"reference"``: sim = +JSD/n, the reference code's behaviour (its known sign bug), which *rewards*
    diverging attention; kept only to reproduce the original runs.
    """
    if similarity == "paper":
        return -masked_jsd(query_attention, other_attention, key_mask)
    if similarity == "reference":
        return masked_jsd(query_attention, other_attention, key_mask, normalize_by_keys=True)
    raise ValueError(f"similarity must be one of {PHRASE_SIMILARITIES}, got {similarity!r}")


def phrase_loss(
    attention: torch.Tensor,
    attention_mask: torch.Tensor,
    samples: PhraseSamples,
    similarity: str = "paper",
    temperature: float = 0.1,
) -> torch.Tensor:
    """Phrase-guided contrastive loss (paper Eq. 10-11).

    attention: (B, T, T) head-averaged last-layer attention probabilities; row q is token q's
    distribution over keys.  attention_mask: (B, T) 1 at non-padding keys.  Which probabilities to pass
    (pre-dropout for "paper", post-dropout for "reference") is the caller's choice.
    """
    b = samples.batch_index
    key_mask = attention_mask[b].bool()  # (N, T)
    query_rows = attention[b, samples.query]  # (N, T)
    positive_rows = attention[b, samples.positive]
    negative_rows = attention[b[:, None], samples.negatives.clamp(min=0)]  # (N, K, T)
    positive_sim = phrase_similarity(query_rows, positive_rows, key_mask, similarity)
    negative_sim = phrase_similarity(query_rows[:, None], negative_rows, key_mask[:, None], similarity)
    return info_nce_loss(positive_sim, negative_sim, samples.negative_mask, temperature)


def tree_similarity(root_states: torch.Tensor, token_states: torch.Tensor, node_sets: torch.Tensor, root: torch.Tensor) -> torch.Tensor:
    """sim_tree of paper Eq. 12 for several node sets sharing a root.

    root_states (N, H): z_r.  token_states (N, T, H): z of every position of the root's sentence.
    node_sets (N, S, T) bool: S trees per root (each containing r).  root (N,) long: r's position.
    Returns (N, S): cos(z_r, Σ_{j∈C} e_j z_j) with e = softmax_{j∈C}(z_r·z_j) and C = tree ∖ {r}.
    A set with no child gets similarity 0 (never produced by the samplers).
    """
    scores = torch.einsum("nh,nth->nt", root_states, token_states)  # (N, T), shared by all S sets
    children = node_sets.clone()
    children[torch.arange(children.shape[0], device=children.device), :, root] = False
    has_child = children.any(-1)
    logits = scores[:, None, :].masked_fill(~children, float("-inf"))
    weights = torch.softmax(logits.masked_fill(~has_child[..., None], 0.0), dim=-1) * children
    pooled = torch.bmm(weights, token_states)  # (N, S, H)
    cosine = F.cosine_similarity(root_states[:, None, :], pooled, dim=-1)
    return cosine * has_child


def tree_loss(
    hidden_states: torch.Tensor,
    samples: TreeSamples,
    top_k: int = 3,
    temperature: float = 0.1,
) -> torch.Tensor:
    """Tree-guided contrastive loss (paper Eq. 10 + 12), on last-layer states (B, T, H).

    Only the `top_k` most similar *real* negatives of each set enter the InfoNCE denominator.  The
    reference kept the top-k cosines but indexed their validity mask in slot order and could pick
    padded negatives (a known reference bug); here padded slots are −inf before the top-k and the mask travels with
    the selected values, so the effective k is min(top_k, #negatives).
    """
    if samples.batch_index.numel() == 0:  # not len(): under torch.compile that would fix the sample count
        return hidden_states.sum() * 0.0
    token_states = hidden_states[samples.batch_index]  # (N, T, H)
    root_states = token_states[torch.arange(samples.root.shape[0], device=hidden_states.device), samples.root]
    node_sets = torch.cat([samples.positive[:, None], samples.negatives], dim=1)
    similarity = tree_similarity(root_states, token_states, node_sets, samples.root)
    positive_sim, negative_sim = similarity[:, 0], similarity[:, 1:]
    negative_sim = negative_sim.masked_fill(~samples.negative_mask, float("-inf"))
    k = min(top_k, negative_sim.shape[1])
    top_sim, _ = negative_sim.topk(k, dim=-1)
    return info_nce_loss(positive_sim, top_sim, torch.isfinite(top_sim), temperature)



# --------------------------------------------------------------------------------------------------
# The P and T objectives (training mode only: their dev values are reported, not part of dev_loss)
# --------------------------------------------------------------------------------------------------


@register_objective
class PhraseContrastive(PretrainingObjective):
    """P: phrase-guided contrastive loss on the last layer's head-averaged attention."""

    letter = "P"
    name = "phrase"
    batch_fields = ("heads",)
    sample_field = "phrase_samples"
    needs_parse = True
    training_only = True
    dev_average = PER_BATCH

    def __init__(self, config):
        super().__init__(config)
        self.phrase_loss = phrase_loss

    def attention_stage(self) -> str:
        return "post_dropout" if self.config.phrase_similarity == "reference" else "pre_dropout"

    def compile(self, options) -> None:
        # Its samples arrive as tensors (drawn before it runs), so the loss traces as one graph.
        self.phrase_loss = torch.compile(phrase_loss, **options)

    def sample(self, heads, structure, generator) -> PhraseSamples:
        return sample_phrase_triples(heads, generator, max_negatives=self.config.phrase_max_negatives, structure=structure)

    def loss(self, head, inputs: ObjectiveInputs) -> ObjectiveLoss:
        config, batch = self.config, inputs.batch
        samples = self.drawn_samples(inputs)
        loss = self.phrase_loss(
            inputs.encoded.last_layer_attention,
            batch["attention_mask"],
            samples,
            similarity=config.phrase_similarity,
            temperature=config.contrastive_temperature,
        )
        return ObjectiveLoss(loss, num_samples=len(samples))


@register_objective
class TreeContrastive(PretrainingObjective):
    """T: tree-guided contrastive loss on the last layer's hidden states."""

    letter = "T"
    name = "tree"
    batch_fields = ("heads",)
    sample_field = "tree_samples"
    needs_parse = True
    training_only = True
    dev_average = PER_BATCH

    def __init__(self, config):
        super().__init__(config)
        self.tree_loss = tree_loss

    def compile(self, options) -> None:
        self.tree_loss = torch.compile(tree_loss, **options)

    def sample(self, heads, structure, generator) -> TreeSamples:
        return sample_tree_sets(heads, generator, max_negatives=self.config.tree_max_negatives, structure=structure)

    def loss(self, head, inputs: ObjectiveInputs) -> ObjectiveLoss:
        config = self.config
        samples = self.drawn_samples(inputs)
        loss = self.tree_loss(
            inputs.encoded.last_hidden_state, samples, top_k=config.tree_top_k, temperature=config.contrastive_temperature
        )
        return ObjectiveLoss(loss, num_samples=len(samples))
