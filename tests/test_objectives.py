"""JSD, InfoNCE, phrase and tree losses (paper Eq. 10-12; Zhang et al., 2022)."""

from __future__ import annotations

import math

import pytest
import torch

from models.objectives import info_nce_loss, masked_jsd, phrase_loss, tree_loss, tree_similarity
from models.trees import PhraseSamples, TreeSamples


def random_distributions(*shape, generator=None):
    return torch.softmax(3 * torch.randn(*shape, generator=generator), dim=-1)


# ------------------------------------------------------------------------------ JSD


def test_jsd_symmetric_zero_iff_equal_and_bounded():
    generator = torch.Generator().manual_seed(0)
    p, q = random_distributions(50, 12, generator=generator), random_distributions(50, 12, generator=generator)
    assert torch.allclose(masked_jsd(p, q), masked_jsd(q, p), atol=1e-7)
    assert torch.allclose(masked_jsd(p, p), torch.zeros(50), atol=1e-7)
    assert (masked_jsd(p, q) > 1e-4).all()
    assert (masked_jsd(p, q) <= math.log(2) + 1e-6).all()
    disjoint = masked_jsd(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))
    assert disjoint.item() == pytest.approx(math.log(2), abs=1e-4)


def test_jsd_ignores_padded_columns():
    generator = torch.Generator().manual_seed(1)
    p, q = random_distributions(4, 6, generator=generator), random_distributions(4, 6, generator=generator)
    key_mask = torch.tensor([True] * 6 + [False] * 3)
    padded_p = torch.cat([p, torch.rand(4, 3, generator=generator)], -1)
    padded_q = torch.cat([q, torch.rand(4, 3, generator=generator)], -1)
    assert torch.allclose(masked_jsd(padded_p, padded_q, key_mask), masked_jsd(p, q), atol=1e-7)
    assert torch.allclose(
        masked_jsd(padded_p, padded_q, key_mask, normalize_by_keys=True), masked_jsd(p, q) / 6, atol=1e-7
    )


# ------------------------------------------------------------------------------ InfoNCE


@pytest.mark.parametrize("num_negatives", [1, 3, 10])
def test_info_nce_equal_similarities_give_log_k_plus_one(num_negatives):
    loss = info_nce_loss(torch.full((5,), 0.3), torch.full((5, num_negatives), 0.3), torch.ones(5, num_negatives, dtype=torch.bool))
    assert loss.item() == pytest.approx(math.log(num_negatives + 1), abs=1e-6)


def test_info_nce_masked_slots_contribute_nothing():
    negatives = torch.tensor([[0.2, 0.5, 9.0]])
    mask = torch.tensor([[True, True, False]])
    expected = info_nce_loss(torch.tensor([0.4]), negatives[:, :2], mask[:, :2])
    assert info_nce_loss(torch.tensor([0.4]), negatives, mask).item() == pytest.approx(expected.item())


def test_info_nce_empty_is_zero_with_graph():
    positive = torch.zeros(0, requires_grad=True)
    loss = info_nce_loss(positive, torch.zeros(0, 3), torch.zeros(0, 3, dtype=torch.bool))
    assert loss.item() == 0.0 and loss.requires_grad


# ------------------------------------------------------------------------------ phrase loss


def phrase_setup(alpha: float):
    """Query q=1, positive p=2, negatives 3..5; the positive's attention row is the mix
    (1−α)·(far distribution) + α·(query's row), so α → 1 brings it to the query's."""
    generator = torch.Generator().manual_seed(3)
    attention = random_distributions(1, 8, 8, generator=generator)
    attention[0, 2] = (1 - alpha) * attention[0, 6] + alpha * attention[0, 1]
    attention_mask = torch.ones(1, 8, dtype=torch.long)
    samples = PhraseSamples(
        batch_index=torch.tensor([0]),
        phrase_root=torch.tensor([1]),
        query=torch.tensor([1]),
        positive=torch.tensor([2]),
        negatives=torch.tensor([[3, 4, 5, -1]]),
    )
    return attention, attention_mask, samples


def test_phrase_loss_falls_as_positive_attention_approaches_query():
    """Catches the reference's sign bug: with the paper's sim = −JSD the loss must fall as the positive converges."""
    paper = [phrase_loss(*phrase_setup(alpha), similarity="paper").item() for alpha in (0.0, 0.5, 0.9, 1.0)]
    assert all(later < earlier for earlier, later in zip(paper, paper[1:])), paper


def test_reference_similarity_rewards_divergence():
    """The reference's sim = +JSD/n moves the loss the opposite way (documented bug L1)."""
    reference = [phrase_loss(*phrase_setup(alpha), similarity="reference").item() for alpha in (0.0, 0.5, 1.0)]
    assert all(later > earlier for earlier, later in zip(reference, reference[1:])), reference


