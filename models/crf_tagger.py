"""BiLSTM-CRF span tagger for WikiAnn NER, after AllenNLP's ``crf_tagger`` (the reference's `configs/ner.jsonnet`).

    word vectors (WordEncoder: encoder → scalar mix → subword mean) → dropout
      → BiLSTM (2 × 200 per direction, dropout 0.5 between layers) → dropout
      → linear emissions → linear-chain CRF over BIOUL tags

The CRF is ``pytorch-crf``'s, constrained as AllenNLP does with ``label_encoding="BIOUL"`` and
``include_start_end_transitions=False``: illegal transitions (``O → I-PER``, ``B-LOC → I-PER``, …)
score −∞, and the start/end scores are not learned, only a −∞ for starting with ``I-``/``L-`` or
ending with ``B-``/``I-``. Here the constraints hold in the likelihood as well as in Viterbi
decoding (AllenNLP applies the start/end part only when decoding), so the model can neither
train towards nor emit a tag sequence that does not spell out whole spans.

A syntax-guided encoder's structural-probe term α (L_dist + L_depth) (Ahmad et al., §2.4, a mean over
sentences) is added to that summed loss. Ahmad et al. set α against a task loss averaged over tokens,
so ``probe_weighting="per_word"`` multiplies the term by the batch's word count: the loss is then W
times (the CRF's loss per word + the probe term), the paper's balance at the summed loss's scale.
``"per_batch"`` adds the term once, where against the CRF's per-word loss it weighs α / W.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn
from torch.nn.utils import parametrize
from torchcrf import CRF

from .word_encoder import BiLSTM, WordEncoder

OUTSIDE = "O"
PROBE_WEIGHTINGS = ("per_word", "per_batch")


def split_tag(tag: str) -> Tuple[str, Optional[str]]:
    """("B", "PER") for "B-PER"; ("O", None) for "O"."""
    if tag == OUTSIDE:
        return OUTSIDE, None
    prefix, _, entity = tag.partition("-")
    if prefix not in ("B", "I", "L", "U") or not entity:
        raise ValueError(f"not a BIOUL tag: {tag!r}")
    return prefix, entity


def bioul_constraints(labels: Sequence[str]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Boolean (allowed[i, j] for label i → label j, may start, may end) for BIOUL labels.

    Inside a span (after B-x or I-x) only I-x or L-x may follow; outside one (after O, L-*, U-*
    or at the start) only O, B-* or U-* may follow; a sequence must end outside a span.
    """
    parts = [split_tag(label) for label in labels]
    opens = torch.tensor([prefix in ("B", "I") for prefix, _ in parts])  # a span is still open after it
    continues = torch.tensor([prefix in ("I", "L") for prefix, _ in parts])  # needs an open span before it
    entity = [entity for _, entity in parts]
    same_entity = torch.tensor([[a == b for b in entity] for a in entity])
    allowed = torch.where(opens[:, None], continues[None, :] & same_entity, ~continues[None, :])
    return allowed, ~continues, ~opens


class _MaskIllegal(nn.Module):
    """Parametrization: the learned transition scores with illegal entries fixed at −∞."""

    def __init__(self, allowed: torch.Tensor):
        super().__init__()
        self.register_buffer("forbidden", ~allowed)

    def forward(self, weights: torch.Tensor) -> torch.Tensor:
        return weights.masked_fill(self.forbidden, float("-inf"))


