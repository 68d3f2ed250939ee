"""Syntax-guided attention G and the structural probe S (Ahmad et al., 2021, §2.2-2.4), against brute-force
references written from the paper's definitions: the GAT distance mask by BFS over an explicitly built graph
of real Wolof trees, the probe losses on a hand-computed 4-word tree, the GAT layer by a loop over
nodes; then G pretrains through the real step and is added to an encoder at UD fine-tuning."""
from __future__ import annotations

import json
from collections import deque

import pytest
import torch
from tango.workspaces import LocalWorkspace
from test_finetune_parser import make_step as make_parser_step, plain_encoder, treebank_slice  # noqa: F401  (fixtures)
from test_pretrain import TINY_MODEL, make_step, read_metrics, tokenizer_dir  # noqa: F401  (fixtures)

import models
from models.attention.syntax_gat import (
    UPOS_TAGS,
    GraphAttentionLayer,
    StructuralProbe,
    gat_allowed_mask,
    gat_tree_distance,
    structural_probe_losses,
)
from models.trees import NO_PATH
from steps.data.inputs import make_instances
from steps.pretrain.collate import PretrainingCollator


def bfs_distances(instance) -> list[list[int]]:
    """All-pairs path lengths in the syntax_gat tree, built from the word-level tree and word spans:
    [CLS] (0) – [SEP] (n+1); [CLS] – first piece of the root word; first piece of each word –
    first piece of its head word; every other piece – its word's first piece."""
    spans = instance["token_spans"][1:-1]
    size = len(instance["input_ids"])
    edges = {i: set() for i in range(size)}

    def link(a, b):
        edges[a].add(b)
        edges[b].add(a)

    link(0, size - 1)
    for (first, last), head in zip(spans, instance["orig_head"]):
        link(first, 0 if head == 0 else spans[head - 1][0])
        for piece in range(first + 1, last + 1):
            link(piece, first)
    table = []
    for source in range(size):
        seen = {source: 0}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            for other in edges[node]:
                if other not in seen:
                    seen[other] = seen[node] + 1
                    queue.append(other)
        table.append([seen[target] for target in range(size)])
    return table


@pytest.fixture(scope="module")
def wolof_rows(wolof_dev_sentences, small_wolof_tokenizer):
    rows = make_instances(small_wolof_tokenizer, wolof_dev_sentences[:40], True, 128, "dev", keep_upos=True)
    # The slice must exercise multi-piece words, among them a multi-piece root word.
    multi_piece = [(row, i) for row in rows for i, (a, b) in enumerate(row["token_spans"][1:-1]) if b > a]
    assert len(multi_piece) > 50 and any(row["orig_head"][i] == 0 for row, i in multi_piece)
    return rows


def test_gat_distance_and_mask_equal_bfs_on_real_wolof_trees(wolof_rows, small_wolof_tokenizer):
    batch = PretrainingCollator(small_wolof_tokenizer, [])(wolof_rows, seed=0)
    distance, depth = gat_tree_distance(batch["heads"], batch["attention_mask"])
    length = batch["input_ids"].shape[1]
    for b, row in enumerate(wolof_rows):
        size = len(row["input_ids"])
        expected = torch.full((length, length), NO_PATH, dtype=torch.long)
        expected[:size, :size] = torch.tensor(bfs_distances(row))
        expected.fill_diagonal_(0)
        assert torch.equal(distance[b], expected), b
        assert torch.equal(depth[b, :size], expected[0, :size])  # depth = distance from [CLS]
    assert torch.equal(distance, distance.transpose(1, 2))
    for delta in (0, 1, 2, 4):
        allowed = gat_allowed_mask(distance, delta)
        assert torch.equal(allowed.diagonal(dim1=1, dim2=2), torch.ones(len(wolof_rows), length, dtype=torch.bool))
        real = batch["attention_mask"].bool()
        # Real rows never see padding; their allowed set is exactly the BFS ball of radius δ.
        assert not (allowed & real[:, :, None] & ~real[:, None, :]).any()
        for b, row in enumerate(wolof_rows):
            size = len(row["input_ids"])
            ball = torch.tensor(bfs_distances(row)) <= delta
            assert torch.equal(allowed[b, :size, :size], ball)


