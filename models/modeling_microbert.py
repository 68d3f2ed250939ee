"""MicroBERT encoder with one attention extension point, plus the pretraining model.

The encoder reuses transformers' BERT modules and replaces only what syntax needs:

* `MicroBertSelfAttention` subclasses `BertSelfAttention`.  With nothing to modify it defers to the
  parent (and so to the SDPA kernel); otherwise it computes attention explicitly and applies an
  `AttentionModifier`, the single hook through which syntax enters attention.
* `MicroBertModel` owns the layer loop, so hook inputs travel as typed arguments instead of through
  transformers' `**kwargs` plumbing, and it can return the last layer's head-averaged attention (needed
  by the SynCLM phrase loss) without materialising probabilities in the other layers.  Its attention
  variant (``config.syntax_attention``: SLA now; band masks, graph-attention biases, Transformer-Grammar
  masks later) is a builder looked up in `models.attention`.
* `MicroBertForPretraining` sums the losses of its condition's objectives, looked up in
  `models.objectives` (M, X, P, T), whose heads it registers as ``<name>_head``.

Parameter names are those of `BertModel`, so an encoder with plain attention and absolute positions
exports to a stock `bert` checkpoint (`MicroBertModel.export_encoder`).

Paper: Appendix A (SLA Eq. 4-8, InfoNCE Eq. 10, phrase Eq. 11, tree Eq. 12); model: Gessler & Schneider, §4.2.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from torch import nn
from transformers import BertConfig, BertModel
from transformers.masking_utils import create_bidirectional_mask
from transformers.modeling_outputs import ModelOutput
from transformers.models.bert.modeling_bert import (
    BertAttention,
    BertEmbeddings,
    BertEncoder,
    BertLayer,
    BertPreTrainedModel,
    BertSelfAttention,
)

from .attention import AttentionInputs, AttentionModifier, attention_variant
from .attention.sla import sla_additive_mask
from .conditions import parse_condition
from .configuration_microbert import MicroBertConfig
from .objectives import (  # noqa: F401  (heads and helpers re-exported from their historic home)
    MicroBertMLMHead,
    MicroBertXposHead,
    ObjectiveInputs,
    ScalarMix,
    mean_pool_words,
    objectives_for,
    sequence_cross_entropy,
)
from .trees import TreeStructure, additive_attention_mask

ATTENTION_PROBABILITY_STAGES = (None, "pre_dropout", "post_dropout")


class MicroBertSelfAttention(BertSelfAttention):
    """`BertSelfAttention` plus the `AttentionModifier` hook, SLA gates and relative positions.

    Extra parameters: ``local_attention_gate`` = Linear(hidden, 1) when the attention variant has
    gates (SLA; the reference's `selector`), and ``distance_embedding`` for ``relative_key_query``.
    """

    def __init__(self, config: MicroBertConfig, layer_idx: int | None = None):
        super().__init__(config, is_causal=False, layer_idx=layer_idx)
        self.uses_relative_positions = config.position_embedding_type == "relative_key_query"
        if self.uses_relative_positions:
            self.max_position_embeddings = config.max_position_embeddings
            self.distance_embedding = nn.Embedding(2 * config.max_position_embeddings - 1, self.attention_head_size)
        # Eq. 7: one gate value per token and layer, from the layer's input, shared by all heads.
        variant = attention_variant(config)
        self.local_attention_gate = nn.Linear(config.hidden_size, 1) if variant is not None and variant.needs_gates else None

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
        position_query = query  # TXL's position term reads the query before any offset (u)
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
        if modifier.relative_keys is not None:
            scores = scores + self._relative_key_scores(position_query, modifier.relative_keys) * self.scaling
        if modifier.score_bias is not None:
            scores = scores + modifier.score_bias

        global_scores = scores if key_padding_bias is None else scores + key_padding_bias
        global_probabilities = torch.softmax(global_scores, dim=-1)
        if modifier.gated_mask is None:
            context, averaged = self._attend(global_probabilities, value, return_probabilities)
        else:
            if self.local_attention_gate is None:
                raise ValueError("a gated_mask needs a model whose attention variant has gates (syntax_attention='sla')")
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
        """O = (D ⊙ A) V with A = g·A_l + (1−g)·A_g and D one dropout mask (paper Eq. 8-9).

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
        # Under bf16 autocast the gate and the contexts may differ in dtype; `.to` is a no-op in fp32.
        context = torch.lerp(global_context, local_context, gate.to(global_context.dtype)) * keep_scale

        averaged = None
        if return_probabilities is not None:
            pre = return_probabilities == "pre_dropout"
            mean_global = (global_probabilities if pre else dropped_global).mean(1)
            mean_local = (local_probabilities if pre else dropped_local).mean(1)
            averaged = torch.lerp(mean_global, mean_local, gate[:, 0].to(mean_global.dtype)) * (1.0 if pre else keep_scale)
        return context, averaged

    @staticmethod
    def _relative_key_scores(query: torch.Tensor, relative) -> torch.Tensor:
        """(q_i + v)ᵀ r_{R_ij} (B, H, T, T): each query against all P relative keys, then each pair's
        pick, which is P/T times cheaper than gathering a (B, T, T, d) key per pair."""
        per_position = torch.einsum("bhtd,phd->bhtp", query + relative.query_bias[None, :, None, :], relative.keys)
        index = relative.index[:, None].expand(-1, per_position.shape[1], -1, -1)
        return torch.gather(per_position, -1, index)

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
    last_layer_attention: (B, T, T) head-averaged last-layer probabilities, when asked;
    attention_outputs: what the attention variant computed besides its modifier (syntax-guided
    attention: ``syntax_states``, ``syntax_distance``, ``syntax_depth``), else None."""

    last_hidden_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    last_layer_attention: torch.FloatTensor | None = None
    attention_outputs: dict | None = None


class MicroBertModel(MicroBertPreTrainedModel):
    """BERT encoder (no pooler by default, as in the reference) with the `AttentionModifier` hook and the
    attention variant of ``config.syntax_attention``."""

    _no_split_modules = ["BertEmbeddings", "MicroBertLayer"]

    def __init__(self, config: MicroBertConfig, add_pooling_layer: bool = False):
        super().__init__(config)
        if add_pooling_layer:
            raise ValueError("MicroBertModel has no pooler; fine-tuning heads pool for themselves")
        self.embeddings = MicroBertEmbeddings(config)
        self.encoder = MicroBertEncoder(config)
        # A variant's own parameters (syntax-guided attention's GAT), handed to its builder.
        variant = attention_variant(config)
        if variant is not None and variant.module is not None:
            self.attention_variant_module = variant.module(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def sla_mask(self, heads: torch.Tensor, structure: TreeStructure | None = None, dtype=torch.float32) -> torch.Tensor:
        """Additive (B, 1, T, T) SLA mask M of Eq. 5 from `heads`, with this config's δ and window."""
        return sla_additive_mask(heads, self.config, structure, dtype)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        heads: torch.Tensor | None = None,
        tree_structure: TreeStructure | None = None,
        sla_mask: torch.Tensor | None = None,
        attention_modifier: AttentionModifier | None = None,
        upos_ids: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        return_last_layer_attention: str | None = None,
        return_dict: bool = True,
    ) -> MicroBertModelOutput:
        """Encode a batch.

        Args:
            heads: (B, T) subword heads (see `trees`), read by attention variants that need a parse.
            tree_structure: the `TreeStructure` of `heads`, when the caller already built one.
            sla_mask: (B, 1, T, T) additive gated mask, or (B, T, T) bool with True = allowed (e.g.
                built by a loader, `models.prepared_inputs`), for a variant with gates (SLA); wins over `heads`.
            attention_modifier: extra syntax inputs for attention (see `AttentionModifier`), combined
                with the variant's own.
            upos_ids: (B, T) UPOS ids per subword, for a variant that embeds them (syntax-guided attention).
            output_hidden_states: also return embeddings + every layer's output (for ScalarMix heads).
            return_last_layer_attention: None, "pre_dropout" or "post_dropout": also return the last
                layer's attention probabilities averaged over heads (SynCLM phrase loss, paper Eq. 11).
        """
        if return_last_layer_attention not in ATTENTION_PROBABILITY_STAGES:
            raise ValueError(f"return_last_layer_attention must be one of {ATTENTION_PROBABILITY_STAGES}")
        embeddings = self.embeddings(
            input_ids=input_ids, token_type_ids=token_type_ids, position_ids=position_ids, inputs_embeds=inputs_embeds
        )
        batch_size, length = embeddings.shape[:2]
        if attention_mask is None:
            attention_mask = torch.ones(batch_size, length, dtype=torch.long, device=embeddings.device)
        inputs = AttentionInputs(
            input_ids, attention_mask, heads, tree_structure, embeddings.dtype, upos_ids=upos_ids,
            module=getattr(self, "attention_variant_module", None), word_embeddings=self.embeddings.word_embeddings,
        )
        modifier = self._with_attention_variant(attention_modifier, inputs, sla_mask)

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
            attention_outputs=inputs.side_outputs or None,
        )

    def _with_attention_variant(self, modifier, inputs: AttentionInputs, sla_mask) -> AttentionModifier | None:
        """The caller's modifier plus the variant's, or the configured no-parse policy."""
        variant = attention_variant(self.config)
        if variant is None:
            if sla_mask is not None:
                raise ValueError("sla_mask given to a model built without syntax_attention='sla'")
            return modifier
        if sla_mask is not None:
            if not variant.needs_gates:
                raise ValueError(f"sla_mask given to a model whose attention variant {variant.name!r} has no gates")
            # Boolean (B, T, T) "allowed" from a loader (models.prepared_inputs), or already additive.
            additive = additive_attention_mask(sla_mask, inputs.dtype) if sla_mask.dtype == torch.bool else sla_mask.to(inputs.dtype)
            own = AttentionModifier(gated_mask=additive)
        elif variant.needs_parse and inputs.heads is None and inputs.structure is None:
            if self.config.sla_without_parse == "error":
                raise ValueError(
                    f"this model's attention ({variant.name!r}) needs a parse but got neither `heads` nor "
                    "`sla_mask`; pass a parse, or build the config with sla_without_parse='global' to run "
                    "plain global attention explicitly"
                )
            return modifier  # "global": plain attention, the gates are not used
        else:
            if inputs.heads is None and inputs.structure is not None:
                inputs.heads = inputs.structure.heads
            own = variant.build(inputs, self.config)
        return own.combined_with(modifier)

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
# Pretraining
# --------------------------------------------------------------------------------------------------


