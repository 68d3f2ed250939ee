"""An interpolated trigram LM over subword ids, queried for every vocabulary candidate at once
(Edman et al. NLM-H and the trigram row of the MLM-accuracy table; Edman et al., §2.3 and §3.1).

Why not a package: the paper used KenLM, but the `kenlm` package on PyPI is an sdist (C++ build)
that only *queries* ARPA/binary models; `lmplz`, which builds them, is not in it, so nothing
installable from requirements.txt could build the model in CI.  `nltk.lm` builds one, but it
answers one n-gram per Python call: the ≈600 masked positions of a batch × ~8k candidates × 3
trigrams are ~15M calls per step, far outside the 1.3× step budget.  The model is a few count
tables, so it is written here, vectorised in torch over sorted int64 keys.

Estimation (absolute discounting, interpolated, Ney et al. 1994), with D = `discount`:

    p1(c)       = (N(c) + 1) / (N + V)                                     add-one unigram
    p2(c|b)     = max(N(b,c) − D, 0) / N(b·) + D·K(b·)/N(b·) · p1(c)        (p1(c) if N(b·) = 0)
    p3(c|a,b)   = max(N(a,b,c) − D, 0) / N(a,b·) + D·K(a,b·)/N(a,b·) · p2(c|b)

N(x·) = count of the context, K(x·) = distinct words after it.  Each training row "[CLS] w1 … wn
[SEP]" is counted as "[CLS] [CLS] w1 … wn [SEP] [SEP]" (the two BOS of a trigram model; two EOS so
that the last word is scored by a full trigram), every word after the first [CLS] is predicted.

`candidate_log_scores` scores a masked position p with the trigrams that contain it (the paper's
log p(C|A,B) + log p(D|B,C) + log p(E|C,D), Edman et al. §2.3), reading the *original* tokens
around p (each masked position is handled separately, their footnote 4), for every candidate C.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import torch

CLS_ID, SEP_ID = 1, 2


def _lookup(keys: torch.Tensor, values: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """values[i] where keys[i] == query (keys sorted, unique), 0 where the query is absent."""
    if keys.numel() == 0:
        return torch.zeros(queries.shape, dtype=values.dtype)
    at = torch.searchsorted(keys, queries).clamp(max=keys.numel() - 1)
    return torch.where(keys[at] == queries, values[at], torch.zeros((), dtype=values.dtype))


def _expand_ranges(starts: torch.Tensor, ends: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """For ranges [starts[n], ends[n]): (owner n of each element, element index), concatenated."""
    lengths = ends - starts
    owner = torch.repeat_interleave(torch.arange(len(starts)), lengths)
    offsets = torch.cumsum(lengths, 0) - lengths
    index = torch.arange(int(lengths.sum())) - offsets[owner] + starts[owner]
    return owner, index


@dataclass
class TrigramModel:
    """Count tables of an interpolated trigram LM (see module docstring).  All keys are int64, sorted.

    bigram_keys b·V+c, bigram_probs the discounted part max(N(b,c)−D,0)/N(b·);
    bigram_by_next: the same entries sorted by c·V+b (a column of the bigram table is contiguous);
    context_keys a·V+b of every trigram context, with context_totals N(a,b·), context_backoff D·K/N;
    context_by_second: those contexts sorted by b·V+a; trigram_keys (a·V+b)·V+c, trigram_probs
    max(N(a,b,c)−D,0)/N(a,b·).
    """

    vocab_size: int
    discount: float
    unigram: torch.Tensor  # (V,) p1
    bigram_backoff: torch.Tensor  # (V,) D·K(b·)/N(b·), 1 where N(b·) = 0
    bigram_keys: torch.Tensor
    bigram_probs: torch.Tensor
    bigram_by_next_keys: torch.Tensor
    bigram_by_next_probs: torch.Tensor
    context_keys: torch.Tensor
    context_backoff: torch.Tensor
    context_by_second_keys: torch.Tensor
    context_by_second_backoff: torch.Tensor
    trigram_keys: torch.Tensor
    trigram_probs: torch.Tensor

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[int]], vocab_size: int, discount: float = 0.75) -> "TrigramModel":
        """Count the trigrams of ``rows`` ([CLS] … [SEP] id lists)."""
        if not 0 < discount < 1:
            raise ValueError(f"absolute discount must be in (0, 1), got {discount}")
        V = vocab_size
        padded = [torch.tensor([CLS_ID] + list(row) + [SEP_ID], dtype=torch.long) for row in rows]
        if not padded:
            raise ValueError("cannot count a trigram model over no rows")
        a = torch.cat([p[:-2] for p in padded])
        b = torch.cat([p[1:-1] for p in padded])
        c = torch.cat([p[2:] for p in padded])
        unigram = (torch.bincount(c, minlength=V).double() + 1) / (c.numel() + V)

        def discounted(keys: torch.Tensor, context_of):
            """unique keys, their discounted probabilities, and per context: total, backoff weight."""
            keys, counts = torch.unique(keys, return_counts=True)
            contexts, inverse = torch.unique(context_of(keys), return_inverse=True)
            totals = torch.zeros(len(contexts), dtype=torch.double).index_add_(0, inverse, counts.double())
            types = torch.bincount(inverse, minlength=len(contexts)).double()
            probs = (counts.double() - discount).clamp(min=0) / totals[inverse]
            return keys, probs, contexts, discount * types / totals

        bigram_keys, bigram_probs, bigram_contexts, bigram_weights = discounted(b * V + c, lambda k: k // V)
        bigram_backoff = torch.ones(V, dtype=torch.double)
        bigram_backoff[bigram_contexts] = bigram_weights
        trigram_keys, trigram_probs, context_keys, context_backoff = discounted((a * V + b) * V + c, lambda k: k // V)
        by_next = torch.argsort((bigram_keys % V) * V + bigram_keys // V)
        by_second = torch.argsort((context_keys % V) * V + context_keys // V)
        return cls(
            vocab_size=V, discount=discount, unigram=unigram, bigram_backoff=bigram_backoff,
            bigram_keys=bigram_keys, bigram_probs=bigram_probs,
            bigram_by_next_keys=((bigram_keys % V) * V + bigram_keys // V)[by_next], bigram_by_next_probs=bigram_probs[by_next],
            context_keys=context_keys, context_backoff=context_backoff,
            context_by_second_keys=((context_keys % V) * V + context_keys // V)[by_second],
            context_by_second_backoff=context_backoff[by_second],
            trigram_keys=trigram_keys, trigram_probs=trigram_probs,
        )

    # -- single queries (vectorised over the query tensors) ------------------------------------------

    def bigram_prob(self, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        V = self.vocab_size
        return _lookup(self.bigram_keys, self.bigram_probs, b * V + c) + self.bigram_backoff[b] * self.unigram[c]

    def trigram_prob(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        V = self.vocab_size
        context = a * V + b
        seen = _lookup(self.context_keys, torch.ones_like(self.context_backoff), context) > 0
        backoff = torch.where(seen, _lookup(self.context_keys, self.context_backoff, context), torch.ones((), dtype=torch.double))
        return _lookup(self.trigram_keys, self.trigram_probs, context * V + c) + backoff * self.bigram_prob(b, c)

    # -- every candidate at once -----------------------------------------------------------------------

    def _row_range(self, keys: torch.Tensor, prefix: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """[start, end) of the keys in prefix·V … prefix·V + V − 1."""
        V = self.vocab_size
        return torch.searchsorted(keys, prefix * V), torch.searchsorted(keys, prefix * V + V)

    def candidate_log_scores(self, a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """(N, V) float64: log p3(C|a,b) + log p3(d|b,C) + log p3(e|C,d) for every candidate C, where
        (a, b, ·, d, e) are the original ids around N masked positions ((N,) long each)."""
        V, N = self.vocab_size, len(a)
        # log p3(C | a, b): p2(C|b) densely (backoff · unigram, plus the bigram row of b), then the trigram row.
        first = self.bigram_backoff[b][:, None] * self.unigram[None, :]
        owner, index = _expand_ranges(*self._row_range(self.bigram_keys, b))
        first[owner, self.bigram_keys[index] % V] += self.bigram_probs[index]
        context = a * V + b
        seen = _lookup(self.context_keys, torch.ones_like(self.context_backoff), context) > 0
        first *= torch.where(seen, _lookup(self.context_keys, self.context_backoff, context), torch.ones((), dtype=torch.double))[:, None]
        owner, index = _expand_ranges(*self._row_range(self.trigram_keys, context))
        first[owner, self.trigram_keys[index] % V] += self.trigram_probs[index]

        # log p3(d | b, C): p2(d|C) for every C (backoff · p1(d), plus the bigram column of d) ...
        second = self.bigram_backoff[None, :] * self.unigram[d][:, None]
        owner, index = _expand_ranges(*self._row_range(self.bigram_by_next_keys, d))
        second[owner, self.bigram_by_next_keys[index] % V] += self.bigram_by_next_probs[index]
        # ... replaced by p3 where the context (b, C) was seen: the contexts that start with b.
        owner, index = _expand_ranges(*self._row_range(self.context_keys, b))
        middle = self.context_keys[index] % V
        trigram = _lookup(self.trigram_keys, self.trigram_probs, self.context_keys[index] * V + d[owner])
        second[owner, middle] = trigram + self.context_backoff[index] * second[owner, middle]

        # log p3(e | C, d): p2(e|d) where (C, d) was never a context, p3 where it was (contexts ending in d).
        third = self.bigram_prob(d, e)[:, None].expand(N, V).clone()
        owner, index = _expand_ranges(*self._row_range(self.context_by_second_keys, d))
        left = self.context_by_second_keys[index] % V
        trigram = _lookup(self.trigram_keys, self.trigram_probs, (left * V + d[owner]) * V + e[owner])
        third[owner, left] = trigram + self.context_by_second_backoff[index] * third[owner, left]
        return first.log() + second.log() + third.log()

    def position_contexts(self, original_ids: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor):
        """(a, b, d, e) around each target (row, position) of [CLS] … [SEP] rows (padded with [PAD]):
        left of position 0 reads [CLS], at or past a row's length reads [SEP] (the counting's padding)."""
        rows, positions = targets[:, 0], targets[:, 1]
        offsets = positions[:, None] + torch.tensor([-2, -1, 1, 2])
        inside = original_ids[rows[:, None], offsets.clamp(0, original_ids.shape[1] - 1)]
        ids = torch.where(offsets < 0, CLS_ID, torch.where(offsets >= lengths[rows][:, None], SEP_ID, inside))
        return ids.unbind(1)


def soft_labels(scores: torch.Tensor, candidates: torch.Tensor, top: int = 100, power: float = 6.0) -> Tuple[torch.Tensor, torch.Tensor]:
    """Edman et al.'s soft labels from (N, V) candidate scores: min-max normalise over ``candidates``
    (a (V,) bool mask; others never get mass), keep the ``top`` best, raise to ``power``,
    renormalise.  Returns ((N, k) ids, (N, k) float32 probabilities summing to 1), k = min(top, #candidates)."""
    scores = scores.masked_fill(~candidates, float("-inf"))
    best, ids = scores.topk(min(top, int(candidates.sum())), dim=-1)
    low = scores.masked_fill(~candidates, float("inf")).min(-1, keepdim=True).values
    high = best[:, :1]
    weights = ((best - low) / (high - low).clamp(min=1e-12)).pow(power)
    weights = torch.where(high > low, weights, torch.ones_like(weights))  # all candidates equal: uniform over the kept
    return ids, (weights / weights.sum(-1, keepdim=True)).float()


def soft_labels_at(model: TrigramModel, ids: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor, candidates: torch.Tensor):
    """(ids, probs) (N, 100) of the N ``targets`` (row, position) of the [CLS] … [SEP] rows ``ids``,
    scored on those (original) ids: each position sees the other positions' original words."""
    return soft_labels(model.candidate_log_scores(*model.position_contexts(ids, lengths, targets)), candidates)


@dataclass
class SoftLabelTable:
    """H's soft labels of every word position of a fixed set of rows, computed once (a cached step)
    so that a pretraining step only gathers them.  Row ``r`` ([CLS] w1 … wn [SEP]) owns entries
    ``offsets[r] … offsets[r] + n − 1``, one per position 1 … n; a label depends on the row's ids
    alone, so rows are keyed by their ids and repeated rows share their entries."""

    vocab_size: int
    offsets: Dict[Tuple[int, ...], int]
    ids: torch.Tensor  # (P, k) int16 where the vocabulary fits, else int32
    probs: torch.Tensor  # (P, k) float32, each row sums to 1

    @classmethod
    def from_rows(
        cls, model: TrigramModel, rows: Iterable[Sequence[int]], candidates: torch.Tensor,
        positions_per_chunk: int = 512, progress: Optional[Callable[[int], None]] = None,
    ) -> "SoftLabelTable":
        """Score every word position of ``rows`` with ``soft_labels_at``, ``positions_per_chunk`` at a
        time (each holds three (positions, V) float64 tables); ``progress(n)`` after each n rows."""
        # Each distinct row's first entry, in order of first appearance (the order they are scored in).
        offsets: Dict[Tuple[int, ...], int] = {}
        size = 0
        for number, row in enumerate(rows):
            key = tuple(int(i) for i in row)
            if len(key) < 3:
                raise ValueError(f"row {number} has no word between [CLS] and [SEP]: {list(key)}")
            if key not in offsets:
                offsets[key], size = size, size + len(key) - 2
        id_dtype = torch.int16 if model.vocab_size <= torch.iinfo(torch.int16).max + 1 else torch.int32
        ids_parts: List[torch.Tensor] = []
        probs_parts: List[torch.Tensor] = []
        chunk: List[Tuple[int, ...]] = []
        positions = 0
        for number, key in enumerate(offsets, 1):
            chunk.append(key)
            positions += len(key) - 2
            if positions >= positions_per_chunk or number == len(offsets):
                ids, probs = cls._score(model, chunk, candidates)
                ids_parts.append(ids.to(id_dtype))
                probs_parts.append(probs)
                if progress is not None:
                    progress(len(chunk))
                chunk, positions = [], 0
        return cls(model.vocab_size, offsets, torch.cat(ids_parts), torch.cat(probs_parts))

    @staticmethod
    def _score(model: TrigramModel, rows: List[Tuple[int, ...]], candidates: torch.Tensor):
        lengths = torch.tensor([len(row) for row in rows])
        padded = torch.zeros(len(rows), int(lengths.max()), dtype=torch.long)
        for r, row in enumerate(rows):
            padded[r, : len(row)] = torch.tensor(row)
        # Row-major (row, position 1 … n): the order the table stores them in.
        targets = torch.cat([torch.stack([torch.full((len(row) - 2,), r), torch.arange(1, len(row) - 1)], 1) for r, row in enumerate(rows)])
        return soft_labels_at(model, padded, lengths, targets, candidates)

    def lookup(self, rows: Sequence[Sequence[int]], targets: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(ids long, probs) of ``targets`` (row, position ≥ 1) of ``rows`` (their unpadded ids)."""
        starts, words = [], []
        for r, row in enumerate(rows):
            start = self.offsets.get(tuple(row))
            if start is None:
                raise ValueError(f"row {r} of the batch is not in the soft-label table (a table of other pretraining data?)")
            starts.append(start)
            words.append(len(row) - 2)
        positions = targets[:, 1]
        if bool(((positions < 1) | (positions > torch.tensor(words)[targets[:, 0]])).any()):
            raise ValueError("soft labels exist for word positions only, not for [CLS], [SEP] or padding")
        index = torch.tensor(starts, dtype=torch.long)[targets[:, 0]] + positions - 1
        return self.ids[index].long(), self.probs[index]

    def __len__(self) -> int:
        return len(self.ids)