def test_upos_ids_follow_each_pieces_word(wolof_rows, small_wolof_tokenizer):
    batch = PretrainingCollator(small_wolof_tokenizer, [])(wolof_rows, seed=0)
    for b, row in enumerate(wolof_rows):
        for (first, last), tag in zip(row["token_spans"][1:-1], row["upos"]):
            for position in range(first, last + 1):
                assert int(batch["upos_ids"][b, position]) == UPOS_TAGS.index(tag) + 1
        assert batch["upos_ids"][b, 0] == 0 and batch["upos_ids"][b, len(row["input_ids"]) - 1:].eq(0).all()


# A 4-word sentence, one piece per word: heads (1-based) 2 0 2 3.  [CLS]=0, w1..w4 = 1..4, [SEP]=5.
FOUR_WORD_HEADS = torch.tensor([[-1, 2, 0, 2, 3, -1, -1], [-1, 0, -1, -1, -1, -1, -1]])
FOUR_WORD_MASK = torch.tensor([[1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0, 0]])  # 2nd row: [CLS] w [SEP]
# By hand: CLS is the root; w2 hangs from CLS, w1 and w3 from w2, w4 from w3, SEP from CLS.
FOUR_WORD_DISTANCE = [
    [0, 2, 1, 2, 3, 1],
    [2, 0, 1, 2, 3, 3],
    [1, 1, 0, 1, 2, 2],
    [2, 2, 1, 0, 1, 3],
    [3, 3, 2, 1, 0, 4],
    [1, 3, 2, 3, 4, 0],
]
FOUR_WORD_DEPTH = [0, 2, 1, 2, 3, 1]


def test_tree_distance_of_the_hand_computed_tree():
    distance, depth = gat_tree_distance(FOUR_WORD_HEADS, FOUR_WORD_MASK)
    assert distance[0, :6, :6].tolist() == FOUR_WORD_DISTANCE and depth[0, :6].tolist() == FOUR_WORD_DEPTH
    assert distance[1, :3, :3].tolist() == [[0, 1, 1], [1, 0, 2], [1, 2, 0]] and depth[1, :3].tolist() == [0, 1, 1]


def test_structural_probe_losses_on_the_hand_computed_tree():
    distance, depth = gat_tree_distance(FOUR_WORD_HEADS, FOUR_WORD_MASK)
    mask = FOUR_WORD_MASK.bool()
    zeros_distance, zeros_depth = torch.zeros(2, 7, 7), torch.zeros(2, 7)
    # Predicting 0 everywhere: Σ_ij D_ij / n² and Σ_i depth_i / n per sentence, then the mean.
    # Sentence 1: ΣD = 2 × (9 + 9 + 5 + 4 + 4) = 62 over n = 6; Σdepth = 9.  Sentence 2: ΣD = 8, n = 3, Σdepth = 2.
    distance_loss, depth_loss = structural_probe_losses(zeros_distance, zeros_depth, distance, depth, mask)
    assert distance_loss.item() == pytest.approx((62 / 36 + 8 / 9) / 2)
    assert depth_loss.item() == pytest.approx((9 / 6 + 2 / 3) / 2)
    # Predicting depth 1 everywhere: |0-1| + |2-1| + 0 + |2-1| + |3-1| + 0 = 5 over 6; 1 + 0 + 0 over 3.
    _, depth_loss = structural_probe_losses(zeros_distance, torch.ones(2, 7), distance, depth, mask)
    assert depth_loss.item() == pytest.approx((5 / 6 + 1 / 3) / 2)
    # An exact fit (padding entries may hold anything) gives 0.
    fitted = distance.float().masked_fill(distance == NO_PATH, 123.0)
    exact = structural_probe_losses(fitted, depth.float() + (~mask) * 7.0, distance, depth, mask)
    assert exact[0].item() == 0 and exact[1].item() == 0


