"""The fine-tuning step as one CUDA graph per batch shape (`steps.common.cuda_graphs`): on a CPU the same
static-input step runs eagerly and must be the plain step bit for bit; padding lengths to a multiple must
leave the parser's function unchanged; the UD step keys and records the option. The capture itself runs
where there is a GPU (the last test)."""
from __future__ import annotations

import json

import pytest
import torch
from tango.workspaces import LocalWorkspace

from models.biaffine_parser import BiaffineDependencyParser
from steps.common.batching import bucketed_batches
from steps.common.cuda_graphs import GraphedTrainStep, shape_key
from steps.data.readers import read_conllu
from steps.finetune.encoders import encode_words_batch, load_encoder
from steps.finetune.ud_parser import GRAPH_LENGTH_MULTIPLE, Split, make_batch
from test_finetune_parser import make_step, plain_encoder, sla_encoder, treebank_slice  # noqa: F401 (fixtures)


def wolof_split(encoder_dir, path, with_trees=False) -> Split:
    sentences = read_conllu(path)
    _, tokenizer = load_encoder(encoder_dir, "parse")
    heads = [s["head"] for s in sentences] if with_trees else None
    features = encode_words_batch(tokenizer, [s["tokens"] for s in sentences], 128, heads, name=str(path))
    split = Split("train", sentences, features)
    labels = sorted({label for s in sentences for label in s["deprel"]})
    split.label_ids = [[labels.index(label) for label in s["deprel"]] for s in sentences]
    return split, len(labels)


def small_parser(encoder_dir, labels: int, dropout: float = 0.2) -> BiaffineDependencyParser:
    torch.manual_seed(0)  # the encoder's pooler is initialised afresh on loading
    encoder, _ = load_encoder(encoder_dir, "parse")
    return BiaffineDependencyParser(encoder, labels, lstm_hidden=16, lstm_layers=2, arc_dim=8, label_dim=8,
                                    dropout=dropout, input_dropout=dropout)


def batch_orders(split: Split, batches: int):
    lengths = [len(f["input_ids"]) for f in split.features]
    return bucketed_batches(lengths, 8, torch.Generator().manual_seed(4))[:batches]


def train(parser, split, order, graphed: bool):
    """Losses and final weights of ``order``'s steps, plain or through `GraphedTrainStep` (no capture)."""
    optimizer = torch.optim.AdamW(parser.parameters(), lr=1e-2, fused=True)

    def clip():
        torch.nn.utils.clip_grad_value_(parser.parameters(), 0.05)  # small enough to clip most values

    step = GraphedTrainStep(lambda batch: parser(**batch).loss, clip, optimizer, torch.device("cpu"), capture=False)
    torch.manual_seed(7)  # dropout
    losses = []
    for indices in order:
        batch = make_batch(split, indices, GRAPH_LENGTH_MULTIPLE)
        if graphed:
            loss = step(batch)
        else:
            loss = parser(**batch).loss
            loss.backward()
            clip()
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach().item())
    return losses, {name: value.detach().clone() for name, value in parser.state_dict().items()}, step


def test_the_static_input_step_is_the_plain_step_bit_for_bit(plain_encoder, treebank_slice):
    """Without capture (a CPU), GraphedTrainStep copies each batch into its shape's static tensors and
    runs loss, backward, clipping and the optimizer step on them: the same losses and weights as the
    plain step, to the bit, over shapes that come back and shapes that do not."""
    split, labels = wolof_split(plain_encoder, treebank_slice["train"])
    order = batch_orders(split, 8) * 2  # every shape recurs, so a stale static tensor would show
    plain_losses, plain_weights, _ = train(small_parser(plain_encoder, labels), split, order, graphed=False)
    losses, weights, step = train(small_parser(plain_encoder, labels), split, order, graphed=True)
    assert losses == plain_losses
    differ = [(name, (weights[name] - plain_weights[name]).abs().max().item()) for name in plain_weights if not torch.equal(weights[name], plain_weights[name])]
    assert not differ
    shapes = {shape_key(make_batch(split, indices, GRAPH_LENGTH_MULTIPLE)) for indices in order}
    assert step.stats() == {"shapes": len(shapes), "graphs": 0, "replayed_steps": 0, "eager_steps": len(order)}
    assert 1 < len(shapes) < len(order)


