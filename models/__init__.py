"""MicroBERT models for the syntactic-inductive-bias experiments.

Importing this package registers ``model_type="microbert"`` with transformers' Auto classes, so
encoders with an attention variant (SLA) or relative positions, saved by
`MicroBertModel.export_encoder`, load with ``AutoModel.from_pretrained`` once ``import models`` has
run.  Plain-attention encoders with absolute positions are exported as plain ``bert`` checkpoints and
need no registration.  It also fills the two registries: attention variants (`models.attention`) and
pretraining objectives (`models.objectives`); `models.conditions` parses a condition name into them.
"""

from transformers import AutoConfig, AutoModel, AutoModelForPreTraining

from .attention import AttentionModifier, attention_needs_parse, register_attention
from .conditions import Condition, parse_condition
from .configuration_microbert import MicroBertConfig
from .modeling_microbert import MicroBertForPretraining, MicroBertModel, MicroBertPretrainingOutput
from .objectives import register_objective

AutoConfig.register("microbert", MicroBertConfig, exist_ok=True)
AutoModel.register(MicroBertConfig, MicroBertModel, exist_ok=True)
AutoModelForPreTraining.register(MicroBertConfig, MicroBertForPretraining, exist_ok=True)

__all__ = [
    "AttentionModifier",
    "Condition",
    "MicroBertConfig",
    "MicroBertForPretraining",
    "MicroBertModel",
    "MicroBertPretrainingOutput",
    "attention_needs_parse",
    "parse_condition",
    "register_attention",
    "register_objective",
]
