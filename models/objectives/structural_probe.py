"""S: the structural-probe loss of syntax-augmented mBERT (Ahmad et al., 2021, §2.4), α (L_dist + L_depth).

Rank-r distance and depth probes on the GAT output G of syntax-guided attention (attention variant
``"syntax_gat"``, condition suffix ``-G``), fitted to the tree distances and depths of the syntax_gat
tree ([CLS] as root).  So a condition with S must use -G: "MS-G" is the seed's method as a
pretraining condition, "M-G" the GAT without the probe (α = 0).  α is ``config.gat_probe_weight``.
Like P and T it is a training-time structure loss: validation reports it but leaves it out of the
dev ``loss`` (as the reference's validation metric leaves out P and T).
"""

from __future__ import annotations

from torch import nn

from ..attention.syntax_gat import build_structural_probe, structural_probe_loss
from .base import PER_BATCH, ObjectiveInputs, ObjectiveLoss, PretrainingObjective, register_objective


@register_objective
class StructuralProbeLoss(PretrainingObjective):
    letter = "S"
    name = "structural_probe"
    batch_fields = ("heads",)
    needs_parse = True
    training_only = True
    dev_average = PER_BATCH

    def __init__(self, config):
        super().__init__(config)
        if getattr(config, "syntax_attention", None) != "syntax_gat":
            raise ValueError("the S objective probes the GAT of syntax-guided attention: use it with the -G suffix (e.g. 'MS-G')")

    def build_head(self) -> nn.Module:
        return build_structural_probe(self.config)

    def loss(self, head: nn.Module, inputs: ObjectiveInputs) -> ObjectiveLoss:
        side_outputs = inputs.encoded.attention_outputs or {}
        return ObjectiveLoss(structural_probe_loss(head, side_outputs, inputs.batch["attention_mask"], self.config.gat_probe_weight))
