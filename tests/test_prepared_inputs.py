"""The parse's inputs built before the model (`models.prepared_inputs`): the same losses and gradients
bit for bit as the model building them itself, on real Wolof batches, and fewer ops in the step."""
from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from models import MicroBertForPretraining
from models.prepared_inputs import ParseInputs
from models.trees import PhraseSamples, TreeSamples, sla_allowed_mask
from steps.data.inputs import make_instances
from steps.pretrain.collate import PretrainingCollator

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)


@pytest.fixture(scope="module")
def rows(wolof_dev_sentences, small_wolof_tokenizer):
    return make_instances(small_wolof_tokenizer, wolof_dev_sentences[:24], True, 128, "gold")


@pytest.fixture(scope="module")
def collator(small_wolof_tokenizer, rows):
    labels = sorted({tag for row in rows for tag in row["xpos"]})
    return PretrainingCollator(small_wolof_tokenizer, labels)


def model_for(condition, tokenizer, collator):
    torch.manual_seed(3)
    return MicroBertForPretraining.from_condition(
        condition, vocab_size=len(tokenizer), num_xpos_labels=len(collator.xpos_index), **TINY
    ).train()


def loss_and_gradients(model, batch, sampling_seed):
    model.zero_grad(set_to_none=True)
    model.set_sampling_seed(sampling_seed)
    torch.manual_seed(11)  # dropout
    output = model(**batch)
    output.loss.backward()
    return output, {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("condition", ["MXPT-SLA", "MPT", "MT-SLA"])
def test_prepared_batches_give_the_in_model_losses_and_gradients_bit_for_bit(condition, collator, rows, small_wolof_tokenizer):
    model = model_for(condition, small_wolof_tokenizer, collator)
    batch = collator(rows[4:20], seed=7)
    prepared = ParseInputs(model.config)(batch, sampling_seed=1234)
    expected_fields = {"tree_samples"} | ({"phrase_samples"} if "P" in condition else set()) | (
        {"sla_mask"} if condition.endswith("SLA") else set())
    assert set(prepared) - set(batch) == expected_fields

    in_model, in_model_grads = loss_and_gradients(model, batch, 1234)
    # A different model seed: the prepared samples must be what is used, not a fresh draw.
    ahead, ahead_grads = loss_and_gradients(model, prepared, 999)
    for name, value in in_model.losses.items():
        assert torch.equal(value, ahead.losses[name]), name
    assert in_model.num_tree_samples == ahead.num_tree_samples > 0
    assert in_model_grads.keys() == ahead_grads.keys() and len(in_model_grads) > 20
    for name, grad in in_model_grads.items():
        assert torch.equal(grad, ahead_grads[name]), name


def test_the_prepared_sla_mask_is_the_boolean_mask_of_the_parse(collator, rows, small_wolof_tokenizer):
    model = model_for("MPT-SLA", small_wolof_tokenizer, collator)
    batch = collator(rows[:8], seed=0)
    prepared = ParseInputs(model.config)(batch, sampling_seed=0)
    config = model.config
    expected = sla_allowed_mask(batch["heads"], config.sla_max_distance, window=config.sla_window)
    assert prepared["sla_mask"].dtype == torch.bool and torch.equal(prepared["sla_mask"], expected)
    assert isinstance(prepared["phrase_samples"], PhraseSamples) and isinstance(prepared["tree_samples"], TreeSamples)


def test_conditions_without_parse_draws_pass_the_batch_through(collator, rows, small_wolof_tokenizer):
    for condition in ("M", "MX", "MS-G"):
        preparer = ParseInputs(model_for(condition, small_wolof_tokenizer, collator).config)
        batch = collator(rows[:4], seed=0)
        assert not preparer and preparer(batch, sampling_seed=0) is batch, condition


class OpCounter(TorchDispatchMode):
    """Counts aten calls, and separately the reads of a tensor value back to Python (item/bool/int)."""

    def __init__(self):
        super().__init__()
        self.ops = 0
        self.host_reads = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        if func is torch.ops.aten._local_scalar_dense.default:
            self.host_reads += 1
        return func(*args, **(kwargs or {}))


def counted_step(model, batch):
    model.set_sampling_seed(0)
    with OpCounter() as counter:
        model(**batch).loss.backward()
    return counter


def test_a_prepared_sla_step_runs_fewer_ops_and_no_host_reads_in_the_parse(collator, rows, small_wolof_tokenizer):
    """What the GPU step is spared: the structure, mask and sampling ops, and every read back to the
    host among them (each one a sync on a GPU). The figures are in docs/decisions.md."""
    batch = collator(rows[:16], seed=0)
    without_parse = counted_step(model_for("MX", small_wolof_tokenizer, collator), batch)
    sla_model = model_for("MXPT-SLA", small_wolof_tokenizer, collator)
    in_model = counted_step(sla_model, batch)
    ahead = counted_step(sla_model, ParseInputs(sla_model.config)(batch, 0))
    # 2-core box, torch 2.13: MX 605 ops / 3 reads; MXPT-SLA 1,442 / 8 in-model, 1,023 / 3 prepared.
    # (In-model on a CPU the structure walks up the trees, a read per level; a GPU doubles instead.)
    assert ahead.ops < 0.8 * in_model.ops
    assert in_model.host_reads > without_parse.host_reads
    assert ahead.host_reads == without_parse.host_reads


def test_a_packed_batch_unpacks_to_the_same_tensors_and_samples(collator, rows, small_wolof_tokenizer):
    from steps.pretrain.packing import ALIGNMENT, pack_batch

    batch = ParseInputs(model_for("MXPT-SLA", small_wolof_tokenizer, collator).config)(collator(rows[:9], seed=2), 4)
    batch["soft_label_probs"] = torch.rand(5, 3)  # a float field (condition H)
    batch["nothing_masked"] = torch.zeros(0, 7, dtype=torch.long)  # an empty one
    packed = pack_batch(batch)
    assert packed.buffer.dtype == torch.uint8 and packed.tokens == int(batch["attention_mask"].sum())
    assert all(offset % ALIGNMENT == 0 for _, _, slots in packed.layout for *_, offset in slots)
    unpacked = packed.unpack()
    assert list(unpacked) == list(batch)
    for key, value in batch.items():
        if isinstance(value, torch.Tensor):
            assert value.dtype == unpacked[key].dtype and torch.equal(value, unpacked[key]), key
        else:
            assert type(unpacked[key]) is type(value)
            for name, tensor in vars(value).items():
                assert torch.equal(tensor, getattr(unpacked[key], name)), (key, name)
    with pytest.raises(TypeError, match="cannot pack batch field 'note'"):
        pack_batch({"note": "text"})
