"""H: n-gram soft labels (Edman et al., §2.3, NLM-H).  The vectorised trigram model and soft labels
are pinned against a dictionary-count trigram written out as in the paper's formulas, looped over
candidates; H pretrains through the real step on real Wolof rows."""
from __future__ import annotations

import json
import math
from collections import Counter

import pytest
import torch

from models.ngram import TrigramModel, soft_labels
from test_pretrain import TINY_MODEL, pretraining_data, tokenizer_dir  # noqa: F401  (fixtures)


class BruteForceTrigram:
    """Interpolated absolute discounting with an add-one unigram, from dictionaries."""

    def __init__(self, rows, vocab_size, discount=0.75):
        self.V, self.D = vocab_size, discount
        self.uni, self.bi, self.tri = Counter(), Counter(), Counter()
        for row in rows:
            padded = [1] + list(row) + [2]
            for i in range(2, len(padded)):
                self.uni[padded[i]] += 1
                self.bi[padded[i - 1], padded[i]] += 1
                self.tri[padded[i - 2], padded[i - 1], padded[i]] += 1
        self.total = sum(self.uni.values())
        # Context totals N(x·) and distinct followers K(x·), counted once.
        self.bi_total, self.bi_types, self.tri_total, self.tri_types = Counter(), Counter(), Counter(), Counter()
        for (b, _), n in self.bi.items():
            self.bi_total[b] += n
            self.bi_types[b] += 1
        for (a, b, _), n in self.tri.items():
            self.tri_total[a, b] += n
            self.tri_types[a, b] += 1

    def p1(self, c):
        return (self.uni[c] + 1) / (self.total + self.V)

    def p2(self, b, c):
        total, types = self.bi_total[b], self.bi_types[b]
        if total == 0:
            return self.p1(c)
        return max(self.bi[b, c] - self.D, 0) / total + self.D * types / total * self.p1(c)

    def p3(self, a, b, c):
        total, types = self.tri_total[a, b], self.tri_types[a, b]
        if total == 0:
            return self.p2(b, c)
        return max(self.tri[a, b, c] - self.D, 0) / total + self.D * types / total * self.p2(b, c)

    def scores(self, row, position):
        """log-score of every candidate at ``position`` of the [CLS] … [SEP] row."""
        padded = [1] + list(row) + [2]
        a, b, d, e = padded[position - 1], padded[position], padded[position + 2], padded[position + 3]
        return [math.log(self.p3(a, b, c)) + math.log(self.p3(b, c, d)) + math.log(self.p3(c, d, e)) for c in range(self.V)]


def brute_force_soft_label(scores, candidates, top=100, power=6):
    kept = [c for c in range(len(scores)) if candidates[c]]
    low, high = min(scores[c] for c in kept), max(scores[c] for c in kept)
    ranked = sorted(kept, key=lambda c: -scores[c])[:top]
    weights = {c: ((scores[c] - low) / (high - low)) ** power for c in ranked}
    total = sum(weights.values())
    return {c: w / total for c, w in weights.items()}


def toy_rows(vocab_size=40, rows=60, seed=0):
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(rows):
        n = int(torch.randint(1, 9, (1,), generator=generator))
        # A skewed vocabulary, so that some contexts repeat and some candidates are never seen.
        words = (torch.rand(n, generator=generator) ** 2 * (vocab_size - 5)).long() + 5
        out.append([1] + words.tolist() + [2])
    return out


def test_trigram_scores_match_the_formulas_at_every_position_including_both_edges():
    rows, V = toy_rows(), 40
    model, reference = TrigramModel.from_rows(rows, V), BruteForceTrigram(rows, V)
    for row in rows[:6] + [[1, 7, 2], [1, 39, 38, 5, 2]]:  # two rows never seen in training
        ids = torch.tensor([row])
        positions = torch.arange(1, len(row) - 1)
        targets = torch.stack([torch.zeros_like(positions), positions], 1)
        context = model.position_contexts(ids, torch.tensor([len(row)]), targets)
        scores = model.candidate_log_scores(*context)
        for k, position in enumerate(positions.tolist()):
            expected = torch.tensor(reference.scores(row, position), dtype=torch.double)
            torch.testing.assert_close(scores[k], expected, rtol=1e-9, atol=1e-9)
    # A proper distribution: every trigram conditional sums to 1 over the vocabulary.
    for a, b in [(1, 1), (1, 7), (7, 9), (39, 38)]:
        total = model.trigram_prob(torch.full((V,), a), torch.full((V,), b), torch.arange(V)).sum()
        assert abs(float(total) - 1.0) < 1e-9


@pytest.mark.parametrize("top", [100, 10])
def test_soft_labels_sum_to_one_keep_top_k_at_power_six_and_agree_with_the_model(top):
    rows, V = toy_rows(vocab_size=160, rows=200), 160
    model, reference = TrigramModel.from_rows(rows, V), BruteForceTrigram(rows, V)
    candidates = torch.ones(V, dtype=torch.bool)
    candidates[:5] = False
    row = rows[3]
    positions = torch.arange(1, len(row) - 1)
    targets = torch.stack([torch.zeros_like(positions), positions], 1)
    scores = model.candidate_log_scores(*model.position_contexts(torch.tensor([row]), torch.tensor([len(row)]), targets))
    ids, probs = soft_labels(scores, candidates, top=top)
    assert ids.shape == probs.shape == (len(positions), top)
    for k, position in enumerate(positions.tolist()):
        brute = reference.scores(row, position)
        expected = brute_force_soft_label(brute, candidates.tolist(), top=top)
        got = {int(i): float(p) for i, p in zip(ids[k], probs[k]) if p > 0}
        assert abs(sum(got.values()) - 1) < 1e-5 and len(got) <= top
        assert set(got) <= set(expected) and all(abs(got[c] - expected[c]) < 1e-5 for c in got)
        best = max((c for c in range(V) if candidates[c]), key=lambda c: brute[c])
        assert int(ids[k, 0]) == best and int(probs[k].argmax()) == 0
        # Power 6: the ratio of two kept weights is the 6th power of their min-max ratio.
        low = min(brute[c] for c in range(V) if candidates[c])
        second = int(ids[k, 1])
        ratio = ((brute[second] - low) / (brute[best] - low)) ** 6
        assert abs(float(probs[k, 1] / probs[k, 0]) - ratio) < 1e-4


