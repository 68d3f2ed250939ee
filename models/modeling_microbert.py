"""MicroBERT encoder with one attention extension point, plus its pretraining heads and losses.

The encoder reuses transformers' BERT modules and replaces only what syntax needs:

* `MicroBertSelfAttention` subclasses `BertSelfAttention`.  With nothing to modify it defers to the
  parent (and so to the SDPA kernel); otherwise it computes attention explicitly and applies an
  `AttentionModifier`, the single hook through which syntax enters attention (SLA now; band masks,
  graph-attention biases and Transformer-Grammar masks later).
* `MicroBertModel` owns the layer loop, so hook inputs travel as typed arguments instead of through
  transformers' `**kwargs` plumbing, and it can return the last layer's head-averaged attention (needed
  by the SynCLM phrase loss) without materialising probabilities in the other layers.

Parameter names are those of `BertModel`, so a non-SLA encoder with absolute positions exports to a
stock `bert` checkpoint (`MicroBertModel.export_encoder`).

Paper: Appendix A (SLA Eq. 4-8, InfoNCE Eq. 10, phrase Eq. 11, tree Eq. 12).  Spec: SPEC §C-F.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertConfig, BertModel
from transformers.masking_utils import create_bidirectional_mask
from transformers.modeling_outputs import ModelOutput
from transformers.models.bert.modeling_bert import (
    BertAttention,
    BertEmbeddings,
    BertEncoder,
    BertLayer,
    BertPredictionHeadTransform,
    BertPreTrainedModel,
    BertSelfAttention,
)

from . import objectives
from .configuration_microbert import PRETRAINING_OBJECTIVES, MicroBertConfig
from .word_encoder import ScalarMix, mean_pool_words
from .trees import TreeStructure, additive_attention_mask, sample_phrase_triples, sample_tree_sets, sla_allowed_mask

LayerTensors = torch.Tensor | Sequence[torch.Tensor | None] | None


def _for_layer(value: LayerTensors, layer_idx: int) -> torch.Tensor | None:
    if value is None or isinstance(value, torch.Tensor):
        return value
    return value[layer_idx]


@dataclass
class AttentionModifier:
    """The attention extension point: what a syntax method may change in self-attention.

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
        A = g·A_l + (1−g)·A_g (SLA, paper Eq. 6-8).  Needs a model built with a gate
        (``config.syntax_attention="sla"``).
    query_offset, key_offset, value_offset:
        Additive terms (B, heads, T, head_dim) on the projected queries/keys/values, for methods that
        fuse syntax representations into attention inputs (Syntax-augmented mBERT, SPEC §I).
    """

    score_bias: LayerTensors = None
    gated_mask: LayerTensors = None
    query_offset: LayerTensors = None
    key_offset: LayerTensors = None
    value_offset: LayerTensors = None

    def for_layer(self, layer_idx: int) -> "AttentionModifier":
        return AttentionModifier(
            score_bias=_for_layer(self.score_bias, layer_idx),
            gated_mask=_for_layer(self.gated_mask, layer_idx),
            query_offset=_for_layer(self.query_offset, layer_idx),
            key_offset=_for_layer(self.key_offset, layer_idx),
            value_offset=_for_layer(self.value_offset, layer_idx),
        )

    def is_empty(self) -> bool:
        return all(
            value is None
            for value in (self.score_bias, self.gated_mask, self.query_offset, self.key_offset, self.value_offset)
        )


ATTENTION_PROBABILITY_STAGES = (None, "pre_dropout", "post_dropout")


class MicroBertSelfAttention(BertSelfAttention):
    """`BertSelfAttention` plus the `AttentionModifier` hook, SLA gates and relative positions.

    Extra parameters: ``local_attention_gate`` = Linear(hidden, 1) when ``syntax_attention="sla"``
    (the reference's `selector`), and ``distance_embedding`` for ``relative_key_query``.
    """

    def __init__(self, config: MicroBertConfig, layer_idx: int | None = None):
        super().__init__(config, is_causal=False, layer_idx=layer_idx)
        self.uses_relative_positions = config.position_embedding_type == "relative_key_query"
        if self.uses_relative_positions:
            self.max_position_embeddings = config.max_position_embeddings
            self.distance_embedding = nn.Embedding(2 * config.max_position_embeddings - 1, self.attention_head_size)
        # Eq. 7: one gate value per token and layer, from the layer's input, shared by all heads.
        self.local_attention_gate = nn.Linear(config.hidden_size, 1) if config.syntax_attention == "sla" else None

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        key_padding_bias: torch.Tensor | None = None,
        modifier: AttentionModifier | None = None,
        return_probabilities: str | None = None,
        **kwargs,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Returns (context (B, T, hidden), head-averaged probabilities (B, T, T) or None).

        attention_mask: transformers' prepared mask, used only by the fast path.
        key_padding_bias: (B, 1, 1, T) additive 0 / finfo.min over keys, used by the explicit path.
        return_probabilities: None, "pre_dropout" or "post_dropout".
        """
        modifier = modifier if modifier is not None and not modifier.is_empty() else None
        if modifier is None and return_probabilities is None and not self.uses_relative_positions:
            # Plain attention: let transformers dispatch (SDPA by default) for speed and exact parity.
            context, _ = super().forward(hidden_states, attention_mask=attention_mask, **kwargs)
            return context, None
        return self._explicit_attention(hidden_states, key_padding_bias, modifier or AttentionModifier(), return_probabilities)

    def _explicit_attention(
        self,
        hidden_states: torch.Tensor,
        key_padding_bias: torch.Tensor | None,
        modifier: AttentionModifier,
        return_probabilities: str | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        batch_size, length = hidden_states.shape[:2]
        head_shape = (batch_size, length, -1, self.attention_head_size)
        query = self.query(hidden_states).view(head_shape).transpose(1, 2)
        key = self.key(hidden_states).view(head_shape).transpose(1, 2)
        value = self.value(hidden_states).view(head_shape).transpose(1, 2)
        if modifier.query_offset is not None:
            query = query + modifier.query_offset
        if modifier.key_offset is not None:
            key = key + modifier.key_offset
        if modifier.value_offset is not None:
            value = value + modifier.value_offset

        # S = (QKᵀ + relative terms)/√d, shared by both SLA branches.  Scaling the (B, H, T, d) queries
        # rather than the (B, H, T, T) scores is T/d times cheaper, forward and backward.
        scores = torch.matmul(query * self.scaling, key.transpose(-1, -2))
        if self.uses_relative_positions:
            scores = scores + self._relative_position_scores(query, key) * self.scaling
        if modifier.score_bias is not None:
            scores = scores + modifier.score_bias

        global_scores = scores if key_padding_bias is None else scores + key_padding_bias
        global_probabilities = torch.softmax(global_scores, dim=-1)
        if modifier.gated_mask is None:
            context, averaged = self._attend(global_probabilities, value, return_probabilities)
        else:
            if self.local_attention_gate is None:
                raise ValueError("a gated_mask needs a model built with syntax_attention='sla'")
            local_probabilities = torch.softmax(global_scores + modifier.gated_mask, dim=-1)
            gate = torch.sigmoid(self.local_attention_gate(hidden_states))[:, None]  # (B, 1, T, 1), Eq. 7
            context, averaged = self._attend_gated(global_probabilities, local_probabilities, gate, value, return_probabilities)
        context = context.transpose(1, 2).reshape(batch_size, length, self.all_head_size)
        return context, averaged

    def _attend(self, probabilities, value, return_probabilities):
        averaged = probabilities.mean(1) if return_probabilities == "pre_dropout" else None
        probabilities = self.dropout(probabilities)
        if return_probabilities == "post_dropout":
            averaged = probabilities.mean(1)
        return torch.matmul(probabilities, value), averaged

    def _attend_gated(self, global_probabilities, local_probabilities, gate, value, return_probabilities):
        """O = (D ⊙ A) V with A = g·A_l + (1−g)·A_g and D one dropout mask (paper Eq. 8-9, SPEC §F).

        Eq. 8 puts g on the global branch; the gate's learned sign makes the two equivalent, and this
        follows the reference.  Because everything is linear in A, we mix the two branch *outputs*,
        (D⊙A_l)V and (D⊙A_g)V, on (B, H, T, head_dim) tensors: the same result as mixing the
        (B, H, T, T) probabilities, with far less elementwise work in the backward pass.  The head
        average needed by the phrase loss is mixed the same way, since g is shared by all heads.
        """
        if self.training and self.dropout.p > 0:
            keep = torch.empty_like(global_probabilities).bernoulli_(1 - self.dropout.p)
            keep_scale = 1.0 / (1 - self.dropout.p)
            dropped_global, dropped_local = global_probabilities * keep, local_probabilities * keep
        else:
            keep_scale = 1.0
            dropped_global, dropped_local = global_probabilities, local_probabilities
        global_context = torch.matmul(dropped_global, value)
        local_context = torch.matmul(dropped_local, value)
        context = torch.lerp(global_context, local_context, gate) * keep_scale

        averaged = None
        if return_probabilities is not None:
            pre = return_probabilities == "pre_dropout"
            mean_global = (global_probabilities if pre else dropped_global).mean(1)
            mean_local = (local_probabilities if pre else dropped_local).mean(1)
            averaged = torch.lerp(mean_global, mean_local, gate[:, 0]) * (1.0 if pre else keep_scale)
        return context, averaged

    def _relative_position_scores(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """Shaw-style ``relative_key_query`` terms q_i·r_{i−j} + k_j·r_{i−j}, as in transformers 4.x."""
        length = query.shape[2]
        positions = torch.arange(length, device=query.device)
        distance = positions[:, None] - positions[None, :] + self.max_position_embeddings - 1
        table = self.distance_embedding(distance).to(query.dtype)  # (T, T, d)
        return torch.einsum("bhld,lrd->bhlr", query, table) + torch.einsum("bhrd,lrd->bhlr", key, table)


class MicroBertAttention(BertAttention):
    def __init__(self, config: MicroBertConfig, layer_idx: int | None = None):
        super().__init__(config, is_causal=False, layer_idx=layer_idx)
        self.self = MicroBertSelfAttention(config, layer_idx=layer_idx)

    def forward(self, hidden_states, attention_mask=None, **attention_kwargs):
        context, probabilities = self.self(hidden_states, attention_mask=attention_mask, **attention_kwargs)
        return self.output(context, hidden_states), probabilities


class MicroBertLayer(BertLayer):
    """`BertLayer` that returns its (optional) attention probabilities alongside its output."""

    def __init__(self, config: MicroBertConfig, layer_idx: int | None = None):
        super().__init__(config, layer_idx=layer_idx)
        self.attention = MicroBertAttention(config, layer_idx=layer_idx)

    def forward(self, hidden_states, attention_mask=None, **attention_kwargs):
        attention_output, probabilities = self.attention(hidden_states, attention_mask, **attention_kwargs)
        return self.feed_forward_chunk(attention_output), probabilities


class MicroBertEncoder(BertEncoder):
    def __init__(self, config: MicroBertConfig):
        super().__init__(config)
        self.layer = nn.ModuleList([MicroBertLayer(config, layer_idx=i) for i in range(config.num_hidden_layers)])


class MicroBertEmbeddings(BertEmbeddings):
    """`BertEmbeddings`; with relative positions no absolute position embedding exists or is added."""

    def __init__(self, config: MicroBertConfig):
        super().__init__(config)
        self.adds_absolute_positions = config.position_embedding_type == "absolute"
        if not self.adds_absolute_positions:
            del self.position_embeddings

    def forward(self, input_ids, token_type_ids=None, position_ids=None, inputs_embeds=None, past_key_values_length=0):
        if self.adds_absolute_positions:
            return super().forward(input_ids, token_type_ids, position_ids, inputs_embeds, past_key_values_length)
        embeddings = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        if token_type_ids is None:
            token_type_ids = torch.zeros(embeddings.shape[:2], dtype=torch.long, device=embeddings.device)
        embeddings = embeddings + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(embeddings))


class MicroBertPreTrainedModel(BertPreTrainedModel):
    config_class = MicroBertConfig
    base_model_prefix = "bert"
    _supports_flash_attn = False
    _supports_flex_attn = False
    _can_record_outputs = {}


@dataclass
class MicroBertModelOutput(ModelOutput):
    """last_hidden_state (B, T, H); hidden_states: embeddings + every layer, when asked;
    last_layer_attention: (B, T, T) head-averaged last-layer probabilities, when asked."""

    last_hidden_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    last_layer_attention: torch.FloatTensor | None = None


class MicroBertModel(MicroBertPreTrainedModel):
    """BERT encoder (no pooler by default, SPEC §C) with the `AttentionModifier` hook and SLA."""

    _no_split_modules = ["BertEmbeddings", "MicroBertLayer"]

    def __init__(self, config: MicroBertConfig, add_pooling_layer: bool = False):
        super().__init__(config)
        if add_pooling_layer:
            raise ValueError("MicroBertModel has no pooler; fine-tuning heads pool for themselves")
        self.embeddings = MicroBertEmbeddings(config)
        self.encoder = MicroBertEncoder(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def sla_mask(self, heads: torch.Tensor, structure: TreeStructure | None = None, dtype=torch.float32) -> torch.Tensor:
        """Additive (B, 1, T, T) SLA mask M of Eq. 5 from `heads`, with this config's δ and window."""
        allowed = sla_allowed_mask(
            heads,
            self.config.sla_max_distance,
            window=self.config.sla_window,
            reference_window=self.config.sla_reference_window,
            structure=structure,
        )
        return additive_attention_mask(allowed, dtype)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        heads: torch.Tensor | None = None,
        sla_mask: torch.Tensor | None = None,
        attention_modifier: AttentionModifier | None = None,
        output_hidden_states: bool = False,
        return_last_layer_attention: str | None = None,
        return_dict: bool = True,
    ) -> MicroBertModelOutput:
        """Encode a batch.

        Args:
            heads: (B, T) subword heads (see `trees`); an SLA model builds its mask from them.
            sla_mask: (B, 1, T, T) additive SLA mask (e.g. precomputed by a collator); wins over `heads`.
            attention_modifier: extra syntax inputs for attention (see `AttentionModifier`).
            output_hidden_states: also return embeddings + every layer's output (for ScalarMix heads).
            return_last_layer_attention: None, "pre_dropout" or "post_dropout": also return the last
                layer's attention probabilities averaged over heads (SynCLM phrase loss, SPEC §D).
        """
        if return_last_layer_attention not in ATTENTION_PROBABILITY_STAGES:
            raise ValueError(f"return_last_layer_attention must be one of {ATTENTION_PROBABILITY_STAGES}")
        embeddings = self.embeddings(
            input_ids=input_ids, token_type_ids=token_type_ids, position_ids=position_ids, inputs_embeds=inputs_embeds
        )
        batch_size, length = embeddings.shape[:2]
        if attention_mask is None:
            attention_mask = torch.ones(batch_size, length, dtype=torch.long, device=embeddings.device)
        modifier = self._with_syntax_attention(attention_modifier, heads, sla_mask, embeddings.dtype)

        prepared_mask = create_bidirectional_mask(config=self.config, inputs_embeds=embeddings, attention_mask=attention_mask)
        key_padding_bias = torch.zeros(batch_size, 1, 1, length, dtype=embeddings.dtype, device=embeddings.device)
        key_padding_bias.masked_fill_(attention_mask[:, None, None, :] == 0, torch.finfo(embeddings.dtype).min)

        hidden_states = embeddings
        all_hidden_states = [hidden_states] if output_hidden_states else None
        last_layer_attention = None
        num_layers = len(self.encoder.layer)
        for layer_idx, layer in enumerate(self.encoder.layer):
            is_last = layer_idx == num_layers - 1
            hidden_states, probabilities = layer(
                hidden_states,
                prepared_mask,
                key_padding_bias=key_padding_bias,
                modifier=modifier.for_layer(layer_idx) if modifier is not None else None,
                return_probabilities=return_last_layer_attention if is_last else None,
            )
            if is_last:
                last_layer_attention = probabilities
            if output_hidden_states:
                all_hidden_states.append(hidden_states)

        return MicroBertModelOutput(
            last_hidden_state=hidden_states,
            hidden_states=tuple(all_hidden_states) if output_hidden_states else None,
            last_layer_attention=last_layer_attention,
        )

    def _with_syntax_attention(self, modifier, heads, sla_mask, dtype) -> AttentionModifier | None:
        """Adds the SLA mask to the caller's modifier, or applies the configured no-parse policy."""
        if self.config.syntax_attention != "sla":
            if sla_mask is not None:
                raise ValueError("sla_mask given to a model built without syntax_attention='sla'")
            return modifier
        if sla_mask is None and heads is not None:
            sla_mask = self.sla_mask(heads, dtype=dtype)
        if sla_mask is None:
            if self.config.sla_without_parse == "error":
                raise ValueError(
                    "this SLA model got neither `heads` nor `sla_mask`; pass a parse, or build the config with "
                    "sla_without_parse='global' to run plain global attention explicitly"
                )
            return modifier  # "global": A = A_g, the gates are not used
        modifier = modifier if modifier is not None else AttentionModifier()
        if modifier.gated_mask is not None:
            raise ValueError("SLA and a caller-supplied gated_mask cannot be combined")
        return AttentionModifier(
            score_bias=modifier.score_bias,
            gated_mask=sla_mask.to(dtype),
            query_offset=modifier.query_offset,
            key_offset=modifier.key_offset,
            value_offset=modifier.value_offset,
        )

    def export_encoder(self, save_directory: str | os.PathLike) -> None:
        """Save the encoder for fine-tuning.

        Without SLA and with absolute positions the weights are exactly a stock `BertModel`'s, so this
        writes a plain ``model_type="bert"`` checkpoint that `transformers.AutoModel` loads unaided (it
        will add a freshly initialised pooler, which does not affect hidden states).  Otherwise it writes a
        ``model_type="microbert"`` checkpoint that needs ``import models`` to register the classes.
        """
        if not self.config.is_stock_bert_compatible:
            self.save_pretrained(save_directory)
            return
        bert_config_fields = {
            key: value
            for key, value in self.config.to_dict().items()
            if key not in self.config.microbert_only_keys and key not in ("model_type", "architectures", "transformers_version")
        }
        stock = BertModel(BertConfig(**bert_config_fields), add_pooling_layer=False)
        stock.load_state_dict(self.state_dict(), strict=True)
        stock.save_pretrained(save_directory)


# --------------------------------------------------------------------------------------------------
# Pretraining heads
# --------------------------------------------------------------------------------------------------


class MicroBertMLMHead(nn.Module):
    """Linear → GELU → LayerNorm → tied word-embedding matmul, with **no output bias** (SPEC §C).

    Stock `BertLMPredictionHead` always carries a vocabulary bias, hence this small head.  It is applied
    only to the masked positions (the loss is identical; the V-sized matmul shrinks ~7×).
    """

    def __init__(self, config: MicroBertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)

    def forward(self, hidden_states: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        return self.transform(hidden_states) @ word_embeddings.t()


def sequence_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
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

    def __init__(self, config: MicroBertConfig):
        super().__init__()
        self.scalar_mix = ScalarMix(config.num_hidden_layers + 1)
        self.classifier = nn.Linear(config.hidden_size, config.num_xpos_labels)

    def forward(self, hidden_states: Sequence[torch.Tensor], token_spans: torch.Tensor) -> torch.Tensor:
        """token_spans (B, W+2, 2) with [CLS] first → logits (B, W, #xpos) for word slots 1..W."""
        words = mean_pool_words(self.scalar_mix(hidden_states), token_spans)[:, 1:-1]
        return self.classifier(words)


@dataclass
class MicroBertPretrainingOutput(ModelOutput):
    """loss: sum of the active components.  Each component is a scalar tensor when its objective is
    active (P and T only in training mode) and None otherwise."""

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    xpos_loss: torch.FloatTensor | None = None
    phrase_loss: torch.FloatTensor | None = None
    tree_loss: torch.FloatTensor | None = None
    last_hidden_state: torch.FloatTensor | None = None
    num_phrase_samples: int | None = None
    num_tree_samples: int | None = None


def parse_condition(condition: str) -> dict:
    """Condition name of the paper (e.g. "MXPT-SLA", "µB-MPT") → config fields."""
    name = condition.strip()
    for prefix in ("µB-", "μB-", "uB-", "ub-"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    letters, _, suffix = name.partition("-")
    valid_letters = "M" in letters and set(letters) <= set(PRETRAINING_OBJECTIVES) and len(set(letters)) == len(letters)
    if suffix not in ("", "SLA") or not valid_letters:
        raise ValueError(f"unrecognised condition {condition!r}; expected e.g. 'M', 'MXPT', 'MPT-SLA'")
    return {"pretraining_objectives": letters, "syntax_attention": "sla" if suffix == "SLA" else None}


class MicroBertForPretraining(MicroBertPreTrainedModel):
    """Encoder + the losses of one paper condition (M, MP, MT, MPT, MPT-SLA, MX, …, MXPT-SLA).

    Total loss = mlm + xpos + phrase + tree, all with weight 1 (SPEC §C); phrase and tree are added only
    in training mode, so `eval()` losses are the validation metric of SPEC §G.  P and T samples are
    drawn from `heads` with this module's generator unless the batch supplies them.
    """

    def __init__(self, config: MicroBertConfig):
        super().__init__(config)
        self.objectives = set(config.pretraining_objectives)
        self.bert = MicroBertModel(config)
        self.mlm_head = MicroBertMLMHead(config)
        self.xpos_head = MicroBertXposHead(config) if "X" in self.objectives else None
        self.sampling_generator = torch.Generator()
        self.sampling_generator.manual_seed(0)
        self.post_init()

    @classmethod
    def from_condition(cls, condition: str, **config_fields) -> "MicroBertForPretraining":
        """``MicroBertForPretraining.from_condition("MXPT-SLA", vocab_size=8588, num_xpos_labels=40)``."""
        return cls(MicroBertConfig(**parse_condition(condition), **config_fields))

    def set_sampling_seed(self, seed: int) -> None:
        self.sampling_generator.manual_seed(seed)

    def export_encoder(self, save_directory: str | os.PathLike) -> None:
        """Save only the encoder for fine-tuning (see `MicroBertModel.export_encoder`)."""
        self.bert.export_encoder(save_directory)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        heads: torch.Tensor | None = None,
        token_spans: torch.Tensor | None = None,
        xpos: torch.Tensor | None = None,
        sla_mask: torch.Tensor | None = None,
        phrase_samples=None,
        tree_samples=None,
        **other_batch_fields,
    ) -> MicroBertPretrainingOutput:
        """Compute the condition's losses on a collated batch.

        Needs: input_ids, attention_mask, labels (MLM, −100 = no loss); heads for P, T and SLA;
        token_spans and xpos for X.  Other collated fields (tree_is_gold, word_count, …) are accepted
        and unused.  `phrase_samples` / `tree_samples` (from `trees`) override in-model sampling.
        """
        config = self.config
        use_phrase = "P" in self.objectives and self.training
        use_tree = "T" in self.objectives and self.training
        needs_trees = use_phrase or use_tree or config.syntax_attention == "sla"
        if needs_trees and heads is None and sla_mask is None:
            raise ValueError(f"objectives {config.pretraining_objectives!r} / SLA need `heads` in the batch")
        structure = TreeStructure.from_heads(heads) if heads is not None and needs_trees else None
        if config.syntax_attention == "sla" and sla_mask is None:
            sla_mask = self.bert.sla_mask(heads, structure=structure)

        attention_stage = None
        if use_phrase:
            attention_stage = "post_dropout" if config.phrase_similarity == "reference" else "pre_dropout"
        encoded = self.bert(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            sla_mask=sla_mask,
            output_hidden_states=self.xpos_head is not None,
            return_last_layer_attention=attention_stage,
        )
        last_hidden = encoded.last_hidden_state
        output = MicroBertPretrainingOutput(last_hidden_state=last_hidden)
        components = []

        if labels is None:
            raise ValueError("MicroBertForPretraining needs MLM `labels`")
        masked = labels != -100
        logits = self.mlm_head(last_hidden[masked], self.bert.embeddings.word_embeddings.weight)
        output.mlm_loss = F.cross_entropy(logits, labels[masked]) if bool(masked.any()) else logits.sum() * 0.0
        components.append(output.mlm_loss)

        if self.xpos_head is not None:
            if token_spans is None or xpos is None:
                raise ValueError("the X objective needs `token_spans` and `xpos` in the batch")
            xpos_logits = self.xpos_head(encoded.hidden_states, token_spans)
            output.xpos_loss = sequence_cross_entropy(xpos_logits[:, : xpos.shape[1]], xpos)
            components.append(output.xpos_loss)

        if use_phrase:
            if phrase_samples is None:
                phrase_samples = sample_phrase_triples(
                    heads, self.sampling_generator, max_negatives=config.phrase_max_negatives, structure=structure
                )
            output.phrase_loss = objectives.phrase_loss(
                encoded.last_layer_attention,
                attention_mask,
                phrase_samples,
                similarity=config.phrase_similarity,
                temperature=config.contrastive_temperature,
            )
            output.num_phrase_samples = len(phrase_samples)
            components.append(output.phrase_loss)

        if use_tree:
            if tree_samples is None:
                tree_samples = sample_tree_sets(
                    heads, self.sampling_generator, max_negatives=config.tree_max_negatives, structure=structure
                )
            output.tree_loss = objectives.tree_loss(
                last_hidden, tree_samples, top_k=config.tree_top_k, temperature=config.contrastive_temperature
            )
            output.num_tree_samples = len(tree_samples)
            components.append(output.tree_loss)

        output.loss = torch.stack(components).sum()
        return output


__all__ = [
    "AttentionModifier",
    "MicroBertForPretraining",
    "MicroBertMLMHead",
    "MicroBertModel",
    "MicroBertPreTrainedModel",
    "MicroBertPretrainingOutput",
    "MicroBertXposHead",
    "ScalarMix",
    "mean_pool_words",
    "parse_condition",
    "sequence_cross_entropy",
]
