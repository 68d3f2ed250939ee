"""UD dependency parsing with a fine-tuned encoder: the paper's Table 2 (Gessler & Schneider, §4.1).

    pretrain_microbert / random_init_encoder / HF name ──► finetune_ud_parser ◄── UD train/dev/test
                                                              ▲
                          train_corpus_parser (SLA encoders, sla_parse="parse") ┘

A biaffine parser (`models.biaffine_parser`) on gold tokens, no POS input, trained with the encoder
fine-tuned at a reduced learning rate (the MicroBERT paper; the reference CLI would freeze it),
gradient values clipped at 5, model selection on MST-decoded dev LAS. ``las`` is the paper's metric
(AllenNLP's ``AttachmentScores``): gold PUNCT and SYM excluded, full relation labels, subtypes included
(`steps.evaluate.metrics.attachment_scores`, which also gives ``las_universal``, subtypes stripped). The
official CoNLL 2018 scorer (``udtools.udeval``: punctuation included, subtypes stripped) is run on the
predicted files against the unmodified treebank files, and its figures are kept beside ours.

Unlike the reference, whose "test" file was really the dev set, dev selects and both dev
and test are reported.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
from tango import Step
from tango.common import FromParams

from steps.common.batching import bucketed_batches
from steps.common.data_root import DataPath
from steps.finetune.encoders import (
    SLA_PARSE_MODES, add_syntax_gat, attention_needs_parse, collate_word_features, encode_words_batch, load_encoder, parser_trees, uses_upos,
)
from steps.common.formats import DirectoryFormat, cached_location
from steps.evaluate.metrics import METRIC_DEFINITIONS, attachment_scores, official_scores
from steps.parse.backends import CorpusParser
from steps.data.readers import Sentence, read_conllu, write_predicted_conllu
from steps.common.tracking import NullTracker, WandbSetting, summarize, tracked_run
from steps.common.runtime import compile_module, derived_seed, fused_adamw, resolve_device, torch_threads
from steps.finetune import loop
from steps.finetune.tasks import downstream_task

logger = logging.getLogger(__name__)

# With cuda_graphs, training batches pad their subword and word counts to a multiple of this, so that
# few shapes recur for little padding (docs/decisions.md, "one CUDA graph per batch shape").
GRAPH_LENGTH_MULTIPLE = 8


@dataclass
class ParserTrainingConfig(FromParams):
    """Model size and optimisation of one fine-tuning run; set per scale in the configs.

    Defaults are the cpu scale (one Wolof run in about 4–6 minutes on one thread): a smaller
    BiLSTM, few epochs, lighter dropout, and rates high enough to learn in ~750 steps (Dozat &
    Manning's β2 = 0.9; the encoder at 1e-3, since a cpu-scale µBERT is far from converged). The
    paper's values (the reference's `parser_eval.jsonnet`): ``epochs=300, batches_per_epoch=200, patience=50, lr=1e-3,
    encoder_lr=5e-5, betas=(0.9, 0.999), lstm_hidden=400, lstm_layers=3, dropout=input_dropout=0.3``.
    An "epoch" is ``batches_per_epoch`` batches (AllenNLP's fixed-size epochs), or one pass over
    the training sentences when it is None; dev is parsed after every epoch (and once before).
    """

    epochs: int = 10
    batches_per_epoch: Optional[int] = None
    patience: Optional[int] = None  # epochs without a better dev LAS before stopping; None = never
    batch_size: int = 16
    eval_batch_size: int = 64
    lr: float = 2e-3
    encoder_lr: float = 1e-3
    betas: Tuple[float, float] = (0.9, 0.9)
    weight_decay: float = 0.01
    grad_clip_value: Optional[float] = 5.0  # clip each gradient value, not the norm, as the reference does
    # "constant" as AllenNLP's trainer; "linear" decays both rates to 0 over all epochs.
    lr_schedule: str = "constant"
    lstm_hidden: int = 200
    lstm_layers: int = 2
    arc_dim: int = 100
    label_dim: int = 100
    dropout: float = 0.2  # paper: 0.3
    input_dropout: float = 0.2  # paper: 0.3
    max_length: int = 512  # subwords per sentence, capped by the encoder's position embeddings
    seed: int = 42

    def __post_init__(self):
        self.betas = tuple(self.betas)
        for name in ("epochs", "batch_size", "eval_batch_size", "lstm_hidden", "lstm_layers", "arc_dim", "label_dim", "max_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"parser training config: {name} must be positive, got {getattr(self, name)}")
        if self.batches_per_epoch is not None and self.batches_per_epoch < 1:
            raise ValueError(f"parser training config: batches_per_epoch must be positive or None, got {self.batches_per_epoch}")
        if self.lr_schedule not in ("constant", "linear"):
            raise ValueError(f"parser training config: lr_schedule must be 'constant' or 'linear', got {self.lr_schedule!r}")
        if not 0 <= self.dropout < 1 or not 0 <= self.input_dropout < 1:
            raise ValueError("parser training config: dropout and input_dropout must be in [0, 1)")


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


@dataclass
class Split:
    """One treebank split, encoded once: gold sentences, subword features, target label ids."""

    name: str
    sentences: List[Sentence]
    features: List[Dict[str, Any]]
    label_ids: List[List[int]] = field(default_factory=list)
    source: Optional[DataPath] = None  # the treebank file, for output that keeps its other lines

    def __len__(self) -> int:
        return len(self.sentences)


def make_batch(split: Split, indices: Sequence[int], multiple: int = 1) -> Dict[str, torch.Tensor]:
    """Encoder inputs plus word-level gold heads/labels (padding 0, hidden by ``word_mask``); lengths
    rounded up to ``multiple`` (`collate_word_features`)."""
    batch = collate_word_features([split.features[i] for i in indices], multiple=multiple)
    words = batch["word_mask"].shape[1]
    gold_heads = torch.zeros(len(indices), words, dtype=torch.long)
    gold_labels = torch.zeros(len(indices), words, dtype=torch.long)
    for row, i in enumerate(indices):
        n = len(split.sentences[i]["head"])
        gold_heads[row, :n] = torch.tensor(split.sentences[i]["head"])
        if split.label_ids:
            gold_labels[row, :n] = torch.tensor(split.label_ids[i])
    batch["gold_heads"], batch["gold_labels"] = gold_heads, gold_labels
    return batch


# ---------------------------------------------------------------------------------------------
# Step
# ---------------------------------------------------------------------------------------------


@Step.register("finetune_ud_parser")
@downstream_task("ud_parser")
class FinetuneUdParser(Step):
    """Fine-tune an encoder with a biaffine dependency parser on a UD treebank; select on dev LAS.

    Result: a directory with ``metrics.json`` and ``predicted-{dev,test}.conllu``. The CoNLL-U
    files are the treebank files with HEAD and DEPREL replaced by the parser's (comments,
    multiword-token ranges, empty nodes and the other columns as in gold). ``metrics.json``: per
    split ``las`` (the paper's metric, the primary one), ``las_universal``, ``uas`` (all without
    gold PUNCT/SYM) and ``scored_words``; the official scorer's figures on the same files under
    ``udeval`` (test) and ``udeval_dev``; the gold files' data-root names under ``gold_files``;
    what each figure is under ``metric_definitions``; the dev curve and timings.

    ``encoder``: a ``pretrain_microbert``/``random_init_encoder`` result, an encoder directory or
    an HF name. SLA encoders need ``sla_parse``: ``"parse"`` (the reference's choice: every
    sentence, training ones included, is parsed from its gold tokens by ``corpus_parser``) or
    ``"global"`` (plain global attention). ``num_threads`` and ``device`` are not in the cache key.
    ``syntax_gat``: a dict of ``gat_*`` settings (may be empty) adds syntax-guided attention to the
    encoder for fine-tuning (the "+G" rows, Ahmad et al., 2021; `add_syntax_gat`); it reads the corpus
    parser's trees and UPOS tags, so it needs ``sla_parse="parse"`` and ``corpus_parser``. None
    (the default, out of the cache key) leaves the encoder as it is. ``compile_model``: torch.compile
    keywords for the whole parser (e.g. ``{"mode": "default"}``; dynamic shapes by default), a GPU
    speed lever measured by ``benchmarks/bench_finetune_step.py --compile``; None (the default, out
    of the cache key) runs it eager. ``cuda_graphs``: pad training batches to multiples of
    ``GRAPH_LENGTH_MULTIPLE`` and run each training step as a CUDA graph per batch shape on a GPU
    (`steps.common.cuda_graphs`; eagerly elsewhere), the lever against the launches that bound the
    paper head's step there (``bench_finetune_step.py --variants graphed``); it needs the constant
    learning rate. Keyed only when set: padding changes float rounding.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    # 002: BiLSTM on padded words and fused AdamW (faster; same model and updates).
    # 003: ``las`` (the selection metric too) is the paper's (subtypes kept); predicted CoNLL-U keeps
    # the gold file's comments and multiword tokens; udeval runs against the treebank files.
    VERSION = "003"
    FORMAT = DirectoryFormat()
    SKIP_ID_ARGUMENTS = {"num_threads", "device", "checkpoint_every", "wandb"}
    SELECTION_METRIC = "las"  # dev LAS (the paper's metric) selects the epoch whose weights are kept; reporting.cache reads it too
    # reference_head: AllenNLP's embedder mix (transformer layers only) and its variational dropout
    # (models.biaffine_parser); keyed only when set, so every cell without it keeps its key.
    # compile_model: torch.compile keywords for the parser (`compile_module`), the lever against a GPU
    # step bound by its launches; keyed only when set, as pretraining's compile_encoder is.
    # cuda_graphs: the step as one CUDA graph per batch shape (`steps.common.cuda_graphs`); keyed only when set.
    SKIP_DEFAULT_ARGUMENTS = {"syntax_gat": None, "reference_head": False, "compile_model": None, "cuda_graphs": False}

    def run(  # type: ignore[override]
        self,
        encoder: Union[str, Path],
        train: DataPath,
        dev: DataPath,
        test: DataPath,
        sla_parse: str = "parse",
        corpus_parser: Optional[Path] = None,
        config: ParserTrainingConfig = ParserTrainingConfig(),
        num_threads: Optional[int] = None,
        device: Optional[str] = None,
        checkpoint_every: int = 1,
        syntax_gat: Optional[Dict[str, Any]] = None,
        wandb: WandbSetting = None,
        reference_head: bool = False,
        compile_model: Optional[Dict[str, Any]] = None,
        cuda_graphs: bool = False,
    ) -> Path:
        with torch_threads(num_threads), tracked_run(self, wandb, "ud_parser", {"training": asdict(config)}, config.seed) as tracker:
            return summarize(tracker, self._finetune(str(encoder), train, dev, test, sla_parse, corpus_parser, config, device,
                                                     checkpoint_every, syntax_gat, tracker, reference_head, compile_model,
                                                     cuda_graphs))

    # ------------------------------------------------------------------------------------------

    def _load_splits(self, paths: Dict[str, DataPath], tokenizer, max_length: int, parser: Optional[CorpusParser],
                     with_upos: bool = False):
        splits = {}
        for name, path in paths.items():
            sentences = read_conllu(path.resolve())
            heads = upos = None
            if parser is not None:
                start = time.perf_counter()
                # Syntax-guided attention embeds the parser's UPOS tags, never the gold ones.
                heads, upos = parser_trees(parser, [s["tokens"] for s in sentences], with_upos)
                self.logger.info("parsed %d %s sentences for the encoder's attention in %.1f s", len(sentences), name,
                                 time.perf_counter() - start)
            features = encode_words_batch(tokenizer, [s["tokens"] for s in sentences], max_length, heads, name=str(path.resolve()),
                                          upos=upos)
            splits[name] = Split(name, sentences, features, source=path)
        return splits

    def _finetune(self, source, train, dev, test, sla_parse, corpus_parser, config: ParserTrainingConfig, device,
                  checkpoint_every: int = 1, syntax_gat: Optional[Dict[str, Any]] = None, tracker: NullTracker = NullTracker(),
                  reference_head: bool = False, compile_model: Optional[Dict[str, Any]] = None, cuda_graphs: bool = False) -> Path:
        from models.biaffine_parser import BiaffineDependencyParser

        if cuda_graphs and config.lr_schedule != "constant":
            raise ValueError(f"cuda_graphs records the learning rate with the step; lr_schedule {config.lr_schedule!r} changes it "
                             f"(use 'constant', or leave cuda_graphs off)")
        device = resolve_device(device)
        if sla_parse not in SLA_PARSE_MODES:
            raise ValueError(f"sla_parse must be one of {SLA_PARSE_MODES}, got {sla_parse!r}")
        encoder, tokenizer = load_encoder(source, sla_parse)
        if syntax_gat is not None:
            if sla_parse != "parse":
                raise ValueError("syntax_gat adds attention that reads the corpus parser's trees; it needs sla_parse='parse'")
            torch.manual_seed(derived_seed(config.seed, "syntax-gat-init"))
            encoder = add_syntax_gat(encoder, syntax_gat)
        needs_parse = attention_needs_parse(encoder.config)
        parser = None
        if needs_parse and sla_parse == "parse":
            if corpus_parser is None:
                raise ValueError(
                    f"encoder {source}'s attention needs a parse and sla_parse='parse', but no corpus_parser was given to parse "
                    f"the treebank; pass a train_corpus_parser result or set sla_parse='global'"
                )
            parser = CorpusParser(Path(corpus_parser))
        max_length = min(config.max_length, getattr(encoder.config, "max_position_embeddings", config.max_length))
        splits = self._load_splits({"train": train, "dev": dev, "test": test}, tokenizer, max_length, parser,
                                   with_upos=parser is not None and uses_upos(encoder.config))
        labels = sorted({label for s in splits["train"].sentences for label in s["deprel"]})
        label_index = {label: i for i, label in enumerate(labels)}
        splits["train"].label_ids = [[label_index[label] for label in s["deprel"]] for s in splits["train"].sentences]

        torch.manual_seed(derived_seed(config.seed, "parser-init"))
        model = BiaffineDependencyParser(
            encoder, len(labels), lstm_hidden=config.lstm_hidden, lstm_layers=config.lstm_layers, arc_dim=config.arc_dim,
            label_dim=config.label_dim, dropout=config.dropout, input_dropout=config.input_dropout,
            variational_dropout=reference_head, mix_embedding_layer=not reference_head,
        ).to(device)
        encoder_params = list(model.word_encoder.encoder.parameters())
        encoder_ids = {id(p) for p in encoder_params}
        optimizer = fused_adamw(
            [{"params": encoder_params, "lr": config.encoder_lr},
             {"params": [p for p in model.parameters() if id(p) not in encoder_ids], "lr": config.lr}],
            lr=config.lr, betas=config.betas, weight_decay=config.weight_decay,
        )
        compile_module(model, compile_model)  # in place: parameter names, state_dict and checkpoints stay the eager ones
        torch.manual_seed(derived_seed(config.seed, "parser-dropout"))

        lengths = [len(f["input_ids"]) for f in splits["train"].features]
        batches = loop.BatchStream(
            # A pass's batches are used last-first, as VERSION 002 popped them.
            lambda generator, _: bucketed_batches(lengths, config.batch_size, generator)[::-1],
            torch.Generator().manual_seed(derived_seed(config.seed, "parser-batches")),
            config.batches_per_epoch or -(-len(lengths) // config.batch_size),
        )
        per_epoch = batches.batches_per_epoch
        multiple = GRAPH_LENGTH_MULTIPLE if cuda_graphs else 1
        from transformers import get_constant_schedule, get_linear_schedule_with_warmup

        scheduler = (get_linear_schedule_with_warmup(optimizer, 0, config.epochs * per_epoch) if config.lr_schedule == "linear"
                     else get_constant_schedule(optimizer))
        self.logger.info(
            "fine-tuning a parser on %s: %d train / %d dev / %d test sentences, %d labels, %d epochs of %d batches",
            source, len(splits["train"]), len(splits["dev"]), len(splits["test"]), len(labels), config.epochs, per_epoch,
        )

        def dev_scores(model) -> Dict[str, float]:
            scores = attachment_scores(splits["dev"].sentences, self._predict(model, splits["dev"], labels, config, device))
            return {"las": scores["las"], "uas": scores["uas"]}

        def clip_gradients() -> None:
            if config.grad_clip_value is not None:
                torch.nn.utils.clip_grad_value_(model.parameters(), config.grad_clip_value)

        outcome = loop.train(loop.FinetuneTask(
            name="parser", model=model, optimizer=optimizer, scheduler=scheduler, batches=batches,
            make_batch=lambda indices: loop.to_device(make_batch(splits["train"], indices, multiple), device),
            loss=lambda model, batch: model(**batch).loss, clip_gradients=clip_gradients,
            train_fields=lambda totals: {"step": totals.steps, "train_loss": totals.loss / totals.batches if totals.batches else None},
            epochs=config.epochs, evaluate=dev_scores, metric=self.SELECTION_METRIC, patience=config.patience, evaluate_before_training=True,
            cuda_graphs=cuda_graphs,
        ), self.work_dir, device, checkpoint_every, self.logger, tracker)
        history = outcome.history
        result = self._write_result(model, splits, labels, config, device, {
            "task": "ud_parsing", "primary_metric": "las", "seed": config.seed, "encoder": cached_location(source),
            "encoder_config": {k: getattr(encoder.config, k, None) for k in
                               ("model_type", "syntax_attention", "hidden_size", "num_hidden_layers", "vocab_size")},
            "sla_parse": (sla_parse if needs_parse else "n/a"), "syntax_gat": syntax_gat, "reference_head": reference_head,
            "compile_model": compile_model, "cuda_graphs": outcome.graphs,
            "training": asdict(config), "labels": labels,
            "sentences": {name: len(split) for name, split in splits.items()},
            "parameters": sum(p.numel() for p in model.parameters()),
            "encoder_parameters": sum(p.numel() for p in encoder_params),
            "best_epoch": outcome.best_epoch, "epochs_run": len(history) - 1, "steps": outcome.steps, "history": history,
            "train_seconds": outcome.loop_seconds, "threads": torch.get_num_threads(), "device": str(device),
            "resumed_from": outcome.resumed_from,
        })
        outcome.discard_checkpoint()
        return result

    @torch.no_grad()
    def _predict(self, model, split: Split, labels: List[str], config: ParserTrainingConfig, device) -> List[Sentence]:
        """MST-decoded trees for a split, in its order; tokens and tags are the gold ones (inputs)."""
        was_training = model.training
        model.eval()
        order = sorted(range(len(split)), key=lambda i: len(split.features[i]["input_ids"]))
        predicted: List[Optional[Sentence]] = [None] * len(split)
        for start in range(0, len(order), config.eval_batch_size):
            indices = order[start : start + config.eval_batch_size]
            batch = make_batch(split, indices)
            inputs = loop.to_device({k: v for k, v in batch.items() if k not in ("gold_heads", "gold_labels")}, device)
            heads, label_ids = model.decode(model(**inputs))
            for i, sentence_heads, sentence_labels in zip(indices, heads, label_ids):
                gold = split.sentences[i]
                predicted[i] = {"tokens": gold["tokens"], "upos": gold["upos"], "xpos": gold["xpos"],
                                "head": sentence_heads, "deprel": [labels[j] for j in sentence_labels]}
        model.train(was_training)
        return predicted  # type: ignore[return-value]

    def _write_result(self, model, splits, labels, config, device, metrics: Dict[str, Any]) -> Path:
        out = self.work_dir / "result"
        out.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        metrics["metric_definitions"] = METRIC_DEFINITIONS
        metrics["gold_files"] = {}
        for name in ("dev", "test"):
            predicted = self._predict(model, splits[name], labels, config, device)
            gold_file = splits[name].source.resolve()
            write_predicted_conllu(gold_file, predicted, out / f"predicted-{name}.conllu")
            scores = attachment_scores(splits[name].sentences, predicted)
            scores.pop("upos_accuracy")  # the tags are gold inputs, not predictions
            metrics[name] = scores
            metrics["gold_files"][name] = splits[name].source.path
            metrics["udeval" if name == "test" else f"udeval_{name}"] = official_scores(gold_file, out / f"predicted-{name}.conllu")
        metrics["eval_seconds"] = time.perf_counter() - start
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
        self.logger.info("parser: dev LAS %.2f, test LAS %.2f UAS %.2f (official, punctuation included, subtypes "
                         "stripped: LAS %.2f) after %.0f s; best epoch %d", metrics["dev"]["las"], metrics["test"]["las"],
                         metrics["test"]["uas"], metrics["udeval"]["LAS"], metrics["train_seconds"], metrics["best_epoch"])
        return out


__all__ = ["FinetuneUdParser", "ParserTrainingConfig", "bucketed_batches"]
