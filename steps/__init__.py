"""Tango steps of the syntactic-inductive-bias workspace, one package per DAG stage (registered on import).

    data/      load_corpus, train_word_vectors, train_tokenizer, build_(mlm_)pretraining_data, build_trigram_model,
               precompute_soft_labels
    parse/     train_corpus_parser, parse_corpus (Stanza or UDPipe behind one CorpusParser)
    pretrain/  pretrain_microbert, random_init_encoder
    finetune/  finetune_ud_parser, finetune_ner, finetune_pronto (and pronto_texts); encoder loading; the
               downstream-task registry
    evaluate/  score_cell, aggregate_cell, mlm_accuracy; the metrics (LAS, CoNLL 2018 scorer, span F1)
    tg/        load_treebank_trees, build_tg_actions, train_tg_lm, evaluate_tg_lm (Transformer Grammars),
               build_agreement_pairs, evaluate_tg_agreement (the EWT subject–verb agreement probe)
    common/    what every stage uses: data root, formats, seeds and threads, batching
"""
from steps.common import compat  # noqa: F401  (patches Tango before any step runs)
from steps.common.data_root import DataError, DataPath
from steps.common.formats import DirectoryFormat
from steps.data.corpus import LoadCorpus
from steps.data.inputs import BuildMlmPretrainingData, BuildPretrainingData
from steps.data.ngram import BuildTrigramModel
from steps.data.vocab import TrainTokenizer
from steps.data.word_vectors import TrainWordVectors
from steps.parse.corpus_parser import ParseCorpus, TrainCorpusParser
from steps.pretrain.encoders import RandomInitEncoder
from steps.evaluate.mlm_accuracy import MlmAccuracy
from steps.pretrain.pretrain import PretrainingConfig, PretrainMicrobert
from steps.finetune.pronto import FinetunePronto, PrOntoConfig, PrOntoTexts
from steps.finetune.ud_parser import FinetuneUdParser, ParserTrainingConfig
from steps.finetune.ner import FinetuneNer, NerConfig
from steps.evaluate.scoring import AggregateCell, ScoreCell
from steps.tg.actions import BuildTgActions, LoadTreebankTrees
from steps.tg.language_model import EvaluateTgLanguageModel, TrainTgLanguageModel
from steps.tg.agreement import BuildAgreementPairs, EvaluateTgAgreement
from steps.parse.backends import ParserBudget
from steps.common.cache_keys import HISTORIC_MODULES, keep_historic_modules

keep_historic_modules(globals()[name] for name in HISTORIC_MODULES)