class BioulCrf(CRF):
    """``torchcrf.CRF`` (batch first) whose transitions obey BIOUL; see the module docstring.

    ``transitions`` reads as the masked matrix (a torch parametrization over the learned one), and
    ``start_transitions``/``end_transitions`` are constant 0/−∞ buffers, so the package's own
    forward algorithm and Viterbi decoding run unchanged on the constrained scores.
    """

    def __init__(self, labels: Sequence[str]):
        super().__init__(len(labels), batch_first=True)
        self.labels = list(labels)
        allowed, may_start, may_end = bioul_constraints(self.labels)
        self.outside_index = self.labels.index(OUTSIDE)
        del self.start_transitions, self.end_transitions
        self.register_buffer("start_transitions", torch.zeros(len(labels)).masked_fill(~may_start, float("-inf")))
        self.register_buffer("end_transitions", torch.zeros(len(labels)).masked_fill(~may_end, float("-inf")))
        parametrize.register_parametrization(self, "transitions", _MaskIllegal(allowed))

    def reset_parameters(self) -> None:
        # The parent initialises all three score tensors; only the transitions are learned here,
        # and after __init__ they sit behind the parametrization.
        with torch.no_grad():
            target = self.parametrizations.transitions.original if parametrize.is_parametrized(self, "transitions") else self.transitions
            nn.init.uniform_(target, -0.1, 0.1)

    def log_likelihood(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Per-sequence log p(tags | emissions), shape (B,).

        pytorch-crf multiplies the transition score into padded steps by 0, and 0 × −∞ is NaN,
        so padded positions are given the O tag: O → O and (legal last tag) → O are finite.
        """
        tags = tags.masked_fill(~mask, self.outside_index)
        return self(emissions, tags, mask, reduction="none")


class CrfTagger(nn.Module):
    """Word-level BIOUL tagger; see the module docstring. ``lstm_layers=0`` drops the BiLSTM
    (emissions straight from the word vectors)."""

    def __init__(
        self,
        encoder: nn.Module,
        labels: Sequence[str],
        lstm_hidden: int = 200,
        lstm_layers: int = 2,
        lstm_dropout: float = 0.5,
        dropout: float = 0.5,
        mix_embedding_layer: bool = True,
        probe_weighting: str = "per_batch",
    ):
        super().__init__()
        if probe_weighting not in PROBE_WEIGHTINGS:
            raise ValueError(f"unknown probe_weighting {probe_weighting!r}; known: {PROBE_WEIGHTINGS}")
        self.labels = list(labels)
        self.probe_weighting = probe_weighting
        self.word_encoder = WordEncoder(encoder, mix_embedding_layer)
        self.dropout = nn.Dropout(dropout)
        features = self.word_encoder.output_dim
        self.lstm = None
        if lstm_layers > 0:
            self.lstm = BiLSTM(features, lstm_hidden, num_layers=lstm_layers, dropout=lstm_dropout)
            features = 2 * lstm_hidden
        self.emission_layer = nn.Linear(features, len(self.labels))
        self.crf = BioulCrf(self.labels)

    def emissions(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        word_spans: torch.Tensor,
        word_mask: torch.Tensor,
        heads: Optional[torch.Tensor] = None,
        upos_ids: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """(B, W, num_labels) tag scores per word."""
        words = self.dropout(self.word_encoder(input_ids, attention_mask, word_spans, word_mask, heads, upos_ids))
        if self.lstm is not None:
            words = self.dropout(self.lstm(words, word_mask))
        return self.emission_layer(words)

    def forward(self, tags: Optional[torch.Tensor] = None, **batch: torch.Tensor) -> Dict[str, torch.Tensor]:
        """``emissions``; with gold ``tags`` (B, W) also ``loss`` = −Σ log-likelihood over the
        batch (AllenNLP's crf_tagger sums, it does not average), plus a syntax-guided encoder's
        structural-probe term α (L_dist + L_depth) (``probe_weighting``, see the module docstring)."""
        output = {"emissions": self.emissions(**batch)}
        if tags is not None:
            output["loss"] = -self.crf.log_likelihood(output["emissions"], tags, batch["word_mask"]).sum()
            probe = self.word_encoder.auxiliary_loss
            if probe is not None:
                if self.probe_weighting == "per_word":
                    probe = probe * batch["word_mask"].sum()
                output["loss"] = output["loss"] + probe
        return output

    @torch.no_grad()
    def decode(self, emissions: torch.Tensor, word_mask: torch.Tensor) -> List[List[str]]:
        """Best legal label sequence for each sentence (constrained Viterbi)."""
        return [[self.labels[i] for i in path] for path in self.crf.decode(emissions, word_mask)]


__all__ = ["PROBE_WEIGHTINGS", "BioulCrf", "CrfTagger", "bioul_constraints", "split_tag"]
