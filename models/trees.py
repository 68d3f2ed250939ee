"""Batched dependency-tree utilities on subword-level `heads` tensors.

Conventions (those of the reference code): positions index `input_ids`, with [CLS] at 0 and [SEP] at
n+1.  For a real token at position p in 1..n, ``heads[b, p]`` is the position of its head in 0..n,
where 0 is the virtual ROOT (which shares index 0 with [CLS]); ``heads`` is -1 at [CLS], [SEP] and
padding.  Tree *nodes* are the real tokens 1..n; ROOT is never a node, so distances and subtrees
never pass through it.

Everything here is vectorised over the batch and over tokens.  The only Python loops run over tree
depth (walking or pointer jumping to the root, at most the maximum depth in the batch), over the SLA
window offsets, over a tree-set combination's slots (at most 3), or, on a CPU, over groups of rows
of similar length (distances of long batches); the SynCLM tree sampler also uses a combination table
that is built once per size and cached.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import torch

# Entry of `tree_distance` for pairs where either position is not a tree node ([CLS], [SEP], padding).
NO_PATH = 1_000_000


@dataclass
class TreeStructure:
    """Per-batch tree matrices, computed once from `heads` and shared by SLA and the samplers.

    Attributes (B = batch, T = padded length):
        heads: (B, T) the input.
        is_node: (B, T) bool, True at real tokens 1..n.
        ancestors: (B, T, T) bool, ``ancestors[b, i, j]`` iff j is a proper ancestor of i (ROOT excluded).
        subtree: (B, T, T) bool, ``subtree[b, r, j]`` iff j ∈ S(r), the subtree rooted at r (r included).
        depth: (B, T) long, edges from ROOT (the sentence root has depth 1); 0 at non-nodes.
        height: (B, T) long, node-height of S(r): 1 for a leaf (as in the reference's SynCLM sampler); 0 at non-nodes.
        subtree_size: (B, T) long, |S(r)|; 0 at non-nodes.
        num_nodes: (B,) long, n.
    """

    heads: torch.Tensor
    is_node: torch.Tensor
    ancestors: torch.Tensor
    subtree: torch.Tensor
    depth: torch.Tensor
    height: torch.Tensor
    subtree_size: torch.Tensor
    num_nodes: torch.Tensor

    @classmethod
    def from_heads(cls, heads: torch.Tensor) -> "TreeStructure":
        heads = heads.long()
        is_node = heads >= 0
        # Two ways to the same tensors: walking up on a CPU, pointer doubling on an accelerator or
        # under torch.compile, where each walking step's "go on?" is a sync or a graph break. The
        # walk counts depth, height and sizes as it goes, where the doubling's reductions read the
        # whole (B, T, T) matrix (seconds for 256 × 475 on a CPU).
        if heads.device.type == "cpu" and not torch.compiler.is_compiling():
            ancestors, subtree, depth, height, subtree_size = _walk_to_root(heads)
        else:
            ancestors, subtree, depth, height, subtree_size = _structure_by_doubling(heads)
        return cls(
            heads=heads,
            is_node=is_node,
            ancestors=ancestors,
            subtree=subtree,
            depth=depth,
            height=height,
            subtree_size=subtree_size,
            num_nodes=is_node.sum(-1),
        )

    def distance(self) -> torch.Tensor:
        """Undirected path length between tree nodes; see `tree_distance`."""
        return _distance_from_ancestors(self.ancestors, self.is_node, self.depth)


def _walk_to_root(heads: torch.Tensor):
    """Every token steps towards ROOT in lock-step, one tree level a step, and only the tokens still
    climbing take part: work in proportion to the sum of depths, not batch × length × deepest chain
    (a 256 × 475 batch's longest chain is 115 levels, its median depth a handful), but a read-back
    a step. On the way it counts, per node, depth (its steps), subtree size (tokens passing through
    it) and height (the longest climb that reaches it, plus one), and fills the subtree matrix (the
    ancestors' transpose plus the nodes' diagonal) without reading the ancestors back.
    Returns (ancestors, subtree, depth, height, subtree_size)."""
    batch_size, length = heads.shape
    parent = heads.long().clamp(min=0).reshape(-1)  # ROOT, [CLS], [SEP] and padding all map to 0 = "stop"
    is_node = (heads >= 0).long().reshape(-1)
    ancestors = torch.zeros(batch_size * length, length, dtype=torch.bool, device=heads.device)
    subtree = torch.zeros_like(ancestors)
    node = is_node.nonzero().flatten()
    subtree[node, node % length] = True
    depth, height, subtree_size = is_node.clone(), is_node.clone(), is_node.clone()
    token = torch.arange(batch_size * length, device=heads.device)  # flat (row, position) of each climber
    ancestor = parent  # each climber's current ancestor: a position in its row
    for climbed in range(1, length + 1):
        climbing = ancestor > 0
        token, ancestor = token[climbing], ancestor[climbing]
        if token.numel() == 0:
            break
        ancestors[token, ancestor] = True
        depth[token] += 1  # each climber once: no repeated index
        position = token % length
        reached = token - position + ancestor  # the ancestor's flat index
        subtree[reached, position] = True
        subtree_size.index_add_(0, reached, torch.ones_like(reached))
        height[reached] = climbed + 1  # every climber writes the same value, larger each step
        ancestor = parent[reached]
    else:  # `length` levels climbed: a tree has fewer, so whoever still climbs is on a cycle
        if bool((ancestor > 0).any()):
            raise ValueError("heads contain a cycle: some token never reaches ROOT")
    shape, square = (batch_size, length), (batch_size, length, length)
    return ancestors.view(square), subtree.view(square), depth.view(shape), height.view(shape), subtree_size.view(shape)


def _ancestors_by_doubling(heads: torch.Tensor) -> torch.Tensor:
    """After round k every token knows its ancestors up to 2^k edges up and its 2^k-th ancestor:
    ⌈log2 T⌉ rounds of two gathers of the (B, T, T) matrix, and no read-back between them (the
    cycle check runs once, eagerly only)."""
    batch_size, length = heads.shape
    parent = heads.long().clamp(min=0)
    # Row 0 ([CLS]) has no ancestors, so pointing a finished token at 0 adds nothing to its set.
    ancestors = torch.zeros(batch_size, length, length, dtype=torch.bool, device=heads.device)
    ancestors.scatter_(2, parent[:, :, None], (parent > 0)[:, :, None])
    jump = parent  # each token's 2^k-th ancestor, 0 once past the sentence root
    for _ in range(max(1, (length - 1).bit_length())):
        ancestors |= torch.gather(ancestors, 1, jump[:, :, None].expand(-1, -1, length))
        jump = torch.gather(jump, 1, jump)
    if not torch.compiler.is_compiling() and bool((jump > 0).any()):
        raise ValueError("heads contain a cycle: some token never reaches ROOT")
    return ancestors


def _structure_by_doubling(heads: torch.Tensor):
    """`_walk_to_root`'s five tensors on an accelerator: the ancestors by doubling, the rest as
    whole-matrix reductions (no read-back). Returns (ancestors, subtree, depth, height, subtree_size)."""
    is_node = heads >= 0
    ancestors = _ancestors_by_doubling(heads)
    eye = torch.eye(heads.shape[1], dtype=torch.bool, device=heads.device)
    subtree = ancestors.transpose(1, 2) | (eye & is_node[:, :, None])
    depth = (ancestors.sum(-1) + 1) * is_node
    # Height of S(r) = 1 + the largest depth below r, measured from r.
    deepest = (subtree * depth[:, None, :]).amax(-1)
    height = (deepest - depth + 1) * is_node
    return ancestors, subtree, depth, height, subtree.sum(-1)


def tree_depth(heads: torch.Tensor) -> torch.Tensor:
    """(B, T) long: number of edges from ROOT (sentence root = 1); 0 at [CLS], [SEP] and padding."""
    return TreeStructure.from_heads(heads).depth


def subtree_membership(heads: torch.Tensor) -> torch.Tensor:
    """(B, T, T) bool: ``out[b, r, j]`` iff j is in the subtree rooted at r (r itself included)."""
    return TreeStructure.from_heads(heads).subtree


def subtree_height(heads: torch.Tensor) -> torch.Tensor:
    """(B, T) long: node-height of each subtree, a leaf having height 1 (the reference's `max_subtree_height`)."""
    return TreeStructure.from_heads(heads).height


def _float_distance_from_ancestors(ancestors: torch.Tensor, is_node: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
    """Exact small-integer distances as float32 (cheaper to build); only node pairs are meaningful."""
    # The ancestors-or-self of a node form a chain from the sentence root, so the number of common
    # ancestors-or-self of i and j is exactly depth(LCA(i, j)); one matmul gives all of them.
    eye = torch.eye(ancestors.shape[1], dtype=torch.bool, device=ancestors.device)
    chain = (ancestors | (eye & is_node[:, :, None])).float()
    lca_depth = torch.bmm(chain, chain.transpose(1, 2))
    depth = depth.float()
    return (depth[:, :, None] + depth[:, None, :]) - 2 * lca_depth


def _distance_from_ancestors(ancestors: torch.Tensor, is_node: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
    distance = _float_distance_from_ancestors(ancestors, is_node, depth).round().long()
    node_pair = is_node[:, :, None] & is_node[:, None, :]
    return distance.masked_fill(~node_pair, NO_PATH)


def tree_distance(heads: torch.Tensor) -> torch.Tensor:
    """(B, T, T) long: D(i, j) of paper Eq. 3, the path length in the undirected subword tree.

    ROOT is excluded (the tree is connected through the sentence root); computed as
    depth(i) + depth(j) − 2·depth(LCA(i, j)).  Pairs involving a non-node get `NO_PATH`.
    """
    return TreeStructure.from_heads(heads).distance()


# On a CPU, batches this long get their distances in groups of similar-length rows (`_near_node_pairs`).
GROUPED_DISTANCES_FROM_LENGTH = 64
DISTANCE_GROUP_ROWS = 16


def _near_node_pairs(structure: TreeStructure, max_distance: int) -> torch.Tensor:
    """(B, T, T) bool: node pairs at most ``max_distance`` apart. The distances cost a (T × T) matmul
    per row, cubic in the padded length; a bucketed batch of long rows pads most of them to far
    beyond their own length (a 256-row batch of Wolof pretraining rows: median 169 tokens, padded
    to 475). So on a CPU, rows are taken in groups of similar length, each cut to its own longest
    row: the same pairs, ~6x less time there (8x fewer FLOPs). On an accelerator one batched matmul stays cheaper
    than a launch and a read-back per group."""
    is_node, num_nodes = structure.is_node, structure.num_nodes
    batch_size, length = is_node.shape
    if is_node.device.type != "cpu" or torch.compiler.is_compiling() or length < GROUPED_DISTANCES_FROM_LENGTH:
        distance = _float_distance_from_ancestors(structure.ancestors, is_node, structure.depth)
        return (distance <= max_distance + 0.5) & is_node[:, :, None] & is_node[:, None, :]
    near = torch.zeros(batch_size, length, length, dtype=torch.bool)
    for rows in torch.argsort(num_nodes).split(DISTANCE_GROUP_ROWS):
        span = int(num_nodes[rows].max()) + 1  # [CLS] and the nodes 1..n; no node lies beyond
        node = is_node[rows, :span]
        distance = _float_distance_from_ancestors(structure.ancestors[rows, :span, :span], node, structure.depth[rows, :span])
        near[rows, :span, :span] = (distance <= max_distance + 0.5) & node[:, :, None] & node[:, None, :]
    return near


def sla_allowed_mask(
    heads: torch.Tensor,
    max_distance: int,
    window: int = 1,
    reference_window: bool = False,
    structure: TreeStructure | None = None,
) -> torch.Tensor:
    """(B, T, T) bool: which keys (columns) each query (row) may see in SLA's local branch.

    Paper Eq. 4-5 (Appendix A.1).  For real tokens i, j:
    D'(i, j) = min over k in {i−w, …, i+w} ∩ {1..n} of D(k, j), and j is allowed iff D'(i, j) ≤ δ
    (with ``reference_window=True`` the window is {i−w, …, i}, the reference's L6 bug).
    The special positions follow the reference, except for the [SEP] row:

    * the [CLS] column and the [SEP] column are allowed in every row;
    * the [CLS] row additionally allows every real token;
    * the [SEP] row therefore allows exactly [CLS] and itself.  The reference blocks this row
      completely, which turns its softmax into a uniform distribution over all positions,
      padding included (a known bug of the reference code); we keep it a proper, finite distribution instead;
    * padding columns are never allowed; padding rows allow only the [CLS]/[SEP] columns, which is
      enough to keep their softmax finite (their outputs are never used).

    The diagonal is allowed for every non-padding row, and the mask only grows with δ.
    """
    structure = structure if structure is not None else TreeStructure.from_heads(heads)
    is_node = structure.is_node
    batch_size, length = is_node.shape
    near = _near_node_pairs(structure, max_distance)

    # Windowing = OR over row shifts; shifted-in rows of non-nodes are all False, which implements
    # "exclude k outside [1, n]" (paper footnote 7).
    allowed = near.clone()
    offsets = range(-window, 0) if reference_window else [o for o in range(-window, window + 1) if o != 0]
    for offset in offsets:
        if offset < 0:
            allowed[:, -offset:] |= near[:, :offset]
        else:
            allowed[:, :-offset] |= near[:, offset:]
    allowed &= is_node[:, :, None]

    num_nodes = structure.num_nodes
    # A data check that reads a value back from the device: under torch.compile it would split the
    # encoder's graph at this line (and a CUDA-graphed encoder into pieces), so it runs eagerly only.
    if not torch.compiler.is_compiling() and bool((num_nodes + 1 >= length).any()):
        raise ValueError("every row needs a [SEP] position after its n real tokens")
    rows = torch.arange(batch_size, device=heads.device)
    allowed[:, :, 0] = True  # [CLS] column
    allowed[rows, :, num_nodes + 1] = True  # [SEP] column
    allowed[:, 0, :] |= is_node  # [CLS] row sees every real token
    return allowed


def additive_attention_mask(allowed: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Bool (B, T, T) → additive (B, 1, T, T): 0 where allowed, ``finfo(dtype).min`` where blocked."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[:, None]


def _uniform_keys(shape, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """iid U[0, 1) keys; argmax/top-k of keys over a set = uniform choice without replacement."""
    gen_device = generator.device if generator is not None else torch.device("cpu")
    return torch.rand(shape, generator=generator, device=gen_device).to(device)


# --------------------------------------------------------------------------------------------------
# SynCLM phrase-guided sampling (Zhang et al., 2022; paper Appendix A.2)
# --------------------------------------------------------------------------------------------------


@dataclass
class PhraseSamples:
    """One (query, positive, negatives) triple per eligible phrase, flattened over the batch.

    batch_index, phrase_root, query, positive: (N,) long.  negatives: (N, K) long positions, −1 in
    unused slots (every triple has ≥ 1 negative).
    """

    batch_index: torch.Tensor
    phrase_root: torch.Tensor
    query: torch.Tensor
    positive: torch.Tensor
    negatives: torch.Tensor

    @property
    def negative_mask(self) -> torch.Tensor:
        return self.negatives >= 0

    def __len__(self) -> int:
        return int(self.batch_index.numel())


def sample_phrase_triples(
    heads: torch.Tensor,
    generator: torch.Generator | None = None,
    max_negatives: int = 10,
    max_height: int = 2,
    min_size: int = 2,
    structure: TreeStructure | None = None,
) -> PhraseSamples:
    """Sample phrase-guided contrastive triples from every eligible subtree (Zhang et al., 2022).

    A node r yields a phrase S(r) iff height(S(r)) ≤ `max_height`, |S(r)| ≥ `min_size` and some real
    token lies outside S(r).  Positive: uniform in S(r) (r allowed); query: uniform in S(r) minus the
    positive; negatives: up to `max_negatives` distinct tokens drawn uniformly from outside S(r).
    """
    structure = structure if structure is not None else TreeStructure.from_heads(heads)
    device = heads.device
    is_node = structure.is_node
    eligible = (
        is_node
        & (structure.height <= max_height)
        & (structure.subtree_size >= min_size)
        & (structure.subtree_size < structure.num_nodes[:, None])
    )
    batch_index, phrase_root = eligible.nonzero(as_tuple=True)
    members = structure.subtree[batch_index, phrase_root]  # (N, T)
    outside = is_node[batch_index] & ~members
    count, length = members.shape

    positive = _uniform_keys((count, length), generator, device).masked_fill(~members, -1.0).argmax(-1)
    not_positive = torch.ones_like(members)
    not_positive[torch.arange(count, device=device), positive] = False
    query = _uniform_keys((count, length), generator, device).masked_fill(~(members & not_positive), -1.0).argmax(-1)

    negative_keys = _uniform_keys((count, length), generator, device).masked_fill(~outside, -1.0)
    top_keys, negatives = negative_keys.topk(min(max_negatives, length), dim=-1)
    negatives = negatives.masked_fill(top_keys < 0, -1)
    return PhraseSamples(batch_index, phrase_root, query, positive, negatives)


# --------------------------------------------------------------------------------------------------
# SynCLM tree-guided sampling (Zhang et al., 2022; paper Appendix A.2)
# --------------------------------------------------------------------------------------------------


@dataclass
class TreeSamples:
    """Positive subtree and spliced negatives per eligible root, as node-set masks over positions.

    batch_index, root: (N,) long.  positive: (N, T) bool.  negatives: (N, K, T) bool, with
    negative_mask (N, K) bool marking real slots (≥ `min_negatives` per row).
    """

    batch_index: torch.Tensor
    root: torch.Tensor
    positive: torch.Tensor
    negatives: torch.Tensor
    negative_mask: torch.Tensor

    def __len__(self) -> int:
        return int(self.batch_index.numel())


@lru_cache(maxsize=None)
def _combination_table(num_items: int, max_combination: int) -> torch.Tensor:
    """(C, max_combination) long: all 1..max_combination-subsets of range(num_items), in itertools
    order (all singletons, then pairs, then triples), padded with −1."""
    rows = [
        list(combo) + [-1] * (max_combination - size)
        for size in range(1, max_combination + 1)
        for combo in itertools.combinations(range(num_items), size)
    ]
    return torch.tensor(rows, dtype=torch.long).reshape(-1, max_combination)


def _valid_combinations_in_order(table: torch.Tensor, item_count: torch.Tensor):
    """For each row, the indices (into `table`) of the combinations that use only its first
    `item_count` items, in table order (then the invalid ones), and how many are valid."""
    valid = ((table[None] < item_count[:, None, None]) | (table[None] < 0)).all(-1)  # (N, C)
    order = torch.argsort((~valid).to(torch.int8), dim=1, stable=True)
    return order, valid.sum(-1)


def sample_tree_sets(
    heads: torch.Tensor,
    generator: torch.Generator | None = None,
    min_size: int = 2,
    max_size: int = 10,
    max_combination: int = 3,
    size_tolerance: int = 1,
    max_negatives: int = 10,
    min_negatives: int = 2,
    structure: TreeStructure | None = None,
) -> TreeSamples:
    """Sample tree-guided contrastive sets from every eligible root (Zhang et al., 2022).

    Root r is eligible iff `min_size` ≤ |S(r)| ≤ `max_size` and A(r) ≠ ∅, where A(r) are the
    linear ±1 neighbours of S(r) that are real tokens, not in S(r) and not ancestors of r.
    Candidate negatives pair the k-th combination of 1..3 non-root targets t ∈ S(r) with the k-th
    combination of 1..3 values v ∈ A(r) ("zipped", truncating to the shorter list, as in the
    reference); a candidate is S(r) minus every S(t) plus every sentence-level S(v).  Targets and
    values are put in a random order before enumerating, so the pairing is not always the leftmost
    tokens.  Candidates whose size differs from |S(r)| by more than `size_tolerance` are dropped, up to
    `max_negatives` are drawn without replacement (no de-duplication of equal sets), and the root is
    kept only with ≥ `min_negatives`.  Since S(v) never meets S(r) (v is neither inside S(r) nor an
    ancestor of r), every negative contains r, overlaps the positive and differs from it.
    """
    structure = structure if structure is not None else TreeStructure.from_heads(heads)
    device = heads.device
    is_node, subtree = structure.is_node, structure.subtree

    # Size filter first, so the neighbour sets are built only for candidate roots: (N, T) not (B, T, T).
    size = structure.subtree_size
    batch_index, root = (is_node & (size >= min_size) & (size <= max_size)).nonzero(as_tuple=True)
    positive = subtree[batch_index, root]  # (N, T)

    # A(r): positions next to a member of S(r), excluding S(r) itself and r's ancestors.
    next_to_subtree = torch.zeros_like(positive)
    next_to_subtree[:, 1:] |= positive[:, :-1]
    next_to_subtree[:, :-1] |= positive[:, 1:]
    values = next_to_subtree & ~positive & ~structure.ancestors[batch_index, root] & is_node[batch_index]
    has_values = values.any(-1)
    batch_index, root, positive, values = batch_index[has_values], root[has_values], positive[has_values], values[has_values]
    count, length = batch_index.numel(), heads.shape[1]
    if count == 0:
        return TreeSamples(
            batch_index=batch_index,
            root=root,
            positive=positive,
            negatives=torch.zeros(0, max_negatives, length, dtype=torch.bool, device=device),
            negative_mask=torch.zeros(0, max_negatives, dtype=torch.bool, device=device),
        )

    targets = positive.clone()
    targets[torch.arange(count, device=device), root] = False

    # Random order of targets / values: sort uniform keys, members first.
    def shuffled_positions(members: torch.Tensor):
        keys = _uniform_keys(members.shape, generator, device).masked_fill(~members, -1.0)
        num = members.sum(-1)
        width = max(int(num.max()), 1)
        return keys.argsort(dim=-1, descending=True)[:, :width], num

    target_positions, num_targets = shuffled_positions(targets)
    value_positions, num_values = shuffled_positions(values)

    target_table = _combination_table(target_positions.shape[1], max_combination).to(device)
    value_table = _combination_table(value_positions.shape[1], max_combination).to(device)
    target_combo, num_target_combos = _valid_combinations_in_order(target_table, num_targets)
    value_combo, num_value_combos = _valid_combinations_in_order(value_table, num_values)
    num_pairs = torch.minimum(num_target_combos, num_value_combos)
    max_pairs = max(int(num_pairs.max()), 1)  # usually a handful: |A(r)| is small
    target_combo, value_combo = target_combo[:, :max_pairs], value_combo[:, :max_pairs]
    pair_valid = torch.arange(max_pairs, device=device)[None] < num_pairs[:, None]  # (N, P)

    def union_of_subtrees(positions: torch.Tensor, table: torch.Tensor, combo: torch.Tensor) -> torch.Tensor:
        slots = table[combo]  # (N, P, max_combination), −1 = unused slot
        nodes = torch.gather(positions, 1, slots.clamp(min=0).flatten(1)).view_as(slots)
        # An unused slot reads row 0 ([CLS]): never a node, so its "subtree" is empty. One (N, P, T)
        # row a slot, OR-ed in place: no (N, P, max_combination, T) tensor to build and reduce.
        nodes = nodes.masked_fill(slots < 0, 0)
        union = subtree[batch_index[:, None], nodes[..., 0]]
        for slot in range(1, nodes.shape[-1]):
            union |= subtree[batch_index[:, None], nodes[..., slot]]
        return union

    removed = union_of_subtrees(target_positions, target_table, target_combo)
    inserted = union_of_subtrees(value_positions, value_table, value_combo)
    candidates = (positive[:, None] & ~removed) | inserted  # (N, P, T)
    size_gap = (candidates.sum(-1, dtype=torch.int32) - size[batch_index, root][:, None]).abs()
    keep = pair_valid & (size_gap <= size_tolerance)

    pick_keys = _uniform_keys(keep.shape, generator, device).masked_fill(~keep, -1.0)
    num_slots = min(max_negatives, max_pairs)
    top_keys, picked = pick_keys.topk(num_slots, dim=-1)
    negative_mask = top_keys >= 0
    negatives = torch.gather(candidates, 1, picked[..., None].expand(-1, -1, length)) & negative_mask[..., None]
    if num_slots < max_negatives:  # keep a fixed K for downstream code
        pad = max_negatives - num_slots
        negatives = torch.cat([negatives, negatives.new_zeros(count, pad, length)], 1)
        negative_mask = torch.cat([negative_mask, negative_mask.new_zeros(count, pad)], 1)

    kept = negative_mask.sum(-1) >= min_negatives
    return TreeSamples(
        batch_index=batch_index[kept],
        root=root[kept],
        positive=positive[kept],
        negatives=negatives[kept],
        negative_mask=negative_mask[kept],
    )
