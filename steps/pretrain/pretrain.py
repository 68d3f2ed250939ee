"""The second half of the DAG: pretrain one condition's µBERT on the model inputs.

    build_pretraining_data ──► pretrain_microbert ◄── train_tokenizer
                                      │
                                      ▼
                     directory: encoder/ (+ tokenizer files), metrics.json

One step per (language, condition, scale, seed). Training survives being killed: every
``checkpoint_every`` optimizer steps the full state (model, optimizer, scheduler, RNG, step,
validation history) is written atomically to the step's work directory, and running the same
config again picks up from there ("resuming from step N" in the log). A resumed run is bit-for-bit
the run that was never interrupted: batch order, MLM masks and P/T samples are derived from
(seed, micro-batch index), and dropout's RNG state travels in the checkpoint. Checkpoint, resume,
the SIGINT stop and the crash hook are the training harness's (`steps.common.training`), shared
with the fine-tuning loop.
"""
from __future__ import annotations

import faulthandler
import json
import logging
import math
import os
import sys
import shutil
import time
from contextlib import closing, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from tango import Step
from tango.common import FromParams, Tqdm

from steps.common.batching import bucketed_batches
from steps.pretrain.collate import PretrainingCollator, collate_batches
from steps.pretrain.packing import PackedBatch, pack_batch
from steps.common.formats import DirectoryFormat
from steps.common.runtime import (
    compile_module, compile_options, derived_seed, device_memory, fused_adamw, resolve_device, torch_threads,
)
from steps.common.tracking import WandbSetting, tracked_run
from steps.common.training import StopAtBoundary, TrainingHarness, check_finite_loss, read_back
from steps.data.vocab import load_tokenizer

logger = logging.getLogger(__name__)

CHECKPOINT_NAME = "checkpoint.pt"
# Test hook: raise `SimulatedCrash` right after optimizer step N (after its checkpoint, if one is
# due), as if the process had been killed there. Not part of the cache key.
CRASH_AFTER_STEP_ENV = "SIB_PRETRAIN_CRASH_AFTER_STEP"


class PretrainingConfig(FromParams):
    """Optimisation and bookkeeping of one pretraining run; set per scale in
    ``configs/scales.libsonnet``. Defaults are the CPU-feasible reduction of the reference's settings."""

    def __init__(
        self,
        max_steps: int = 3000,
        batch_size: int = 32,
        grad_accumulation: int = 1,
        lr: float = 3e-3,
        betas: Tuple[float, float] = (0.9, 0.98),
        eps: float = 1e-6,
        weight_decay: float = 0.01,
        warmup: float = 0.1,
        validate_every: int = 500,
        max_validation_rows: Optional[int] = 1000,
        validation_batch_size: Optional[int] = None,
        checkpoint_every: int = 250,
        seed: int = 42,
        mlm_probability: float = 0.15,
        xpos_from_silver_rows: bool = False,
        bucket_by_length: bool = True,
    ):
        """
        :param max_steps: optimizer steps (each ``batch_size × grad_accumulation`` rows).
        :param warmup: linear-warmup length of the cosine schedule; < 1 is a fraction of
            ``max_steps``, ≥ 1 a number of steps (the paper's 10,000).
        :param max_validation_rows: dev rows used for validation (an evenly spaced subset, so the
            gold treebank rows at the end of dev are represented); None = all.
        :param xpos_from_silver_rows: also train X on the corpus parser's tags, as the reference code
            did; the paper trains it on gold treebank tags only.
        :param bucket_by_length: batches of similar-length rows (`BatchOrder`); False draws
            batches uniformly, padding each to its longest row.
        """
        if max_steps < 1 or batch_size < 1 or grad_accumulation < 1:
            raise ValueError("max_steps, batch_size and grad_accumulation must be positive")
        if validate_every < 1 or checkpoint_every < 1:
            raise ValueError("validate_every and checkpoint_every must be positive")
        if warmup < 0:
            raise ValueError("warmup must be ≥ 0")
        self.max_steps = max_steps
        self.batch_size = batch_size
        self.grad_accumulation = grad_accumulation
        self.lr = lr
        self.betas = tuple(betas)
        self.eps = eps
        self.weight_decay = weight_decay
        self.warmup = warmup
        self.validate_every = validate_every
        self.max_validation_rows = max_validation_rows
        self.validation_batch_size = validation_batch_size
        self.checkpoint_every = checkpoint_every
        self.seed = seed
        self.mlm_probability = mlm_probability
        self.xpos_from_silver_rows = xpos_from_silver_rows
        self.bucket_by_length = bucket_by_length

    @property
    def warmup_steps(self) -> int:
        return int(round(self.warmup * self.max_steps)) if self.warmup < 1 else int(self.warmup)

    def to_dict(self) -> Dict[str, Any]:
        return dict(vars(self), warmup_steps=self.warmup_steps)


