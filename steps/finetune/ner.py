"""WikiAnn NER: fine-tune an encoder with a BiLSTM-CRF tagger and report span F1 (paper Table 3).

    pretrain_microbert / random_init_encoder / HF model ──► finetune_ner ◄── wikiann {train,dev,test}.bio
                                                               ▲
                                (SLA encoders, sla_parse="parse") train_corpus_parser

Follows the reference ``configs/ner.jsonnet``: BIOUL tags, AllenNLP-style constrained
CRF tagger (`models.crf_tagger`), batch 16, AdamW 1e-3, gradient *norm* clipped at 5, dev span F1
for model selection with early stopping, test span F1 reported. Deliberate choices:

* the encoder's learning rate is a real setting (``encoder_lr``, default 1e-5 as the paper
  intended); the reference misplaced it, so it probably trained the encoder at 1e-3.
  ``encoder_lr=0`` freezes the encoder.
* span F1 is `seqeval`'s strict BILOU micro average, in percent. On legal BIOUL sequences (all
  this tagger can emit) it counts the same spans as AllenNLP's ``SpanBasedF1Measure``.
* batches hold sentences of similar length (``bucket``, as AllenNLP's bucket sampler): the
  BiLSTM and CRF step through a batch's longest sentence, and Wolof has 1- to 176-word ones;
  on CPU this makes an epoch about 2.5× faster.

One departure from the reference that every committed NER figure shares (docs/decisions.md,
"Fine-tuning regimes"): ``weight_decay`` is 0, where the reference's optimizer (AllenNLP's
``adamw``) decays by 0.01; the paper scale's ``paper_ner_decay`` regime sets the reference's. A syntax-guided encoder's structural-probe term (Ahmad et al., §2.4)
meets the CRF's summed loss as ``probe_weighting`` says (`models.crf_tagger`); the experiment
files give it Ahmad et al.'s balance, ``"per_word"``.

Result directory: ``metrics.json`` (scores, per-type test scores, the per-epoch history, timings)
and ``predicted-{dev,test}.bio`` (``token gold predicted`` per line, blank line between
sentences), so anyone can re-score the predictions.
"""
from __future__ import annotations

import json
import logging
import re
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import torch
from tango import Step
from tango.common import FromParams

from steps.common.batching import bucketed_batches
from steps.common.data_root import DataError, DataPath, iter_lines
from steps.finetune.encoders import (
    add_syntax_gat, attention_needs_parse, collate_word_features, encode_words_batch, load_encoder, parser_trees, uses_upos,
)
from steps.common.formats import DirectoryFormat, cached_location
from steps.common.tracking import NullTracker, WandbSetting, summarize, tracked_run
from steps.common.runtime import derived_seed, fused_adamw, resolve_device, torch_threads
from steps.evaluate.metrics import span_scores
from steps.finetune import loop
from steps.finetune.tasks import downstream_task

logger = logging.getLogger(__name__)

NerSentence = Dict[str, List[str]]  # {"tokens": [...], "tags": [...]} with BIOUL tags
TAG_SHAPE = re.compile(r"^(O|[BILU]-\S+)$")


# ---------------------------------------------------------------------------------------------
# Reading WikiAnn .bio files
# ---------------------------------------------------------------------------------------------


def bio_to_bioul(tags: Sequence[str]) -> List[str]:
    """BIO (IOB2) → BIOUL. Lenient as AllenNLP's reader: an ``I-x`` that does not continue an
    ``x`` span opens one. The last token of every span becomes ``L-``, a one-token span ``U-``."""
    entities = [None if tag == "O" else tag[2:] for tag in tags]
    begins = [e is not None and (tag[0] == "B" or i == 0 or entities[i - 1] != e) for i, (tag, e) in enumerate(zip(tags, entities))]
    prefixes = {(True, True): "U-", (True, False): "B-", (False, True): "L-", (False, False): "I-"}
    out = []
    for i, entity in enumerate(entities):
        if entity is None:
            out.append("O")
            continue
        ends = i + 1 == len(tags) or begins[i + 1] or entities[i + 1] != entity
        out.append(prefixes[(begins[i], ends)] + entity)
    return out


