"""Collator invariants (span padding, MLM masking) on real Wolof instances."""
from __future__ import annotations

import pytest
import torch

from steps.pretrain.collate import IGNORE_INDEX, NO_HEAD, PretrainingCollator, collate_batches
from steps.data.inputs import make_instances


@pytest.fixture(scope="module")
def rows(wolof_dev_sentences, small_wolof_tokenizer):
    """30 gold treebank rows followed by 30 rows flagged silver (as parsed-corpus rows are)."""
    gold = make_instances(small_wolof_tokenizer, wolof_dev_sentences[:30], True, 128, "gold")
    silver = make_instances(small_wolof_tokenizer, wolof_dev_sentences[30:60], False, 128, "silver")
    return gold + silver


@pytest.fixture(scope="module")
def xpos_labels(rows):
    return sorted({tag for row in rows if row["tree_is_gold"][0] for tag in row["xpos"]})


@pytest.fixture(scope="module")
def collator(small_wolof_tokenizer, xpos_labels):
    return PretrainingCollator(small_wolof_tokenizer, xpos_labels)


def test_shapes_padding_and_position_aligned_heads(collator, rows):
    batch_rows = rows[25:37]  # mixes gold and silver rows of different lengths
    batch = collator(batch_rows, seed=1)
    length = max(len(r["input_ids"]) for r in batch_rows)
    words = max(len(r["xpos"]) for r in batch_rows)
    assert batch["input_ids"].shape == batch["labels"].shape == batch["heads"].shape == (12, length)
    assert batch["token_spans"].shape == (12, words + 2, 2)
    assert batch["xpos"].shape == (12, words)
    assert not batch["token_type_ids"].any()
    for b, row in enumerate(batch_rows):
        n = len(row["input_ids"]) - 2
        assert batch["attention_mask"][b].tolist() == [1] * (n + 2) + [0] * (length - n - 2)
        assert batch["heads"][b, 1 : n + 1].tolist() == row["head"]
        assert batch["heads"][b, 0] == NO_HEAD and batch["heads"][b, n + 1] == NO_HEAD
        assert (batch["heads"][b, n + 2 :] == NO_HEAD).all()
        # Unmasked positions keep their ids; padding is [PAD] = 0.
        kept = batch["labels"][b, : n + 2] == IGNORE_INDEX
        original = torch.tensor(row["input_ids"])
        assert torch.equal(batch["input_ids"][b, : n + 2][kept], original[kept])
        assert not batch["input_ids"][b, n + 2 :].any()
        spans = batch["token_spans"][b]
        assert spans[: len(row["token_spans"])].tolist() == [list(s) for s in row["token_spans"]]
        assert not spans[len(row["token_spans"]) :].any()
        assert batch["word_count"][b] == len(row["xpos"])
        assert batch["tree_is_gold"][b] == row["tree_is_gold"][0]


def test_heads_recover_word_trees_through_spans(collator, rows):
    """The batch's heads and spans give back each row's word-level tree (orig_head)."""
    batch = collator(rows[:8], seed=0)
    for b, row in enumerate(rows[:8]):
        first_piece = [int(s[0]) for s in batch["token_spans"][b, 1 : len(row["xpos"]) + 1]]
        word_of_piece = {p: w + 1 for w, p in enumerate(first_piece)}
        word_heads = [0 if batch["heads"][b, p] == 0 else word_of_piece[int(batch["heads"][b, p])] for p in first_piece]
        assert word_heads == row["orig_head"]


def test_labels_only_at_masked_positions_and_never_on_special_tokens(collator, rows, small_wolof_tokenizer):
    special = torch.tensor(small_wolof_tokenizer.all_special_ids)
    masked_total = real_total = 0
    mask_id = small_wolof_tokenizer.mask_token_id
    replaced = unchanged = 0
    for seed in range(40):
        batch_rows = rows[(seed % 6) * 10 : (seed % 6) * 10 + 10]
        batch = collator(batch_rows, seed=seed)
        original = torch.zeros_like(batch["input_ids"])
        for b, row in enumerate(batch_rows):
            original[b, : len(row["input_ids"])] = torch.tensor(row["input_ids"])
        selected = batch["labels"] != IGNORE_INDEX
        assert selected.any()
        assert torch.equal(batch["labels"][selected], original[selected])
        assert not (selected & torch.isin(original, special)).any(), "a special token ([CLS]/[SEP]/[PAD]/[UNK]) was masked"
        maskable = ~torch.isin(original, special)
        masked_total += int(selected.sum())
        real_total += int(maskable.sum())
        replaced += int((batch["input_ids"][selected] == mask_id).sum())
        unchanged += int((batch["input_ids"][selected] == original[selected]).sum())
    # 15 % of maskable tokens, 80 % of them [MASK], ~10 % kept (random ids may also hit the original).
    assert 0.12 < masked_total / real_total < 0.18
    assert 0.75 < replaced / masked_total < 0.85
    assert 0.06 < unchanged / masked_total < 0.15


