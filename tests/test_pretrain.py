"""The pretraining step end to end through Tango: a few steps of a tiny µBERT on real Wolof
instances, encoder export, metrics, and resuming after a crash."""
from __future__ import annotations

import json
import math

import pytest
from conftest import SUBPROCESS_TIMEOUT_S
import torch
from tango.workspaces import LocalWorkspace

from steps.data.inputs import make_instances
from steps.pretrain.pretrain import CRASH_AFTER_STEP_ENV, BatchOrder, PretrainingConfig, PretrainMicrobert, evenly_spaced

TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 128}
TIMING_FIELDS = {"tokens_per_second", "wall_seconds", "train_seconds"}


@pytest.fixture(scope="module")
def tokenizer_dir(small_wolof_tokenizer, tmp_path_factory):
    path = tmp_path_factory.mktemp("tokenizer")
    small_wolof_tokenizer.save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def pretraining_data(wolof_dev_sentences, small_wolof_tokenizer):
    """The shape `build_pretraining_data` returns: silver-flagged rows with gold rows mixed in."""
    tok = small_wolof_tokenizer
    train = make_instances(tok, wolof_dev_sentences[:96], False, 128, "silver") + make_instances(tok, wolof_dev_sentences[96:108], True, 128, "gold")
    dev = make_instances(tok, wolof_dev_sentences[300:324], False, 128, "silver") + make_instances(tok, wolof_dev_sentences[324:332], True, 128, "gold")
    labels = sorted({tag for row in train if row["tree_is_gold"][0] for tag in row["xpos"]})
    return {"train": train, "dev": dev, "xpos_labels": labels, "stats": {}}


def make_step(pretraining_data, tokenizer_dir, condition="M", loader_workers=0, step_args=None, **training):
    settings = dict(max_steps=6, batch_size=8, warmup=0.5, validate_every=3, checkpoint_every=2, seed=5,
                    max_validation_rows=16)
    settings.update(training)
    return PretrainMicrobert(
        pretraining_data=pretraining_data, tokenizer=tokenizer_dir, condition=condition, model=TINY_MODEL,
        training=PretrainingConfig(**settings), num_threads=1, loader_workers=loader_workers, **(step_args or {}),
    )


def read_metrics(result):
    return json.loads((result / "metrics.json").read_text())


def without_timings(history):
    return [{k: v for k, v in record.items() if k not in TIMING_FIELDS} for record in history]


def test_plain_condition_exports_a_stock_bert_encoder(pretraining_data, tokenizer_dir, tmp_path):
    from transformers import AutoModel, AutoTokenizer, BertModel

    workspace = LocalWorkspace(tmp_path / "workspace")
    step = make_step(pretraining_data, tokenizer_dir, "M")
    result = step.result(workspace)
    encoder = AutoModel.from_pretrained(result / "encoder")
    tokenizer = AutoTokenizer.from_pretrained(result / "encoder")
    assert type(encoder) is BertModel and encoder.config.hidden_size == 32
    assert tokenizer("Waaw , dama ko xam")["input_ids"][0] == tokenizer.cls_token_id

    # The export is the last state, as in the reference: equal to the model in the final checkpoint.
    checkpoint = torch.load(workspace.work_dir(step) / "checkpoint.pt", weights_only=True)
    assert checkpoint["state"]["step"] == 6
    exported = encoder.state_dict()
    for name, value in checkpoint["model"].items():
        if name.startswith("bert."):
            assert torch.equal(exported[name[len("bert."):]], value), name

    metrics = read_metrics(result)
    assert [r["step"] for r in metrics["history"]] == [3, 6]
    assert metrics["exported_step"] == 6 and metrics["best_step"] in (3, 6)
    assert metrics["best_dev_mlm_loss"] == min(r["dev_mlm_loss"] for r in metrics["history"])
    final = metrics["final"]
    assert final["train_tokens"] > 0 and final["tokens_per_second"] > 0 and final["wall_seconds"] > 0
    assert "dev_xpos_loss" not in final and final["dev_loss"] == final["dev_mlm_loss"]
    assert metrics["resumed_from"] == [] and metrics["runs"] == [{"from_step": 0, "device": "cpu", "threads": 1}]
    # A second request is served from the cache, not retrained.
    assert make_step(pretraining_data, tokenizer_dir, "M") in workspace.step_cache