class BatchOrder:
    """Micro-batch k of a run, a pure function of (seed, k), so a resumed run sees the same batches.

    Each epoch draws a fresh permutation seeded by (seed, epoch) and drops its last
    ``num_rows % batch_size`` rows, so every micro-batch has the same number of rows. With
    ``lengths`` the kept rows are then bucketed by length (`bucketed_batches`, seeded likewise):
    batches of similar-length rows in random order, 2-3x faster on short Wolof rows.
    """

    def __init__(self, num_rows: int, batch_size: int, seed: int, lengths: Optional[Sequence[int]] = None):
        if lengths is not None and len(lengths) != num_rows:
            raise ValueError(f"{len(lengths)} lengths for {num_rows} rows")
        self.num_rows = num_rows
        self.batch_size = min(batch_size, num_rows)
        self.batches_per_epoch = num_rows // self.batch_size
        self.seed = seed
        self.lengths = None if lengths is None else list(lengths)
        self._epoch = -1
        self._batches: List[List[int]] = []

    def indices(self, micro_batch: int) -> List[int]:
        epoch, number = divmod(micro_batch, self.batches_per_epoch)
        if epoch != self._epoch:
            generator = torch.Generator().manual_seed(derived_seed(self.seed, "epoch", epoch))
            kept = torch.randperm(self.num_rows, generator=generator).tolist()[: self.batches_per_epoch * self.batch_size]
            if self.lengths is None:
                self._batches = [kept[i : i + self.batch_size] for i in range(0, len(kept), self.batch_size)]
            else:
                buckets = bucketed_batches([self.lengths[i] for i in kept], self.batch_size, generator)
                self._batches = [[kept[i] for i in batch] for batch in buckets]
            self._epoch = epoch
        return self._batches[number]


class MicroBatches(torch.utils.data.Dataset):
    """Micro-batches ``first, first + 1, …`` of a run, collated. Item k is a pure function of
    (seed, micro-batch index) (`BatchOrder` picks the rows, the derived mask seed the MLM masks, the
    derived trees seed the P/T samples), so DataLoader worker processes can build them ahead of the
    training loop and a resumed run still sees the batches of the run that was never interrupted.
    With ``parse_inputs`` (`models.prepared_inputs.ParseInputs`) an item also carries what the
    model would otherwise build from its parse: the SLA mask and the P/T samples. Items are packed
    into one buffer (`steps.pretrain.packing`): one tensor to hand over and to copy to the device."""

    def __init__(self, rows: Sequence[Any], order: BatchOrder, collator: PretrainingCollator, seed: int, first: int, count: int,
                 parse_inputs=None):
        self.rows, self.order, self.collator = rows, order, collator
        self.seed, self.first, self.count = seed, first, count
        self.parse_inputs = parse_inputs

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> PackedBatch:
        return pack_batch(self.batch(index))

    def batch(self, index: int) -> Dict[str, Any]:
        """Item ``index`` unpacked: the collated batch (plus the parse's inputs), each tensor its own."""
        micro = self.first + index
        rows = [self.rows[i] for i in self.order.indices(micro)]
        batch = self.collator(rows, seed=derived_seed(self.seed, "mask", micro))
        if self.parse_inputs:
            batch = self.parse_inputs(batch, sampling_seed(self.seed, micro))
        return batch


def batch_order(rows: Sequence[Any], config: PretrainingConfig) -> BatchOrder:
    """The run's micro-batch order over ``rows``: length-bucketed unless the config says otherwise."""
    lengths = [len(row["input_ids"]) for row in rows] if config.bucket_by_length else None
    return BatchOrder(len(rows), config.batch_size, config.seed, lengths)


def pretraining_collator(tokenizer, xpos_labels: Sequence[str], config: PretrainingConfig, soft_label_table=None) -> PretrainingCollator:
    """The run's collator: its MLM rate and XPOS rows from the config, H's soft labels if given."""
    return PretrainingCollator(tokenizer, xpos_labels, xpos_from_silver_rows=config.xpos_from_silver_rows,
                               mlm_probability=config.mlm_probability, soft_label_table=soft_label_table)


def sampling_seed(seed: int, micro_batch: int) -> int:
    """The seed of micro-batch k's P/T samples, wherever they are drawn (loader or model)."""
    return derived_seed(seed, "trees", micro_batch)


