"""The training harness (`steps.common.training`) on toy models with dropout, so that a resume which
did not restore the RNG would train on other dropout masks: stopped at a step boundary
(pretraining's use) or at an epoch boundary (the fine-tuning loop's), by SIGINT or by the crash
hook, and resumed, a run ends with the parameters of the run that was never stopped, bit for bit;
a raised error keeps the last good checkpoint."""
from __future__ import annotations

import logging
import math
import signal

import pytest
import torch

from steps.common.checkpoints import SimulatedCrash
from steps.common.training import StopAtBoundary, TrainingHarness, check_finite_loss
from steps.finetune import loop

CRASH_ENV = "SIB_TEST_HARNESS_CRASH_AFTER_STEP"
logger = logging.getLogger(__name__)


def step_run(work_dir, steps: int, checkpoint_every: int = 100, interrupt_in=None, poison_at=None) -> torch.nn.Module:
    """A pretraining-shaped loop: batch k a function of (seed, k), dropout from the global RNG,
    a checkpoint every ``checkpoint_every`` steps, at the last one and on a stop. SIGINT is raised
    during step ``interrupt_in``; step ``poison_at``'s loss is NaN."""
    work_dir.mkdir(exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda number: 1.0 / (1 + number))
    harness = TrainingHarness(work_dir / "checkpoint.pt", torch.device("cpu"), "step", CRASH_ENV)
    saved = harness.resume(model, optimizer, scheduler)
    step = saved["state"]["step"] if saved is not None else 0
    if saved is None:
        torch.manual_seed(1)  # the dropout stream; a resumed run takes it from the checkpoint
    with harness:
        while step < steps:
            x = torch.randn(8, 4, generator=torch.Generator().manual_seed(100 + step))
            if step + 1 == interrupt_in:
                signal.raise_signal(signal.SIGINT)
            loss = model(x).pow(2).mean() * (math.nan if step + 1 == poison_at else 1.0)
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            check_finite_loss(loss.item(), f"step {step}")
            if step % checkpoint_every == 0 or step == steps or harness.stop_requested:
                harness.save(model, optimizer, scheduler, state={"step": step})
            harness.boundary(step, steps, step == steps, logger)
    return model


def same_parameters(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    ours, theirs = a.state_dict(), b.state_dict()
    return ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_step_boundary_sigint_stops_after_the_step_with_a_checkpoint_and_resumes_bit_identically(tmp_path):
    straight = step_run(tmp_path / "straight", steps=6)
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt, match="stopped after step 3, checkpoint written"):
        step_run(tmp_path / "stopped", steps=6, interrupt_in=3)
    assert signal.getsignal(signal.SIGINT) is handler  # put back
    saved = torch.load(tmp_path / "stopped" / "checkpoint.pt", weights_only=True)
    assert saved["state"] == {"step": 3}  # none was due (every 100): the stop wrote it
    assert set(saved) == {"model", "optimizer", "scheduler", "rng", "cuda_rng", "state"}  # pretraining's layout, unchanged
    resumed = step_run(tmp_path / "stopped", steps=6)
    assert same_parameters(resumed, straight)
    assert not same_parameters(step_run(tmp_path / "other", steps=5), straight)  # the comparison can fail


def test_step_boundary_crash_hook_resumes_from_the_last_due_checkpoint_bit_identically(tmp_path, monkeypatch):
    straight = step_run(tmp_path / "straight", steps=7, checkpoint_every=2)
    monkeypatch.setenv(CRASH_ENV, "5")
    with pytest.raises(SimulatedCrash, match=f"{CRASH_ENV}=5: stopping after step 5"):
        step_run(tmp_path / "crashed", steps=7, checkpoint_every=2)
    assert torch.load(tmp_path / "crashed" / "checkpoint.pt", weights_only=True)["state"] == {"step": 4}
    monkeypatch.delenv(CRASH_ENV)
    assert same_parameters(step_run(tmp_path / "crashed", steps=7, checkpoint_every=2), straight)


def test_a_raised_error_names_its_step_and_keeps_the_last_good_checkpoint(tmp_path):
    with pytest.raises(FloatingPointError, match=r"training loss is nan at step 3; try a lower lr"):
        step_run(tmp_path, steps=6, checkpoint_every=2, poison_at=3)
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert saved["state"] == {"step": 2}
    assert all(torch.isfinite(value).all() for value in saved["model"].values())


