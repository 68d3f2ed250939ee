"""Edman et al.'s local MLM conditions (Edman et al., §2.1-2.2): band attention A<c> and limited-context MLM C<c>,
pinned against brute-force loops, and both pretrained through the real step on real Wolof rows."""
from __future__ import annotations

import pytest
import torch
from tango.workspaces import LocalWorkspace
from test_pretrain import TINY_MODEL, make_step, pretraining_data, read_metrics, tokenizer_dir  # noqa: F401  (fixtures)

import models
from models.attention import AttentionInputs, attention_variant
from models.attention.band import band_half_width
from models.objectives import limited_context_windows


def brute_force_band(length: int, context: int, literal: bool) -> list[list[bool]]:
    """Eq. 2 written out: w_ij = 0 unless j < i − r or j > i + r, with r = c (literal) or (c−1)/2."""
    reach = context if literal else (context - 1) // 2
    return [[not (j < i - reach or j > i + reach) for j in range(length)] for i in range(length)]


@pytest.mark.parametrize("context", [5, 9, 13])
@pytest.mark.parametrize("reading", ["half_width", "literal"])
def test_band_mask_in_both_readings(context, reading):
    variant = attention_variant(f"band{context}")
    assert variant.condition_suffix == f"A{context}" and not variant.needs_parse and not variant.needs_gates
    config = models.MicroBertConfig(vocab_size=50, syntax_attention=variant.name, band_reading=reading)
    length = 31
    modifier = variant.build(AttentionInputs(None, torch.ones(2, length, dtype=torch.long), None, None, torch.float32), config)
    bias = modifier.score_bias
    assert bias.shape == (1, 1, length, length) and modifier.gated_mask is None
    expected = brute_force_band(length, context, reading == "literal")
    for i in range(length):
        for j in range(length):
            assert (bias[0, 0, i, j] == 0).item() == expected[i][j], (i, j)
    assert int((bias[0, 0, 15] == 0).sum()) == (2 * context + 1 if reading == "literal" else context)
    assert band_half_width(5) == 2 and band_half_width(5, "literal") == 5


def test_band_limits_what_each_layer_can_see():
    """One layer of A5 (half-width 2): a token 3 positions away changes nothing; 2 away does.
    Two layers reach 4 away (the paper's receptive-field argument)."""
    torch.manual_seed(0)
    for layers, reach in ((1, 2), (2, 4)):
        config = models.MicroBertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=layers, num_attention_heads=2,
                                        intermediate_size=32, syntax_attention="band5")
        model = models.MicroBertModel(config).eval()
        ids = torch.randint(5, 60, (1, 12))
        base = model(input_ids=ids).last_hidden_state[0, 5]
        for distance in range(1, 7):
            changed = ids.clone()
            changed[0, 5 + distance] = 5 if ids[0, 5 + distance] != 5 else 6
            moved = not torch.equal(model(input_ids=changed).last_hidden_state[0, 5], base)  # blocked keys get exactly 0
            assert moved == (distance <= reach), (layers, distance)


def brute_force_window(sequence: list[int], position: int, context: int, centre: int) -> list[int]:
    half = context // 2
    window = []
    for offset in range(-half, half + 1):
        k = position + offset
        window.append(1 if k < 0 else 2 if k >= len(sequence) else sequence[k])  # [CLS]=1 left, [SEP]=2 right
    window[half] = centre
    return window