def test_sla_condition_exports_a_microbert_encoder_with_all_losses(pretraining_data, tokenizer_dir, tmp_path):
    import models  # noqa: F401  (registers model_type "microbert" with AutoModel)
    from transformers import AutoModel

    result = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", max_steps=3, validate_every=3).result(
        LocalWorkspace(tmp_path / "workspace")
    )
    encoder = AutoModel.from_pretrained(result / "encoder")
    assert type(encoder) is models.MicroBertModel and encoder.config.syntax_attention == "sla"
    final = read_metrics(result)["final"]
    for name in ("dev_mlm_loss", "dev_xpos_loss", "dev_phrase_loss", "dev_tree_loss", "train_loss"):
        assert final[name] > 0 and final[name] == final[name], name
    assert final["dev_loss"] == pytest.approx(final["dev_mlm_loss"] + final["dev_xpos_loss"])


def test_resuming_after_a_crash_with_loader_workers_matches_an_uninterrupted_run(pretraining_data, tokenizer_dir, tmp_path, monkeypatch):
    from transformers import AutoModel

    reference = make_step(pretraining_data, tokenizer_dir).result(LocalWorkspace(tmp_path / "uninterrupted"))

    workspace = LocalWorkspace(tmp_path / "crashed")
    monkeypatch.setenv(CRASH_AFTER_STEP_ENV, "5")  # the last checkpoint before it is step 4
    with pytest.raises(Exception, match="stopping after step 5"):
        make_step(pretraining_data, tokenizer_dir).result(workspace)
    monkeypatch.delenv(CRASH_AFTER_STEP_ENV)
    # The rest of the run collates its batches in two worker processes: same cache entry, same batches.
    with_workers = make_step(pretraining_data, tokenizer_dir, loader_workers=2)
    assert with_workers.unique_id == make_step(pretraining_data, tokenizer_dir).unique_id
    resumed = with_workers.result(workspace)

    metrics, expected = read_metrics(resumed), read_metrics(reference)
    assert metrics["resumed_from"] == [4]
    assert [run["from_step"] for run in metrics["runs"]] == [0, 4]  # each run's device, from its first step
    assert without_timings(metrics["history"]) == without_timings(expected["history"])
    # Stock AutoModel adds a freshly initialised pooler; every trained weight must match exactly.
    ours = AutoModel.from_pretrained(resumed / "encoder").state_dict()
    theirs = AutoModel.from_pretrained(reference / "encoder").state_dict()
    trained = [k for k in ours if not k.startswith("pooler.")]
    assert len(trained) > 30 and ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in trained)