def check_bioul(tags: Sequence[str], lines: Sequence[int], path: Path) -> None:
    """DataError naming the line of the first tag that breaks BIOUL (a CRF constrained to legal
    sequences cannot be trained on it)."""
    open_entity = None  # the entity of the span still open before this tag
    for tag, line in zip(tags, lines):
        prefix, entity = tag[0], tag[2:]
        if prefix in ("I", "L") and open_entity != entity:
            raise DataError(f"{path}:{line}: {tag} does not continue a {entity} span opened with B-{entity}")
        if prefix in ("O", "B", "U") and open_entity is not None:
            raise DataError(f"{path}:{line}: {tag} inside an unfinished {open_entity} span (expected I-/L-{open_entity})")
        open_entity = entity if prefix in ("B", "I") else None
    if open_entity is not None:
        raise DataError(f"{path}:{lines[-1]}: sentence ends inside a {open_entity} span (expected L-{open_entity})")


def read_bio(path: Path) -> List[NerSentence]:
    """Sentences of a WikiAnn file: one token per line, whitespace-separated columns with the
    token first and the tag last (``token O O TAG`` in the split files, ``token None TAG`` or 7
    columns in the full file), a blank line between sentences.

    A file whose tags include ``L-``/``U-`` is BIOUL and must be legal BIOUL; otherwise it is read
    as BIO and converted. Malformed lines, unknown tag shapes and illegal BIOUL raise a DataError
    naming the file and line.
    """
    path = Path(path)
    blocks: List[List[tuple]] = [[]]
    # iter_lines drops a BOM (else it would stick to the first token) and reads CRLF as LF; NFC
    # makes an NFD-saved file read as the clean one.
    for number, line in iter_lines(path, normalize="NFC"):
        columns = line.split()
        if not columns:
            if blocks[-1]:
                blocks.append([])
            continue
        if len(columns) < 2:
            raise DataError(f"{path}:{number}: malformed line (expected `token … TAG`, found {len(columns)} column): {line[:60]!r}")
        if not TAG_SHAPE.match(columns[-1]):
            raise DataError(f"{path}:{number}: unknown tag {columns[-1]!r} (expected O or B-/I-/L-/U- plus a type)")
        blocks[-1].append((columns[0], columns[-1], number))
    blocks = [block for block in blocks if block]
    if not blocks:
        raise DataError(f"{path}: no sentences")
    is_bioul = any(tag[0] in "LU" for block in blocks for _, tag, _ in block)
    sentences = []
    for block in blocks:
        tokens, tags, lines = (list(column) for column in zip(*block))
        if is_bioul:
            check_bioul(tags, lines, path)
        else:
            tags = bio_to_bioul(tags)
        sentences.append({"tokens": tokens, "tags": tags})
    logger.info("%s: %d sentences, %d tokens (%s)", path.name, len(sentences), sum(len(s["tokens"]) for s in sentences),
                "BIOUL" if is_bioul else "BIO converted to BIOUL")
    return sentences


