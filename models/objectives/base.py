"""Pretraining objectives: a registry letter → objective class.

An objective bundles what the trainer needs to know about one loss: its condition letter, the
batch fields it reads, whether it needs a parse or gold XPOS tags, whether it runs only in training
mode, how its dev loss is averaged over batches, its head (a module the model registers as
``<name>_head``), and the loss itself.  `MicroBertForPretraining` sums the losses of its
condition's objectives in registration order (M, X, P, T), and the pretraining step reads names and
dev averaging from here, so adding an objective is one new class and one `register_objective`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from ..trees import TreeStructure

IGNORE_INDEX = -100
# How a dev loss is averaged over dev batches (each batch's loss is already a mean within it).
PER_MASKED_TOKEN = "masked_token"  # weight = the batch's labelled positions in `label_field`
PER_LABELLED_ROW = "labelled_row"  # weight = the batch's rows with any label in `label_field`
PER_BATCH = "batch"  # weight = 1
DEV_AVERAGES = (PER_MASKED_TOKEN, PER_LABELLED_ROW, PER_BATCH)


@dataclass
class ObjectiveInputs:
    """What a loss may read: the collated batch, the encoder's outputs, and shared per-batch state.

    batch: every collated field (and test overrides such as ``phrase_samples``).
    encoded: `MicroBertModelOutput` (hidden_states / last_layer_attention present when asked for).
    structure: the batch's `TreeStructure` when some objective or the attention needs a parse.
    generator: the model's sampling generator (seeded per micro-batch by the trainer).
    word_embeddings: the tied (V, H) input embedding matrix.
    """

    batch: dict[str, Any]
    encoded: Any
    structure: TreeStructure | None
    generator: torch.Generator
    word_embeddings: torch.Tensor


@dataclass
class ObjectiveLoss:
    loss: torch.Tensor
    num_samples: int | None = None  # contrastive objectives: how many samples the loss averaged


class PretrainingObjective:
    """Base class; subclasses set the class attributes and implement `loss` (and `build_head`)."""

    letter: ClassVar[str]
    name: ClassVar[str]  # output field ``<name>_loss``, dev metric ``dev_<name>_loss``, head ``<name>_head``
    batch_fields: ClassVar[tuple[str, ...]] = ()
    needs_parse: ClassVar[bool] = False  # reads `heads` (through `ObjectiveInputs.structure`)
    needs_gold_xpos: ClassVar[bool] = False
    training_only: ClassVar[bool] = False  # computed only when the model is in training mode
    dev_average: ClassVar[str] = PER_BATCH
    label_field: ClassVar[str | None] = None  # the batch field `dev_weight` counts labels in
    # A masked-LM objective (M, or a variant of it: C<c>, H).  A condition has exactly one; they share
    # the name "mlm" (so `dev_mlm_loss` and the `mlm_head` weights mean the same thing for all).
    masked_lm: ClassVar[bool] = False
    # Written with a size after its letter ("C5"); the size is `objective_sizes(spec)[letter]`.
    sized: ClassVar[bool] = False
    # Reshapes the encoder's input (`encoder_inputs`), so no other objective or attention variant can join it.
    standalone: ClassVar[bool] = False
    # The batch field holding this objective's random draws (`sample`), for objectives that draw any:
    # a loader can fill it ahead of the model (`models.prepared_inputs`), else the loss draws in-model.
    sample_field: ClassVar[str | None] = None

    def __init__(self, config):
        self.config = config

    def build_head(self) -> nn.Module | None:
        return None

    def attention_stage(self) -> str | None:
        """"pre_dropout" / "post_dropout" if the loss needs last-layer attention probabilities."""
        return None

    def needs_hidden_states(self) -> bool:
        """Whether the loss reads every layer's hidden states (not only the last)."""
        return False

    def encoder_inputs(self, batch: dict[str, Any]) -> dict[str, torch.Tensor] | None:
        """What the encoder should read instead of the batch's input_ids/attention_mask (None: the batch's)."""
        return None

    def loss(self, head: nn.Module | None, inputs: ObjectiveInputs) -> ObjectiveLoss:
        raise NotImplementedError

    def sample(self, heads: torch.Tensor, structure: TreeStructure, generator: torch.Generator) -> Any:
        """This batch's random draws (objectives with a `sample_field`), from its trees and ``generator``."""
        raise NotImplementedError(f"the {self.letter} objective draws no samples")

    def drawn_samples(self, inputs: ObjectiveInputs) -> Any:
        """The batch's `sample_field` when a loader filled it, else drawn here from the model's generator."""
        samples = inputs.batch.get(self.sample_field)
        return samples if samples is not None else self.sample(inputs.batch["heads"], inputs.structure, inputs.generator)

    def compile(self, options: dict[str, Any]) -> None:
        """torch.compile this objective's loss arithmetic with ``options`` (a GPU lever: fewer kernel
        launches). Only objectives whose loss is a function of tensors alone, with no read of a value
        back to the host and no data-dependent shape, override it; the others stay eager."""

    def needs_structure(self, batch: dict[str, Any]) -> bool:
        """Whether the loss reads the batch's `TreeStructure` (not when a loader drew its samples)."""
        return self.needs_parse and (self.sample_field is None or batch.get(self.sample_field) is None)

    def missing_fields(self, batch: dict[str, Any]) -> list[str]:
        return [field for field in self.batch_fields if batch.get(field) is None]

    @classmethod
    def dev_weight(cls, batch: dict[str, torch.Tensor]) -> int:
        """This batch's weight in the dev average of `dev_average`."""
        if cls.dev_average == PER_BATCH:
            return 1
        labelled = batch[cls.label_field] != IGNORE_INDEX
        if cls.dev_average == PER_MASKED_TOKEN:
            return int(labelled.sum())
        return int(labelled.any(-1).sum())


