"""Left-to-right language models over action sequences: Transformer Grammar (TG) and the two
Transformer-XL baselines, TXL(trees) and TXL(terminals) (Sartran et al., §2-3).

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

Two settings bring the baselines to the paper's definition (§3); their defaults are the forms every
committed ``tg`` figure was trained with (docs/decisions.md, "Transformer Grammars"):

* ``closing_nonterminals`` (TXL (trees)): ``"duplicated"`` reads TG's action sequence, each closing
  nonterminal followed by its CNT2 copy; ``"single"`` reads the plain linearised tree "as done by
  Choe and Charniak (2016)", one position per closing nonterminal.  The prediction events are the
  same either way: every action after ``<s>`` but a CNT2 copy (`next_action_labels`).
* ``clip_relative_positions`` (both TXLs): True clips i − j to TG's range [−1, 62]; False keeps
  Transformer-XL's i − j, every distance its own sinusoid.

**Relative-position scores** (``relative_form``).  ``"transformer_xl"`` (default, the paper's): the
scores are (q_i + u)ᵀk_j + (q_i + v)ᵀr_{R_ij}, with per-layer u, v and relative keys r = W_r·s(R)
projected from sinusoids s of the 64 clipped positions [−1, 62] (reference `masking_rules.cc`; dropout on s in training,
as the reference does).  u enters as the hook's query offset, the position term as its
``relative_keys``.  ``"bias"``: the earlier simplification q_iᵀk_j + b_{l,h}[R_ij], one learned
scalar per layer, head and position through ``score_bias`` (TXL's term (d) only); kept as an
option, and docs/decisions.md says what it costs.  The paper reports that even replacing depth
differences by linear ones "has almost no impact" (§4), since the TG mask is so sparse.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .attention import AttentionModifier, RelativePositionKeys
from .attention.transformer_grammar import (
    CNT2,
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
RELATIVE_FORMS = ("transformer_xl", "bias")
CLOSING_FORMS = ("duplicated", "single")
IGNORE_INDEX = -100


def lm_config(kind: str, vocab_size: int, num_terminals: int, num_labels: int, relative_form: str = "transformer_xl",
              cnt2_attends_self: bool = True, closing_nonterminals: str = "duplicated", clip_relative_positions: bool = True,
              **overrides) -> MicroBertConfig:
    """µB-size config (`MicroBertConfig` defaults) of a left-to-right LM of ``kind``.
    ``cnt2_attends_self`` (TG only): the reference code's CNT2 row, or Algorithm 1's (False;
    `models.attention.transformer_grammar`).  ``closing_nonterminals`` (TXL (trees) only) and
    ``clip_relative_positions`` (the TXLs only, Transformer-XL form): see the module doc."""
    if kind not in LM_KINDS:
        raise ValueError(f"unknown LM kind {kind!r}; known: {LM_KINDS}")
    if relative_form not in RELATIVE_FORMS:
        raise ValueError(f"unknown relative_form {relative_form!r}; known: {RELATIVE_FORMS}")
    if not cnt2_attends_self and kind != "tg":
        raise ValueError(f"cnt2_attends_self is a setting of TG's STACK/COMPOSE mask; {kind} attends causally")
    if closing_nonterminals not in CLOSING_FORMS:
        raise ValueError(f"unknown closing_nonterminals {closing_nonterminals!r}; known: {CLOSING_FORMS}")
    if closing_nonterminals != "duplicated" and kind != "txl_trees":
        raise ValueError(f"closing_nonterminals {closing_nonterminals!r} is a form of TXL (trees)' sequence; "
                         f"{kind} reads {'duplicated closings (its COMPOSE/STACK pair)' if kind == 'tg' else 'no nonterminals'}")
    if not clip_relative_positions and (kind == "tg" or relative_form != "transformer_xl"):
        raise ValueError("clip_relative_positions: false is a setting of the TXLs' linear positions in the Transformer-XL "
                         f"form; {kind} with relative_form {relative_form!r} keeps its clipped table")
    return MicroBertConfig(
        vocab_size=vocab_size,
        syntax_attention="tg" if kind == "tg" else "causal",
        position_embedding_type="none",
        tg_num_terminals=num_terminals,
        tg_num_labels=num_labels,
        tg_kind=kind,
        tg_relative_positions=True,
        tg_relative_form=relative_form,
        tg_cnt2_attends_self=cnt2_attends_self,
        tg_closing_nonterminals=closing_nonterminals,
        tg_clip_relative_positions=clip_relative_positions,
        **overrides,
    )


def next_action_labels(input_ids: torch.Tensor, num_terminals: int, num_labels: int) -> torch.Tensor:
    """Labels (Sartran et al., §2.1): position i predicts a'[i+1], except where a'[i+1] is a CNT2
    copy (deterministic after its CNT1: TG's COMPOSE positions predict nothing), padding, or past
    the end (``IGNORE_INDEX``).  So no label is ever a CNT2 id, and a sequence without CNT2 copies
    (TXL (trees) on single closings) has the same prediction events as its duplicated form."""
    types = action_types(input_ids, num_terminals, num_labels)
    labels = torch.full_like(input_ids, IGNORE_INDEX)
    labels[:, :-1] = input_ids[:, 1:]
    no_prediction = types == PAD
    no_prediction[:, :-1] |= (types[:, 1:] == PAD) | (types[:, 1:] == CNT2)
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
        self.relative_form = getattr(config, "tg_relative_form", "bias")  # configs saved before the TXL form: "bias"
        self.clipped = getattr(config, "tg_clip_relative_positions", True)
        layers, heads = config.num_hidden_layers, config.num_attention_heads
        if self.relative_form == "bias":
            # b_{l,h}[R + 1]: zero at start, so training begins from position-free attention.
            self.relative_bias = nn.Parameter(torch.zeros(layers, heads, NUM_RELATIVE_POSITIONS))
        else:
            head_size = config.hidden_size // heads
            self.register_buffer("relative_sinusoids", sinusoids(NUM_RELATIVE_POSITIONS, config.hidden_size), persistent=False)
            self.relative_key_projections = nn.ModuleList(
                nn.Linear(config.hidden_size, config.hidden_size, bias=False) for _ in range(layers)
            )
            # TXL's u (content) and v (position) query biases, per layer and head.
            self.content_query_bias = nn.Parameter(torch.randn(layers, heads, head_size) * config.initializer_range)
            self.position_query_bias = nn.Parameter(torch.randn(layers, heads, head_size) * config.initializer_range)
            self.relative_dropout = nn.Dropout(config.hidden_dropout_prob)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def relative_positions(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.config.tg_kind == "tg":
            return tg_relative_positions(action_types(input_ids, self.config.tg_num_terminals, self.config.tg_num_labels))
        return linear_relative_positions(*input_ids.shape, device=input_ids.device, clip=self.clipped)

    def position_scores(self, input_ids: torch.Tensor) -> list[torch.Tensor]:
        """Per layer, the (B, H, T, T) relative-position score b_{l,h}[R_ij]."""
        index = self.relative_positions(input_ids) - RELATIVE_POSITION_MIN  # (B, T, T) in [0, 64)
        # One lookup for all layers: table (L, H, 64) indexed by (B, T, T) → (L, H, B, T, T).  (Its
        # backward is a scatter-add into the small table; a gather from an expanded table would
        # materialise a 64× larger gradient.)
        scores = self.relative_bias[:, :, index].transpose(1, 2)
        return list(scores.unbind(0))

    def transformer_xl_terms(self, input_ids: torch.Tensor) -> AttentionModifier:
        """u as each layer's query offset and (index, r, v) as its relative keys (module doc)."""
        index = self.relative_positions(input_ids) - RELATIVE_POSITION_MIN  # (B, T, T) in [0, P)
        # Unclipped, the table covers R = −1 … T − 1 of this batch's length.
        table = (self.relative_sinusoids if self.clipped
                 else sinusoids(input_ids.shape[1] + 1, self.config.hidden_size).to(self.relative_sinusoids.device))
        encodings = self.relative_dropout(table)
        heads = self.config.num_attention_heads
        keys = [projection(encodings).view(table.shape[0], heads, -1) for projection in self.relative_key_projections]
        return AttentionModifier(
            query_offset=[u[None, :, None, :] for u in self.content_query_bias.unbind(0)],
            relative_keys=[RelativePositionKeys(index, layer_keys, v) for layer_keys, v in zip(keys, self.position_query_bias.unbind(0))],
        )

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> LmOutput:
        attention_mask = (input_ids != self.config.pad_token_id).long()
        modifier = None
        if self.config.tg_relative_positions:
            modifier = (AttentionModifier(score_bias=self.position_scores(input_ids)) if self.relative_form == "bias"
                        else self.transformer_xl_terms(input_ids))
        hidden = self.encoder(input_ids, attention_mask=attention_mask, attention_modifier=modifier).last_hidden_state
        logits = hidden @ self.encoder.embeddings.word_embeddings.weight.T + self.output_bias
        if labels is None:
            return LmOutput(logits)
        nll = nn.functional.cross_entropy(logits.transpose(1, 2), labels, ignore_index=IGNORE_INDEX, reduction="none")
        labelled = labels != IGNORE_INDEX
        return LmOutput(logits, nll.sum() / labelled.sum().clamp(min=1), nll * labelled)


def sinusoids(count: int, size: int) -> torch.Tensor:
    """(count, size) Transformer sinusoids of the relative positions R = −1 … count − 2 (row R + 1)."""
    positions = torch.arange(count, dtype=torch.float32)[:, None] + RELATIVE_POSITION_MIN
    frequencies = torch.exp(torch.arange(0, size, 2, dtype=torch.float32) * (-torch.log(torch.tensor(10000.0)) / size))
    table = torch.zeros(count, size)
    table[:, 0::2] = torch.sin(positions * frequencies)
    table[:, 1::2] = torch.cos(positions * frequencies)
    return table


def allowed_next_actions(prefix: list[int], config, max_length: int) -> torch.Tensor:
    """(V,) boolean: the actions that keep ``prefix`` (<s> first) a prefix of a well-formed tree
    that fits in ``max_length`` positions.

    (ROOT opens the sentence and nothing else; after its close the sentence is over.  A closing
    action must close the innermost open constituent (its own label) and needs a child; "(ROOT",
    CNT2 ids (appended automatically after each CNT1 where the model duplicates closings), <s>,
    [PAD] and [SEP] are never sampled.  When only the closes still fit, only the close is allowed.
    """
    terminals, labels = config.tg_num_terminals, config.tg_num_labels
    close_width = 2 if duplicated_closings(config) else 1
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
    # Closing every open constituent takes close_width positions each.
    room = max_length - len(prefix) - close_width * len(open_labels)
    if children[-1] > 0:
        allowed[terminals + labels + open_labels[-1]] = True
    if room >= 1:
        allowed[5:terminals] = True  # terminals ([PAD] [CLS] [SEP] [UNK] [MASK] are 0-4)
    if room >= 2 + close_width:  # an open, a child and its close
        allowed[terminals + 1 : terminals + labels] = True
    return allowed


def closing_form(config) -> str:
    """The model's ``closing_nonterminals`` (configs saved before the setting: "duplicated")."""
    return getattr(config, "tg_closing_nonterminals", "duplicated")


def duplicated_closings(config) -> bool:
    """Whether the model's sequences follow each closing nonterminal with its CNT2 copy."""
    return closing_form(config) == "duplicated"


def well_formed(tokens: list[str], duplicated: bool = True) -> bool:
    """Is ``tokens`` (action strings, <s> first whatever its string) a bracketing
    "<s> (ROOT … ROOT) ROOT)²" where every "(X" is closed by "X)" then "X)²" ("X)" alone where not
    ``duplicated``), every constituent has a child, and nothing follows the ROOT close?  Checked on
    strings, independently of `allowed_next_actions`, so it can check the sampler (tests) and
    unconstrained draws (benchmarks/tg_campaign.py)."""
    ending = ["ROOT)", "ROOT)²"] if duplicated else ["ROOT)"]
    if tokens[1:2] != ["(ROOT"] or tokens[-len(ending):] != ending:
        return False
    stack: list[list] = []
    position = 1
    while position < len(tokens):
        token = tokens[position]
        if token.startswith("("):
            stack.append([token[1:], 0])
        elif token.endswith(")²"):
            return False  # only directly after its close
        elif token.endswith(")"):
            copy = [token + "²"] if duplicated else []
            if not stack or stack[-1][0] != token[:-1] or stack[-1][1] == 0 or tokens[position + 1 : position + 1 + len(copy)] != copy:
                return False
            stack.pop()
            if stack:
                stack[-1][1] += 1
            elif position + 1 + len(copy) != len(tokens):
                return False
            position += len(copy)
        else:
            if not stack:
                return False
            stack[-1][1] += 1
        position += 1
    return not stack


@torch.no_grad()
def draw_actions(model: TransformerGrammarLM, max_length: int, generator: torch.Generator, constrained: bool = True,
                 temperature: float = 1.0) -> tuple[list[int], list[float]]:
    """One ancestral sample of an action sequence (<s> first; each sampled CNT1 followed by its CNT2
    where the model duplicates closings) and, per step, the probability the model puts on actions `allowed_next_actions` forbids there.

    ``constrained``: draw among the allowed actions only, so the sample is a well-formed tree that
    fits in ``max_length``.  Otherwise draw from the model's whole distribution, as a test of how
    much of the grammar it has learned: the draw stops at the first forbidden action (it can no
    longer become a tree), at the close of ROOT, or at ``max_length``.  The model recomputes the
    whole prefix each step (its mask is causal, so this equals incremental decoding, only slower)."""
    config = model.config
    model.eval()
    first_close, first_copy = config.tg_num_terminals + config.tg_num_labels, config.tg_num_terminals + 2 * config.tg_num_labels
    sequence, forbidden_mass = [config.pad_token_id + 1], []  # <s> = [CLS]
    while constrained or len(sequence) < max_length:
        allowed = allowed_next_actions(sequence, config, max_length)
        if not allowed.any():
            break
        logits = model(torch.tensor([sequence])).logits[0, -1] / temperature
        probabilities = torch.softmax(logits, -1)
        forbidden_mass.append(float(probabilities[~allowed].sum()))
        if constrained:
            probabilities = torch.softmax(logits.masked_fill(~allowed, float("-inf")), -1)
        action = int(torch.multinomial(probabilities, 1, generator=generator))
        sequence.append(action)
        if not allowed[action]:
            break
        if first_close <= action < first_copy and duplicated_closings(config):
            sequence.append(action + config.tg_num_labels)  # the STACK copy of the close
    return sequence, forbidden_mass


def sample_actions(model: TransformerGrammarLM, num_samples: int, max_length: int, generator: torch.Generator,
                   temperature: float = 1.0) -> list[list[int]]:
    """Ancestral sampling of action sequences from a TG (or TXL(trees)) LM, constrained by
    `allowed_next_actions` (`draw_actions`)."""
    return [draw_actions(model, max_length, generator, temperature=temperature)[0] for _ in range(num_samples)]