def test_loader_workers_are_capped_at_the_machines_cores(pretraining_data, tokenizer_dir, tmp_path, monkeypatch):
    """The paper scale's 10 workers are sized for a GPU machine; on a smaller one each extra process only
    competes for the cores and holds memory. The cap keeps the cache key and the weights."""
    import steps.pretrain.pretrain as pretrain

    expected = make_step(pretraining_data, tokenizer_dir, max_steps=2).result(LocalWorkspace(tmp_path / "none"))
    monkeypatch.setattr(pretrain.os, "cpu_count", lambda: 1)
    step = make_step(pretraining_data, tokenizer_dir, loader_workers=3, max_steps=2)
    assert step.unique_id == make_step(pretraining_data, tokenizer_dir, max_steps=2).unique_id
    result = step.result(LocalWorkspace(tmp_path / "capped"))
    assert read_metrics(result)["loader_workers"] == 1 and read_metrics(expected)["loader_workers"] == 0
    ours, theirs = encoder_weights(result), encoder_weights(expected)
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_sigint_stops_at_the_step_boundary_with_a_checkpoint_and_the_resumed_run_is_the_uninterrupted_one(
        pretraining_data, tokenizer_dir, tmp_path, monkeypatch):
    """A GPU job's time running out (`tools/jobs.py run` sends SIGINT) during step 3's forward: step 3
    finishes, a checkpoint is written at it although none is due (checkpoint_every 100), and the run
    stops as interrupted; run again, it resumes from step 3 and ends with the uninterrupted weights."""
    import signal

    from models import MicroBertForPretraining

    settings = dict(max_steps=6, validate_every=2, checkpoint_every=100)
    handler = signal.getsignal(signal.SIGINT)
    reference = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", **settings).result(LocalWorkspace(tmp_path / "uninterrupted"))
    forward, calls = MicroBertForPretraining.forward, []

    def interrupted(self, *args, **kwargs):
        if torch.is_grad_enabled():  # a training step's forward, not validation's
            calls.append(1)
            if len(calls) == 3:
                signal.raise_signal(signal.SIGINT)
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(MicroBertForPretraining, "forward", interrupted)
    workspace = LocalWorkspace(tmp_path / "interrupted")
    step = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", **settings)
    with pytest.raises(KeyboardInterrupt, match="stopped after step 3"):
        step.result(workspace)
    assert signal.getsignal(signal.SIGINT) is handler  # put back
    saved = torch.load(workspace.step_dir(step) / "work" / "checkpoint.pt", weights_only=True)
    assert saved["state"]["step"] == 3
    monkeypatch.setattr(MicroBertForPretraining, "forward", forward)
    resumed = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", **settings).result(workspace)
    assert read_metrics(resumed)["resumed_from"] == [3]
    assert without_timings(read_metrics(resumed)["history"]) == without_timings(read_metrics(reference)["history"])
    ours, theirs = encoder_weights(resumed), encoder_weights(reference)
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_a_stopped_pretraining_copied_to_another_workspace_resumes_there(pretraining_data, tokenizer_dir, tmp_path, monkeypatch):
    """How a paper-scale pretraining spans several GPU jobs: `tools/jobs.py pack` brings a stopped
    entry's folder back, a copy of it goes into the next machine's fresh cache (no step
    database there, no lock), and that run resumes from its checkpoint."""
    import shutil

    monkeypatch.setenv(CRASH_AFTER_STEP_ENV, "4")
    first = LocalWorkspace(tmp_path / "first")
    with pytest.raises(Exception, match="stopping after step 4"):
        make_step(pretraining_data, tokenizer_dir).result(first)
    monkeypatch.delenv(CRASH_AFTER_STEP_ENV)
    step = make_step(pretraining_data, tokenizer_dir)
    entry = first.step_dir(step)
    second = tmp_path / "second"
    shutil.copytree(entry, second / "cache" / entry.name, ignore=shutil.ignore_patterns("lock"))
    resumed = step.result(LocalWorkspace(second))
    assert read_metrics(resumed)["resumed_from"] == [4]


def test_the_parse_built_in_loader_workers_trains_the_weights_the_model_builds_itself(pretraining_data, tokenizer_dir, tmp_path):
    """MXPT-SLA's mask and P/T samples drawn in two loader processes (the default) or in the model's
    forward: one cache entry, the same history and weights bit for bit."""
    settings = dict(max_steps=4, validate_every=2)
    in_model = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", step_args={"parse_inputs_in_loader": False}, **settings)
    in_workers = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", loader_workers=2, **settings)
    assert in_model.unique_id == in_workers.unique_id
    expected = in_model.result(LocalWorkspace(tmp_path / "in_model"))
    result = in_workers.result(LocalWorkspace(tmp_path / "in_workers"))
    assert read_metrics(result)["parse_inputs_in_loader"] and not read_metrics(expected)["parse_inputs_in_loader"]
    assert without_timings(read_metrics(result)["history"]) == without_timings(read_metrics(expected)["history"])
    ours, theirs = encoder_weights(result), encoder_weights(expected)
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)