OBJECTIVES: dict[str, type[PretrainingObjective]] = {}


def register_objective(objective: type[PretrainingObjective]) -> type[PretrainingObjective]:
    """Class decorator: register under its letter.  Registration order is the order losses are
    computed and summed in (it fixes the sampling generator's draws, so it must not change)."""
    if objective.letter in OBJECTIVES or len(objective.letter) != 1:
        raise ValueError(f"objective letter {objective.letter!r} is taken or not one letter")
    if objective.dev_average not in DEV_AVERAGES:
        raise ValueError(f"{objective.__name__}.dev_average must be one of {DEV_AVERAGES}")
    OBJECTIVES[objective.letter] = objective
    return objective


def objective_sizes(spec: str) -> dict[str, int | None]:
    """"MXPT" → {M: None, X: None, P: None, T: None}; "C13" → {C: 13}.  Each token is a registered
    letter, followed by a size exactly when its objective is `sized`.  ValueError otherwise."""
    tokens = re.findall(r"([A-Za-z])(\d*)", spec)
    if "".join(letter + size for letter, size in tokens) != spec:
        raise ValueError(f"objectives {spec!r}: expected letters, each optionally followed by a size")
    sizes: dict[str, int | None] = {}
    for letter, size in tokens:
        if letter not in OBJECTIVES or letter in sizes:
            raise ValueError(f"objectives {spec!r}: {letter!r} is unknown or repeated; registered: {''.join(OBJECTIVES)}")
        if bool(size) != OBJECTIVES[letter].sized or (size and int(size) <= 0):
            raise ValueError(f"objectives {spec!r}: {letter!r} " + ("needs a positive size" if OBJECTIVES[letter].sized else "takes no size"))
        sizes[letter] = int(size) if size else None
    return sizes


def objectives_for(spec: str) -> list[type[PretrainingObjective]]:
    """The registered objectives named by ``spec`` ("MXPT", "C5", "H"), in registration order."""
    letters = objective_sizes(spec)
    return [objective for letter, objective in OBJECTIVES.items() if letter in letters]


def check_objectives(spec: str) -> list[type[PretrainingObjective]]:
    """`objectives_for`, plus the rules of a condition: exactly one masked-LM objective (M, C<c> or H),
    and a `standalone` one (C<c>) alone."""
    objectives = objectives_for(spec)
    masked_lm = [objective.letter for objective in objectives if objective.masked_lm]
    if len(masked_lm) != 1:
        raise ValueError(f"objectives {spec!r} need exactly one masked-LM objective "
                         f"({', '.join(o.letter for o in OBJECTIVES.values() if o.masked_lm)}), got {masked_lm}")
    if any(objective.standalone for objective in objectives) and len(objectives) > 1:
        raise ValueError(f"objectives {spec!r}: {masked_lm[0]} replaces the sentence layout the others read; it trains alone")
    return objectives