def test_h_pretrains_through_the_step_on_trigram_soft_labels(pretraining_data, tokenizer_dir, tmp_path):
    from tango.workspaces import LocalWorkspace

    import models
    from models.ngram import soft_labels_at
    from steps.data.ngram import BuildTrigramModel, PrecomputeSoftLabels, soft_label_candidates
    from steps.pretrain.collate import PretrainingCollator
    from steps.pretrain.pretrain import PretrainingConfig, PretrainMicrobert
    from steps.data.vocab import load_tokenizer

    workspace = LocalWorkspace(tmp_path / "workspace")
    trigram = BuildTrigramModel(pretraining_data=pretraining_data, tokenizer=tokenizer_dir)
    model = trigram.result(workspace)
    tokenizer = load_tokenizer(tokenizer_dir)
    assert model.vocab_size == len(tokenizer)
    table_step = PrecomputeSoftLabels(trigram_model=trigram, pretraining_data=pretraining_data, tokenizer=tokenizer_dir)
    table = table_step.result(workspace)
    # One entry per word position of every distinct train and dev row.
    distinct = {tuple(r["input_ids"]) for split in ("train", "dev") for r in pretraining_data[split]}
    assert set(table.offsets) == distinct and len(table) == sum(len(row) - 2 for row in distinct)
    # The collator's soft labels: one per masked position, sum 1, ≤ 100 ids, never a special id,
    # and exactly what scoring that batch's original ids would give (the table is a cache of it).
    rows = pretraining_data["train"][:8]
    batch = PretrainingCollator(tokenizer, [], soft_label_table=table)(rows, seed=3)
    masked = int((batch["labels"] != -100).sum())
    assert batch["soft_label_ids"].shape == batch["soft_label_probs"].shape == (masked, 100)
    torch.testing.assert_close(batch["soft_label_probs"].sum(-1), torch.ones(masked))
    assert not torch.isin(batch["soft_label_ids"], torch.tensor(tokenizer.all_special_ids)).any()
    original = torch.zeros_like(batch["input_ids"])
    for b, row in enumerate(rows):
        original[b, : len(row["input_ids"])] = torch.tensor(row["input_ids"])
    targets = (batch["labels"] != -100).nonzero()
    ids, probs = soft_labels_at(model, original, batch["attention_mask"].sum(1), targets, soft_label_candidates(tokenizer))
    assert torch.equal(batch["soft_label_ids"], ids) and torch.equal(batch["soft_label_probs"], probs)
    # Each entry belongs to its own position: the brute-force model's best candidate there comes first.
    brute = BruteForceTrigram((r["input_ids"] for r in pretraining_data["train"]), model.vocab_size)
    special = set(tokenizer.all_special_ids)
    for k in (0, masked // 2, masked - 1):
        b, position = targets[k].tolist()
        scores = brute.scores(rows[b]["input_ids"], position)
        assert int(batch["soft_label_ids"][k, 0]) == max((c for c in range(model.vocab_size) if c not in special), key=scores.__getitem__)
    with pytest.raises(ValueError, match="not in the soft-label table"):
        table.lookup([[1, 5, 6, 7, 2, 9999 % model.vocab_size]], torch.tensor([[0, 1]]))
    with pytest.raises(ValueError, match="word positions only"):
        table.lookup([rows[0]["input_ids"]], torch.tensor([[0, 0]]))

    settings = dict(max_steps=3, batch_size=8, warmup=0.5, validate_every=3, checkpoint_every=2, seed=5, max_validation_rows=16)
    step = PretrainMicrobert(pretraining_data=pretraining_data, tokenizer=tokenizer_dir, condition="H", model=TINY_MODEL,
                             training=PretrainingConfig(**settings), num_threads=1, soft_label_table=table_step)
    result = step.result(workspace)
    final = json.loads((result / "metrics.json").read_text())["final"]
    assert 0 < final["dev_mlm_loss"] < 20 and final["dev_loss"] == final["dev_mlm_loss"]
    assert (result / "mlm_head.safetensors").exists()
    # The soft-label table is an argument of H only: M without it keeps its ID; H without it refuses.
    plain = PretrainMicrobert(pretraining_data=pretraining_data, tokenizer=tokenizer_dir, condition="M", model=TINY_MODEL,
                              training=PretrainingConfig(**settings), num_threads=1)
    assert plain.unique_id == PretrainMicrobert(pretraining_data=pretraining_data, tokenizer=tokenizer_dir, condition="M",
                                                model=TINY_MODEL, training=PretrainingConfig(**settings), num_threads=1,
                                                soft_label_table=None).unique_id
    with pytest.raises(ValueError, match="soft_label_table"):
        PretrainMicrobert(pretraining_data=pretraining_data, tokenizer=tokenizer_dir, condition="H", model=TINY_MODEL,
                          training=PretrainingConfig(**settings), num_threads=1).result(LocalWorkspace(tmp_path / "other"))
    assert models.parse_condition("H").objectives == "H"