def encoder_weights(result):
    from safetensors.torch import load_file

    return load_file(str(result / "encoder" / "model.safetensors"))


def test_reading_losses_back_every_few_steps_changes_nothing(pretraining_data, tokenizer_dir, tmp_path):
    """sync_every (GPU: no host wait per step) is bookkeeping only: the same cache key, history
    (train losses included) and weights as reading every step, and the steps land in W&B in order."""
    every_step = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", max_steps=7, validate_every=5, checkpoint_every=3)
    batched = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", max_steps=7, validate_every=5, checkpoint_every=3,
                        step_args={"sync_every": 4, "stall_seconds": None})
    assert batched.unique_id == every_step.unique_id
    expected = every_step.result(LocalWorkspace(tmp_path / "every"))
    result = batched.result(LocalWorkspace(tmp_path / "batched"))
    assert without_timings(read_metrics(result)["history"]) == without_timings(read_metrics(expected)["history"])
    assert read_metrics(result)["final"]["train_tokens"] == read_metrics(expected)["final"]["train_tokens"]
    ours, theirs = encoder_weights(result), encoder_weights(expected)
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_recomputed_activations_train_the_same_weights_under_the_same_key(pretraining_data, tokenizer_dir, tmp_path, monkeypatch):
    """activation_checkpointing (the memory lever: each layer's activations recomputed in the
    backward) keeps the cache key and gives the same history and weights bit for bit: dropout draws
    the same masks in the recomputation. The layers really are checkpointed: their forwards run
    twice per training step, for the batches at or above the size threshold."""
    import steps.pretrain.pretrain as pretrain
    from models.modeling_microbert import MicroBertLayer

    settings = dict(max_steps=4, validate_every=2, checkpoint_every=10)
    kept = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", step_args={"activation_checkpointing": False}, **settings)
    recomputed = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", step_args={"activation_checkpointing": True}, **settings)
    assert recomputed.unique_id == kept.unique_id
    expected = kept.result(LocalWorkspace(tmp_path / "kept"))
    forward, calls = MicroBertLayer.forward, []

    def counted(self, *args, **kwargs):
        calls.append(self.training)
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(MicroBertLayer, "forward", counted)
    monkeypatch.setattr(pretrain, "CHECKPOINT_FROM_SCORE_ELEMENTS", 0)  # every toy batch: recompute
    result = recomputed.result(LocalWorkspace(tmp_path / "recomputed"))
    layers = TINY_MODEL["num_hidden_layers"]
    assert sum(calls) == 4 * layers * 2  # 4 training steps: forward + recomputation
    assert read_metrics(result)["activation_checkpointing"] and not read_metrics(expected)["activation_checkpointing"]
    assert without_timings(read_metrics(result)["history"]) == without_timings(read_metrics(expected)["history"])
    theirs = encoder_weights(expected)
    ours = encoder_weights(result)
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)

    calls.clear()
    monkeypatch.setattr(pretrain, "CHECKPOINT_FROM_SCORE_ELEMENTS", 2**40)  # no toy batch is that large
    ours = encoder_weights(recomputed.result(LocalWorkspace(tmp_path / "small")))
    assert sum(calls) == 4 * layers
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_activation_checkpointing_is_on_by_default_where_the_device_has_little_memory(pretraining_data, tokenizer_dir, tmp_path, monkeypatch):
    """Unset, the memory lever follows the training device's memory: on under 64 GiB (a 24 GB
    machine ran out without it), off on an 80 GB GPU or where the memory is unknown; a setting wins.
    The cache key is the same throughout, and the metrics record what ran."""
    import steps.pretrain.pretrain as pretrain

    cpu, GiB = torch.device("cpu"), 2**30
    assert pretrain.device_memory(cpu) > 0  # this machine's, read from the system
    for memory, expected in ((24 * GiB, True), (80 * GiB, False), (None, False)):
        monkeypatch.setattr(pretrain, "device_memory", lambda device, memory=memory: memory)
        assert pretrain.wants_activation_checkpointing(None, cpu) is expected
        assert pretrain.wants_activation_checkpointing(True, cpu) and not pretrain.wants_activation_checkpointing(False, cpu)
    monkeypatch.setattr(pretrain, "device_memory", lambda device: 24 * GiB)
    settings = dict(max_steps=2, validate_every=2, checkpoint_every=10)
    unset = make_step(pretraining_data, tokenizer_dir, "M", **settings)
    assert unset.unique_id == make_step(pretraining_data, tokenizer_dir, "M", step_args={"activation_checkpointing": False}, **settings).unique_id
    assert read_metrics(unset.result(LocalWorkspace(tmp_path / "ws")))["activation_checkpointing"] is True