def test_phrase_loss_ignores_padding_keys_and_unknown_similarity_fails():
    attention, attention_mask, samples = phrase_setup(0.5)
    padded = torch.zeros(1, 11, 11)
    padded[:, :8, :8] = attention
    padded[:, :, 8:] = 0.0
    loss = phrase_loss(attention, attention_mask, samples)
    padded_mask = torch.tensor([[1] * 8 + [0] * 3])
    assert phrase_loss(padded, padded_mask, samples).item() == pytest.approx(loss.item(), abs=1e-6)
    with pytest.raises(ValueError):
        phrase_loss(attention, attention_mask, samples, similarity="cosine")


# ------------------------------------------------------------------------------ sim_tree and tree loss


def test_tree_similarity_range_identity_and_single_child():
    generator = torch.Generator().manual_seed(4)
    states = torch.randn(3, 6, 5, generator=generator)
    root = torch.tensor([0, 2, 5])
    sets = torch.rand(3, 4, 6, generator=generator) > 0.4
    sets[torch.arange(3), :, root] = True
    sets[:, :, 1] = True  # at least one child everywhere (no root is at 1)
    similarity = tree_similarity(states[torch.arange(3), root], states, sets, root)
    assert ((similarity >= -1 - 1e-6) & (similarity <= 1 + 1e-6)).all()

    identical = torch.ones(1, 6, 5)
    assert torch.allclose(tree_similarity(identical[:, 0], identical, torch.ones(1, 1, 6, dtype=torch.bool), torch.tensor([0])), torch.ones(1, 1))

    # single child ⇒ e = 1 ⇒ sim = cos(z_r, z_child)
    single = torch.zeros(1, 1, 6, dtype=torch.bool)
    single[0, 0, [2, 4]] = True
    expected = torch.nn.functional.cosine_similarity(states[0, 2], states[0, 4], dim=0)
    assert tree_similarity(states[:1, 2], states[:1], single, torch.tensor([2])).item() == pytest.approx(expected.item(), abs=1e-6)


def test_tree_loss_top_k_uses_best_real_negatives_only():
    """The reference's top-k bug: top-k must be taken among real negatives, and padded slots must never be picked."""
    torch.manual_seed(0)
    hidden = torch.randn(1, 8, 4)
    positive = torch.zeros(1, 8, dtype=torch.bool)
    positive[0, [1, 2, 3]] = True
    negatives = torch.zeros(1, 5, 8, dtype=torch.bool)
    for slot, members in enumerate([[1, 2, 4], [1, 3, 5], [1, 6], [1, 2, 7]]):
        negatives[0, slot, members] = True
    negative_mask = torch.tensor([[True, True, True, True, False]])
    samples = TreeSamples(torch.tensor([0]), torch.tensor([1]), positive, negatives, negative_mask)

    sets = torch.cat([positive[:, None], negatives], 1)
    similarity = tree_similarity(hidden[0, 1][None], hidden, sets, torch.tensor([1]))[0]
    top3 = similarity[1:5].topk(3).values
    logits = torch.cat([similarity[:1], top3]) / 0.1
    expected = -torch.log_softmax(logits, 0)[0]
    assert tree_loss(hidden, samples).item() == pytest.approx(expected.item(), abs=1e-5)

    two_real = TreeSamples(samples.batch_index, samples.root, positive, negatives, torch.tensor([[True, True, False, False, False]]))
    logits = torch.cat([similarity[:1], similarity[1:3]]) / 0.1
    assert tree_loss(hidden, two_real).item() == pytest.approx((-torch.log_softmax(logits, 0)[0]).item(), abs=1e-5)


def test_losses_have_finite_gradients():
    generator = torch.Generator().manual_seed(5)
    scores = torch.randn(1, 8, 8, generator=generator, requires_grad=True)
    attention, attention_mask, samples = phrase_setup(0.3)
    loss = phrase_loss(torch.softmax(scores, -1), attention_mask, samples)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(scores.grad).all() and scores.grad.abs().sum() > 0

    hidden = torch.randn(1, 8, 4, generator=generator, requires_grad=True)
    positive = torch.zeros(1, 8, dtype=torch.bool)
    positive[0, [1, 2]] = True
    negatives = torch.zeros(1, 3, 8, dtype=torch.bool)
    negatives[0, 0, [1, 3]] = True
    negatives[0, 1, [1, 4, 5]] = True
    loss = tree_loss(hidden, TreeSamples(torch.tensor([0]), torch.tensor([1]), positive, negatives, torch.tensor([[True, True, False]])))
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(hidden.grad).all() and hidden.grad.abs().sum() > 0