def test_a_batch_with_nothing_masked_is_masked_again(rows, small_wolof_tokenizer, xpos_labels):
    rare = PretrainingCollator(small_wolof_tokenizer, xpos_labels, mlm_probability=0.002)
    for seed in range(20):
        batch = rare(rows[:1], seed=seed)
        assert (batch["labels"] != IGNORE_INDEX).sum() >= 1


def test_batch_of_only_special_tokens_is_an_error(collator):
    row = {"input_ids": [1, 3, 2], "token_spans": [(0, 0), (1, 1), (2, 2)], "head": [0], "xpos": ["N"],
           "tree_is_gold": [1]}
    with pytest.raises(ValueError, match="no maskable token"):
        collator([row], seed=0)


def test_masking_is_reproducible_from_the_seed(collator, rows):
    first, again, other = collator(rows[:16], seed=7), collator(rows[:16], seed=7), collator(rows[:16], seed=8)
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not torch.equal(first["labels"], other["labels"])
    dev_a = [b["labels"] for b in collate_batches(collator, rows, 16, seed=3)]
    dev_b = [b["labels"] for b in collate_batches(collator, rows, 16, seed=3)]
    assert len(dev_a) == 4 and all(torch.equal(a, b) for a, b in zip(dev_a, dev_b))


def test_xpos_labels_only_on_gold_rows_by_default(collator, rows, xpos_labels, small_wolof_tokenizer):
    batch_rows = rows[28:32]  # gold, gold, silver, silver
    batch = collator(batch_rows, seed=0)
    for b, row in enumerate(batch_rows):
        labelled = batch["xpos"][b, : len(row["xpos"])]
        if row["tree_is_gold"][0]:
            assert labelled.tolist() == [xpos_labels.index(tag) for tag in row["xpos"]]
        else:
            assert (labelled == IGNORE_INDEX).all()
        assert (batch["xpos"][b, len(row["xpos"]) :] == IGNORE_INDEX).all()

    silver_too = PretrainingCollator(small_wolof_tokenizer, xpos_labels, xpos_from_silver_rows=True)
    batch = silver_too(batch_rows, seed=0)
    for b, row in enumerate(batch_rows):
        expected = [xpos_labels.index(tag) if tag in xpos_labels else IGNORE_INDEX for tag in row["xpos"]]
        assert batch["xpos"][b, : len(row["xpos"])].tolist() == expected
    assert (batch["xpos"][2:] != IGNORE_INDEX).any()


def test_tags_outside_the_label_set_get_no_loss(small_wolof_tokenizer, rows):
    collator = PretrainingCollator(small_wolof_tokenizer, ["NOT-A-REAL-TAG"])
    batch = collator(rows[:4], seed=0)
    assert (batch["xpos"] == IGNORE_INDEX).all()


def test_batch_runs_through_every_model_objective(collator, rows, xpos_labels, small_wolof_tokenizer):
    from models import MicroBertForPretraining

    torch.manual_seed(0)
    model = MicroBertForPretraining.from_condition(
        "MXPT-SLA", vocab_size=len(small_wolof_tokenizer), num_xpos_labels=len(xpos_labels),
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, max_position_embeddings=128,
    )
    model.train()
    output = model(**collator(rows[20:40], seed=0))
    for name in ("loss", "mlm_loss", "xpos_loss", "phrase_loss", "tree_loss"):
        assert torch.isfinite(getattr(output, name)), name
    assert output.num_phrase_samples > 0 and output.num_tree_samples > 0


def test_mlm_only_rows_get_no_heads_and_no_tags(collator, rows, wolof_dev_sentences, small_wolof_tokenizer):
    from steps.data.inputs import make_mlm_instances

    words = [s["tokens"] for s in wolof_dev_sentences[30:42]]
    plain = make_mlm_instances(small_wolof_tokenizer, words, 128, "text")
    assert set(plain[0]) == {"input_ids", "token_spans", "tree_is_gold"}
    batch = collator(plain, seed=4)
    parsed = collator(rows[30:42], seed=4)  # the same sentences, parsed (silver rows)
    # Identical subwords, spans and masking; only the tree and the tags are missing.
    for name in ("input_ids", "labels", "token_spans", "word_count", "attention_mask"):
        assert torch.equal(batch[name], parsed[name]), name
    assert (batch["heads"] == NO_HEAD).all() and (parsed["heads"][:, 1] != NO_HEAD).all()
    assert (batch["xpos"] == IGNORE_INDEX).all() and not batch["tree_is_gold"].any()