def test_a_non_finite_loss_stops_the_run_at_its_step_before_any_checkpoint(pretraining_data, tokenizer_dir, tmp_path, monkeypatch):
    from models import MicroBertForPretraining

    forward, calls = MicroBertForPretraining.forward, []

    def poisoned(self, *args, **kwargs):
        output = forward(self, *args, **kwargs)
        if self.training:
            calls.append(1)
            if len(calls) == 2:  # step 2's loss
                output.loss = output.loss * float("nan")
        return output

    monkeypatch.setattr(MicroBertForPretraining, "forward", poisoned)
    workspace = LocalWorkspace(tmp_path / "workspace")
    step = make_step(pretraining_data, tokenizer_dir, "M", checkpoint_every=5, step_args={"sync_every": 4})
    with pytest.raises(Exception, match="training loss is nan at step 2"):
        step.result(workspace)
    # Read back at step 4 (sync_every), before the step-5 checkpoint: nothing of the NaN run was kept.
    assert not (workspace.work_dir(step) / "checkpoint.pt").exists()


def test_gpu_levers_run_on_cpu_and_key_only_when_set(pretraining_data, tokenizer_dir, tmp_path):
    """bf16 autocast and fused AdamW: the code path a GPU runs, here on CPU; fp32 and the unfused
    optimizer keep every existing cache key."""
    plain = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", max_steps=3, validate_every=3)
    explicit = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", max_steps=3, validate_every=3,
                         step_args={"precision": "fp32", "fused_optimizer": False})
    levers = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", max_steps=3, validate_every=3,
                       step_args={"precision": "bf16", "fused_optimizer": True})
    assert explicit.unique_id == plain.unique_id != levers.unique_id
    expected = read_metrics(plain.result(LocalWorkspace(tmp_path / "plain")))
    metrics = read_metrics(levers.result(LocalWorkspace(tmp_path / "levers")))
    assert metrics["precision"] == "bf16" and metrics["fused_optimizer"] is True
    final, reference = metrics["final"], expected["final"]
    for name in ("dev_mlm_loss", "dev_xpos_loss", "dev_phrase_loss", "dev_tree_loss", "train_loss"):
        assert math.isfinite(final[name]) and final[name] != reference[name], name
        # bf16 rounds; three steps of a tiny model stay close to the fp32 run.
        assert final[name] == pytest.approx(reference[name], rel=0.05), name
    with pytest.raises(Exception, match="precision must be one of"):
        make_step(pretraining_data, tokenizer_dir, step_args={"precision": "fp16"}).result(LocalWorkspace(tmp_path / "bad"))