@dataclass
class MicroBertPretrainingOutput(ModelOutput):
    """loss: sum of the active objectives' losses.  ``losses`` maps each active objective's name
    (`models.objectives`) to its scalar loss; the named fields repeat the paper's four for
    compatibility.  P and T are active only in training mode."""

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    xpos_loss: torch.FloatTensor | None = None
    phrase_loss: torch.FloatTensor | None = None
    tree_loss: torch.FloatTensor | None = None
    last_hidden_state: torch.FloatTensor | None = None
    num_phrase_samples: int | None = None
    num_tree_samples: int | None = None
    losses: dict[str, torch.FloatTensor] | None = None


class MicroBertForPretraining(MicroBertPreTrainedModel):
    """Encoder + the losses of one paper condition (M, MP, MT, MPT, MPT-SLA, MX, …, MXPT-SLA).

    Total loss = the sum of the condition's objectives (registry order M, X, P, T), all with weight 1
    as in the reference; training-only objectives (P, T) are added only in training mode, so `eval()`
    losses are the reference's validation metric.  P and T samples are drawn from `heads` with this module's
    generator unless the batch supplies them.
    """

    def __init__(self, config: MicroBertConfig):
        super().__init__(config)
        self.objectives = [objective(config) for objective in objectives_for(config.pretraining_objectives)]
        self.bert = MicroBertModel(config)
        # Heads are built in registry order after the encoder: that order fixes their initial weights.
        for objective in self.objectives:
            head = objective.build_head()
            if head is not None:
                self.add_module(f"{objective.name}_head", head)
        self.sampling_generator = torch.Generator()
        self.sampling_generator.manual_seed(0)
        self.post_init()

    @classmethod
    def from_condition(cls, condition: str, **config_fields) -> "MicroBertForPretraining":
        """``MicroBertForPretraining.from_condition("MXPT-SLA", vocab_size=8588, num_xpos_labels=40)``."""
        return cls(MicroBertConfig(**parse_condition(condition).config_fields(), **config_fields))

    def set_sampling_seed(self, seed: int) -> None:
        self.sampling_generator.manual_seed(seed)

    def export_encoder(self, save_directory: str | os.PathLike) -> None:
        """Save only the encoder for fine-tuning (see `MicroBertModel.export_encoder`)."""
        self.bert.export_encoder(save_directory)

    def compile_objectives(self, options: dict) -> None:
        """torch.compile the losses that allow it (P and T: `PretrainingObjective.compile`)."""
        for objective in self.objectives:
            objective.compile(options)

    def active_objectives(self) -> list:
        """The objectives this forward computes: all of them in training mode, else the others."""
        return [objective for objective in self.objectives if self.training or not objective.training_only]

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        heads: torch.Tensor | None = None,
        sla_mask: torch.Tensor | None = None,
        **batch_fields,
    ) -> MicroBertPretrainingOutput:
        """Compute the condition's losses on a collated batch.

        Needs: input_ids, attention_mask, and each active objective's `batch_fields` (labels for M,
        token_spans and xpos for X, heads for P and T; heads also for a variant that needs a parse).
        Other collated fields (tree_is_gold, word_count, …) are accepted and unused.
        `phrase_samples` / `tree_samples` (from `trees`) and a boolean `sla_mask`, drawn ahead by a
        loader (`models.prepared_inputs`), replace in-model sampling and the in-model SLA mask: the
        tree structure is then built only if something still reads it.
        """
        batch = dict(batch_fields, input_ids=input_ids, attention_mask=attention_mask, heads=heads)
        active = self.active_objectives()
        for objective in active:
            missing = objective.missing_fields(batch)
            if missing:
                raise ValueError(f"the {objective.letter} objective needs {', '.join(f'`{f}`' for f in missing)} in the batch")
        variant = attention_variant(self.config)
        needs_trees = any(objective.needs_parse for objective in active) or (variant is not None and variant.needs_parse)
        if needs_trees and heads is None and sla_mask is None:
            raise ValueError(f"condition objectives {self.config.pretraining_objectives!r} / attention need `heads` in the batch")
        reads_structure = any(objective.needs_structure(batch) for objective in active) or (
            variant is not None and variant.needs_parse and sla_mask is None
        )
        structure = TreeStructure.from_heads(heads) if heads is not None and reads_structure else None

        stages = {objective.attention_stage() for objective in active} - {None}
        if len(stages) > 1:
            raise ValueError(f"objectives ask for attention probabilities at different stages {sorted(stages)}")
        # An objective that reshapes the input (C<c>: one window per target) replaces what the encoder reads.
        encoder_input = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
        for objective in active:
            replaced = objective.encoder_inputs(batch)
            if replaced is not None:
                encoder_input = dict(replaced, token_type_ids=None)
        encoded = self.bert(
            **encoder_input,
            heads=heads if variant is not None and variant.needs_parse else None,
            tree_structure=structure,
            sla_mask=sla_mask,
            upos_ids=batch_fields.get("upos_ids") if variant is not None and variant.needs_parse else None,
            output_hidden_states=any(objective.needs_hidden_states() for objective in active),
            return_last_layer_attention=stages.pop() if stages else None,
        )
        inputs = ObjectiveInputs(batch, encoded, structure, self.sampling_generator, self.bert.embeddings.word_embeddings.weight)
        output = MicroBertPretrainingOutput(last_hidden_state=encoded.last_hidden_state, losses={})
        for objective in active:
            result = objective.loss(getattr(self, f"{objective.name}_head", None), inputs)
            output.losses[objective.name] = result.loss
            if f"{objective.name}_loss" in output.__dataclass_fields__:
                setattr(output, f"{objective.name}_loss", result.loss)
            if result.num_samples is not None and f"num_{objective.name}_samples" in output.__dataclass_fields__:
                setattr(output, f"num_{objective.name}_samples", result.num_samples)
        output.loss = torch.stack(list(output.losses.values())).sum()
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
