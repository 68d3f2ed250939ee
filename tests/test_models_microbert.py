"""MicroBERT encoder, SLA attention, pretraining heads and checkpoints (Gessler & Schneider, §4.2, App. A.1)."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, AutoModel, BertConfig, BertModel

import models  # noqa: F401  (registers model_type "microbert")
from models import AttentionModifier, MicroBertConfig, MicroBertForPretraining, MicroBertModel, parse_condition
from models.modeling_microbert import mean_pool_words, sequence_cross_entropy

TINY = dict(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
CONDITIONS = ["M", "MP", "MT", "MPT", "MPT-SLA", "MX", "MXP", "MXT", "MXPT", "MXPT-SLA"]


def tiny_batch(seed: int = 0) -> dict:
    """Two sentences padded to 10 positions.

    Row 0: six one-piece words; w1 is the root with dependents w2, w4, w6, and w4 heads w3 and w5, so
    S(w4) = {3, 4, 5} has the non-ancestor neighbours A = {2, 6} and yields tree-loss negatives.
    Row 1: three subwords, words [1], [2, 3], where piece 3 hangs off its first piece 2.
    """
    generator = torch.Generator().manual_seed(seed)
    heads = torch.tensor([
        [-1, 0, 1, 4, 1, 4, 1, -1, -1, -1],
        [-1, 0, 1, 2, -1, -1, -1, -1, -1, -1],
    ])
    lengths = torch.tensor([8, 5])
    attention_mask = (torch.arange(10)[None] < lengths[:, None]).long()
    input_ids = torch.randint(5, TINY["vocab_size"], (2, 10), generator=generator) * attention_mask
    input_ids[0, 0] = input_ids[1, 0] = 1
    input_ids[0, 7] = input_ids[1, 4] = 2
    labels = torch.full((2, 10), -100)
    labels[0, [2, 5]] = input_ids[0, [2, 5]]
    labels[1, 1] = input_ids[1, 1]
    token_spans = torch.tensor([
        [[0, 0], [1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, 6], [7, 7]],
        [[0, 0], [1, 1], [2, 3], [4, 4], [0, 0], [0, 0], [0, 0], [0, 0]],
    ])
    xpos = torch.tensor([[1, 2, 3, 0, 4, 2], [2, 1, -100, -100, -100, -100]])
    return dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        token_type_ids=torch.zeros_like(input_ids),
        heads=heads,
        token_spans=token_spans,
        xpos=xpos,
        labels=labels,
        tree_is_gold=torch.tensor([True, False]),
        word_count=torch.tensor([6, 2]),
    )


def stock_bert_copy(model: MicroBertModel) -> BertModel:
    fields = {k: v for k, v in model.config.to_dict().items() if k not in model.config.microbert_only_keys}
    fields.pop("model_type", None)
    stock = BertModel(BertConfig(**fields), add_pooling_layer=False).eval()
    missing, unexpected = stock.load_state_dict(model.state_dict(), strict=False)
    assert not missing and all("local_attention_gate" in key for key in unexpected)
    return stock


def real_positions(batch):
    return batch["attention_mask"].bool()


# ------------------------------------------------------------------------------ config and conditions


def test_config_defaults_are_micro_bert_size():
    config = MicroBertConfig()
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.intermediate_size) == (128, 3, 8, 512)
    assert config.max_position_embeddings == 512 and config.sla_max_distance == 4 and config.sla_window == 1
    assert config.position_embedding_type == "absolute" and config.sla_without_parse == "error"
    with pytest.raises(ValueError):
        MicroBertConfig(syntax_attention="band")
    with pytest.raises(ValueError):
        MicroBertConfig(pretraining_objectives="MX")  # X needs num_xpos_labels


def test_parse_condition():
    sla = parse_condition("µB-MXPT-SLA")
    assert sla.config_fields() == {"pretraining_objectives": "MXPT", "syntax_attention": "sla"}
    assert sla.name == "MXPT-SLA" and sla.needs_parse and sla.encoder_needs_parse and sla.needs_gold_xpos
    plain = parse_condition("MT")
    assert plain.config_fields() == {"pretraining_objectives": "MT", "syntax_attention": None}
    assert plain.needs_parse and not plain.encoder_needs_parse and not plain.needs_gold_xpos
    assert not parse_condition("M").needs_parse and not parse_condition("MX").needs_parse
    for bad in ("SLA", "MPT-XYZ", "MM", "MPT-", "MQ", "M-sla"):
        with pytest.raises(ValueError):
            parse_condition(bad)


# ------------------------------------------------------------------------------ encoder equivalences


def test_plain_encoder_matches_stock_bert():
    torch.manual_seed(0)
    model = MicroBertModel(MicroBertConfig(**TINY)).eval()
    stock = stock_bert_copy(model)
    batch = tiny_batch()
    ours = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    theirs = stock(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    assert torch.equal(ours, theirs)  # same SDPA path


def test_explicit_attention_path_matches_fast_path():
    torch.manual_seed(0)
    model = MicroBertModel(MicroBertConfig(**TINY)).eval()
    batch = tiny_batch()
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    fast = model(**inputs).last_hidden_state
    explicit = model(**inputs, attention_modifier=AttentionModifier(score_bias=torch.zeros(1, 1, 10, 10))).last_hidden_state
    with_probabilities = model(**inputs, return_last_layer_attention="pre_dropout")
    keep = real_positions(batch)
    assert torch.allclose(fast[keep], explicit[keep], atol=1e-5)
    assert torch.allclose(fast[keep], with_probabilities.last_hidden_state[keep], atol=1e-5)
    attention = with_probabilities.last_layer_attention
    assert attention.shape == (2, 10, 10)
    assert torch.allclose(attention.sum(-1), torch.ones(2, 10), atol=1e-5)
    assert (attention[1, :, 5:] == 0).all(), "padding keys get no attention"


def sla_model_and_stock(seed=0):
    torch.manual_seed(seed)
    model = MicroBertModel(MicroBertConfig(**TINY, syntax_attention="sla", sla_max_distance=1)).eval()
    return model, stock_bert_copy(model)


def test_sla_with_zero_gate_reproduces_vanilla_bert():
    model, stock = sla_model_and_stock()
    with torch.no_grad():
        for layer in model.encoder.layer:
            layer.attention.self.local_attention_gate.weight.zero_()
            layer.attention.self.local_attention_gate.bias.fill_(-1e4)  # σ(−1e4) = 0 exactly in float32
    batch = tiny_batch()
    ours = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], heads=batch["heads"]).last_hidden_state
    theirs = stock(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    keep = real_positions(batch)
    assert torch.allclose(ours[keep], theirs[keep], atol=1e-5, rtol=1e-5)


def test_sla_with_all_allowed_mask_reproduces_vanilla_bert():
    model, stock = sla_model_and_stock(1)
    batch = tiny_batch()
    all_allowed = torch.zeros(2, 1, 10, 10)
    ours = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], sla_mask=all_allowed).last_hidden_state
    theirs = stock(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    keep = real_positions(batch)
    assert torch.allclose(ours[keep], theirs[keep], atol=1e-5, rtol=1e-5)


def test_sla_mask_changes_outputs_and_gates_mix_probabilities():
    model, stock = sla_model_and_stock(2)
    batch = tiny_batch()
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    sla = model(**inputs, heads=batch["heads"], return_last_layer_attention="pre_dropout")
    vanilla = stock(**inputs).last_hidden_state
    keep = real_positions(batch)
    assert not torch.allclose(sla.last_hidden_state[keep], vanilla[keep], atol=1e-4)
    attention = sla.last_layer_attention
    assert torch.allclose(attention.sum(-1), torch.ones(2, 10), atol=1e-5) and torch.isfinite(attention).all()

    # with the gate forced to 1, attention outside the SLA mask vanishes
    with torch.no_grad():
        for layer in model.encoder.layer:
            layer.attention.self.local_attention_gate.weight.zero_()
            layer.attention.self.local_attention_gate.bias.fill_(1e4)
    local_only = model(**inputs, heads=batch["heads"], return_last_layer_attention="pre_dropout").last_layer_attention
    blocked = model.sla_mask(batch["heads"])[:, 0] < 0
    assert local_only[blocked].abs().max() < 1e-6


def test_sla_without_parse_is_an_explicit_choice():
    batch = tiny_batch()
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    strict = MicroBertModel(MicroBertConfig(**TINY, syntax_attention="sla")).eval()
    with pytest.raises(ValueError, match="sla_without_parse"):
        strict(**inputs)
    torch.manual_seed(0)
    lenient = MicroBertModel(MicroBertConfig(**TINY, syntax_attention="sla", sla_without_parse="global")).eval()
    keep = real_positions(batch)
    assert torch.allclose(lenient(**inputs).last_hidden_state[keep], stock_bert_copy(lenient)(**inputs).last_hidden_state[keep], atol=1e-5)
    with pytest.raises(ValueError):
        MicroBertModel(MicroBertConfig(**TINY))(**inputs, sla_mask=torch.zeros(2, 1, 10, 10))


def test_attention_modifier_band_mask_and_per_layer_entries():
    torch.manual_seed(0)
    model = MicroBertModel(MicroBertConfig(**TINY)).eval()
    batch = tiny_batch()
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    positions = torch.arange(10)
    band = torch.zeros(1, 1, 10, 10).masked_fill((positions[:, None] - positions[None]).abs()[None, None] > 1, torch.finfo(torch.float32).min)
    banded = model(**inputs, attention_modifier=AttentionModifier(score_bias=band), return_last_layer_attention="pre_dropout")
    outside = ((positions[:, None] - positions[None]).abs() > 1)[None] & real_positions(batch)[:, :, None]
    assert banded.last_layer_attention[outside].abs().max() < 1e-6
    only_first = model(**inputs, attention_modifier=AttentionModifier(score_bias=[band, None]), return_last_layer_attention="pre_dropout")
    assert only_first.last_layer_attention[outside].abs().max() > 1e-3
    with pytest.raises(ValueError, match="syntax_attention='sla'"):
        model(**inputs, attention_modifier=AttentionModifier(gated_mask=band))


def test_relative_key_query_option_runs_and_ignores_absolute_positions():
    torch.manual_seed(0)
    config = MicroBertConfig(**TINY, position_embedding_type="relative_key_query")
    model = MicroBertModel(config).eval()
    assert not hasattr(model.embeddings, "position_embeddings")
    assert model.encoder.layer[0].attention.self.distance_embedding.weight.shape == (2 * 64 - 1, 8)
    batch = tiny_batch()
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    assert torch.isfinite(out).all()
    # shifting a sentence right by one slot changes nothing for the tokens with relative positions only
    ids = batch["input_ids"][1:2, :5]
    shifted = torch.cat([torch.full((1, 1), 3), ids], 1)
    mask = torch.tensor([[0, 1, 1, 1, 1, 1]])
    plain = model(input_ids=ids).last_hidden_state
    moved = model(input_ids=shifted, attention_mask=mask).last_hidden_state[:, 1:]
    assert torch.allclose(plain, moved, atol=1e-5)


# ------------------------------------------------------------------------------ checkpoints


def test_plain_encoder_exports_to_stock_auto_model(tmp_path):
    torch.manual_seed(0)
    pretraining = MicroBertForPretraining.from_condition("MXPT", num_xpos_labels=5, **TINY).eval()
    pretraining.export_encoder(tmp_path)
    assert AutoConfig.from_pretrained(tmp_path).model_type == "bert"
    stock = AutoModel.from_pretrained(tmp_path).eval()
    assert type(stock) is BertModel
    batch = tiny_batch()
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    assert torch.equal(stock(**inputs).last_hidden_state, pretraining.bert(**inputs).last_hidden_state)


def test_sla_encoder_exports_as_microbert_and_loads_with_auto_model(tmp_path):
    torch.manual_seed(0)
    pretraining = MicroBertForPretraining.from_condition("MPT-SLA", **TINY).eval()
    pretraining.export_encoder(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path).eval()
    assert type(loaded) is MicroBertModel and loaded.config.syntax_attention == "sla"
    batch = tiny_batch()
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], heads=batch["heads"])
    assert torch.equal(loaded(**inputs).last_hidden_state, pretraining.bert(**inputs).last_hidden_state)


@pytest.mark.parametrize("condition", ["MXPT-SLA", "MX"])
def test_pretraining_save_load_round_trip(tmp_path, condition):
    torch.manual_seed(0)
    model = MicroBertForPretraining.from_condition(condition, num_xpos_labels=5, **TINY).eval()
    with torch.no_grad():  # make every parameter differ from a fresh init
        for parameter in model.parameters():
            parameter.add_(0.01 * torch.randn_like(parameter))
    model.save_pretrained(tmp_path)
    loaded = MicroBertForPretraining.from_pretrained(tmp_path).eval()
    original_state, loaded_state = model.state_dict(), loaded.state_dict()
    assert original_state.keys() == loaded_state.keys()
    assert all(torch.equal(original_state[key], loaded_state[key]) for key in original_state)
    batch = tiny_batch()
    assert torch.equal(model(**batch).loss, loaded(**batch).loss)


# ------------------------------------------------------------------------------ heads and losses


def test_mlm_head_has_no_output_bias_and_is_tied():
    model = MicroBertForPretraining.from_condition("M", **TINY)
    names = [name for name, _ in model.named_parameters()]
    assert not any(name.startswith("mlm_head") and name.endswith("bias") and "LayerNorm" not in name and "dense" not in name for name in names)
    assert sum(p.numel() for name, p in model.named_parameters() if name.startswith("mlm_head")) == 32 * 32 + 32 + 2 * 32


def test_mean_pool_words_and_sequence_cross_entropy():
    states = torch.arange(2 * 5 * 1, dtype=torch.float32).view(2, 5, 1)
    spans = torch.tensor([[[0, 0], [1, 2], [3, 3], [4, 4]], [[0, 0], [1, 3], [4, 4], [0, 0]]])
    pooled = mean_pool_words(states, spans)
    assert pooled[0, :, 0].tolist() == [0.0, 1.5, 3.0, 4.0] and pooled[1, 1, 0].item() == 7.0
    logits = torch.zeros(2, 3, 4)
    labels = torch.tensor([[0, 1, -100], [-100, -100, -100]])
    assert sequence_cross_entropy(logits, labels).item() == pytest.approx(torch.log(torch.tensor(4.0)).item())


@pytest.mark.parametrize("condition", CONDITIONS)
def test_every_condition_gives_finite_losses_and_gradients(condition):
    torch.manual_seed(0)
    model = MicroBertForPretraining.from_condition(condition, num_xpos_labels=5, **TINY).train()
    model.set_sampling_seed(0)
    batch = tiny_batch()
    output = model(**batch)
    letters = parse_condition(condition).objectives
    expected = {"mlm_loss": "M", "xpos_loss": "X", "phrase_loss": "P", "tree_loss": "T"}
    parts = []
    for name, letter in expected.items():
        value = getattr(output, name)
        assert (value is not None) == (letter in letters), name
        if value is not None:
            assert torch.isfinite(value)
            parts.append(value)
    assert torch.allclose(output.loss, torch.stack(parts).sum())
    if "P" in letters:
        assert output.num_phrase_samples > 0 and output.phrase_loss > 0
    if "T" in letters:
        assert output.num_tree_samples > 0 and output.tree_loss > 0
    output.loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    assert all(g is None or torch.isfinite(g).all() for g in grads.values())
    assert grads["bert.embeddings.word_embeddings.weight"].abs().sum() > 0
    if condition.endswith("SLA"):
        assert grads["bert.encoder.layer.0.attention.self.local_attention_gate.weight"].abs().sum() > 0
    if "X" in letters:
        assert grads["xpos_head.scalar_mix.scalar_parameters"].abs().sum() > 0

    model.eval()
    evaluation = model(**batch)
    assert evaluation.phrase_loss is None and evaluation.tree_loss is None


def test_phrase_and_tree_losses_reach_the_encoder():
    torch.manual_seed(0)
    model = MicroBertForPretraining.from_condition("MPT", **TINY).train()
    output = model(**tiny_batch())
    (output.phrase_loss + output.tree_loss).backward()
    assert model.bert.encoder.layer[-1].attention.self.query.weight.grad.abs().sum() > 0