def write_predictions(path: Path, sentences: Sequence[NerSentence], predicted: Sequence[Sequence[str]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for sentence, tags in zip(sentences, predicted):
            for token, gold, guess in zip(sentence["tokens"], sentence["tags"], tags):
                f.write(f"{token} {gold} {guess}\n")
            f.write("\n")


def read_predictions(path: Path):
    """(gold, predicted) tag lists per sentence from a ``predicted-*.bio`` file."""
    gold, predicted = [[]], [[]]
    for _, line in iter_lines(Path(path)):
        columns = line.split()
        if not columns:
            if gold[-1]:
                gold.append([])
                predicted.append([])
            continue
        gold[-1].append(columns[1])
        predicted[-1].append(columns[2])
    return [g for g in gold if g], [p for p in predicted if p]


def label_set(*splits: Sequence[NerSentence]) -> List[str]:
    """O plus all four BIOUL prefixes of every entity type in the data, sorted."""
    entities = sorted({tag[2:] for split in splits for s in split for tag in s["tags"] if tag != "O"})
    return ["O"] + [f"{prefix}-{entity}" for entity in entities for prefix in "BILU"]


# ---------------------------------------------------------------------------------------------
# The step
# ---------------------------------------------------------------------------------------------


@dataclass
class NerConfig(FromParams):
    """Tagger and optimisation of one NER fine-tuning run; the defaults are the paper's
    setting except ``encoder_lr`` (see the module docstring). Scales set them in
    ``configs/scales.libsonnet``."""

    epochs: int = 300
    patience: int = 50  # stop after this many epochs without a better dev F1
    batch_size: int = 16
    lr: float = 1e-3  # BiLSTM, emissions, CRF and scalar mix
    encoder_lr: float = 1e-5  # 0 freezes the encoder
    weight_decay: float = 0.0  # the reference's AllenNLP "adamw" defaults to 0.01 (module docstring)
    grad_norm: float = 5.0
    dropout: float = 0.5
    lstm_hidden: int = 200
    lstm_layers: int = 2
    lstm_dropout: float = 0.5
    max_length: int = 512  # subwords per sentence, [CLS] and [SEP] included
    eval_batch_size: int = 64
    bucket: bool = True  # batches of similar-length sentences, as AllenNLP's bucket sampler
    seed: int = 42

    def __post_init__(self):
        if self.epochs < 1 or self.patience < 1 or self.batch_size < 1 or self.eval_batch_size < 1:
            raise ValueError("epochs, patience, batch_size and eval_batch_size must be positive")
        if self.lr <= 0 or self.encoder_lr < 0:
            raise ValueError("lr must be positive and encoder_lr non-negative")
        if self.lstm_layers < 0 or self.lstm_hidden < 1:
            raise ValueError("lstm_layers must be ≥ 0 and lstm_hidden positive")


def batch_order(lengths: Sequence[int], batch_size: int, generator: Optional[torch.Generator], bucket: bool) -> List[List[int]]:
    """Sentence indices per batch. With a generator (training): a fresh random pass, bucketed by
    length as the parser step does (`bucketed_batches`), or a plain shuffle. Without one
    (evaluation): in length order when bucketing, else in file order."""
    if generator is not None and bucket:
        return bucketed_batches(lengths, batch_size, generator)
    if generator is not None:
        indices = torch.randperm(len(lengths), generator=generator).tolist()
    else:
        indices = sorted(range(len(lengths)), key=lambda i: (lengths[i], i)) if bucket else list(range(len(lengths)))
    return [indices[start : start + batch_size] for start in range(0, len(indices), batch_size)]


def _batches(features: Sequence[Dict[str, Any]], tags: Sequence[List[int]], batches: Sequence[List[int]]):
    for chosen in batches:
        batch = collate_word_features([features[i] for i in chosen])
        gold = torch.zeros_like(batch["word_mask"], dtype=torch.long)
        for row, i in enumerate(chosen):
            gold[row, : len(tags[i])] = torch.tensor(tags[i])
        yield chosen, batch, gold


@Step.register("finetune_ner")
@downstream_task("ner")
class FinetuneNer(Step):
    """Fine-tune ``encoder`` (an encoder source, `steps.finetune.encoders`) on WikiAnn NER and score it.

    ``sla_parse`` matters only for SLA encoders: ``"parse"`` feeds each sentence's tree from
    ``corpus_parser`` (a ``train_corpus_parser`` result), ``"global"`` runs plain attention.
    ``num_threads`` and ``device`` change where and how fast it runs, not the result, so they
    are left out of the cache key. ``syntax_gat`` (a dict of ``gat_*`` settings) adds
    syntax-guided attention on the corpus parser's trees and UPOS tags of the WikiAnn text ("+G"
    rows, Ahmad et al., 2021; needs ``corpus_parser``); None, the default, is out of the cache key.
    ``probe_weighting`` (`models.crf_tagger`) is how such an encoder's structural-probe term meets
    the CRF's summed loss: ``"per_word"`` (Ahmad et al.'s α against a per-word task loss) or
    ``"per_batch"`` (the term added once). An encoder with a probe must name one and one without
    must not, so each computation has one cache key and the NER steps of other encoders keep theirs.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "002"  # 002: BiLSTM on padded words and fused AdamW (faster; same model and updates)
    FORMAT = DirectoryFormat()
    SKIP_ID_ARGUMENTS = {"num_threads", "device", "checkpoint_every", "wandb"}
    SELECTION_METRIC = "dev_f1"  # dev span F1 selects the epoch whose weights are kept; reporting.cache reads it too
    # reference_head: AllenNLP's embedder mix, the transformer layers only (models.word_encoder); keyed only when set.
    SKIP_DEFAULT_ARGUMENTS = {"syntax_gat": None, "reference_head": False, "probe_weighting": None}

    def run(  # type: ignore[override]
        self,
        encoder: Union[str, Path],
        train: DataPath,
        dev: DataPath,
        test: DataPath,
        sla_parse: str = "parse",
        corpus_parser: Optional[Path] = None,
        config: NerConfig = NerConfig(),
        num_threads: Optional[int] = None,
        device: Optional[str] = None,
        checkpoint_every: int = 1,
        syntax_gat: Optional[Dict[str, Any]] = None,
        wandb: WandbSetting = None,
        reference_head: bool = False,
        probe_weighting: Optional[str] = None,
    ) -> Path:
        with torch_threads(num_threads), tracked_run(self, wandb, "ner", {"training": asdict(config)}, config.seed) as tracker:
            return summarize(tracker, self._finetune(encoder, train, dev, test, sla_parse, corpus_parser, config, device,
                                                     checkpoint_every, syntax_gat, tracker, reference_head, probe_weighting))

    def _features(self, tokenizer, splits: Dict[str, List[NerSentence]], max_length: int, parser_dir: Optional[Path],
                  with_upos: bool = False):
        """Subword features per split; with a parser, each sentence's tree (and, for syntax-guided
        attention, the parser's UPOS tags)."""
        features = {}
        for name, sentences in splits.items():
            heads = upos = None
            if parser_dir is not None:
                from steps.parse.backends import CorpusParser

                heads, upos = parser_trees(CorpusParser(Path(parser_dir)), [s["tokens"] for s in sentences], with_upos)
            features[name] = encode_words_batch(tokenizer, [s["tokens"] for s in sentences], max_length, heads, name=name, upos=upos)
        return features

    def _finetune(self, encoder_source, train_path, dev_path, test_path, sla_parse, parser_dir, config: NerConfig, device,
                  checkpoint_every: int = 1, syntax_gat: Optional[Dict[str, Any]] = None, tracker: NullTracker = NullTracker(),
                  reference_head: bool = False, probe_weighting: Optional[str] = None):
        start = time.perf_counter()
        device = resolve_device(device)
        splits = {"train": read_bio(train_path.resolve()), "dev": read_bio(dev_path.resolve()), "test": read_bio(test_path.resolve())}
        labels = label_set(*splits.values())
        index = {label: i for i, label in enumerate(labels)}
        tags = {name: [[index[t] for t in s["tags"]] for s in sentences] for name, sentences in splits.items()}

        encoder, tokenizer = load_encoder(encoder_source, sla_parse)
        if syntax_gat is not None:
            if sla_parse != "parse":
                raise ValueError("syntax_gat adds attention that reads the corpus parser's trees; it needs sla_parse='parse'")
            torch.manual_seed(derived_seed(config.seed, "syntax-gat-init"))
            encoder = add_syntax_gat(encoder, syntax_gat)
        uses_parse = attention_needs_parse(encoder.config) and sla_parse == "parse"
        if uses_parse and parser_dir is None:
            raise ValueError(
                f"encoder {encoder_source}'s attention needs a parse and sla_parse='parse', but no corpus_parser was given; "
                "pass a train_corpus_parser result, or sla_parse='global' for plain attention"
            )
        parse_start = time.perf_counter()
        features = self._features(tokenizer, splits, config.max_length, parser_dir if uses_parse else None,
                                  with_upos=uses_parse and uses_upos(encoder.config))
        parse_seconds = time.perf_counter() - parse_start

        from models.crf_tagger import CrfTagger

        torch.manual_seed(derived_seed(config.seed, "init"))
        model = CrfTagger(encoder, labels, config.lstm_hidden, config.lstm_layers, config.lstm_dropout, config.dropout,
                          mix_embedding_layer=not reference_head, probe_weighting=probe_weighting or "per_batch").to(device)
        has_probe = model.word_encoder.structural_probe is not None
        if has_probe != (probe_weighting is not None):
            raise ValueError(
                f"finetune_ner: encoder {encoder_source} "
                + ("has a structural probe (syntax-guided attention, gat_probe_weight > 0): set probe_weighting to "
                   "'per_word' (Ahmad et al.'s balance against a per-word loss) or 'per_batch'" if has_probe
                   else f"has no structural probe, but probe_weighting={probe_weighting!r} is set")
            )
        encoder_parameters = list(model.word_encoder.encoder.parameters())
        if config.encoder_lr == 0:
            for parameter in encoder_parameters:
                parameter.requires_grad_(False)
        encoder_ids = {id(p) for p in encoder_parameters}
        head_parameters = [p for p in model.parameters() if id(p) not in encoder_ids]
        groups = [{"params": head_parameters, "lr": config.lr}]
        if config.encoder_lr > 0:
            groups.append({"params": encoder_parameters, "lr": config.encoder_lr})
        optimizer = fused_adamw(groups, lr=config.lr, weight_decay=config.weight_decay)
        trainable = [p for group in groups for p in group["params"]]

        run_info = {
            "task": "ner",
            "primary_metric": "f1",
            "seed": config.seed,
            "encoder": cached_location(encoder_source),
            "sla_parse": sla_parse if attention_needs_parse(encoder.config) else None,
            "syntax_gat": syntax_gat,
            "reference_head": reference_head,
            "probe_weighting": probe_weighting,
            "labels": labels,
            "training": asdict(config),
            "sentences": {name: len(s) for name, s in splits.items()},
            "parameters": sum(p.numel() for p in model.parameters()),
            "encoder_parameters": sum(p.numel() for p in encoder_parameters),
            "device": str(device),
            "threads": torch.get_num_threads(),
        }
        self.logger.info(
            "NER on %s: %d labels, %d/%d/%d sentences, %d parameters (%d in the encoder)", encoder_source, len(labels),
            *run_info["sentences"].values(), run_info["parameters"], run_info["encoder_parameters"],
        )

        torch.manual_seed(derived_seed(config.seed, "dropout"))
        lengths = [len(t) for t in tags["train"]]
        batches = loop.BatchStream(
            # One pass per epoch, its order drawn afresh from the seed of (seed, "epoch", epoch).
            lambda generator, number: batch_order(
                lengths, config.batch_size, generator.manual_seed(derived_seed(config.seed, "epoch", number + 1)), config.bucket
            ),
            torch.Generator(), -(-len(features["train"]) // config.batch_size),
        )

        def make_batch(indices: List[int]) -> Dict[str, torch.Tensor]:
            _, batch, gold = next(_batches(features["train"], tags["train"], [indices]))
            return loop.to_device({**batch, "tags": gold}, device)

        def dev_scores(model) -> Dict[str, Any]:
            scores, _ = self._evaluate(model, splits["dev"], features["dev"], tags["dev"], config, device)
            return {f"dev_{k}": v for k, v in scores.items()}

        outcome = loop.train(loop.FinetuneTask(
            name="NER", model=model, optimizer=optimizer, scheduler=None, batches=batches, make_batch=make_batch,
            loss=lambda model, batch: model(**batch)["loss"],
            clip_gradients=lambda: torch.nn.utils.clip_grad_norm_(trainable, config.grad_norm),
            train_fields=lambda totals: {"train_loss_per_word": totals.loss / max(totals.count, 1)},
            epochs=config.epochs, evaluate=dev_scores, metric=self.SELECTION_METRIC, patience=config.patience,
            count=lambda batch: batch["word_mask"].sum(),
        ), self.work_dir, device, checkpoint_every, self.logger, tracker)
        history, best_epoch = outcome.history, outcome.best_epoch or 0

        result = self.work_dir / "result"
        shutil.rmtree(result, ignore_errors=True)
        result.mkdir(parents=True)
        scores = {}
        for name in ("dev", "test"):
            scores[name], predicted = self._evaluate(model, splits[name], features[name], tags[name], config, device, per_type=name == "test")
            write_predictions(result / f"predicted-{name}.bio", splits[name], predicted)
        metrics = dict(
            run_info, dev=scores["dev"], test=scores["test"], best_epoch=best_epoch, epochs_run=len(history), history=history,
            train_seconds=outcome.train_seconds, parse_seconds=parse_seconds, wall_seconds=time.perf_counter() - start,
            resumed_from=outcome.resumed_from,
        )
        (result / "metrics.json").write_text(json.dumps(metrics, indent=2))
        self.logger.info(
            "NER: test F1 %.2f (P %.2f R %.2f), dev F1 %.2f at epoch %d; %.0f s training",
            scores["test"]["f1"], scores["test"]["precision"], scores["test"]["recall"], scores["dev"]["f1"], best_epoch, outcome.train_seconds,
        )
        outcome.discard_checkpoint()
        return result

    @torch.no_grad()
    def _evaluate(self, model, sentences, features, tags, config: NerConfig, device, per_type: bool = False):
        """(span scores + loss per word, predicted tag lists) with dropout off."""
        model.eval()
        predicted: List[Optional[List[str]]] = [None] * len(sentences)
        loss_sum, words = 0.0, 0
        batches = batch_order([len(t) for t in tags], config.eval_batch_size, None, config.bucket)
        for chosen, batch, gold in _batches(features, tags, batches):
            batch = {k: v.to(device) for k, v in batch.items()}
            output = model(tags=gold.to(device), **batch)
            loss_sum += float(output["loss"])
            words += int(batch["word_mask"].sum())
            for i, path in zip(chosen, model.decode(output["emissions"], batch["word_mask"])):
                predicted[i] = path
        scores = span_scores([s["tags"] for s in sentences], predicted, per_type=per_type)
        scores["loss_per_word"] = loss_sum / max(words, 1)
        return scores, predicted


__all__ = ["FinetuneNer", "NerConfig", "bio_to_bioul", "check_bioul", "label_set", "read_bio", "read_predictions",
           "write_predictions"]
