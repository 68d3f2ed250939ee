"""Tango steps for the syntactic-inductive-bias workspace (registered on import)."""
from . import _compat  # noqa: F401  (patches Tango before any step runs)
from .data_root import DataError, DataPath
from .data_steps import BuildPretrainingData, LoadCorpus, ParseCorpus, TrainCorpusParser, TrainTokenizer
from .encoders import RandomInitEncoder
from .formats import DirectoryFormat
from .scoring import AggregateCell, ScoreCell
from .word_vectors import TrainWordVectors
from .pretrain import PretrainingConfig, PretrainMicrobert
from .pronto import FinetunePronto, PrOntoConfig
from .finetune_parser import FinetuneUdParser, ParserTrainingConfig
from .finetune_ner import FinetuneNer, NerConfig
