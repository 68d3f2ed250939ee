"""Tree utilities, the SLA mask and the SynCLM samplers against brute force (paper Appendix A; Zhang et al., 2022).

Real trees come from the shared UD dev files (read-only, never copied into the repo); each is also
expanded to subwords by splitting some words into pieces the way the reference's data pipeline does.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from pathlib import Path

import pytest
import torch

from models.trees import (
    NO_PATH,
    TreeStructure,
    additive_attention_mask,
    sample_phrase_triples,
    sample_tree_sets,
    sla_allowed_mask,
    tree_distance,
)

# Under the data root (tests/conftest.py), never a machine path.
UD_FILES = ["wolof/ud/wo_wtb-ud-dev.conllu", "coptic/ud/cop_scriptorium-ud-dev.conllu"]
SENTENCES_PER_FILE = 12
MAX_LENGTH = 72


# ------------------------------------------------------------------------------ helpers


def expand_to_subwords(word_heads: list[int], pieces: list[int]) -> list[int]:
    """Expansion to subwords: first piece gets the head word's first piece (0 for the root); others point at
    their own first piece.  Returns 1-based subword heads."""
    first_piece, position = [], 1
    for count in pieces:
        first_piece.append(position)
        position += count
    heads = []
    for word, count in enumerate(pieces):
        head_word = word_heads[word]
        heads.append(0 if head_word == 0 else first_piece[head_word - 1])
        heads.extend([first_piece[word]] * (count - 1))
    return heads


def pad_batch(sentences: list[list[int]], extra_padding: int = 3) -> torch.Tensor:
    """1-based heads per sentence → (B, T) batch tensor with [CLS], [SEP] and padding at −1."""
    length = max(len(s) for s in sentences) + 2 + extra_padding
    batch = torch.full((len(sentences), length), -1, dtype=torch.long)
    for row, heads in enumerate(sentences):
        batch[row, 1 : len(heads) + 1] = torch.tensor(heads)
    return batch


def load_ud_trees(data_root: Path) -> list[list[int]]:
    """Word-level heads of the first few mid-length sentences of each shared UD dev file.
    A missing file fails the test (conftest's data root is required), it is never skipped."""
    import conllu

    trees = []
    for name in UD_FILES:
        with (data_root / name).open(encoding="utf-8") as handle:
            sentences = (
                [token["head"] for token in sentence if isinstance(token["id"], int)]
                for sentence in conllu.parse_incr(handle)
            )
            suitable = (heads for heads in sentences if 3 <= len(heads) <= MAX_LENGTH // 2)
            file_trees = list(itertools.islice(suitable, SENTENCES_PER_FILE))
        assert len(file_trees) == SENTENCES_PER_FILE, f"{name}: only {len(file_trees)} suitable sentences"
        trees.extend(file_trees)
    return trees


@pytest.fixture(scope="module")
def ud_batches(data_root) -> list[torch.Tensor]:
    """Word-level and subword-expanded batches of real UD trees."""
    word_trees = load_ud_trees(data_root)
    rng = random.Random(13)
    subword_trees = [expand_to_subwords(t, [rng.choice([1, 1, 2, 3]) for _ in t]) for t in word_trees]
    return [pad_batch(word_trees), pad_batch(subword_trees)]


def random_tree(rng: random.Random, n: int) -> list[int]:
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = [0] * (n + 1)
    for index, node in enumerate(order[1:], start=1):
        heads[node] = rng.choice(order[:index])
    return heads[1:]


def adjacency(heads: list[int]) -> dict[int, list[int]]:
    edges = {i: [] for i in range(1, len(heads) + 1)}
    for child, head in enumerate(heads, start=1):
        if head > 0:
            edges[child].append(head)
            edges[head].append(child)
    return edges


def bfs_distances(heads: list[int]) -> dict[tuple[int, int], int]:
    edges, distances = adjacency(heads), {}
    for source in edges:
        seen, queue = {source: 0}, deque([source])
        while queue:
            node = queue.popleft()
            for other in edges[node]:
                if other not in seen:
                    seen[other] = seen[node] + 1
                    queue.append(other)
        distances.update({(source, target): d for target, d in seen.items()})
    return distances


def brute_force_sla(heads: list[int], length: int, delta: int, window: int, reference_window=False) -> torch.Tensor:
    """Eq. 4-5 literally, plus the documented special rows/columns of `sla_allowed_mask`."""
    n, distances = len(heads), bfs_distances(heads)
    allowed = torch.zeros(length, length, dtype=torch.bool)
    for i in range(1, n + 1):
        ks = range(i - window, i + 1) if reference_window else range(i - window, i + window + 1)
        ks = [k for k in ks if 1 <= k <= n]
        for j in range(1, n + 1):
            allowed[i, j] = min(distances[(k, j)] for k in ks) <= delta
    allowed[:, 0] = True
    allowed[:, n + 1] = True
    allowed[0, 1 : n + 1] = True
    return allowed


def children_of(heads: list[int]) -> dict[int, list[int]]:
    children = {i: [] for i in range(len(heads) + 1)}
    for child, head in enumerate(heads, start=1):
        children[head].append(child)
    return children


def subtree_set(heads: list[int], root: int) -> set[int]:
    children, members, stack = children_of(heads), set(), [root]
    while stack:
        node = stack.pop()
        members.add(node)
        stack.extend(children[node])
    return members


def height(heads: list[int], root: int) -> int:
    children = children_of(heads)
    return 1 + max((height(heads, c) for c in children[root]), default=0)


def ancestors(heads: list[int], node: int) -> set[int]:
    result = set()
    while heads[node - 1] != 0:
        node = heads[node - 1]
        result.add(node)
    return result


def row_heads(batch: torch.Tensor, row: int) -> list[int]:
    values = batch[row]
    return values[values >= 0].tolist()


# ------------------------------------------------------------------------------ structure


def test_structure_on_small_tree():
    # w1 ← w2 (root) → w3 → w4
    heads = pad_batch([[2, 0, 2, 3]], extra_padding=1)
    structure = TreeStructure.from_heads(heads)
    assert structure.depth[0].tolist() == [0, 2, 1, 2, 3, 0, 0]
    assert structure.height[0].tolist() == [0, 1, 3, 2, 1, 0, 0]
    assert structure.subtree_size[0].tolist() == [0, 1, 4, 2, 1, 0, 0]
    assert structure.ancestors[0, 4].nonzero().flatten().tolist() == [2, 3]
    assert tree_distance(heads)[0, 1, 4].item() == 3
    assert tree_distance(heads)[0, 0, 1].item() == NO_PATH


@pytest.mark.parametrize("build", ["walking", "doubling"])
def test_both_ways_to_the_ancestors_agree_with_the_tree_up_to_the_deepest_chain(build, ud_batches):
    """The CPU's walk and the accelerator's pointer doubling (`TreeStructure.from_heads` picks by
    device), each against brute force: the real trees, and chains whose every token heads the next,
    filling the row but for [CLS] and [SEP] (doubling's round count is set by the row length)."""
    from models import trees

    ancestors_of = {"walking": lambda heads: trees._walk_to_root(heads)[0], "doubling": trees._ancestors_by_doubling}[build]
    chains = [pad_batch([[0] + list(range(1, n))], extra_padding=0) for n in (1, 2, 3, 7, 8, 9, 62, 63, 64)]
    for heads in list(ud_batches) + chains:
        expected = torch.zeros(heads.shape + heads.shape[1:], dtype=torch.bool)
        for b, row in enumerate(heads.tolist()):
            for i in range(len(row)):
                j = row[i]
                while j > 0:  # walk up one edge at a time
                    expected[b, i, j] = True
                    j = row[j]
        assert torch.equal(ancestors_of(heads), expected)
    cycle = pad_batch([[2, 1, 0]]).clone().index_fill_(1, torch.tensor([3]), 1)
    with pytest.raises(ValueError, match="cycle"):
        ancestors_of(cycle)


def test_cycle_raises():
    with pytest.raises(ValueError, match="cycle"):
        TreeStructure.from_heads(pad_batch([[2, 1, 0]]).clone().index_fill_(1, torch.tensor([3]), 1))


def test_distance_matches_bfs_and_lca_identity(ud_batches):
    for batch in ud_batches:
        distance = tree_distance(batch)
        structure = TreeStructure.from_heads(batch)
        assert torch.equal(distance, distance.transpose(1, 2))
        for row in range(batch.shape[0]):
            heads = row_heads(batch, row)
            for (i, j), d in bfs_distances(heads).items():
                assert distance[row, i, j].item() == d
            # D_ij = d_i + d_j − 2·d_LCA, checked through explicit ancestor sets
            depth = structure.depth[row]
            for i, j in [(1, len(heads)), (len(heads) // 2 or 1, 1)]:
                common = (ancestors(heads, i) | {i}) & (ancestors(heads, j) | {j})
                lca_depth = max(depth[k].item() for k in common)
                assert distance[row, i, j].item() == depth[i].item() + depth[j].item() - 2 * lca_depth


def deep_and_mixed_batch() -> torch.Tensor:
    """Rows of very different lengths and depths in one batch, as a bucket of long pretraining rows
    has them: chains (every token heads the next), random trees, a one-token sentence."""
    rng = random.Random(5)
    chains = [[0] + list(range(1, n)) for n in (1, 40, 90)]
    return pad_batch(chains + [random_tree(rng, n) for n in (2, 7, 33, 61, 95)], extra_padding=4)


@pytest.mark.parametrize("build", ["walk_to_root", "structure_by_doubling"])
def test_structure_matches_python_on_real_trees(build, ud_batches):
    """Both ways to the structure (`from_heads` picks by device) against brute force: subtrees,
    heights, sizes, depths and ancestors, and nothing at [CLS], [SEP] or padding."""
    from models import trees

    structure_of = getattr(trees, f"_{build}")
    for batch in list(ud_batches) + [deep_and_mixed_batch()]:
        ancestor_sets, subtree, depth, heights, sizes = structure_of(batch)
        for row in range(batch.shape[0]):
            heads = row_heads(batch, row)
            nodes = range(1, len(heads) + 1)
            for node in nodes:
                members = subtree_set(heads, node)
                assert set(subtree[row, node].nonzero().flatten().tolist()) == members
                assert set(ancestor_sets[row, node].nonzero().flatten().tolist()) == ancestors(heads, node)
                assert heights[row, node].item() == height(heads, node)
                assert sizes[row, node].item() == len(members)
                assert depth[row, node].item() == len(ancestors(heads, node)) + 1
            elsewhere = [p for p in range(batch.shape[1]) if p not in nodes]
            for values in (depth, heights, sizes):
                assert values[row, elsewhere].eq(0).all()
            assert not subtree[row, elsewhere].any() and not ancestor_sets[row, elsewhere].any()
            assert not ancestor_sets[row, :, 0].any()  # [CLS] is nobody's ancestor (the tree sampler relies on it)


# ------------------------------------------------------------------------------ SLA mask


def test_sla_delta_zero_without_window_is_identity_plus_specials():
    batch = pad_batch([[2, 0, 2, 3], [0, 1]])
    allowed = sla_allowed_mask(batch, max_distance=0, window=0)
    for row, n in enumerate([4, 2]):
        expected = torch.zeros_like(allowed[row])
        expected[torch.arange(1, n + 1), torch.arange(1, n + 1)] = True
        expected[:, 0] = True
        expected[:, n + 1] = True
        expected[0, : n + 2] = True
        assert torch.equal(allowed[row], expected)


@pytest.mark.parametrize("grouped", [False, True])
def test_sla_matches_brute_force_on_real_trees(grouped, ud_batches, monkeypatch):
    """Also with the CPU's distances in row groups (`_near_node_pairs`) forced on every batch, in
    groups of 3 rows, so groups of different spans meet in one mask."""
    from models import trees

    if grouped:
        monkeypatch.setattr(trees, "GROUPED_DISTANCES_FROM_LENGTH", 0)
        monkeypatch.setattr(trees, "DISTANCE_GROUP_ROWS", 3)
    else:
        monkeypatch.setattr(trees, "GROUPED_DISTANCES_FROM_LENGTH", 10**9)
    for batch in list(ud_batches) + [deep_and_mixed_batch()]:
        for delta, window, reference in [(0, 0, False), (1, 1, False), (2, 1, False), (4, 1, False), (3, 1, True), (2, 2, False)]:
            allowed = sla_allowed_mask(batch, delta, window=window, reference_window=reference)
            for row in range(batch.shape[0]):
                expected = brute_force_sla(row_heads(batch, row), batch.shape[1], delta, window, reference)
                assert torch.equal(allowed[row], expected), (delta, window, reference, row)


def test_a_long_rows_bucket_costs_its_rows_own_lengths_not_the_padding():
    """The µB-MXPT-SLA stall on the H100: one length bucket of each paper-scale epoch pads
    256 rows to its longest (475 subwords, median 169), and the SLA distances were one T × T matmul
    per row, 2·B·T³ FLOPs (55 GFLOP, 2.1 s of a loader worker's 6.3 s), so the loop waited on that
    batch. On a CPU they now come in groups of similar-length rows: here one row of 400 among rows
    of 60-120 costs ~1/7 of the padded count (the old code: all of it)."""
    from torch.utils.flop_counter import FlopCounterMode

    rng = random.Random(7)
    batch = pad_batch([random_tree(rng, rng.randint(60, 120)) for _ in range(127)] + [random_tree(rng, 400)], extra_padding=0)
    rows, length = batch.shape
    with FlopCounterMode(display=False) as flops:
        sla_allowed_mask(batch, max_distance=4, window=1)
    assert 0 < flops.get_total_flops() <= 0.25 * 2 * rows * length**3


def test_sla_invariants(ud_batches):
    for batch in ud_batches:
        structure = TreeStructure.from_heads(batch)
        n = structure.num_nodes
        length = batch.shape[1]
        positions = torch.arange(length)
        non_padding = positions[None] <= (n + 1)[:, None]
        previous = None
        for delta in range(0, 8):
            allowed = sla_allowed_mask(batch, delta, structure=structure)
            diagonal = allowed.diagonal(dim1=1, dim2=2)
            assert diagonal[non_padding].all()
            assert not (allowed & ~non_padding[:, None, :]).any(), "padding columns must stay blocked"
            assert allowed.any(-1).all(), "every row (incl. [SEP] and padding) needs an allowed entry"
            if previous is not None:
                assert not (previous & ~allowed).any(), "mask must grow with δ"
            previous = allowed
        diameter = int(structure.distance().masked_fill(~structure.is_node[:, :, None] | ~structure.is_node[:, None], 0).max())
        everything = sla_allowed_mask(batch, diameter, window=0, structure=structure)
        node_pairs = structure.is_node[:, :, None] & structure.is_node[:, None, :]
        assert everything[node_pairs].all()


def test_sla_additive_mask_keeps_softmax_finite():
    batch = pad_batch([[2, 0, 2, 3], [0]], extra_padding=4)
    mask = additive_attention_mask(sla_allowed_mask(batch, 1))
    assert mask.shape == (2, 1, batch.shape[1], batch.shape[1])
    assert set(mask.unique().tolist()) == {0.0, torch.finfo(torch.float32).min}
    probabilities = torch.softmax(torch.randn(2, 8, batch.shape[1], batch.shape[1]) + mask, dim=-1)
    assert torch.isfinite(probabilities).all()


# ------------------------------------------------------------------------------ phrase sampler


def test_phrase_sampler_invariants(ud_batches):
    generator = torch.Generator().manual_seed(0)
    for batch in ud_batches:
        samples = sample_phrase_triples(batch, generator)
        assert len(samples) > 0
        for index in range(len(samples)):
            row = samples.batch_index[index].item()
            heads = row_heads(batch, row)
            phrase = subtree_set(heads, samples.phrase_root[index].item())
            query, positive = samples.query[index].item(), samples.positive[index].item()
            negatives = samples.negatives[index][samples.negative_mask[index]].tolist()
            assert query != positive and {query, positive} <= phrase
            assert height(heads, samples.phrase_root[index].item()) <= 2 and len(phrase) >= 2
            assert 1 <= len(negatives) <= 10 and len(set(negatives)) == len(negatives)
            assert all(1 <= t <= len(heads) and t not in phrase for t in negatives)
            assert len(negatives) == min(10, len(heads) - len(phrase))
        # every eligible phrase is used exactly once
        for row in range(batch.shape[0]):
            heads = row_heads(batch, row)
            eligible = {
                r for r in range(1, len(heads) + 1)
                if height(heads, r) <= 2 and 2 <= len(subtree_set(heads, r)) < len(heads)
            }
            assert sorted(samples.phrase_root[samples.batch_index == row].tolist()) == sorted(eligible)


def test_phrase_sampler_two_token_sentence_yields_nothing():
    assert len(sample_phrase_triples(pad_batch([[0, 1]]))) == 0
    assert len(sample_phrase_triples(pad_batch([[2, 0]]))) == 0


def test_phrase_sampler_is_uniform_and_reproducible():
    batch = pad_batch([[0, 1, 1, 1, 3, 3]])  # w1 root; w3 has two leaf children: phrase {3, 5, 6}
    first = sample_phrase_triples(batch, torch.Generator().manual_seed(7))
    second = sample_phrase_triples(batch, torch.Generator().manual_seed(7))
    assert torch.equal(first.query, second.query) and torch.equal(first.negatives, second.negatives)
    generator = torch.Generator().manual_seed(1)
    counts = torch.zeros(8)
    for _ in range(600):
        samples = sample_phrase_triples(batch, generator)
        counts += torch.bincount(samples.positive[samples.phrase_root == 3], minlength=8)
    assert counts[[3, 5, 6]].min() > 150  # ≈ 200 each


# ------------------------------------------------------------------------------ tree sampler


def test_tree_sampler_invariants(ud_batches):
    generator = torch.Generator().manual_seed(0)
    total = 0
    for batch in ud_batches:
        samples = sample_tree_sets(batch, generator)
        total += len(samples)
        for index in range(len(samples)):
            row, root = samples.batch_index[index].item(), samples.root[index].item()
            heads = row_heads(batch, row)
            positive = set(samples.positive[index].nonzero().flatten().tolist())
            assert positive == subtree_set(heads, root) and 2 <= len(positive) <= 10
            negatives = [set(n.nonzero().flatten().tolist()) for n in samples.negatives[index][samples.negative_mask[index]]]
            assert 2 <= len(negatives) <= 10
            for negative in negatives:
                assert root in negative and negative != positive and negative & positive
                assert abs(len(negative) - len(positive)) <= 1
                assert all(1 <= t <= len(heads) for t in negative)
            assert not samples.negatives[index][~samples.negative_mask[index]].any()
    assert total > 0


def test_tree_sampler_negative_is_splice_of_subtrees():
    # w2 root with children w1 and w3; w3 has child w4; w5 → w2. Root r = w3: S = {3, 4}
    # A(3) = {2?, 5}: 2 is r's head (an ancestor), so A = {5}; a single value → one candidate only.
    batch = pad_batch([[2, 0, 2, 3, 2]])
    assert 3 not in sample_tree_sets(batch, torch.Generator().manual_seed(0)).root.tolist()
    # Root r = w3 with S = {3, 4, 5}, neighbours w2 (ancestor, excluded), w6 and w7? Build: w1 root.
    heads = [0, 1, 1, 3, 3, 1, 1]  # S(3) = {3,4,5}; A(3) = {2, 6}: pairs ({t},{v}) and a triple
    samples = sample_tree_sets(pad_batch([heads]), torch.Generator().manual_seed(0), min_negatives=1)
    index = samples.root.tolist().index(3)
    for negative in samples.negatives[index][samples.negative_mask[index]]:
        members = set(negative.nonzero().flatten().tolist())
        removed, inserted = {3, 4, 5} - members, members - {3, 4, 5}
        assert removed <= {4, 5} and inserted and inserted <= {2, 6}


def brute_force_tree_sets(batch: torch.Tensor, seed: int, max_negatives: int = 10, min_negatives: int = 2) -> list:
    """The tree-guided sampler one root at a time, in Python sets, drawing from the same random stream in the same
    order as `sample_tree_sets`: target keys (roots × T), value keys (roots × T), then pick keys
    (roots × the longest pair list). Returns (row, root, S(r), negatives in pick order) per kept root."""
    generator, length = torch.Generator().manual_seed(seed), batch.shape[1]
    roots = []
    for row in range(batch.shape[0]):
        heads = row_heads(batch, row)
        for root in range(1, len(heads) + 1):
            members = subtree_set(heads, root)
            values = {p for m in members for p in (m - 1, m + 1) if 1 <= p <= len(heads)} - members - ancestors(heads, root)
            if 2 <= len(members) <= 10 and values:
                roots.append((row, root, heads, members, values))
    if not roots:
        return []
    target_keys = torch.rand(len(roots), length, generator=generator)
    value_keys = torch.rand(len(roots), length, generator=generator)

    def combinations(items):  # singletons, pairs, triples, each in itertools order
        return [c for size in (1, 2, 3) for c in itertools.combinations(items, size)]

    pair_lists = []
    for index, (_, root, _, members, values) in enumerate(roots):
        targets = sorted(members - {root}, key=lambda p: -target_keys[index, p].item())
        shuffled_values = sorted(values, key=lambda p: -value_keys[index, p].item())
        pair_lists.append(list(zip(combinations(targets), combinations(shuffled_values))))
    pick_keys = torch.rand(len(roots), max(len(pairs) for pairs in pair_lists), generator=generator)
    kept = []
    for index, ((row, root, heads, members, _), pairs) in enumerate(zip(roots, pair_lists)):
        candidates = []
        for number, (targets, values) in enumerate(pairs):
            removed = set().union(*(subtree_set(heads, t) for t in targets))
            inserted = set().union(*(subtree_set(heads, v) for v in values))
            negative = (members - removed) | inserted
            if abs(len(negative) - len(members)) <= 1:
                candidates.append((pick_keys[index, number].item(), negative))
        negatives = [negative for _, negative in sorted(candidates, key=lambda c: -c[0])[:max_negatives]]
        if len(negatives) >= min_negatives:
            kept.append((row, root, members, negatives))
    return kept


def test_tree_sampler_matches_brute_force(ud_batches):
    """The vectorised sampler equals the one-root-at-a-time Python version draw for draw: roots,
    positives, and every negative in order (real trees, and long, deep rows beside short ones)."""
    for seed, batch in enumerate(list(ud_batches) + [deep_and_mixed_batch()]):
        samples = sample_tree_sets(batch, torch.Generator().manual_seed(seed))
        expected = brute_force_tree_sets(batch, seed)
        assert len(samples) == len(expected) > 0
        for index, (row, root, members, negatives) in enumerate(expected):
            assert (samples.batch_index[index].item(), samples.root[index].item()) == (row, root)
            assert set(samples.positive[index].nonzero().flatten().tolist()) == members
            got = [set(n.nonzero().flatten().tolist()) for n in samples.negatives[index][samples.negative_mask[index]]]
            assert got == negatives


def test_tree_sampler_reproducible():
    batch = pad_batch([random_tree(random.Random(s), 30) for s in range(4)])
    first = sample_tree_sets(batch, torch.Generator().manual_seed(3))
    second = sample_tree_sets(batch, torch.Generator().manual_seed(3))
    assert torch.equal(first.negatives, second.negatives) and torch.equal(first.root, second.root)
