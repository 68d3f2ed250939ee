"""Biaffine dependency parser over a fine-tuned subword encoder (the paper's Table 2 task).

This follows AllenNLP's ``biaffine_parser`` as configured by the reference's `parser_eval.jsonnet`:

    words ──WordEncoder (encoder, ScalarMix over all layers, subword mean pooling; no POS input)
          ──input dropout──BiLSTM──[ROOT sentinel prepended as word 0]
          ──arc MLPs (head / dependent) ──biaffine arc scores   s[b, i, j] = score of j heading i
          ──label MLPs (head / dependent) ──bilinear label scores for the pair (i, head(i))

Training minimises the cross-entropy of the gold head of every word plus that of its gold label
(given the gold head). Decoding finds the maximum spanning tree with exactly one dependent of ROOT
(Stanza's Chu-Liu/Edmonds), then labels each chosen arc.

Deviations from AllenNLP, kept small on purpose: no highway connections or recurrent dropout in
the LSTM (torch's fused kernels need a plain one), with ``dropout`` between its layers instead
(AllenNLP's stacked LSTM drops nothing there); labels chosen after the tree rather than jointly
with it; a label scorer with a linear term beside the bilinear one (AllenNLP's ``tag_bilinear`` is
the bilinear one alone); exactly one dependent of ROOT in decoding, where AllenNLP's MST allows
several; and by default plain dropout on the LSTM output and the MLPs, where AllenNLP drops whole
features of a sentence (``InputVariationalDropout``; ``variational_dropout=True`` here) and its
embedder leaves the embedding layer out of the scalar mix (``mix_embedding_layer=False``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
import torch
from torch import nn

from .word_encoder import BiLSTM, WordEncoder


@dataclass
class ParserOutput:
    """``arc_scores`` (B, W+1, W+1): row i = dependent i, column j = candidate head j (0 = ROOT;
    padded columns and self-loops are −inf; row 0, ROOT as a dependent, is never read).
    ``dep_labels``/``head_labels`` are the label MLP outputs (B, W+1, label_dim) that `label_logits`
    combines for any choice of heads."""

    arc_scores: torch.Tensor
    dep_labels: torch.Tensor
    head_labels: torch.Tensor
    mask: torch.Tensor  # (B, W+1) real positions, ROOT included
    loss: Optional[torch.Tensor] = None
    arc_loss: Optional[torch.Tensor] = None
    label_loss: Optional[torch.Tensor] = None


class VariationalDropout(nn.Dropout):
    """Dropout with one mask per sequence: a (B, T, H) input loses the same features at every
    position T (AllenNLP's ``InputVariationalDropout``, Gal & Ghahramani 2016)."""

    def forward(self, values: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return values
        return values * super().forward(values.new_ones(values.shape[0], 1, values.shape[-1]))


def _mlp(in_dim: int, out_dim: int, dropout: float, variational: bool = False) -> nn.Sequential:
    # AllenNLP's parser uses one ELU feed-forward layer per role, its output then dropped.
    return nn.Sequential(nn.Linear(in_dim, out_dim), nn.ELU(), (VariationalDropout if variational else nn.Dropout)(dropout))


class BiaffineDependencyParser(nn.Module):
    def __init__(
        self,
        encoder: nn.Module,
        num_labels: int,
        lstm_hidden: int = 400,
        lstm_layers: int = 3,
        arc_dim: int = 100,
        label_dim: int = 100,
        dropout: float = 0.3,
        input_dropout: float = 0.3,
        variational_dropout: bool = False,
        mix_embedding_layer: bool = True,
    ):
        super().__init__()
        self.word_encoder = WordEncoder(encoder, mix_embedding_layer)
        self.input_dropout = nn.Dropout(input_dropout)
        self.lstm = BiLSTM(self.word_encoder.output_dim, lstm_hidden, num_layers=lstm_layers, dropout=dropout)
        encoded_dim = 2 * lstm_hidden
        self.encoded_dropout = (VariationalDropout if variational_dropout else nn.Dropout)(dropout)
        # ROOT is a learned vector in the LSTM's output space, as AllenNLP's head sentinel: the
        # LSTM never reads it, so sentence encodings do not depend on it.
        self.root = nn.Parameter(torch.randn(encoded_dim) * 0.02)
        self.arc_dep_mlp = _mlp(encoded_dim, arc_dim, dropout, variational_dropout)
        self.arc_head_mlp = _mlp(encoded_dim, arc_dim, dropout, variational_dropout)
        self.label_dep_mlp = _mlp(encoded_dim, label_dim, dropout, variational_dropout)
        self.label_head_mlp = _mlp(encoded_dim, label_dim, dropout, variational_dropout)
        # Biaffine arc scorer: dep·W·head + head·u (u scores how likely a word is to be a head at all;
        # a dependent-only term would be constant over candidate heads and cancel in the softmax).
        self.arc_weight = nn.Parameter(torch.empty(arc_dim, arc_dim))
        self.arc_head_bias = nn.Parameter(torch.zeros(arc_dim))
        nn.init.xavier_uniform_(self.arc_weight)
        # Label scorer: dep·U_l·head + b (torch's nn.Bilinear) + V·[dep; head] (a linear term).
        self.label_bilinear = nn.Bilinear(label_dim, label_dim, num_labels)
        self.label_linear = nn.Linear(2 * label_dim, num_labels, bias=False)
        self.num_labels = num_labels

    # ------------------------------------------------------------------------------------------

    def encode(self, input_ids, attention_mask, word_spans, word_mask, heads=None, upos_ids=None) -> Tuple[torch.Tensor, torch.Tensor]:
        """(B, W+1, 2·hidden) contextual word vectors with ROOT at 0, and the (B, W+1) mask."""
        words = self.input_dropout(self.word_encoder(input_ids, attention_mask, word_spans, word_mask, heads, upos_ids))
        encoded = self.lstm(words, word_mask)
        root = self.root.expand(encoded.shape[0], 1, -1)
        encoded = self.encoded_dropout(torch.cat([root, encoded], dim=1))
        mask = torch.cat([torch.ones_like(word_mask[:, :1]), word_mask], dim=1)
        return encoded, mask

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        word_spans: torch.Tensor,
        word_mask: torch.Tensor,
        heads: Optional[torch.Tensor] = None,
        gold_heads: Optional[torch.Tensor] = None,
        gold_labels: Optional[torch.Tensor] = None,
        upos_ids: Optional[torch.Tensor] = None,
    ) -> ParserOutput:
        """``heads``: the encoder's subword tree (SLA encoders only). ``gold_heads``/``gold_labels``
        (B, W): word-level targets (heads 0..n, 0 = ROOT; padding ignored through ``word_mask``);
        given both, the output carries the loss (plus a syntax-guided encoder's structural-probe
        loss).  ``upos_ids``: subword UPOS ids (syntax-guided encoders only)."""
        encoded, mask = self.encode(input_ids, attention_mask, word_spans, word_mask, heads, upos_ids)
        dep, head = self.arc_dep_mlp(encoded), self.arc_head_mlp(encoded)
        scores = dep @ self.arc_weight @ head.transpose(1, 2) + (head @ self.arc_head_bias)[:, None, :]
        # No padded column and no self-loop can be a head; ROOT's own row is never scored.
        blocked = ~mask[:, None, :] | torch.eye(mask.shape[1], dtype=torch.bool, device=mask.device)
        scores = scores.masked_fill(blocked, float("-inf"))
        output = ParserOutput(scores, self.label_dep_mlp(encoded), self.label_head_mlp(encoded), mask)
        if gold_heads is not None and gold_labels is not None:
            self._add_loss(output, word_mask, gold_heads, gold_labels)
            if self.word_encoder.auxiliary_loss is not None:
                output.loss = output.loss + self.word_encoder.auxiliary_loss
        return output

    def label_logits(self, output: ParserOutput, heads: torch.Tensor) -> torch.Tensor:
        """(B, W, num_labels) label scores of each word i given its head ``heads[:, i]`` (B, W)."""
        dep = output.dep_labels[:, 1:]
        index = heads.clamp(min=0)[..., None].expand(-1, -1, output.head_labels.shape[-1])
        head = output.head_labels.gather(1, index)
        return self.label_bilinear_scores(dep, head) + self.label_linear(torch.cat([dep, head], dim=-1))

    def label_bilinear_scores(self, dep: torch.Tensor, head: torch.Tensor) -> torch.Tensor:
        """``self.label_bilinear(dep, head)`` as two matmuls. torch's bilinear kernel expands the
        product element-wise on CPU and took ~40% of a fine-tuning step; this is the same sum
        (same parameters, so checkpoints are unchanged) at a fraction of the cost."""
        weight = self.label_bilinear.weight  # (labels, dep_dim, head_dim)
        labels, dep_dim, head_dim = weight.shape
        dep_times_weight = dep.reshape(-1, dep_dim) @ weight.permute(1, 0, 2).reshape(dep_dim, labels * head_dim)
        scores = torch.bmm(dep_times_weight.view(-1, labels, head_dim), head.reshape(-1, head_dim, 1))
        return scores.view(*dep.shape[:-1], labels) + self.label_bilinear.bias

    def _add_loss(self, output: ParserOutput, word_mask, gold_heads, gold_labels) -> None:
        arc_log_probs = torch.log_softmax(output.arc_scores[:, 1:], dim=-1)  # (B, W, W+1)
        gold_arc = arc_log_probs.gather(-1, gold_heads.clamp(min=0)[..., None]).squeeze(-1)
        label_log_probs = torch.log_softmax(self.label_logits(output, gold_heads), dim=-1)
        gold_label = label_log_probs.gather(-1, gold_labels.clamp(min=0)[..., None]).squeeze(-1)
        words = word_mask.sum().clamp(min=1)
        output.arc_loss = -(gold_arc * word_mask).sum() / words
        output.label_loss = -(gold_label * word_mask).sum() / words
        output.loss = output.arc_loss + output.label_loss

    # ------------------------------------------------------------------------------------------

    @torch.no_grad()
    def decode(self, output: ParserOutput) -> Tuple[List[List[int]], List[List[int]]]:
        """Per sentence: MST heads (1-based, 0 = ROOT, exactly one root) and label ids.

        Where every word's best head already makes a tree with one root, that tree is the MST
        (no tree scores more than each word's best arc), so only the other sentences go through
        Chu-Liu/Edmonds, one at a time on the CPU: a trained parser's dev set is mostly the former."""
        arc_log_probs = torch.log_softmax(output.arc_scores, dim=-1)
        greedy, is_tree = greedy_trees(arc_log_probs, output.mask)
        lengths = output.mask.sum(-1).tolist()  # ROOT included
        greedy, is_tree = greedy.tolist(), is_tree.tolist()
        needs_mst = [b for b, tree in enumerate(is_tree) if not tree]
        log_probs_to_search = arc_log_probs[needs_mst].cpu().numpy() if needs_mst else None
        trees = [greedy[b][1:n] for b, n in enumerate(lengths)]
        for row, b in enumerate(needs_mst):
            trees[b] = mst_heads(log_probs_to_search[row, : lengths[b], : lengths[b]])
        heads = torch.zeros(output.mask.shape[0], output.mask.shape[1] - 1, dtype=torch.long)
        for b, tree in enumerate(trees):
            heads[b, : len(tree)] = torch.as_tensor(tree)
        labels = self.label_logits(output, heads.to(output.arc_scores.device)).argmax(-1).cpu()
        return [list(tree) for tree in trees], [labels[b, : len(tree)].tolist() for b, tree in enumerate(trees)]


def greedy_trees(arc_scores: torch.Tensor, mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Each word's best head, (B, W+1) with 0 at ROOT and padding, and whether they make a tree
    with exactly one dependent of ROOT, (B,). Vectorised on the scores' device: a word's chain of
    heads reaches ROOT within W steps unless it is on or above a cycle, and ⌈log2(W+1)⌉ rounds of
    pointer doubling follow 2^k steps at once."""
    heads = arc_scores.argmax(-1).masked_fill(~mask, 0)
    heads[:, 0] = 0
    one_root = ((heads == 0) & mask).sum(-1) == 2  # ROOT itself, and one word
    ancestor = heads
    for _ in range(max(1, (mask.shape[1] - 1).bit_length())):
        ancestor = ancestor.gather(1, ancestor)
    return heads, one_root & (ancestor == 0).all(-1)


def mst_heads(log_probs: np.ndarray) -> List[int]:
    """Heads of words 1..n from an (n+1, n+1) matrix of log-probabilities (row = dependent,
    column = head; row 0 is ROOT). Stanza's Chu-Liu/Edmonds with the single-root reweighting,
    which assumes scores ≤ 0 (log-probabilities): it lowers every root arc by n·min."""
    scores = np.array(log_probs, dtype=np.float64)
    # −inf entries (self-loops, ROOT's row) would break the reweighting's finite minimum only if
    # a row were all −inf; a 1-word sentence still has its ROOT column, so this cannot happen.
    from stanza.models.common.chuliu_edmonds import chuliu_edmonds_one_root

    return [int(h) for h in chuliu_edmonds_one_root(scores)[1:]]


__all__ = ["BiaffineDependencyParser", "ParserOutput", "greedy_trees", "mst_heads"]