def test_probe_outputs_equal_their_definition():
    torch.manual_seed(0)
    probe = StructuralProbe(12, 5)
    states = torch.randn(2, 4, 12)
    with torch.no_grad():
        squared_distance, squared_depth = probe(states)
    for b in range(2):
        for i in range(4):
            assert squared_depth[b, i].item() == pytest.approx(float((probe.depth_probe.weight @ states[b, i]).pow(2).sum()), rel=1e-5)
            for j in range(4):
                expected = float((probe.distance_probe.weight @ (states[b, i] - states[b, j])).pow(2).sum())
                assert squared_distance[b, i, j].item() == pytest.approx(expected, rel=1e-5, abs=1e-6)


def test_graph_attention_layer_equals_a_loop_over_nodes():
    torch.manual_seed(1)
    layer = GraphAttentionLayer(6, heads=3, head_size=4, dropout=0.0).eval()
    states = torch.randn(1, 6, 6)
    distance, _ = gat_tree_distance(FOUR_WORD_HEADS[:1, :6], FOUR_WORD_MASK[:1, :6])
    allowed = gat_allowed_mask(distance, 1)
    blocked = torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)[:, None]
    output = layer(states, blocked)
    weight = layer.projection.weight.view(3, 4, 6)
    for head in range(3):
        projected = [weight[head] @ states[0, i] for i in range(6)]
        for i in range(6):
            neighbours = [j for j in range(6) if FOUR_WORD_DISTANCE[i][j] <= 1]
            scores = torch.stack([torch.nn.functional.leaky_relu(
                layer.source_score[head] @ projected[i] + layer.target_score[head] @ projected[j], 0.2) for j in neighbours])
            expected = sum(p * projected[j] for p, j in zip(torch.softmax(scores, 0), neighbours))
            assert torch.allclose(output[0, i, head * 4 : head * 4 + 4], expected, atol=1e-5)


