"""Keep cache keys across the move of classes between modules.

Tango's unique ID hashes the module path of a step's format class, of every config object or
`CustomDetHash` argument, and of every upstream step (`tango.common.det_hash._DetHashPickler.
persistent_id`). Grouping the steps into stage packages would otherwise have re-keyed every cached
result, so the classes that existed before that move keep their historic module name, listed here
once. `sys.modules` answers to that name too, so a pickle that names it still loads. Classes added
after the move need no entry.
"""
from __future__ import annotations

import sys
from typing import Dict, Iterable

# Class name → the module it lived in when workspaces were first keyed.
HISTORIC_MODULES: Dict[str, str] = {
    "DirectoryFormat": "steps.formats",
    "DataPath": "steps.data_root",
    "LoadCorpus": "steps.data_steps",
    "TrainCorpusParser": "steps.data_steps",
    "ParseCorpus": "steps.data_steps",
    "TrainTokenizer": "steps.data_steps",
    "BuildPretrainingData": "steps.data_steps",
    "BuildMlmPretrainingData": "steps.data_steps",
    "TrainWordVectors": "steps.word_vectors",
    "ParserBudget": "steps.parsing",
    "RandomInitEncoder": "steps.encoders",
    "PretrainMicrobert": "steps.pretrain",
    "PretrainingConfig": "steps.pretrain",
    "FinetuneUdParser": "steps.finetune_parser",
    "ParserTrainingConfig": "steps.finetune_parser",
    "FinetuneNer": "steps.finetune_ner",
    "NerConfig": "steps.finetune_ner",
    "FinetunePronto": "steps.pronto",
    "PrOntoConfig": "steps.pronto",
    "PrOntoTexts": "steps.pronto",
    "ScoreCell": "steps.scoring",
    "AggregateCell": "steps.scoring",
}


def keep_historic_modules(classes: Iterable[type]) -> None:
    """Give each listed class its historic ``__module__`` (for hashing and pickling)."""
    for cls in classes:
        historic = HISTORIC_MODULES.get(cls.__name__)
        if historic is None or cls.__module__ == historic:
            continue
        module = sys.modules.setdefault(historic, sys.modules[cls.__module__])
        if not hasattr(module, cls.__name__):
            setattr(module, cls.__name__, cls)
        cls.__module__ = historic


__all__ = ["HISTORIC_MODULES", "keep_historic_modules"]