def test_a_second_sigint_interrupts_at_once_and_the_handler_is_put_back():
    handler = signal.getsignal(signal.SIGINT)
    with StopAtBoundary() as stop:
        signal.raise_signal(signal.SIGINT)
        assert stop.requested
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is handler


def dropout_task(epochs: int, interrupt_at_step=None) -> loop.FinetuneTask:
    """A fine-tuning task with dropout and a scheduler; SIGINT arrives during training step
    ``interrupt_at_step`` (counted from the start of this `train` call)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    data = torch.randn(12, 3, generator=torch.Generator().manual_seed(2))
    targets = data.sum(-1)
    calls = []

    def loss(model, batch):
        calls.append(1)
        if len(calls) == interrupt_at_step:
            signal.raise_signal(signal.SIGINT)
        return (model(batch["x"]).squeeze(-1) - batch["y"]).pow(2).mean()

    @torch.no_grad()
    def evaluate(model):
        model.eval()  # the loop puts training mode back
        return {"mse": float((model(data).squeeze(-1) - targets).pow(2).mean())}

    stream = loop.BatchStream(lambda generator, _: [batch.tolist() for batch in torch.randperm(12, generator=generator).split(4)],
                              torch.Generator().manual_seed(1), batches_per_epoch=2)
    return loop.FinetuneTask(
        name="toy", model=model, optimizer=optimizer, scheduler=torch.optim.lr_scheduler.StepLR(optimizer, 2, 0.5), batches=stream,
        make_batch=lambda indices: {"x": data[indices], "y": targets[indices]}, loss=loss, clip_gradients=lambda: None,
        train_fields=lambda totals: {"loss_sum": totals.loss}, epochs=epochs,
        evaluate=evaluate, metric="mse", higher_is_better=False,
    )


def test_epoch_boundary_sigint_finishes_the_epoch_checkpoints_it_and_resumes_bit_identically(tmp_path):
    (tmp_path / "straight").mkdir(), (tmp_path / "stopped").mkdir()
    straight_task = dropout_task(epochs=4)
    straight = loop.train(straight_task, tmp_path / "straight", torch.device("cpu"), checkpoint_every=3)
    stopped = tmp_path / "stopped"
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt, match="stopped after epoch 2, checkpoint written"):
        loop.train(dropout_task(epochs=4, interrupt_at_step=3), stopped, torch.device("cpu"), checkpoint_every=3)  # during epoch 2
    assert signal.getsignal(signal.SIGINT) is handler
    saved = torch.load(stopped / loop.CHECKPOINT_NAME, weights_only=True)
    # The checkpoint's layout, which a checkpoint written before a code change must keep to resume.
    assert set(saved) == {"model", "optimizer", "scheduler", "batches", "rng", "cuda_rng", "best_weights", "state"}
    assert saved["state"]["epoch"] == 2  # none was due (every 3): the stop wrote it
    task = dropout_task(epochs=4)
    resumed = loop.train(task, stopped, torch.device("cpu"), checkpoint_every=3)
    assert resumed.resumed_from == [2] and resumed.best_epoch == straight.best_epoch
    assert [r["loss_sum"] for r in resumed.history] == [r["loss_sum"] for r in straight.history]
    assert same_parameters(task.model, straight_task.model)


def test_epoch_boundary_crash_hook_resumes_bit_identically(tmp_path, monkeypatch):
    (tmp_path / "straight").mkdir(), (tmp_path / "crashed").mkdir()
    straight_task = dropout_task(epochs=4)
    loop.train(straight_task, tmp_path / "straight", torch.device("cpu"))
    monkeypatch.setenv(loop.CRASH_AFTER_EPOCH_ENV, "3")
    with pytest.raises(SimulatedCrash, match="stopping after epoch 3"):
        loop.train(dropout_task(epochs=4), tmp_path / "crashed", torch.device("cpu"), checkpoint_every=2)
    monkeypatch.delenv(loop.CRASH_AFTER_EPOCH_ENV)
    task = dropout_task(epochs=4)
    assert loop.train(task, tmp_path / "crashed", torch.device("cpu"), checkpoint_every=2).resumed_from == [2]
    assert same_parameters(task.model, straight_task.model)


def test_read_back_returns_every_kept_value_in_order_in_one_copy():
    from steps.common.training import read_back

    kept = [torch.tensor(1.5), torch.tensor([2.0, 3.0]), torch.tensor(-4.0)]
    assert read_back(kept) == [1.5, 2.0, 3.0, -4.0]
    assert read_back([torch.tensor(3), torch.tensor(4)]) == [3, 4]  # counts stay integers
    assert read_back([]) == []