@pytest.mark.parametrize("fusion, targets", [("key_value", {"key", "value"}), ("query_key", {"query", "key"})])
def test_fusion_reaches_only_the_first_syntax_heads_and_zero_maps_give_plain_attention(fusion, targets):
    torch.manual_seed(2)
    config = models.MicroBertConfig(vocab_size=50, syntax_attention="syntax_gat", gat_fusion=fusion, gat_syntax_heads=3,
                                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = models.MicroBertModel(config).eval()
    gat = model.attention_variant_module
    assert set(gat.fusion) == targets and len(gat.fusion[next(iter(targets))]) == config.num_hidden_layers
    states = torch.randn(2, 7, 64)
    offset = gat.offsets(states, next(iter(targets)))[0]
    assert offset.shape == (2, 8, 7, 16) and offset[:, 3:].abs().max() == 0 and offset[:, :3].abs().max() > 0

    input_ids = torch.randint(5, 50, (2, 7))
    upos_ids = torch.randint(0, 18, (2, 7))
    with torch.no_grad():
        syntax = model(input_ids, FOUR_WORD_MASK, heads=FOUR_WORD_HEADS, upos_ids=upos_ids).last_hidden_state
        for projections in gat.fusion.values():
            for projection in projections:
                projection.weight.zero_()
                projection.bias.zero_()
        zeroed = model(input_ids, FOUR_WORD_MASK, heads=FOUR_WORD_HEADS, upos_ids=upos_ids).last_hidden_state
        model.config.syntax_attention = None
        plain = model(input_ids, FOUR_WORD_MASK).last_hidden_state
    real = FOUR_WORD_MASK.bool()
    assert not torch.allclose(syntax[real], plain[real], atol=1e-4)
    assert torch.allclose(zeroed[real], plain[real], atol=1e-5)


def test_condition_grammar_and_the_probe_needs_g():
    assert models.parse_condition("MS-G").attention == "syntax_gat" and models.parse_condition("µB-M-G").objectives == "M"
    assert models.parse_condition("MS-G").encoder_needs_parse
    with pytest.raises(ValueError, match="use it with the -G suffix"):
        models.MicroBertForPretraining.from_condition("MS", vocab_size=50)


def test_ms_g_pretrains_through_the_real_step(wolof_dev_sentences, small_wolof_tokenizer, tokenizer_dir, tmp_path):
    from transformers import AutoModel

    tok = small_wolof_tokenizer
    rows = lambda sentences, gold, keep: make_instances(tok, sentences, gold, 128, "x", keep_upos=keep)  # noqa: E731
    data = {"train": rows(wolof_dev_sentences[:96], False, True) + rows(wolof_dev_sentences[96:108], True, True),
            "dev": rows(wolof_dev_sentences[300:324], False, True), "xpos_labels": [], "stats": {}}
    result = make_step(data, tokenizer_dir, "MS-G", max_steps=4, validate_every=2).result(LocalWorkspace(tmp_path / "w"))
    metrics = read_metrics(result)
    first, final = metrics["history"][0], metrics["final"]
    assert final["dev_structural_probe_loss"] > 0 and final["dev_loss"] == final["dev_mlm_loss"]  # S is training-only
    assert final["dev_structural_probe_loss"] < first["dev_structural_probe_loss"]  # the probe learns
    encoder = AutoModel.from_pretrained(result / "encoder")
    assert type(encoder) is models.MicroBertModel and encoder.config.syntax_attention == "syntax_gat"
    assert any(name.startswith("attention_variant_module.layers.3.") for name, _ in encoder.named_parameters())

    without_upos = dict(data, train=rows(wolof_dev_sentences[:96], False, False))
    with pytest.raises(ValueError, match="got no `upos_ids`"):
        make_step(without_upos, tokenizer_dir, "M-G", max_steps=1, validate_every=1).result(LocalWorkspace(tmp_path / "v"))


def test_ud_fine_tuning_adds_g_to_a_plain_encoder_on_the_corpus_parsers_trees(plain_encoder, treebank_slice, tmp_path, monkeypatch):  # noqa: F811
    import steps.finetune.ud_parser as module

    parsed, seen_upos = [], []

    class ChainParser:  # a stand-in corpus parser: a chain tree, every word a NOUN
        def __init__(self, directory):
            pass

        def parse_all(self, sentences, batch_size=256):
            parsed.append(len(sentences))
            yield [{"tokens": list(t), "head": list(range(len(t))), "upos": ["NOUN"] * len(t)} for t in sentences]

    real_encode = module.encode_words_batch

    def spy(*args, upos=None, **kwargs):
        seen_upos.append(upos)
        return real_encode(*args, upos=upos, **kwargs)

    monkeypatch.setattr(module, "CorpusParser", ChainParser)
    monkeypatch.setattr(module, "encode_words_batch", spy)
    plain = make_parser_step(plain_encoder, treebank_slice, corpus_parser=tmp_path, config={"epochs": 2})
    step = make_parser_step(plain_encoder, treebank_slice, corpus_parser=tmp_path, config={"epochs": 2},
                            syntax_gat={"gat_max_distance": 1, "gat_probe_weight": 0.5})
    assert make_parser_step(plain_encoder, treebank_slice, corpus_parser=tmp_path, config={"epochs": 2}, syntax_gat=None).unique_id == plain.unique_id
    assert step.unique_id != plain.unique_id
    result = step.result(LocalWorkspace(tmp_path / "w"))
    metrics = json.loads((result / "metrics.json").read_text())
    assert parsed == [60, 30, 20] and all(upos is not None and upos[0][0] == "NOUN" for upos in seen_upos)
    assert metrics["encoder_config"]["syntax_attention"] == "syntax_gat" and metrics["sla_parse"] == "parse"
    assert metrics["syntax_gat"] == {"gat_max_distance": 1, "gat_probe_weight": 0.5}
    assert metrics["test"]["las"] > 0
    with pytest.raises(ValueError, match="needs sla_parse='parse'"):
        make_parser_step(plain_encoder, treebank_slice, sla_parse="global", syntax_gat={}).result(LocalWorkspace(tmp_path / "g"))
