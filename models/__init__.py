"""MicroBERT models for the syntactic-inductive-bias experiments.

Importing this package registers ``model_type="microbert"`` with transformers' Auto classes, so SLA
(or relative-position) encoders saved by `MicroBertModel.export_encoder` load with
``AutoModel.from_pretrained`` once ``import models`` has run.  Non-SLA encoders with absolute positions
are exported as plain ``bert`` checkpoints and need no registration.
"""

from transformers import AutoConfig, AutoModel, AutoModelForPreTraining

from .configuration_microbert import MicroBertConfig
from .modeling_microbert import (
    AttentionModifier,
    MicroBertForPretraining,
    MicroBertModel,
    MicroBertPretrainingOutput,
    parse_condition,
)

AutoConfig.register("microbert", MicroBertConfig, exist_ok=True)
AutoModel.register(MicroBertConfig, MicroBertModel, exist_ok=True)
AutoModelForPreTraining.register(MicroBertConfig, MicroBertForPretraining, exist_ok=True)

__all__ = [
    "AttentionModifier",
    "MicroBertConfig",
    "MicroBertForPretraining",
    "MicroBertModel",
    "MicroBertPretrainingOutput",
    "parse_condition",
]