@pytest.mark.parametrize("context", [5, 9, 13])
def test_limited_context_windows_at_both_sentence_edges(context):
    # Two rows of different lengths ([CLS] … [SEP], then padding); every non-special position a target.
    rows = [[1, 10, 11, 12, 13, 14, 2], [1, 20, 21, 2]]
    length = max(map(len, rows))
    original = torch.zeros(2, length, dtype=torch.long)
    mask = torch.zeros(2, length, dtype=torch.long)
    for b, row in enumerate(rows):
        original[b, : len(row)] = torch.tensor(row)
        mask[b, : len(row)] = 1
    corrupted = original.clone()
    targets = torch.tensor([[b, p] for b, row in enumerate(rows) for p in range(1, len(row) - 1)])
    corrupted[targets[:, 0], targets[:, 1]] = 4  # [MASK]
    windows = limited_context_windows(original, corrupted, mask, targets, context)
    assert windows.shape == (len(targets), context)
    for n, (b, p) in enumerate(targets.tolist()):
        assert windows[n].tolist() == brute_force_window(rows[b], p, context, 4), (b, p)
    # The paper's example, c = 5, first word: "<s> <s> [MASK] is sunny".
    if context == 5:
        assert windows[0].tolist() == [1, 1, 4, 11, 12]
    assert windows[0, : context // 2].tolist() == [1] * (context // 2)
    # Last word of the short row: "… 20 [MASK] </s> </s>" — padding beyond [SEP] reads as [SEP], not [PAD].
    assert windows[-1, context // 2 - 1 :].tolist() == [20, 4] + [2] * (context // 2)


def test_local_conditions_parse_and_refuse_what_they_cannot_do():
    from models import parse_condition

    for name, (objectives, attention) in {"M-A5": ("M", "band5"), "M-A13": ("M", "band13"), "C9": ("C9", None),
                                          "µB-C13": ("C13", None)}.items():
        condition = parse_condition(name)
        assert (condition.objectives, condition.attention) == (objectives, attention)
        assert not condition.needs_parse and not condition.encoder_needs_parse
    for bad in ("C", "MC5", "C5X", "C5-A5", "C5-SLA", "A5", "M-A7", "M5", "CC5"):
        with pytest.raises(ValueError, match="unrecognised condition"):
            parse_condition(bad)
    with pytest.raises(ValueError, match="odd"):
        models.MicroBertForPretraining.from_condition("C4", vocab_size=50)


@pytest.mark.parametrize("condition", ["M-A5", "C5"])
def test_local_conditions_pretrain_through_the_step(condition, pretraining_data, tokenizer_dir, tmp_path):
    from transformers import AutoModel

    result = make_step(pretraining_data, tokenizer_dir, condition, max_steps=3, validate_every=3).result(
        LocalWorkspace(tmp_path / "workspace")
    )
    final = read_metrics(result)["final"]
    assert 0 < final["dev_mlm_loss"] < 20 and final["dev_loss"] == final["dev_mlm_loss"]
    encoder = AutoModel.from_pretrained(result / "encoder")
    # The band is part of the exported encoder, so it stays on at fine-tuning; C exports a plain BERT.
    assert getattr(encoder.config, "syntax_attention", None) == ("band5" if condition == "M-A5" else None)
    assert (result / "mlm_head.safetensors").exists()


def test_mlm_accuracy_of_local_conditions_and_the_related_table(pretraining_data, tokenizer_dir, tmp_path):
    """Smoke-pretrained M-A5 and C5 through the MLM-accuracy step on real Wolof dev sentences, and
    their cells in the related-biases Markdown."""
    from reporting.cells import Cell
    from reporting.tables import related_markdown
    from steps.common.data_root import DataPath
    from steps.evaluate.mlm_accuracy import MlmAccuracy, frequency_bins

    workspace = LocalWorkspace(tmp_path / "workspace")
    cells = []
    for condition in ("M-A5", "C5"):
        pretrained = make_step(pretraining_data, tokenizer_dir, condition, max_steps=3, validate_every=3).result(workspace)
        result = MlmAccuracy(pretrained=pretrained, pretraining_data=pretraining_data, condition=condition,
                             sentences=DataPath("wolof/ud/wo_wtb-ud-dev.conllu"), max_sentences=5, num_threads=1).result(workspace)
        metrics = read_metrics(result)
        scores, counts = metrics["test"], metrics["counts"]
        assert counts["sentences"] == 5 and counts["tokens"] == sum(counts[f"bin{b}_tokens"] for b in range(1, 6))
        assert 0 <= scores["accuracy"] <= 100 and 0 <= scores["word_completion"] <= 100
        # overall accuracy is the token-weighted mean of the bins'
        weighted = sum((scores[f"bin{b}"] or 0) * counts[f"bin{b}_tokens"] for b in range(1, 6)) / counts["tokens"]
        assert weighted == pytest.approx(scores["accuracy"])
        cells.append(Cell("mlm:accuracy", "smoke", condition, "wolof",
                          {"seeds": [42], "n": 1, "test": {"mean": scores["accuracy"], "sd": 0.0, "values": [scores["accuracy"]]}}))
    text = related_markdown(cells, "smoke", title="Related")
    assert "µB-M-A5" in text and "µB-C5" in text and "NLM-C" in text and "NLM-A" in text
    # Five equal bins of the 295 non-special types of a tiny vocabulary, rarest first.
    bins = frequency_bins([{"input_ids": [1, 5, 5, 6, 2]}], 300, [0, 1, 2, 3, 4])
    assert [int((bins == b).sum()) for b in range(1, 6)] == [59] * 5 and bins[5] == 5 and bins[6] == 5 and bins[0] == 0