@pytest.mark.parametrize("condition", ["M", "MXPT-SLA"])
def test_a_compiled_encoder_trains_like_the_eager_one_in_one_graph_per_mode(pretraining_data, tokenizer_dir, tmp_path, condition):
    """compile_encoder (torch.compile, the GPU's launch-overhead lever) on CPU with the aot_eager
    backend: dynamo traces the encoder and AOTAutograd its backward, as on a GPU, without Inductor's
    code generation. Bucketed batches of many lengths share one dynamic-shape graph per mode
    (training, validation) instead of recompiling per length; the run keys only when compiled,
    trains like the eager one and exports the same parameter names."""
    import torch._dynamo

    eager = make_step(pretraining_data, tokenizer_dir, condition, max_steps=4, validate_every=4, checkpoint_every=2)
    unset = make_step(pretraining_data, tokenizer_dir, condition, max_steps=4, validate_every=4, checkpoint_every=2,
                      step_args={"compile_encoder": None})
    compiled = make_step(pretraining_data, tokenizer_dir, condition, max_steps=4, validate_every=4, checkpoint_every=2,
                         step_args={"compile_encoder": {"backend": "aot_eager"}})
    assert unset.unique_id == eager.unique_id != compiled.unique_id
    expected = eager.result(LocalWorkspace(tmp_path / "eager"))
    torch._dynamo.reset()
    result = compiled.result(LocalWorkspace(tmp_path / "compiled"))
    lengths = {len(row["input_ids"]) for row in pretraining_data["train"]}
    assert len(lengths) > 10  # the batches did come in many lengths
    # Compiled versions of the encoder's forward: one for training, one for validation (eval mode), not one per length.
    from models import MicroBertModel

    entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(MicroBertModel.forward.__code__)
    assert len(entries) == 2, len(entries)
    metrics, reference = read_metrics(result), read_metrics(expected)
    assert metrics["compile_encoder"] == {"backend": "aot_eager"} and reference["compile_encoder"] is None
    for name, value in reference["final"].items():
        if name.startswith("dev_") or name == "train_loss":
            assert metrics["final"][name] == pytest.approx(value, rel=1e-3), name
    assert encoder_weights(result).keys() == encoder_weights(expected).keys()
    with pytest.raises(Exception, match="unknown torch.compile option"):
        make_step(pretraining_data, tokenizer_dir, step_args={"compile_encoder": {"modes": "default"}}).result(
            LocalWorkspace(tmp_path / "bad"))


def test_compiled_contrastive_losses_train_like_the_eager_ones_in_one_or_two_graphs(pretraining_data, tokenizer_dir, tmp_path):
    """compile_objectives (torch.compile of the P and T losses, aot_eager here): their samples come as
    tensors, so over batches of many lengths and sample counts each loss keeps at most two compiled
    versions (dynamo's first guess that two equal sizes are one may cost a recompile), with no graph
    break; the run keys only when set and trains like the eager one."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    from models.objectives import phrase_loss, tree_loss

    settings = dict(max_steps=4, validate_every=4, checkpoint_every=2)
    eager = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", **settings)
    compiled = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", step_args={"compile_objectives": {"backend": "aot_eager"}}, **settings)
    assert make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", step_args={"compile_objectives": None}, **settings).unique_id == eager.unique_id
    assert compiled.unique_id != eager.unique_id
    expected = eager.result(LocalWorkspace(tmp_path / "eager"))
    torch._dynamo.reset()
    counters.clear()
    result = compiled.result(LocalWorkspace(tmp_path / "compiled"))
    for function in (phrase_loss, tree_loss):
        assert 1 <= len(torch._dynamo.eval_frame._debug_get_cache_entry_list(function.__code__)) <= 2, function.__name__
    assert not counters["graph_break"]
    metrics, reference = read_metrics(result), read_metrics(expected)
    assert metrics["compile_objectives"] == {"backend": "aot_eager"} and reference["compile_objectives"] is None
    for name, value in reference["final"].items():
        if name.startswith("dev_") or name == "train_loss":
            assert metrics["final"][name] == pytest.approx(value, rel=1e-4), name


def test_a_step_that_hangs_dumps_every_threads_traceback():
    """The stall watchdog: no step for `stall_seconds` → faulthandler names the line it waits on."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import time
        from steps.pretrain.pretrain import TrainingWatch
        watch = TrainingWatch(stall_seconds=0.5)
        watch.start(0)
        time.sleep(1.3)  # the hung step
        watch.stop()
        time.sleep(0.8)  # stopped: no further dump
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("Timeout (0:00:00.500000)!") == 2
    assert 'line 6 in <module>' in run.stderr and "line 8" not in run.stderr


