"""Pretraining objectives: a registry letter → objective class.

An objective bundles what the trainer needs to know about one loss: its condition letter, the
batch fields it reads, whether it needs a parse or gold XPOS tags, whether it runs only in training
mode, how its dev loss is averaged over batches, its head (a module the model registers as
``<name>_head``), and the loss itself.  `MicroBertForPretraining` sums the losses of its
condition's objectives in registration order (M, X, P, T), and the pretraining step reads names and
dev averaging from here, so adding an objective is one new class and one `register_objective`.
"""

from __future__ import annotations

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

    def loss(self, head: nn.Module | None, inputs: ObjectiveInputs) -> ObjectiveLoss:
        raise NotImplementedError

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


def objectives_for(letters: str) -> list[type[PretrainingObjective]]:
    """The registered objectives named by ``letters``, in registration order."""
    unknown = set(letters) - set(OBJECTIVES)
    if unknown:
        raise ValueError(f"unknown objective letter(s) {sorted(unknown)}; registered: {''.join(OBJECTIVES)}")
    return [objective for letter, objective in OBJECTIVES.items() if letter in letters]
