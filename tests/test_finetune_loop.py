"""The shared fine-tuning loop on a toy task: the epoch's loss figures and the non-finite-loss stop,
which read the batch losses once an epoch rather than once a step."""
from __future__ import annotations

import math

import pytest
import torch

from steps.finetune import loop


def toy_task(targets: torch.Tensor, epochs: int, batches_per_epoch: int = 3) -> loop.FinetuneTask:
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    stream = loop.BatchStream(lambda generator, _: [[i] for i in torch.randperm(len(targets), generator=generator).tolist()],
                              torch.Generator().manual_seed(1), batches_per_epoch)
    return loop.FinetuneTask(
        name="toy", model=model, optimizer=optimizer, scheduler=None, batches=stream,
        make_batch=lambda indices: {"x": torch.ones(len(indices), 1), "y": targets[indices]},
        loss=lambda model, batch: ((model(batch["x"]).squeeze(-1) - batch["y"]) ** 2).mean(),
        clip_gradients=lambda: None,
        train_fields=lambda totals: {"step": totals.steps, "loss_sum": totals.loss, "batches": totals.batches, "count": totals.count},
        epochs=epochs, count=lambda batch: (batch["y"] > 0).sum(),
    )


def test_epoch_loss_is_the_sum_of_each_steps_loss(tmp_path):
    targets = torch.tensor([0.5, -1.0, 2.0, 3.0, 0.0, 1.5])
    outcome = loop.train(toy_task(targets, epochs=2), tmp_path, torch.device("cpu"))
    # The same steps one at a time, each loss read as it is made.
    task = toy_task(targets, epochs=2)
    expected, expected_counts = [], []
    for _ in range(2):
        total, count = 0.0, 0
        for indices in task.batches.next_epoch():
            loss = task.loss(task.model, task.make_batch(indices))
            total += float(loss.detach())
            count += sum(float(targets[i]) > 0 for i in indices)
            loss.backward()
            task.optimizer.step()
            task.optimizer.zero_grad()
        expected.append(total)
        expected_counts.append(count)
    assert [record["loss_sum"] for record in outcome.history] == expected
    assert [record["count"] for record in outcome.history] == expected_counts and outcome.count == sum(expected_counts)
    assert [(record["step"], record["batches"]) for record in outcome.history] == [(3, 3), (6, 3)]


def test_a_non_finite_loss_stops_the_run_naming_its_step_and_keeps_the_last_good_checkpoint(tmp_path):
    targets = torch.tensor([0.5, -1.0, 2.0, 3.0, 0.0, 1.5])
    loop.train(toy_task(targets, epochs=1), tmp_path, torch.device("cpu"))  # epoch 1 checkpointed
    saved = (tmp_path / loop.CHECKPOINT_NAME).read_bytes()
    poisoned = targets.clone()
    poisoned[:] = math.nan  # every step of epoch 2 is non-finite: the first is step 4
    task = toy_task(poisoned, epochs=2)
    with pytest.raises(FloatingPointError, match=r"training loss is nan at step 4 \(epoch 2\)"):
        loop.train(task, tmp_path, torch.device("cpu"))
    assert (tmp_path / loop.CHECKPOINT_NAME).read_bytes() == saved


@pytest.mark.parametrize("interval, resumed_from", [(0.0, [2]), (1e9, [])])
def test_checkpoint_interval_chooses_where_a_killed_run_resumes_not_what_it_computes(tmp_path, monkeypatch, interval, resumed_from):
    targets = torch.tensor([0.5, -1.0, 2.0, 3.0, 0.0, 1.5])
    (tmp_path / "whole").mkdir(), (tmp_path / "killed").mkdir()
    whole = loop.train(toy_task(targets, epochs=4), tmp_path / "whole", torch.device("cpu"))
    monkeypatch.setenv(loop.CRASH_AFTER_EPOCH_ENV, "2")
    with pytest.raises(loop.SimulatedCrash):
        loop.train(toy_task(targets, epochs=4), tmp_path / "killed", torch.device("cpu"), checkpoint_interval=interval)
    assert (tmp_path / "killed" / loop.CHECKPOINT_NAME).exists() == bool(resumed_from)
    monkeypatch.delenv(loop.CRASH_AFTER_EPOCH_ENV)
    task = toy_task(targets, epochs=4)
    resumed = loop.train(task, tmp_path / "killed", torch.device("cpu"), checkpoint_interval=interval)
    assert resumed.resumed_from == resumed_from
    assert [r["loss_sum"] for r in resumed.history] == [r["loss_sum"] for r in whole.history]
    assert (tmp_path / "killed" / loop.CHECKPOINT_NAME).exists()  # the last epoch is always saved