def test_mlm_only_data_pretrains_condition_m_and_refuses_the_others(wolof_dev_sentences, tokenizer_dir, tmp_path):
    from steps.data.inputs import BuildMlmPretrainingData

    corpus = {"train": [s["tokens"] for s in wolof_dev_sentences[:96]], "dev": [s["tokens"] for s in wolof_dev_sentences[300:320]]}
    workspace = LocalWorkspace(tmp_path / "workspace")
    data = BuildMlmPretrainingData(corpus=corpus, tokenizer=tokenizer_dir, max_length=64).result(workspace)
    assert data["trees"] is False and data["xpos_labels"] == [] and "head" not in data["train"][0]
    long_rows = sum(len(s) > 62 for s in corpus["train"])  # a word is at least one subword
    assert data["stats"]["train_rows"] <= 96 - long_rows and data["stats"]["dev_rows"] > 0

    result = make_step(data, tokenizer_dir, "M", max_steps=3, validate_every=3).result(workspace)
    assert read_metrics(result)["final"]["dev_mlm_loss"] > 0
    for condition in ("MX", "MT", "MPT-SLA"):
        with pytest.raises(ValueError, match=f"condition {condition} needs parsed trees.*MLM-only"):
            make_step(data, tokenizer_dir, condition, max_steps=3).result(workspace)
    with pytest.raises(Exception, match="no dev text left"):
        BuildMlmPretrainingData(corpus={"train": corpus["train"], "dev": []}, tokenizer=tokenizer_dir).result(workspace)


def test_gradient_accumulation_sees_every_micro_batch_once_per_epoch():
    order = BatchOrder(num_rows=20, batch_size=4, seed=1)
    epoch = [i for micro in range(5) for i in order.indices(micro)]
    assert sorted(epoch) == list(range(20))
    assert order.indices(5) != order.indices(0) or order.indices(6) != order.indices(1)


def test_length_buckets_are_full_similar_and_the_same_after_a_restart():
    lengths = [3 + (i * 7919) % 60 for i in range(103)]
    order = BatchOrder(num_rows=103, batch_size=8, seed=5, lengths=lengths)
    epoch = [order.indices(micro) for micro in range(order.batches_per_epoch)]
    flat = [i for batch in epoch for i in batch]
    assert all(len(batch) == 8 for batch in epoch) and len(flat) == len(set(flat)) == 96  # 103 % 8 rows dropped
    # Within a batch, lengths differ by at most the ±10% noise plus one sorted neighbour's gap.
    assert max(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in epoch) <= 12
    # Uniform batches of the same rows would spread over most of the 3..62 range.
    uniform = BatchOrder(num_rows=103, batch_size=8, seed=5)
    assert max(max(lengths[i] for i in uniform.indices(m)) - min(lengths[i] for i in uniform.indices(m)) for m in range(12)) > 30
    # A resumed run rebuilds the order from (seed, micro-batch) alone.
    again = BatchOrder(num_rows=103, batch_size=8, seed=5, lengths=lengths)
    assert again.indices(13) == order.indices(13) and again.indices(2) == epoch[2]
    assert order.indices(order.batches_per_epoch) != epoch[0]  # the next epoch is a new draw


def test_validation_subset_keeps_the_gold_rows_at_the_end():
    rows = list(range(100))
    subset = evenly_spaced(rows, 10)
    assert len(subset) == 10 and subset[0] == 0 and subset[-1] >= 90


def test_warmup_is_a_fraction_or_a_step_count():
    assert PretrainingConfig(max_steps=3000, warmup=0.1).warmup_steps == 300
    assert PretrainingConfig(max_steps=62500, warmup=10000).warmup_steps == 10000
    with pytest.raises(ValueError):
        PretrainingConfig(max_steps=0)


def test_unknown_model_fields_are_rejected(pretraining_data, tokenizer_dir, tmp_path):
    step = PretrainMicrobert(pretraining_data=pretraining_data, tokenizer=tokenizer_dir, condition="M",
                             model={"hiden_size": 32}, training=PretrainingConfig(max_steps=1, batch_size=4))
    with pytest.raises(Exception, match="hiden_size"):
        step.result(LocalWorkspace(tmp_path / "workspace"))