# Batches each loader worker builds ahead of the loop: the loop waits on a slow batch (a bucket of
# long rows) only once it outruns workers × this many batches. 8 left a paper-scale MXPT-SLA loop
# waiting on its long bucket above ~45 steps/s; 32 moves that to ~190, for ~0.5 GB of queued batches
# (benchmarks/bench_loader_epoch.py, docs/benchmarks/loader_epoch.jsonl).
LOADER_PREFETCH = 32


# Batches whose (B, H, T, T) attention scores reach this many elements (512 MiB in fp32) recompute
# their activations under `activation_checkpointing`; smaller ones keep them and skip the extra
# forward. A paper-scale batch of 256 rows crosses it from ~256 tokens on (8 heads).
CHECKPOINT_FROM_SCORE_ELEMENTS = 2**27


# Below this much memory on the training device, `activation_checkpointing`'s default (None) turns it
# on: a paper-scale µB-MXPT-SLA pretraining was killed for memory on a 24 GB machine without it and
# ran in 16-22 GB with it (docs/pretraining.md, "Memory"); an 80 GB GPU needs none.
AUTO_CHECKPOINTING_BELOW_BYTES = 64 * 2**30


def wants_activation_checkpointing(setting: Optional[bool], device: torch.device) -> bool:
    """The step's ``activation_checkpointing``: as set, or (None) on where the device has less than
    `AUTO_CHECKPOINTING_BELOW_BYTES`. Only batches past `CHECKPOINT_FROM_SCORE_ELEMENTS` recompute,
    and the weights are the same either way, so the choice is left to the machine."""
    if setting is not None:
        return bool(setting)
    memory = device_memory(device)
    return memory is not None and memory < AUTO_CHECKPOINTING_BELOW_BYTES


class ActivationCheckpointing:
    """Keep only each encoder layer's input for the backward pass and recompute the rest there, for
    the batches large enough to need it (`CHECKPOINT_FROM_SCORE_ELEMENTS`).

    A paper-scale batch of 256 rows of ~500 tokens makes each SLA layer hold several (B, H, T, T)
    tensors of ~2 GB for its backward; three layers outgrow a machine with 24 GB. Recomputing costs
    about one more forward pass. `torch.utils.checkpoint` restores the RNG state before the
    recomputation, so dropout draws the same masks and the gradients are the same."""

    def __init__(self, model: torch.nn.Module):
        from transformers.modeling_layers import GradientCheckpointingLayer

        model.bert.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.heads = model.config.num_attention_heads
        self.layers = [module for module in model.bert.modules() if isinstance(module, GradientCheckpointingLayer)]

    def for_batch(self, input_ids: torch.Tensor) -> None:
        batch_size, length = input_ids.shape[:2]
        recompute = batch_size * self.heads * length * length >= CHECKPOINT_FROM_SCORE_ELEMENTS
        for layer in self.layers:
            layer.gradient_checkpointing = recompute


def micro_batch_loader(dataset: MicroBatches, workers: int, pin_memory: bool) -> torch.utils.data.DataLoader:
    """Items of ``dataset`` in order; ``workers`` > 0 collates them in that many processes,
    `LOADER_PREFETCH` batches ahead each (on a GPU the ~0.1 ms per row of Python collation otherwise bounds the
    step rate); 0 collates in this process, one batch at a time."""
    return torch.utils.data.DataLoader(
        dataset, batch_size=None, shuffle=False, num_workers=workers, pin_memory=pin_memory,
        prefetch_factor=LOADER_PREFETCH if workers else None,
        # Forked workers share the rows copy-on-write; Tango's default "spawn" would pickle them
        # all into every worker.
        multiprocessing_context="fork" if workers else None,
        # Its own generator: a DataLoader otherwise draws its base seed from the global RNG, which
        # would shift the dropout masks of every step after a resume.
        generator=torch.Generator().manual_seed(dataset.seed),
    )


PRECISIONS = {"fp32", "bf16"}


