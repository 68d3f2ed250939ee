"""What `MicroBertForPretraining` would build from a batch's parse, built before the model instead.

From ``heads`` alone, a forward builds the batch's `TreeStructure`, the attention variant's mask
(SLA) and each structure objective's random samples (P, T).  That is a few hundred small tensor ops
and several reads back to the host per step (at paper scale µB-MXPT-SLA ran 2.9× µB-M on a GPU, where each
costs a kernel launch or a sync, against 1.2× on CPU).  `ParseInputs` does the same work on the host,
in the loader worker that collates the batch, and adds the results as batch fields the model
accepts (``sla_mask``, ``phrase_samples``, ``tree_samples``); the step then runs only the encoder
and the losses.

The draws are the model's: a CPU generator seeded with the micro-batch's sampling seed, used by the
objectives in registry order, as `MicroBertForPretraining.forward` does with its own generator
after `set_sampling_seed`.  So on a CPU the prepared batch gives bit-for-bit the losses and gradients
of the in-model path (tested), and pretraining results, cache keys and resumes do not change.
"""

from __future__ import annotations

from typing import Any

import torch

from .attention import attention_variant
from .objectives import objectives_for
from .trees import TreeStructure


class ParseInputs:
    """``ParseInputs(config)(batch, sampling_seed)`` → the batch plus what its parse gives the model.

    Holds only the config and objective instances (no parameters), so a forked loader worker can
    call it while the model lives on a GPU.  Training-mode fields only: validation keeps drawing
    in-model, from one generator over all dev batches.
    """

    def __init__(self, config):
        self.config = config
        self.samplers = [objective(config) for objective in objectives_for(config.pretraining_objectives)
                         if objective.sample_field is not None]
        variant = attention_variant(config)
        self.prepare_attention = variant.prepare if variant is not None else None

    def __bool__(self) -> bool:
        """Whether this condition has anything to prepare (µB-M and MX have not)."""
        return bool(self.samplers) or self.prepare_attention is not None

    def __call__(self, batch: dict[str, Any], sampling_seed: int) -> dict[str, Any]:
        heads = batch.get("heads")
        if not self or heads is None:
            return batch
        structure = TreeStructure.from_heads(heads)
        prepared = dict(batch)
        if self.prepare_attention is not None:
            prepared.update(self.prepare_attention(structure, self.config))
        generator = torch.Generator().manual_seed(sampling_seed)
        for objective in self.samplers:  # registry order: the order the model's forward draws in
            prepared[objective.sample_field] = objective.sample(heads, structure, generator)
        return prepared