@pytest.mark.parametrize("encoder_name", ["plain_encoder", "sla_encoder"])
def test_padding_lengths_to_a_multiple_leaves_the_parser_unchanged(encoder_name, treebank_slice, request):
    """Lengths rounded up to 8 (subwords and words; the SLA tree's padding too) give the same loss and
    the same arc and label scores at every real position as the batch padded only to its longest row."""
    encoder_dir = request.getfixturevalue(encoder_name)
    split, labels = wolof_split(encoder_dir, treebank_slice["train"], with_trees=encoder_name == "sla_encoder")
    parser = small_parser(encoder_dir, labels).eval()
    for indices in batch_orders(split, 4):
        tight, padded = make_batch(split, indices), make_batch(split, indices, GRAPH_LENGTH_MULTIPLE)
        assert padded["input_ids"].shape[1] % 8 == 0 and padded["word_mask"].shape[1] % 8 == 0
        assert padded["input_ids"].shape[1] > tight["input_ids"].shape[1] or padded["word_mask"].shape[1] > tight["word_mask"].shape[1] \
            or tight["word_mask"].shape[1] % 8 == 0
        with torch.no_grad():
            ours, theirs = parser(**padded), parser(**tight)
        assert torch.allclose(ours.loss, theirs.loss, atol=1e-5)
        words = tight["word_mask"].shape[1] + 1  # ROOT included
        real = theirs.mask[:, :, None] & theirs.mask[:, None, :]
        assert torch.allclose(ours.arc_scores[:, :words, :words][real], theirs.arc_scores[real], atol=1e-5)
        assert torch.allclose(ours.dep_labels[:, :words][theirs.mask], theirs.dep_labels[theirs.mask], atol=1e-5)


@pytest.fixture(scope="module")
def graphed_run(plain_encoder, treebank_slice, tmp_path_factory):
    step = make_step(plain_encoder, treebank_slice, config={"epochs": 4}, cuda_graphs=True)
    result = step.result(LocalWorkspace(tmp_path_factory.mktemp("graphed")))
    return result, json.loads((result / "metrics.json").read_text())


def test_the_ud_step_keys_graphs_only_when_set_records_them_and_needs_a_constant_rate(plain_encoder, treebank_slice, graphed_run,
                                                                                      tmp_path):
    plain = make_step(plain_encoder, treebank_slice, config={"epochs": 4})
    assert make_step(plain_encoder, treebank_slice, config={"epochs": 4}, cuda_graphs=False).unique_id == plain.unique_id
    assert make_step(plain_encoder, treebank_slice, config={"epochs": 4}, cuda_graphs=True).unique_id != plain.unique_id
    _, metrics = graphed_run
    # On a CPU nothing is captured: every step ran eagerly on its shape's static tensors.
    assert metrics["cuda_graphs"]["graphs"] == 0 and metrics["cuda_graphs"]["eager_steps"] == metrics["steps"] == 20
    assert 1 <= metrics["cuda_graphs"]["shapes"] < metrics["steps"]
    assert metrics["best_epoch"] is not None and all(record["train_loss"] > 0 for record in metrics["history"][1:])
    with pytest.raises(ValueError, match="lr_schedule 'linear'"):
        make_step(plain_encoder, treebank_slice, config={"epochs": 1, "lr_schedule": "linear"},
                  cuda_graphs=True).result(LocalWorkspace(tmp_path / "linear"))


def test_a_graphed_run_killed_after_epoch_2_resumes_and_ends_identically(plain_encoder, treebank_slice, graphed_run, tmp_path,
                                                                         resumed_run_matches):
    """The static tensors and graphs are rebuilt after the resume, from the restored weights and optimizer."""
    reference, _ = graphed_run
    metrics = resumed_run_matches(lambda: make_step(plain_encoder, treebank_slice, config={"epochs": 4}, cuda_graphs=True),
                                  tmp_path / "w", 2, reference)
    assert metrics["resumed_from"] == [2] and metrics["cuda_graphs"]["eager_steps"] == 10  # this process's steps


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs are captured on a GPU only")
def test_on_a_gpu_the_captured_steps_follow_the_eager_ones(plain_encoder, treebank_slice):
    """On a GPU, without dropout (whose masks a graph draws at its own offsets), the captured steps give
    the eager steps' losses and weights up to float rounding, and every shape is replayed."""
    split, labels = wolof_split(plain_encoder, treebank_slice["train"])
    order = batch_orders(split, 6) * 4
    runs = []
    for capture in (False, True):
        parser = small_parser(plain_encoder, labels, dropout=0.0).cuda()
        optimizer = torch.optim.AdamW(parser.parameters(), lr=1e-3, fused=True)
        step = GraphedTrainStep(lambda batch: parser(**batch).loss, lambda: None, optimizer, torch.device("cuda"), capture=capture)
        losses = []
        for indices in order:
            losses.append(step({k: v.cuda() for k, v in make_batch(split, indices, GRAPH_LENGTH_MULTIPLE).items()}))
            optimizer.zero_grad(set_to_none=True)
        runs.append((torch.stack(losses).cpu(), [p.detach().cpu() for p in parser.parameters()], step.stats()))
    (eager_losses, eager_weights, _), (losses, weights, stats) = runs
    assert stats["graphs"] == stats["shapes"] and stats["replayed_steps"] > 0
    assert torch.allclose(losses, eager_losses, rtol=1e-4, atol=1e-5)
    assert all(torch.allclose(ours, theirs, atol=1e-4) for ours, theirs in zip(weights, eager_weights))