def autocast_for(device: torch.device, precision: str):
    """bf16 autocast on ``device`` (matmuls in bf16, losses and softmax in fp32), or nothing."""
    return torch.autocast(device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()


# The SIGINT stop at an optimizer step's end (the harness's, shared with fine-tuning's epoch ends).
StopAtStepBoundary = StopAtBoundary


class TrainingWatch:
    """What a long run tells its watcher: a log line with its pace at most once a minute (so a log
    filtered of progress bars still shows whether a run slows down or hangs), and, when no step has
    finished for ``stall_seconds``, every thread's Python traceback on stderr (`faulthandler`), which
    names the line a hung run waits on. ``sync_every``: steps between reads of the losses back
    from the device (1 = every step)."""

    LOG_EVERY_SECONDS = 60.0

    def __init__(self, sync_every: int = 1, stall_seconds: Optional[float] = 600.0):
        if sync_every < 1:
            raise ValueError(f"sync_every must be ≥ 1, not {sync_every}")
        if stall_seconds is not None and stall_seconds <= 0:
            raise ValueError(f"stall_seconds must be positive or None, not {stall_seconds}")
        self.sync_every, self.stall_seconds = sync_every, stall_seconds
        self._last_log, self._last_step, self._armed = 0.0, 0, False

    def start(self, step: int) -> None:
        self._last_log, self._last_step = time.perf_counter(), step
        self._arm()

    def beat(self, step: int, max_steps: int, window: Dict[str, Any], logger: logging.Logger) -> None:
        self._arm()
        now = time.perf_counter()
        if now - self._last_log >= self.LOG_EVERY_SECONDS:
            rate = (step - self._last_step) / (now - self._last_log)
            logger.info("step %d/%d: %.1f steps/s, %.0f tokens/s in this window", step, max_steps, rate,
                        window["tokens"] / max(window["seconds"], 1e-9))
            self._last_log, self._last_step = now, step

    @contextmanager
    def running(self, step: int):
        """`start` at ``step`` for the block, `stop` after it however it ends."""
        self.start(step)
        try:
            yield self
        finally:
            self.stop()

    def stop(self) -> None:
        if self._armed:
            faulthandler.cancel_dump_traceback_later()
            self._armed = False

    def _arm(self) -> None:
        if self.stall_seconds is not None:
            faulthandler.dump_traceback_later(self.stall_seconds, repeat=True, file=_real_stderr())
            self._armed = True


def _real_stderr():
    """stderr with a file descriptor (`faulthandler` writes to it from its own thread); under a
    capturing runner (pytest) the process's original one."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__


def evenly_spaced(rows: List[Any], limit: Optional[int]) -> List[Any]:
    if limit is None or len(rows) <= limit:
        return list(rows)
    return [rows[(i * len(rows)) // limit] for i in range(limit)]


@contextmanager
def structure_losses_without_dropout(model):
    """Evaluation mode, except that the model's own ``training`` flag is set so its forward adds
    the P and T losses (which `MicroBertForPretraining` computes only in training mode); every
    submodule, dropout included, stays in eval mode. Validation reports them this way; they are
    not part of the validation ``loss``, as in the reference."""
    was_training = model.training
    model.eval()
    model.training = True
    try:
        yield
    finally:
        model.train(was_training)


def _to_device(batch: Dict[str, torch.Tensor], device: torch.device) -> Dict[str, torch.Tensor]:
    return {key: value.to(device, non_blocking=True) for key, value in batch.items()}


def _known_config_fields() -> set:
    from models import MicroBertConfig

    return set(MicroBertConfig().to_dict())


@Step.register("pretrain_microbert")
class PretrainMicrobert(Step):
    """Pretrain a µBERT under one paper condition (M, MX, MPT-SLA, …; Gessler & Schneider, §4.2) with AdamW and a
    warmup + cosine schedule (reference `sgcl.jsonnet`), validating on dev and checkpointing as it goes.

    Result: a directory holding

    * ``encoder/``: the encoder of the **last** step (as the reference exports) plus
      the tokenizer files, so ``AutoTokenizer.from_pretrained`` and ``AutoModel.from_pretrained``
      load it (SLA and relative-position encoders after ``import models``);
    * ``metrics.json``: the validation curve (per-loss components, tokens/s, wall time), the final
      figures, and the step with the best dev MLM loss (recorded, not exported).

    ``wandb`` (W&B tracking, on and offline by default, `steps.common.tracking`), ``num_threads``,
    ``device``, ``loader_workers`` (processes that collate batches ahead of the loop,
    `micro_batch_loader`; worth it on a GPU; at most one per core), ``activation_checkpointing`` (each encoder layer's
    activations recomputed in the backward pass instead of kept: the memory lever of a machine whose
    memory a paper-scale batch outgrows, `ActivationCheckpointing`; by default on where the device has
    under 64 GiB, `wants_activation_checkpointing`), ``parse_inputs_in_loader`` (the SLA mask and P/T
    samples built with the batch, `models.prepared_inputs`, instead of in the model's forward: the
    same draws, bit for bit on a CPU), ``sync_every`` and ``stall_seconds`` (`TrainingWatch`)
    change how the run is watched and where it runs, not its result, so they are left out of the
    cache key. ``precision="bf16"`` (autocast), ``fused_optimizer`` (one fused AdamW kernel) and
    ``compile_encoder`` (torch.compile's keywords for the encoder, `compile_module`) are GPU speed
    levers that change the result by rounding; they enter the key only when set, as does
    ``compile_objectives`` (torch.compile's keywords for the P and T losses, which take their samples
    as tensors: `PretrainingObjective.compile`).
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "002"  # 002: length-bucketed batches by default (PretrainingConfig.bucket_by_length)
    FORMAT = DirectoryFormat()
    SKIP_ID_ARGUMENTS = {"wandb", "num_threads", "device", "loader_workers", "sync_every", "stall_seconds", "parse_inputs_in_loader",
                         "activation_checkpointing"}
    # Only condition H reads soft labels (precompute_soft_labels); the levers key only when set.
    SKIP_DEFAULT_ARGUMENTS = {"soft_label_table": None, "precision": "fp32", "fused_optimizer": False, "compile_encoder": None,
                              "compile_objectives": None}

    def run(  # type: ignore[override]
        self,
        pretraining_data: Dict[str, Any],
        tokenizer: Path,
        condition: str,
        model: Optional[Dict[str, Any]] = None,
        training: PretrainingConfig = PretrainingConfig(),
        wandb: WandbSetting = None,
        num_threads: Optional[int] = None,
        device: Optional[str] = None,
        loader_workers: int = 0,
        soft_label_table: Optional[Any] = None,
        precision: str = "fp32",
        fused_optimizer: bool = False,
        sync_every: int = 1,
        stall_seconds: Optional[float] = 600.0,
        compile_encoder: Optional[Dict[str, Any]] = None,
        parse_inputs_in_loader: bool = True,
        compile_objectives: Optional[Dict[str, Any]] = None,
        activation_checkpointing: Optional[bool] = None,
    ) -> Path:
        if loader_workers < 0:
            raise ValueError(f"loader_workers must be ≥ 0, not {loader_workers}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, not {precision!r}")
        watch = TrainingWatch(sync_every, stall_seconds)
        with torch_threads(num_threads):
            return self._pretrain(
                pretraining_data, Path(tokenizer), condition, model or {}, training, wandb, device, loader_workers, soft_label_table,
                precision, fused_optimizer, watch, compile_encoder, parse_inputs_in_loader, compile_objectives,
                activation_checkpointing,
            )

    # ------------------------------------------------------------------------------------------

    def _build_model(self, condition: str, overrides: Dict[str, Any], vocab_size: int, num_xpos: int, seed: int):
        from models import MicroBertForPretraining, parse_condition

        parsed = parse_condition(condition)
        unknown = set(overrides) - _known_config_fields()
        if unknown:
            raise ValueError(f"unknown model config field(s) {sorted(unknown)} for condition {condition}")
        fixed = {"vocab_size", "num_xpos_labels", "pretraining_objectives", "syntax_attention"} & set(overrides)
        if fixed:
            raise ValueError(f"model config field(s) {sorted(fixed)} come from the data and the condition; do not set them")
        fields = dict(overrides, vocab_size=vocab_size)
        if parsed.needs_gold_xpos:
            if num_xpos == 0:
                raise ValueError(f"condition {condition} trains XPOS tagging, but the data has no gold XPOS labels")
            fields["num_xpos_labels"] = num_xpos
        torch.manual_seed(derived_seed(seed, "init"))
        return MicroBertForPretraining.from_condition(condition, **fields)

    def _pretrain(self, data, tokenizer_dir: Path, condition, overrides, config: PretrainingConfig, use_wandb, device, loader_workers=0,
                  soft_label_table=None, precision="fp32", fused_optimizer=False, watch=None, compile_encoder=None,
                  parse_inputs_in_loader=True, compile_objectives=None, activation_checkpointing=None):
        from models import parse_condition
        from models.objectives import objective_sizes
        from models.prepared_inputs import ParseInputs

        device = resolve_device(device)
        activation_checkpointing = wants_activation_checkpointing(activation_checkpointing, device)
        tokenizer = load_tokenizer(tokenizer_dir)
        xpos_labels = list(data["xpos_labels"])
        parsed = parse_condition(condition)
        if not data.get("trees", True) and (parsed.needs_parse or parsed.needs_gold_xpos):
            raise ValueError(f"condition {condition} needs parsed trees and gold tags, but this pretraining data is "
                             "MLM-only (build_mlm_pretraining_data); use condition M or build_pretraining_data")
        train_rows, dev_rows = data["train"], evenly_spaced(data["dev"], config.max_validation_rows)
        if config.xpos_from_silver_rows and parsed.needs_gold_xpos:
            labels = set(xpos_labels)
            if not any(tag in labels for row in train_rows if not row["tree_is_gold"][0] for tag in row["xpos"]):
                raise ValueError("xpos_from_silver_rows=True, but the parsed corpus carries no XPOS tag of the treebank "
                                 "(was its tagger trained with ParserBudget.tagger_tags='upos'?)")
        soft_labelled = "H" in objective_sizes(parsed.objectives)
        if soft_labelled != (soft_label_table is not None):
            raise ValueError(f"condition {condition} " + ("trains on n-gram soft labels: give it soft_label_table (precompute_soft_labels)"
                                                         if soft_labelled else "reads no soft labels; drop soft_label_table"))
        collator = pretraining_collator(tokenizer, xpos_labels, config, soft_label_table)
        model = self._build_model(condition, overrides, len(tokenizer), len(xpos_labels), config.seed).to(device)
        # The encoder (few shapes: CUDA graphs pay off) apart from the P/T losses, whose sample counts vary per batch.
        compile_module(model.bert, compile_encoder)
        recompute = ActivationCheckpointing(model) if activation_checkpointing else None
        if compile_objectives is not None:
            model.compile_objectives(compile_options(compile_objectives))
        optimizer = (fused_adamw if fused_optimizer else torch.optim.AdamW)(
            model.parameters(), lr=config.lr, betas=config.betas, eps=config.eps, weight_decay=config.weight_decay
        )
        from transformers import get_cosine_schedule_with_warmup

        scheduler = get_cosine_schedule_with_warmup(optimizer, config.warmup_steps, config.max_steps)
        order = batch_order(train_rows, config)
        if order.batch_size < config.batch_size:
            self.logger.warning("only %d training rows: batches of %d instead of %d", len(train_rows), order.batch_size, config.batch_size)

        state = {
            "step": 0, "history": [], "train_tokens": 0, "train_seconds": 0.0, "wall_seconds": 0.0, "resumed_from": [],
            # Since the last validation: summed train loss, steps, tokens, seconds.
            "window": {"loss": 0.0, "steps": 0, "tokens": 0, "seconds": 0.0},
        }
        harness = TrainingHarness(self.work_dir / CHECKPOINT_NAME, device, "step", CRASH_AFTER_STEP_ENV)
        saved = harness.resume(model, optimizer, scheduler)
        if saved is not None:
            state = saved["state"]
            state["resumed_from"].append(state["step"])
            self.logger.info("resuming from step %d (checkpoint %s)", state["step"], harness.path)
        else:
            torch.manual_seed(derived_seed(config.seed, "dropout"))
        # Where each run of this step trained: a stopped pretraining may go on on another machine.
        state.setdefault("runs", []).append({"from_step": state["step"], "device": str(device), "threads": torch.get_num_threads()})

        # More collating processes than cores only compete with the training loop for them, and each
        # holds its own copy of the rows it touched: the paper scale's 10, sized for a GPU machine,
        # ran a 2-core, 24 GB machine out of memory beside its longest batches.
        workers = min(loader_workers, os.cpu_count() or 1)
        if workers < loader_workers:
            self.logger.info("%d loader workers, not %d: this machine has %d cores", workers, loader_workers, os.cpu_count() or 1)
        run_info = {
            "condition": condition,
            "parameters": sum(p.numel() for p in model.parameters()),
            "encoder_parameters": sum(p.numel() for p in model.bert.parameters()),
            "model_config": model.config.to_diff_dict(),
            "training": config.to_dict(),
            "train_rows": len(train_rows),
            "dev_rows_used": len(dev_rows),
            "xpos_labels": len(xpos_labels),
            "device": str(device),
            "threads": torch.get_num_threads(),
            "precision": precision,
            "fused_optimizer": fused_optimizer,
            "compile_encoder": compile_encoder,
            "parse_inputs_in_loader": parse_inputs_in_loader,
            "compile_objectives": compile_objectives,
            "activation_checkpointing": activation_checkpointing,
            "loader_workers": workers,
        }
        self.logger.info(
            "pretraining %s: %d parameters, %d train rows, %d steps of %d×%d rows, warmup %d",
            condition, run_info["parameters"], len(train_rows), config.max_steps, order.batch_size,
            config.grad_accumulation, config.warmup_steps,
        )
        first_micro = state["step"] * config.grad_accumulation
        # Loader workers fork here, before W&B starts its threads.
        micro_batches = iter(micro_batch_loader(
            MicroBatches(train_rows, order, collator, config.seed, first_micro, config.max_steps * config.grad_accumulation - first_micro,
                         parse_inputs=ParseInputs(model.config) if parse_inputs_in_loader else None),
            workers, pin_memory=device.type == "cuda",
        ))
        with tracked_run(self, use_wandb, "pretrain", run_info, seed=config.seed) as tracker:
            return self._train(model, optimizer, scheduler, micro_batches, collator, dev_rows, config, device, state,
                               harness, run_info, tokenizer_dir, condition, tracker, autocast_for(device, precision),
                               watch or TrainingWatch(), recompute)

    def _train(self, model, optimizer, scheduler, micro_batches, collator, dev_rows, config: PretrainingConfig, device,
               state, harness: TrainingHarness, run_info, tokenizer_dir, condition, tracker, autocast, watch,
               recompute: Optional[ActivationCheckpointing] = None) -> Path:
        model.train()
        process_start = time.perf_counter()
        wall_before = state["wall_seconds"]
        window = state["window"]
        progress = Tqdm.tqdm(total=config.max_steps, initial=state["step"], desc=f"pretraining {condition}")
        # Steps whose losses are still on the device: read back together every `watch.sync_every`
        # steps, so a GPU is not made to wait for the host after each step. The bookkeeping of each
        # step is the same arithmetic in the same order whenever it happens (`_record_steps`).
        pending: List[Dict[str, Any]] = []
        with harness, watch.running(state["step"]), closing(progress):
            while state["step"] < config.max_steps:
                step_start = time.perf_counter()
                losses, tokens = [], 0
                for part in range(config.grad_accumulation):
                    micro = state["step"] * config.grad_accumulation + part
                    packed = next(micro_batches)
                    tokens += packed.tokens  # counted in the loader: no device wait
                    batch = packed.unpack(device, non_blocking=True)
                    model.set_sampling_seed(sampling_seed(config.seed, micro))
                    if recompute is not None:
                        recompute.for_batch(batch["input_ids"])
                    with autocast:
                        output = model(**batch)
                    (output.loss / config.grad_accumulation).backward()
                    names = ["loss", *(f"{name}_loss" for name in output.losses)]
                    losses.append((names, torch.stack([output.loss.detach().float(), *(v.detach().float() for v in output.losses.values())])))
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                state["step"] += 1
                step = state["step"]
                pending.append({"step": step, "losses": losses, "tokens": tokens, "lr": scheduler.get_last_lr()[0],
                                "seconds": time.perf_counter() - step_start})
                progress.update(1)
                validating = step % config.validate_every == 0 or step == config.max_steps
                checkpointing = step % config.checkpoint_every == 0 or step == config.max_steps or harness.stop_requested
                if validating or checkpointing or len(pending) >= watch.sync_every or harness.crashes_after(step):
                    self._record_steps(pending, state, window, config, progress, tracker)
                    pending = []
                    watch.beat(step, config.max_steps, window, self.logger)
                if validating:
                    with autocast:
                        record = self._validate(model, collator, dev_rows, config, device)
                    record.update(
                        step=step,
                        lr=scheduler.get_last_lr()[0],
                        train_loss=window["loss"] / max(window["steps"], 1),
                        tokens_per_second=window["tokens"] / max(window["seconds"], 1e-9),
                        train_tokens=state["train_tokens"],
                        wall_seconds=wall_before + time.perf_counter() - process_start,
                    )
                    state["history"].append(record)
                    window.update(loss=0.0, steps=0, tokens=0, seconds=0.0)
                    self.logger.info("step %d: %s", step, json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in record.items()}))
                    tracker.log({f"dev/{k}": v for k, v in record.items() if k != "step"}, step=step)
                if checkpointing:
                    state["wall_seconds"] = wall_before + time.perf_counter() - process_start
                    harness.save(model, optimizer, scheduler, state=state)
                harness.boundary(step, config.max_steps, step == config.max_steps, self.logger)
        state["wall_seconds"] = wall_before + time.perf_counter() - process_start
        result = self._export(model, tokenizer_dir, run_info, state)
        tracker.summary(json.loads((result / "metrics.json").read_text())["final"])
        return result

    @staticmethod
    def _record_steps(pending, state, window, config: PretrainingConfig, progress, tracker) -> None:
        """Read the pending steps' losses back (one device wait) and book them in step order: the
        window and totals, the progress bar and W&B. A non-finite loss stops the run here, before
        any checkpoint or validation could keep its weights."""
        if not pending:
            return
        waited = time.perf_counter()
        values = read_back([tensor for entry in pending for _, tensor in entry["losses"]])
        pending[-1]["seconds"] += time.perf_counter() - waited  # the device finishing the pending steps
        at = 0
        for entry in pending:
            components: Dict[str, float] = {}
            for names, _ in entry["losses"]:
                for name in names:
                    components[name] = components.get(name, 0.0) + values[at] / config.grad_accumulation
                    at += 1
            check_finite_loss(components["loss"], f"step {entry['step']}")
            window["tokens"] += entry["tokens"]
            state["train_tokens"] += entry["tokens"]
            window["seconds"] += entry["seconds"]
            state["train_seconds"] += entry["seconds"]
            window["loss"] += components["loss"]
            window["steps"] += 1
            tracker.log({f"train/{k}": v for k, v in components.items()} | {"train/lr": entry["lr"]}, step=entry["step"])
        progress.set_postfix(loss=f"{components['loss']:.3f}", lr=f"{pending[-1]['lr']:.2e}")

    @torch.no_grad()
    def _validate(self, model, collator, rows, config: PretrainingConfig, device) -> Dict[str, float]:
        """Dev losses with dropout off and the same masks and P/T samples at every validation.
        Each objective's dev loss is averaged as its registry entry says (MLM over masked tokens,
        XPOS over labelled rows, P and T over batches). ``loss`` = the sum over the objectives that
        are not training-only (mlm + xpos), the reference's validation metric without its parser term."""
        objectives = model.objectives
        uses_training_only = any(objective.training_only for objective in objectives)
        sums = {objective.name: 0.0 for objective in objectives}
        weights = {objective.name: 0 for objective in objectives}
        with torch.random.fork_rng(devices=[]), (structure_losses_without_dropout(model) if uses_training_only else _eval_mode(model)):
            model.set_sampling_seed(derived_seed(config.seed, "dev-trees"))
            batches = collate_batches(collator, rows, config.validation_batch_size or config.batch_size, derived_seed(config.seed, "dev-mask"))
            for batch in batches:
                output = model(**_to_device(batch, device))
                for objective in objectives:
                    if objective.name in output.losses:
                        weight = objective.dev_weight(batch)
                        sums[objective.name] += float(output.losses[objective.name]) * weight
                        weights[objective.name] += weight
        record = {f"dev_{name}_loss": sums[name] / weights[name] for name in sums if weights[name]}
        record["dev_loss"] = sum(record[f"dev_{o.name}_loss"] for o in objectives if not o.training_only and weights[o.name])
        record["dev_mlm_perplexity"] = math.exp(min(record["dev_mlm_loss"], 50.0))
        return record

    def _export(self, model, tokenizer_dir: Path, run_info: Dict[str, Any], state: Dict[str, Any]) -> Path:
        out = self.work_dir / "result"
        shutil.rmtree(out, ignore_errors=True)
        encoder_dir = out / "encoder"
        model.cpu().export_encoder(encoder_dir)
        # The MLM head too (the word embeddings it is tied to are in the encoder), for the MLM-accuracy
        # evaluation (steps/evaluate/mlm_accuracy.py); an extra file, the encoder is unchanged.
        from safetensors.torch import save_file

        save_file({name: value.contiguous() for name, value in model.mlm_head.state_dict().items()}, str(out / "mlm_head.safetensors"))
        for file in tokenizer_dir.iterdir():
            if file.is_file() and file.name != "config.json":
                shutil.copy2(file, encoder_dir / file.name)
        history = state["history"]
        best = min(history, key=lambda record: record["dev_mlm_loss"])
        metrics = dict(
            run_info,
            history=history,
            final=dict(history[-1], train_seconds=state["train_seconds"], wall_seconds=state["wall_seconds"],
                       tokens_per_second=state["train_tokens"] / max(state["train_seconds"], 1e-9)),
            exported_step=state["step"],
            best_step=best["step"],
            best_dev_mlm_loss=best["dev_mlm_loss"],
            resumed_from=state["resumed_from"],
            runs=state["runs"],
        )
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
        self.logger.info(
            "exported the step-%d encoder to %s (best dev MLM loss %.4f at step %d; %.0f tokens/s)",
            state["step"], encoder_dir, best["dev_mlm_loss"], best["step"], metrics["final"]["tokens_per_second"],
        )
        return out


@contextmanager
def _eval_mode(model) -> Iterator[None]:
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)