# --- builder and experiment files ---------------------------------------------------------------

DATA_STEPS = ("corpus", "corpus_parser", "parsed_corpus", "tokenizer", "pretraining_data")


def load_config(path):
    from tango.common import Params

    return Params.from_file(path).as_dict(quiet=True)


def test_experiment_files_are_current_and_share_data_steps_across_conditions():
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    check = subprocess.run([sys.executable, "tools/make_experiments.py", "--check"], cwd=repo, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr

    conditions = ["M", "MP", "MT", "MPT", "MPT-SLA", "MX", "MXP", "MXT", "MXPT", "MXPT-SLA"]
    for scale, folder, steps in [("smoke", "experiments/smoke", 30), ("cpu", "experiments", 3000), ("paper", "experiments/paper", 62500)]:
        configs = {c: load_config(repo / folder / f"wolof_{c.lower().replace('-', '_')}.jsonnet")["steps"] for c in conditions}
        first = configs["M"]
        for condition, config in configs.items():
            assert {k: config[k] for k in DATA_STEPS} == {k: first[k] for k in DATA_STEPS}, (scale, condition)
            model = config["pretrained_model"]
            assert model["type"] == "pretrain_microbert" and model["condition"] == condition
            assert model["training"]["max_steps"] == steps and model["training"]["seed"] == 42
            assert model["tokenizer"] == {"type": "ref", "ref": "tokenizer"}
            PretrainingConfig(**model["training"])  # every scale's block is a valid config
    # The paper's 256 rows a step, in one batch (no accumulation): what the paper-scale records measured.
    paper = load_config(repo / "experiments/paper/wolof_m.jsonnet")["steps"]["pretrained_model"]["training"]
    assert (paper["batch_size"], paper["grad_accumulation"]) == (256, 1)


def test_builder_rejects_unknown_conditions(tmp_path):
    from pathlib import Path

    lib = Path(__file__).resolve().parents[1] / "configs/lib.libsonnet"
    bad = tmp_path / "bad.jsonnet"
    bad.write_text(f'(import "{lib}").experiment("wolof", "MQ", "smoke")\n')
    with pytest.raises(Exception, match="unknown condition MQ"):
        load_config(bad)


def test_every_attention_variant_compiles_into_one_encoder_graph():
    """A value read back from the device inside the encoder (a data check's `bool(tensor.any())`)
    splits torch.compile's graph there; under CUDA graphs the MXPT-SLA encoder then made no step in
    80 s on an H200 (the SLA mask check, trees.py). Every registered attention variant, through the
    one hook, must trace as one graph with no break."""
    import torch._dynamo

    from benchmarks.bench_pretrain_step import synthetic_batch
    from models import MicroBertForPretraining
    from models.attention.base import ATTENTION_VARIANTS

    batch = synthetic_batch(4, 24, 200, 12, seed=0)
    size = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, vocab_size=200)
    # TG's stack/compose and causal attention belong to the Transformer Grammar LM, not a µBERT encoder.
    conditions = ["M"] + [f"M-{variant.condition_suffix}" for variant in ATTENTION_VARIANTS.values()
                          if variant.name not in ("tg", "causal")]
    assert {"M-SLA", "M-G", "M-A13"} <= set(conditions)
    for condition in conditions:
        model = MicroBertForPretraining.from_condition(condition, num_xpos_labels=12, **size).train()
        captured = {}
        forward = model.bert.forward

        def capture(*args, **kwargs):
            captured.update(args=args, kwargs=kwargs)
            return forward(*args, **kwargs)

        model.bert.forward = capture
        model(**batch)
        model.bert.forward = forward
        torch._dynamo.reset()
        explained = torch._dynamo.explain(model.bert)(*captured["args"], **captured["kwargs"])
        reasons = [reason.reason.splitlines()[0] for reason in explained.break_reasons]
        assert explained.graph_break_count == 0, (condition, reasons)
