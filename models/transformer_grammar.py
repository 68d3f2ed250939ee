"""Left-to-right language models over action sequences: Transformer Grammar (TG) and the two
Transformer-XL baselines, TXL(trees) and TXL(terminals) (TG paper §2-3; SPEC §J).

All three are the same µB-size `MicroBertModel` stack with ``position_embedding_type="none"``,
output logits tied to the input embeddings (the paper multiplies by Eᵀ), and differ only in the
attention variant (the `AttentionModifier.score_bias` hook) and the relative positions R:

=================  ===================  ==============================  =======================
kind               attention variant    R_ij                            sequence
=================  ===================  ==============================  =======================
``tg``             ``"tg"`` (Alg. 1)    depth(i) − depth(j)             actions, CNT duplicated
``txl_trees``      ``"causal"``         i − j                           the same actions
``txl_terminals``  ``"causal"``         i − j                           <s> terminals [SEP]
=================  ===================  ==============================  =======================

**Relative-position scores: a documented simplification.**  Transformer-XL scores are
(q_i + u)ᵀk_j + (q_i + v)ᵀr_ij.  Here they are q_iᵀk_j + b_{l,h}[R_ij]: a learned scalar per layer,
head and clipped relative position ([−1, 62], SPEC §J), added to the scores through ``score_bias``.
This keeps the position term that does not depend on content (vᵀr_ij, TXL's term (d)) and drops the
query-dependent one q_iᵀr_ij (c) and the global content bias uᵀk_j (b): the hook adds biases to
scores and cannot see queries.  The paper reports that even replacing depth differences by linear
ones "has almost no impact" (§4), since the TG mask is so sparse.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .attention import AttentionModifier
from .attention.transformer_grammar import (
    CNT1,
    NUM_RELATIVE_POSITIONS,
    PAD,
    RELATIVE_POSITION_MIN,
    action_types,
    linear_relative_positions,
    tg_relative_positions,
)
from .configuration_microbert import MicroBertConfig
from .modeling_microbert import MicroBertModel

LM_KINDS = ("tg", "txl_trees", "txl_terminals")
IGNORE_INDEX = -100


def lm_config(kind: str, vocab_size: int, num_terminals: int, num_labels: int, **overrides) -> MicroBertConfig:
    """µB-size config (SPEC §C defaults) of a left-to-right LM of ``kind``."""
    if kind not in LM_KINDS:
        raise ValueError(f"unknown LM kind {kind!r}; known: {LM_KINDS}")
    return MicroBertConfig(
        vocab_size=vocab_size,
        syntax_attention="tg" if kind == "tg" else "causal",
        position_embedding_type="none",
        tg_num_terminals=num_terminals,
        tg_num_labels=num_labels,
        tg_kind=kind,
        tg_relative_positions=True,
        **overrides,
    )


def next_action_labels(input_ids: torch.Tensor, num_terminals: int, num_labels: int) -> torch.Tensor:
    """Labels of SPEC §J: position i predicts a'[i+1]; COMPOSE (CNT1) positions, padding and the
    last position predict nothing (``IGNORE_INDEX``).  A CNT1 is followed by its CNT2, so no
    label is ever a CNT2 id."""
    types = action_types(input_ids, num_terminals, num_labels)
    labels = torch.full_like(input_ids, IGNORE_INDEX)
    labels[:, :-1] = input_ids[:, 1:]
    no_prediction = (types == CNT1) | (types == PAD)
    no_prediction[:, :-1] |= types[:, 1:] == PAD
    return labels.masked_fill(no_prediction, IGNORE_INDEX)


@dataclass
class LmOutput:
    logits: torch.Tensor  # (B, T, V)
    loss: torch.Tensor | None = None  # mean NLL over labelled positions
    token_nll: torch.Tensor | None = None  # (B, T) NLL per position, 0 where unlabelled


class TransformerGrammarLM(nn.Module):
    """`MicroBertModel` + relative-position biases + tied output embedding (see module doc)."""

    def __init__(self, config: MicroBertConfig):
        super().__init__()
        self.config = config
        self.encoder = MicroBertModel(config)
        # b_{l,h}[R + 1]: zero at start, so training begins from position-free attention.
        self.relative_bias = nn.Parameter(
            torch.zeros(config.num_hidden_layers, config.num_attention_heads, NUM_RELATIVE_POSITIONS)
        )
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def relative_positions(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.config.tg_kind == "tg":
            return tg_relative_positions(action_types(input_ids, self.config.tg_num_terminals, self.config.tg_num_labels))
        return linear_relative_positions(*input_ids.shape, device=input_ids.device)

    def position_scores(self, input_ids: torch.Tensor) -> list[torch.Tensor]:
        """Per layer, the (B, H, T, T) relative-position score b_{l,h}[R_ij]."""
        index = self.relative_positions(input_ids) - RELATIVE_POSITION_MIN  # (B, T, T) in [0, 64)
        # One lookup for all layers: table (L, H, 64) indexed by (B, T, T) → (L, H, B, T, T).  (Its
        # backward is a scatter-add into the small table; a gather from an expanded table would
        # materialise a 64× larger gradient.)
        scores = self.relative_bias[:, :, index].transpose(1, 2)
        return list(scores.unbind(0))

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> LmOutput:
        attention_mask = (input_ids != self.config.pad_token_id).long()
        modifier = AttentionModifier(score_bias=self.position_scores(input_ids)) if self.config.tg_relative_positions else None
        hidden = self.encoder(input_ids, attention_mask=attention_mask, attention_modifier=modifier).last_hidden_state
        logits = hidden @ self.encoder.embeddings.word_embeddings.weight.T + self.output_bias
        if labels is None:
            return LmOutput(logits)
        nll = nn.functional.cross_entropy(logits.transpose(1, 2), labels, ignore_index=IGNORE_INDEX, reduction="none")
        labelled = labels != IGNORE_INDEX
        return LmOutput(logits, nll.sum() / labelled.sum().clamp(min=1), nll * labelled)


def allowed_next_actions(prefix: list[int], config, max_length: int) -> torch.Tensor:
    """(V,) boolean: the actions that keep ``prefix`` (<s> first) a prefix of a well-formed tree
    that fits in ``max_length`` positions.

    (ROOT opens the sentence and nothing else; after its close the sentence is over.  A closing
    action must close the innermost open constituent (its own label) and needs a child; "(ROOT",
    CNT2 ids (appended automatically after each CNT1), <s>, [PAD] and [SEP] are never sampled.  When
    only the closes still fit, only the close is allowed.
    """
    terminals, labels = config.tg_num_terminals, config.tg_num_labels
    allowed = torch.zeros(config.vocab_size, dtype=torch.bool)
    open_labels: list[int] = []
    children = [0]
    for action in prefix[1:]:
        if terminals <= action < terminals + labels:
            open_labels.append(action - terminals)
            children.append(0)
        elif terminals + labels <= action < terminals + 2 * labels:
            open_labels.pop()
            children.pop()
            children[-1] += 1
        elif action < terminals:
            children[-1] += 1
    if len(prefix) == 1:
        allowed[terminals] = True  # "(ROOT" (label 0)
        return allowed
    if not open_labels:
        return allowed  # finished: nothing may follow
    # Closing every open constituent takes 2 positions each.
    room = max_length - len(prefix) - 2 * len(open_labels)
    if children[-1] > 0:
        allowed[terminals + labels + open_labels[-1]] = True
    if room >= 1:
        allowed[5:terminals] = True  # terminals ([PAD] [CLS] [SEP] [UNK] [MASK] are 0-4)
    if room >= 4:  # an open, a child and its close pair
        allowed[terminals + 1 : terminals + labels] = True
    return allowed


@torch.no_grad()
def sample_actions(model: TransformerGrammarLM, num_samples: int, max_length: int, generator: torch.Generator,
                   temperature: float = 1.0) -> list[list[int]]:
    """Ancestral sampling of action sequences from a TG (or TXL(trees)) LM, constrained by
    `allowed_next_actions`; each sampled CNT1 is followed by its CNT2.  The model recomputes the whole
    prefix each step (its mask is causal, so this equals incremental decoding, only slower)."""
    config = model.config
    model.eval()
    samples = []
    for _ in range(num_samples):
        sequence = [config.pad_token_id + 1]  # <s> = [CLS]
        while True:
            allowed = allowed_next_actions(sequence, config, max_length)
            if not allowed.any():
                break
            logits = model(torch.tensor([sequence])).logits[0, -1] / temperature
            probabilities = torch.softmax(logits.masked_fill(~allowed, float("-inf")), -1)
            action = int(torch.multinomial(probabilities, 1, generator=generator))
            sequence.append(action)
            if config.tg_num_terminals + config.tg_num_labels <= action < config.tg_num_terminals + 2 * config.tg_num_labels:
                sequence.append(action + config.tg_num_labels)  # the STACK copy of the close
        samples.append(sequence)
    return samples
