"""The attention extension point: what an attention variant may change, and the variant registry.

A variant is one builder function registered under a name.  `MicroBertModel` looks the name up from
``config.syntax_attention`` (None = plain attention) and calls the builder once per forward; the
builder turns the batch (subword ``heads``, ``attention_mask``, an optional shared `TreeStructure`)
into an `AttentionModifier`.  Adding a variant is one new module with one `register_attention` call;
neither the model nor the trainer changes.  A condition names a variant by the suffix it registers
("MPT-SLA" → ``"sla"``), see `models.conditions`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..trees import TreeStructure

LayerTensors = torch.Tensor | Sequence[torch.Tensor | None] | None


def _for_layer(value: LayerTensors, layer_idx: int) -> torch.Tensor | None:
    if value is None or isinstance(value, torch.Tensor):
        return value
    return value[layer_idx]


def _sum(first: LayerTensors, second: LayerTensors) -> LayerTensors:
    if first is None or second is None:
        return second if first is None else first
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor):
        return first + second
    if isinstance(first, torch.Tensor) or isinstance(second, torch.Tensor):
        # One tensor for all layers plus a per-layer list (e.g. a mask plus per-layer position scores).
        shared, per_layer = (first, second) if isinstance(first, torch.Tensor) else (second, first)
        return [shared if entry is None else shared + entry for entry in per_layer]
    raise ValueError("cannot combine two per-layer AttentionModifier entries; build one list")


@dataclass
class RelativePositionKeys:
    """Transformer-XL's position term (q_i + v)ᵀ r_{R_ij} for one layer (Sartran et al., §2.1-2.2).

    index: (B, T, T) long, R_ij shifted into [0, P).  keys: (P, heads, head_dim), the layer's
    relative keys r (e.g. projected sinusoids).  query_bias: (heads, head_dim), TXL's v.
    """

    index: torch.Tensor
    keys: torch.Tensor
    query_bias: torch.Tensor


@dataclass
class AttentionModifier:
    """What a syntax method may change in self-attention.

    Every field is optional and is either one tensor for all layers or a sequence with one entry
    (tensor or None) per layer.  Shapes broadcast against the scores (B, heads, T, T).  Masks are
    additive, 0 / ``finfo(dtype).min``; whatever masks are combined, every non-padding query row must
    keep at least one key allowed (the [CLS] column is the usual safe choice), or its softmax is NaN.

    score_bias:
        Additive bias (B or 1, heads or 1, T, T) on the raw scaled scores of every branch, before the
        softmax: 0 / ``finfo.min`` masks (band attention, Transformer-Grammar masks) or real-valued
        biases (graph-attention scores).
    gated_mask:
        Additive mask (B or 1, heads or 1, T, T) defining a *second* attention distribution
        A_l = softmax(S + score_bias + gated_mask) over the same scores S, mixed into the plain one
        A_g = softmax(S + score_bias) with the layer's learned per-token gate g = σ(W h + b):
        A = g·A_l + (1−g)·A_g (SLA, paper Eq. 6-8).  Needs a model whose variant declares gates
        (``needs_gates``, e.g. ``config.syntax_attention="sla"``).
    query_offset, key_offset, value_offset:
        Additive terms (B, heads, T, head_dim) on the projected queries/keys/values, for methods that
        fuse syntax representations into attention inputs (Syntax-augmented mBERT, Ahmad et al., §2.3; TXL's u
        is a query offset).
    relative_keys:
        One `RelativePositionKeys` (or None) per layer: adds (q_i + v)ᵀ r_{R_ij}, scaled as the
        scores, where q is the projected query before any offset (Transformer Grammars).
    """

    score_bias: LayerTensors = None
    gated_mask: LayerTensors = None
    query_offset: LayerTensors = None
    key_offset: LayerTensors = None
    value_offset: LayerTensors = None
    relative_keys: Sequence[RelativePositionKeys | None] | RelativePositionKeys | None = None

    def for_layer(self, layer_idx: int) -> "AttentionModifier":
        return AttentionModifier(
            score_bias=_for_layer(self.score_bias, layer_idx),
            gated_mask=_for_layer(self.gated_mask, layer_idx),
            query_offset=_for_layer(self.query_offset, layer_idx),
            key_offset=_for_layer(self.key_offset, layer_idx),
            value_offset=_for_layer(self.value_offset, layer_idx),
            relative_keys=self.relative_keys if not isinstance(self.relative_keys, Sequence) else self.relative_keys[layer_idx],
        )

    def is_empty(self) -> bool:
        return all(
            value is None
            for value in (self.score_bias, self.gated_mask, self.query_offset, self.key_offset, self.value_offset,
                          self.relative_keys)
        )

    def combined_with(self, other: "AttentionModifier | None") -> "AttentionModifier":
        """Both modifiers at once: biases and offsets add; two gated masks cannot be combined."""
        if other is None:
            return self
        if self.gated_mask is not None and other.gated_mask is not None:
            raise ValueError("two gated masks (e.g. SLA and a caller-supplied gated_mask) cannot be combined")
        if self.relative_keys is not None and other.relative_keys is not None:
            raise ValueError("two sets of relative-position keys cannot be combined")
        return AttentionModifier(
            score_bias=_sum(self.score_bias, other.score_bias),
            gated_mask=self.gated_mask if other.gated_mask is None else other.gated_mask,
            query_offset=_sum(self.query_offset, other.query_offset),
            key_offset=_sum(self.key_offset, other.key_offset),
            value_offset=_sum(self.value_offset, other.value_offset),
            relative_keys=self.relative_keys if other.relative_keys is None else other.relative_keys,
        )


@dataclass
class AttentionInputs:
    """What a builder may read: the batch's tokens and, for parse-based variants, its trees.

    input_ids, attention_mask: (B, T).  heads: (B, T) subword heads (see `trees`), or None.
    structure: the batch's `TreeStructure` when the caller already built one (shared with the
    SynCLM samplers), else None; build it from ``heads`` if needed.  dtype: of the scores.
    upos_ids: (B, T) UPOS id per subword (`models.attention.syntax_gat.UPOS_TAGS`), or None.
    module: the model's instance of the variant's `module` (its parameters), or None.
    word_embeddings: the encoder's input embedding table (for variants that embed tokens themselves).
    side_outputs: what the variant computed besides the modifier (e.g. the GAT's states for the
    structural-probe loss); the model returns it as ``attention_outputs``.
    """

    input_ids: torch.Tensor | None
    attention_mask: torch.Tensor
    heads: torch.Tensor | None
    structure: TreeStructure | None
    dtype: torch.dtype
    upos_ids: torch.Tensor | None = None
    module: nn.Module | None = None
    word_embeddings: nn.Embedding | None = None
    side_outputs: dict[str, Any] = field(default_factory=dict)


AttentionBuilder = Callable[[AttentionInputs, "object"], AttentionModifier]


@dataclass(frozen=True)
class AttentionVariant:
    """A registered variant.

    name: the value of ``config.syntax_attention`` (saved in exported encoders' config.json).
    condition_suffix: how a condition names it ("MPT-SLA" → suffix "SLA").
    needs_parse: the builder reads ``heads``, so pretraining and fine-tuning must supply a parse.
    needs_gates: each layer gets a ``local_attention_gate`` Linear(hidden, 1) for `gated_mask`.
    build: (AttentionInputs, config) → AttentionModifier.
    module: config → nn.Module, or None: parameters of the variant's own (e.g. a graph-attention
    network), owned by the encoder as ``attention_variant_module`` and handed to `build` as
    ``inputs.module``.
    prepare: (TreeStructure, config) → encoder keyword arguments, or None: what `build` would compute
    from the parse, computed ahead of the model (in a loader worker, `models.prepared_inputs`) so
    that a GPU step spends no launches on it. SLA returns its boolean mask as ``sla_mask``.
    """

    name: str
    condition_suffix: str
    needs_parse: bool
    needs_gates: bool
    build: AttentionBuilder
    module: Callable[[Any], nn.Module] | None = None
    prepare: Callable[[TreeStructure, Any], dict[str, torch.Tensor]] | None = None


ATTENTION_VARIANTS: dict[str, AttentionVariant] = {}


def register_attention(
    name: str,
    *,
    condition_suffix: str | None = None,
    needs_parse: bool,
    needs_gates: bool = False,
    module: Callable[[Any], nn.Module] | None = None,
    prepare: Callable[[TreeStructure, Any], dict[str, torch.Tensor]] | None = None,
):
    """Decorator: register ``build`` as attention variant ``name`` (suffix defaults to NAME upper-cased)."""
    suffix = condition_suffix if condition_suffix is not None else name.upper()

    def register(build: AttentionBuilder) -> AttentionBuilder:
        taken = {variant.condition_suffix: variant.name for variant in ATTENTION_VARIANTS.values()}
        if name in ATTENTION_VARIANTS or (suffix in taken and taken[suffix] != name):
            raise ValueError(f"attention variant {name!r} (condition suffix {suffix!r}) is already registered")
        ATTENTION_VARIANTS[name] = AttentionVariant(name, suffix, needs_parse, needs_gates, build, module, prepare)
        return build

    return register


def attention_variant(name_or_config) -> AttentionVariant | None:
    """The variant of a config (or of a ``syntax_attention`` value); None for plain attention."""
    name = name_or_config if name_or_config is None or isinstance(name_or_config, str) else getattr(
        name_or_config, "syntax_attention", None
    )
    if name is None:
        return None
    if name not in ATTENTION_VARIANTS:
        raise ValueError(f"unknown attention variant {name!r}; registered: {sorted(ATTENTION_VARIANTS)}")
    return ATTENTION_VARIANTS[name]


def variant_for_suffix(suffix: str) -> AttentionVariant | None:
    for variant in ATTENTION_VARIANTS.values():
        if variant.condition_suffix == suffix:
            return variant
    return None


def attention_needs_parse(config) -> bool:
    """Whether an encoder with this config (any transformers config) needs a parse to run as trained."""
    variant = attention_variant(getattr(config, "syntax_attention", None))
    return variant is not None and variant.needs_parse
