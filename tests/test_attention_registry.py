"""The bar: an attention variant is one registered builder. This file registers a toy
variant ("no attention to [SEP]") here, in the test, and pretrains it through the real
`PretrainMicrobert` step with nothing under models/ or steps/ knowing about it."""
from __future__ import annotations

import pytest
import torch
from tango.workspaces import LocalWorkspace
from test_pretrain import make_step, pretraining_data, read_metrics, tokenizer_dir  # noqa: F401  (fixtures)

import models
from models.attention import ATTENTION_VARIANTS, AttentionModifier, attention_needs_parse, register_attention


def no_attention_to_sep(inputs, config) -> AttentionModifier:
    """score_bias hiding each row's [SEP] (its last real position) from every query but [SEP] itself."""
    positions = torch.arange(inputs.attention_mask.shape[1], device=inputs.attention_mask.device)
    is_sep = positions[None, :] == (inputs.attention_mask.sum(-1) - 1)[:, None]  # (B, T)
    hidden = is_sep[:, None, :] & ~is_sep[:, :, None]  # (B, query, key)
    bias = torch.zeros(hidden.shape, dtype=inputs.dtype, device=hidden.device)
    return AttentionModifier(score_bias=bias.masked_fill(hidden, torch.finfo(inputs.dtype).min)[:, None])


@pytest.fixture
def nosep_variant():
    assert "nosep" not in ATTENTION_VARIANTS  # nothing in the package knows it
    register_attention("nosep", needs_parse=False)(no_attention_to_sep)
    try:
        yield ATTENTION_VARIANTS["nosep"]
    finally:
        del ATTENTION_VARIANTS["nosep"]


def sep_attention(encoder, batch) -> torch.Tensor:
    """Last-layer attention of every real non-[SEP] query to its row's [SEP]."""
    output = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], return_last_layer_attention="pre_dropout")
    attention = output.last_layer_attention
    sep = batch["attention_mask"].sum(-1) - 1
    rows = torch.arange(len(sep))
    to_sep = attention[rows, :, sep]  # (B, T): query → [SEP]
    queries = batch["attention_mask"].bool().clone()
    queries[rows, sep] = False
    return to_sep[queries]


def test_a_variant_registered_in_a_test_pretrains_through_the_real_step(nosep_variant, pretraining_data, tokenizer_dir, tmp_path):
    from transformers import AutoModel

    from steps.pretrain.collate import PretrainingCollator
    from steps.data.vocab import load_tokenizer

    condition = models.parse_condition("MX-NOSEP")  # a condition names a variant by its suffix
    assert condition.attention == "nosep" and not condition.encoder_needs_parse and condition.needs_gold_xpos

    result = make_step(pretraining_data, tokenizer_dir, "MX-NOSEP", max_steps=3, validate_every=3).result(
        LocalWorkspace(tmp_path / "workspace")
    )
    final = read_metrics(result)["final"]
    assert final["dev_mlm_loss"] > 0 and final["dev_xpos_loss"] > 0
    assert final["dev_loss"] == pytest.approx(final["dev_mlm_loss"] + final["dev_xpos_loss"])

    # The export is a microbert encoder that runs the variant: no query but [SEP] attends to [SEP],
    # while the same weights with plain attention do.
    encoder = AutoModel.from_pretrained(result / "encoder").eval()
    assert type(encoder) is models.MicroBertModel and encoder.config.syntax_attention == "nosep"
    assert not attention_needs_parse(encoder.config)
    collator = PretrainingCollator(load_tokenizer(tokenizer_dir), pretraining_data["xpos_labels"])
    batch = collator(pretraining_data["dev"][:6], seed=0)
    with torch.no_grad():
        assert sep_attention(encoder, batch).abs().max() == 0
        encoder.config.syntax_attention = None
        assert sep_attention(encoder, batch).min() > 0


def test_registering_a_taken_name_or_suffix_is_refused(nosep_variant):
    with pytest.raises(ValueError, match="already registered"):
        register_attention("nosep", needs_parse=False)(no_attention_to_sep)
    with pytest.raises(ValueError, match="already registered"):
        register_attention("other", condition_suffix="SLA", needs_parse=False)(no_attention_to_sep)
    assert "other" not in ATTENTION_VARIANTS
