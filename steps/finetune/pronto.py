"""PrOnto sequence classification (paper Tables 4, 7–9; the reference's `sequence_classifier.py`).

    encoder source ──► finetune_pronto(task, train?, dev, test) ──► metrics.json, predicted-test.tsv

Five Bible-verse tasks, each a TSV without header. The single-sentence tasks classify one verse;
the two pair tasks classify a pair of verses that share a PropBank roleset, and the roleset (the
"key") is given to the model as one **new** vocabulary item appended after the final [SEP], as the
reference does (tokenizer ``add_tokens`` + ``resize_token_embeddings``).

The model is ``AutoModelForSequenceClassification`` on the encoder (tanh pooler over [CLS] →
dropout → linear; the pooler is freshly initialised for µBERT checkpoints, which have none). The
training loop reproduces what the reference's HF ``Trainer`` does with its defaults — AdamW
(no decay on biases and LayerNorm weights), linear decay to zero without warmup, gradient-norm
clipping at 1.0, evaluation on dev after every epoch, and the model with the lowest dev loss kept
for the test predictions — without pulling in ``accelerate``.

When the data has no train file for a task (the public Spanish sample lacks it for both pair
tasks), ``without_train`` decides, and the result says which happened: ``"dev"`` trains on the dev
file for the configured epochs and keeps the last epoch (no model selection is possible; the
reported dev figures are then training-set figures, ``"trained_on": "dev"``), ``"error"`` refuses.
"""
from __future__ import annotations

import json
import logging
import math
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
from tango import Step
from tango.common import FromParams

from steps.common.data_root import DataError, DataPath, iter_lines
from steps.finetune.encoders import load_encoder_tokenizer, resolve_encoder_dir
from steps.common.formats import DirectoryFormat, cached_location
from steps.common.tracking import NullTracker, WandbSetting, summarize, tracked_run
from steps.common.runtime import resolve_device, torch_threads
from steps.finetune import loop
from steps.finetune.tasks import downstream_task

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PrOntoTask:
    """Where a task's fields sit in its TSV rows and which labels it may have.

    ``clip_label_at``: integer labels above this value become this value (nonpronominal_mention
    counts mentions, and the reference folds 3 and more into one class). ``labels`` lists the values
    a row may carry; the label *space* of a run is the sorted union of those actually present."""

    name: str
    text_column: int
    label_column: int
    columns: int
    labels: Optional[Tuple[str, ...]] = None  # None: any non-negative integer (clipped)
    clip_label_at: Optional[int] = None
    second_text_column: Optional[int] = None
    key_column: Optional[int] = None
    epochs: int = 10

    @property
    def is_pair(self) -> bool:
        return self.second_text_column is not None

    def parse_label(self, raw: str) -> Union[int, str]:
        """The label value of a raw field, or ValueError with a message for the reader."""
        if self.clip_label_at is not None:
            if not raw.isdigit():
                raise ValueError(f"label {raw!r} is not a non-negative integer")
            return min(int(raw), self.clip_label_at)
        if raw not in self.labels:
            raise ValueError(f"unknown label {raw!r} (known: {', '.join(self.labels)})")
        return int(raw) if raw.isdigit() else raw


_PAIR = dict(columns=4, key_column=0, text_column=1, second_text_column=2, label_column=3, labels=("different", "same"))
TASKS: Dict[str, PrOntoTask] = {
    task.name: task
    for task in [
        PrOntoTask("nonpronominal_mention", text_column=0, label_column=1, columns=2, clip_label_at=3),
        PrOntoTask("proper_noun_subject", text_column=0, label_column=1, columns=2, labels=("0", "1")),
        PrOntoTask("sentence_mood", text_column=0, label_column=1, columns=2,
                   labels=("declarative", "imperative", "interrogative"), epochs=20),
        PrOntoTask("same_sense", **_PAIR),
        PrOntoTask("same_arg_count", **_PAIR),
    ]
}
WITHOUT_TRAIN_MODES = ("dev", "error")


def get_task(name: str) -> PrOntoTask:
    if name not in TASKS:
        raise ValueError(f"unknown PrOnto task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]


@dataclass
class PrOntoRow:
    text: str
    label: Union[int, str]
    text2: Optional[str] = None
    key: Optional[str] = None


def read_pronto_tsv(path: Path, task: PrOntoTask) -> List[PrOntoRow]:
    """Rows of one split. Blank lines are skipped; anything else must have exactly the task's
    columns, non-empty texts and a known label, or a one-line DataError names ``file:line``."""
    rows = []
    for number, line in iter_lines(path):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        where = f"{path}:{number}"
        if len(fields) != task.columns:
            raise DataError(f"{where}: {len(fields)} tab-separated columns, {task.name} rows have {task.columns}")
        try:
            label = task.parse_label(fields[task.label_column].strip())
        except ValueError as e:
            raise DataError(f"{where}: {e} for task {task.name}") from None
        texts = [task.text_column] + ([task.second_text_column] if task.is_pair else [])
        for column in texts:
            if not fields[column].strip():
                raise DataError(f"{where}: empty text in column {column + 1}")
        row = PrOntoRow(text=fields[task.text_column], label=label)
        if task.is_pair:
            row.text2 = fields[task.second_text_column]
            row.key = fields[task.key_column].strip()
            if not row.key:
                raise DataError(f"{where}: empty key in column {task.key_column + 1}")
        rows.append(row)
    if not rows:
        raise DataError(f"{path}: no rows")
    return rows


def label_space(splits: Sequence[Sequence[PrOntoRow]]) -> List[Union[int, str]]:
    """Sorted union of the labels over every split present (as the reference builds it)."""
    return sorted({row.label for rows in splits for row in rows})


def add_key_tokens(tokenizer, keys: Sequence[str]) -> Dict[str, int]:
    """Add each key (a PropBank roleset such as ``give.01``) as one new token; {key: id}. A key
    that is already a vocabulary item would silently share an ordinary word's embedding, so it is
    an error rather than a reuse."""
    keys = sorted(set(keys))
    clashes = [key for key in keys if key in tokenizer.get_vocab()]
    if clashes:
        raise DataError(f"pair-task key(s) {clashes[:5]} are already vocabulary items, so they cannot become new tokens")
    tokenizer.add_tokens(keys)
    ids = {key: tokenizer.convert_tokens_to_ids(key) for key in keys}
    assert len(set(ids.values())) == len(keys), "every key must get its own token id"
    return ids


def encode_rows(tokenizer, rows: Sequence[PrOntoRow], max_length: int, key_ids: Optional[Dict[str, int]] = None):
    """Token features per row: [CLS] text [SEP] (text2 [SEP] key) with token_type_ids. Pairs are truncated (longest first) to leave room for the key, so the
    key always follows the final [SEP]. Returns (features, number of rows truncated)."""
    reserve = 1 if key_ids is not None else 0
    texts = [row.text for row in rows]
    seconds = [row.text2 for row in rows] if rows and rows[0].text2 is not None else None
    untruncated = tokenizer(texts, seconds)["input_ids"]
    # Segment ids are asked for explicitly: a saved PreTrainedTokenizerFast leaves them out by
    # default, and BERT would then see both verses of a pair as segment 0.
    encoded = tokenizer(texts, seconds, truncation=True, max_length=max_length - reserve, return_token_type_ids=True)
    features = []
    for i, row in enumerate(rows):
        feature = {name: list(encoded[name][i]) for name in ("input_ids", "token_type_ids", "attention_mask")}
        if key_ids is not None:
            feature["input_ids"].append(key_ids[row.key])
            feature["attention_mask"].append(1)
            # The key joins the segment of the final [SEP] (1 for BERT pairs; 0 where a model has one type).
            feature["token_type_ids"].append(feature["token_type_ids"][-1])
        features.append(feature)
    truncated = sum(len(full) > max_length - reserve for full in untruncated)
    return features, truncated


def collate(features: Sequence[Dict[str, List[int]]], labels: Sequence[int], pad_id: int) -> Dict[str, torch.Tensor]:
    length = max(len(f["input_ids"]) for f in features)
    batch = {}
    for name in features[0]:
        fill = pad_id if name == "input_ids" else 0
        batch[name] = torch.tensor([f[name] + [fill] * (length - len(f[name])) for f in features], dtype=torch.long)
    batch["labels"] = torch.tensor(labels, dtype=torch.long)
    return batch


def evenly_spaced_indices(total: int, limit: Optional[int]) -> List[int]:
    if limit is None or total <= limit:
        return list(range(total))
    return [(i * total) // limit for i in range(limit)]


@dataclass
class PrOntoConfig(FromParams):
    """Fine-tuning settings. Defaults are the reference's (HF ``Trainer`` with lr 2e-5, batch 16,
    weight decay 0.01, max length 512); ``epochs=None`` takes the task's own (10, sentence_mood 20).

    :param max_train_rows: train on an evenly spaced subset of this many rows (a CPU-scale cut;
        recorded in the metrics). Dev and test are always used whole.
    :param without_train: what to do when a task has no train file: ``"dev"`` or ``"error"``
        (see the module docstring).
    """

    lr: float = 2e-5
    batch_size: int = 16
    eval_batch_size: int = 64
    weight_decay: float = 0.01
    epochs: Optional[int] = None
    max_length: int = 512
    max_grad_norm: float = 1.0
    warmup_ratio: float = 0.0
    seed: int = 42
    max_train_rows: Optional[int] = None
    without_train: str = "dev"

    def __post_init__(self):
        if self.without_train not in WITHOUT_TRAIN_MODES:
            raise ValueError(f"without_train must be one of {WITHOUT_TRAIN_MODES}, got {self.without_train!r}")
        if self.batch_size < 1 or self.eval_batch_size < 1 or (self.epochs is not None and self.epochs < 1):
            raise ValueError("batch sizes and epochs must be positive")
        if self.max_length < 8:
            raise ValueError(f"max_length {self.max_length} is too short for [CLS] text [SEP] (text [SEP] key)")


def load_classifier(encoder: Union[str, Path], num_labels: int, labels: Sequence[Union[int, str]]):
    """(AutoModelForSequenceClassification, tokenizer) for an encoder source."""
    import models  # noqa: F401  (registers model_type "microbert" before any config is read)
    from transformers import AutoConfig, AutoModelForSequenceClassification

    directory = resolve_encoder_dir(encoder)
    config = AutoConfig.from_pretrained(directory)
    if config.model_type == "microbert":
        # SLA / relative-position µBERTs have no sequence-classification head class (and SLA would
        # need a parse of every verse); the paper ran PrOnto only for the non-SLA models.
        raise ValueError(f"{directory}: PrOnto fine-tuning needs a stock-BERT-compatible encoder, not model_type 'microbert' (SLA or relative positions)")
    names = [str(label) for label in labels]
    model = AutoModelForSequenceClassification.from_pretrained(
        directory, num_labels=num_labels, id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)},
    )
    return model, load_encoder_tokenizer(directory)


def _optimizer(model, config: PrOntoConfig) -> torch.optim.Optimizer:
    # As HF Trainer: biases and LayerNorm weights are not decayed.
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name else decay).append(parameter)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.999), eps=1e-8)


@torch.no_grad()
def evaluate(model, features, labels, config: PrOntoConfig, pad_id: int, device) -> Tuple[float, float, List[int]]:
    """(mean loss, accuracy in percent, predicted label ids) with dropout off. Batches are formed from rows of
    similar length to save padding; predictions come back in the input order."""
    was_training = model.training
    model.eval()
    order = sorted(range(len(features)), key=lambda i: len(features[i]["input_ids"]))
    predictions = [0] * len(features)
    total_loss = 0.0
    for start in range(0, len(order), config.eval_batch_size):
        chunk = order[start : start + config.eval_batch_size]
        batch = collate([features[i] for i in chunk], [labels[i] for i in chunk], pad_id)
        output = model(**{k: v.to(device) for k, v in batch.items()})
        total_loss += float(output.loss) * len(chunk)
        for i, predicted in zip(chunk, output.logits.argmax(-1).tolist()):
            predictions[i] = predicted
    model.train(was_training)
    correct = sum(p == g for p, g in zip(predictions, labels))
    return total_loss / len(features), 100.0 * correct / len(features), predictions


@Step.register("finetune_pronto")
@downstream_task("pronto")
class FinetunePronto(Step):
    """Fine-tune an encoder on one PrOnto task and score test accuracy (paper §5, "PrOnto").

    Result directory:

    * ``metrics.json``: task, labels, dev (accuracy, loss of the kept model), test (accuracy, loss),
      the majority-class baseline (the most frequent *training* label, scored on test), what it was
      trained on, the kept epoch, the per-epoch history and timings;
    * ``predicted-test.tsv``: ``gold<TAB>predicted`` label per test row, in file order.

    ``num_threads`` and ``device`` say where it runs, not what it computes: not in the cache key.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "002"  # 002: accuracies in percent, like every other fine-tuning step
    FORMAT = DirectoryFormat()
    SKIP_ID_ARGUMENTS = {"num_threads", "device", "checkpoint_every", "wandb"}
    SELECTION_METRIC = "dev_loss"  # dev loss (lowest) selects the epoch whose weights are kept; reporting.cache reads it too

    def run(  # type: ignore[override]
        self,
        encoder: Union[str, Path],
        task: str,
        dev: DataPath,
        test: DataPath,
        train: Optional[DataPath] = None,
        config: PrOntoConfig = PrOntoConfig(),
        num_threads: Optional[int] = None,
        device: Optional[str] = None,
        checkpoint_every: int = 1,
        wandb: WandbSetting = None,
    ) -> Path:
        with torch_threads(num_threads), tracked_run(self, wandb, f"pronto_{task}", {"training": asdict(config)}, config.seed) as tracker:
            return summarize(tracker, self._finetune(encoder, get_task(task), train, dev, test, config, device,
                                                     checkpoint_every, tracker))

    def _finetune(self, encoder, task: PrOntoTask, train_path, dev_path, test_path, config: PrOntoConfig, device,
                  checkpoint_every: int = 1, tracker: NullTracker = NullTracker()) -> Path:
        device = resolve_device(device)
        splits = {"dev": read_pronto_tsv(dev_path.resolve(), task), "test": read_pronto_tsv(test_path.resolve(), task)}
        if train_path is not None:
            splits["train"] = read_pronto_tsv(train_path.resolve(), task)
        elif config.without_train == "error":
            raise DataError(f"task {task.name}: no train file given (set without_train: \"dev\" to train on dev)")
        else:
            self.logger.warning("task %s has no train file: training on dev for %s epochs, keeping the last (no model selection)",
                                task.name, config.epochs or task.epochs)
        trained_on = "train" if "train" in splits else "dev"
        labels = label_space(list(splits.values()))
        label_ids = {label: i for i, label in enumerate(labels)}
        gold = {name: [label_ids[row.label] for row in rows] for name, rows in splits.items()}

        torch.manual_seed(config.seed)  # the classifier head (and pooler) initialisation
        model, tokenizer = load_classifier(encoder, len(labels), labels)
        key_ids = None
        if task.is_pair:
            key_ids = add_key_tokens(tokenizer, [row.key for rows in splits.values() for row in rows])
            model.resize_token_embeddings(len(tokenizer))
        model.to(device)
        limit = getattr(model.config, "max_position_embeddings", config.max_length)
        max_length = min(config.max_length, limit)
        features, truncated = {}, {}
        for name, rows in splits.items():
            features[name], truncated[name] = encode_rows(tokenizer, rows, max_length, key_ids)
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

        train_indices = evenly_spaced_indices(len(splits[trained_on]), config.max_train_rows)
        train_features = [features[trained_on][i] for i in train_indices]
        train_labels = [gold[trained_on][i] for i in train_indices]
        epochs = config.epochs or task.epochs
        batches_per_epoch = math.ceil(len(train_features) / config.batch_size)
        total_steps = epochs * batches_per_epoch
        optimizer = _optimizer(model, config)
        from transformers import get_linear_schedule_with_warmup

        scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total_steps), total_steps)
        self.logger.info(
            "PrOnto %s: %d labels %s, %d %s rows × %d epochs (%d steps), dev %d, test %d, max length %d",
            task.name, len(labels), labels, len(train_features), trained_on, epochs, total_steps,
            len(splits["dev"]), len(splits["test"]), max_length,
        )

        def shuffled_pass(generator: torch.Generator, _) -> List[List[int]]:
            permutation = torch.randperm(len(train_features), generator=generator).tolist()
            return [permutation[i : i + config.batch_size] for i in range(0, len(permutation), config.batch_size)]

        def make_batch(indices: List[int]) -> Dict[str, torch.Tensor]:
            batch = collate([train_features[i] for i in indices], [train_labels[i] for i in indices], pad_id)
            return loop.to_device(batch, device)

        def dev_scores(model) -> Dict[str, float]:
            loss, accuracy, _ = evaluate(model, features["dev"], gold["dev"], config, pad_id, device)
            return {"dev_loss": loss, "dev_accuracy": accuracy}

        def clip_gradients() -> None:
            if config.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)

        # Selection by dev loss needs dev to be held out. Trained on dev, the last epoch is kept and
        # dev is scored once at the end (per-epoch scores on training data would only cost time).
        outcome = loop.train(loop.FinetuneTask(
            name=task.name, model=model, optimizer=optimizer, scheduler=scheduler,
            batches=loop.BatchStream(shuffled_pass, torch.Generator().manual_seed(config.seed), batches_per_epoch),
            make_batch=make_batch, loss=lambda model, batch: model(**batch).loss, clip_gradients=clip_gradients,
            train_fields=lambda totals: {"train_loss": totals.loss / totals.batches},
            epochs=epochs, evaluate=dev_scores if trained_on == "train" else None, metric=self.SELECTION_METRIC, higher_is_better=False,
            count=lambda batch: batch["attention_mask"].sum(),
        ), self.work_dir, device, checkpoint_every, self.logger, tracker)
        history, best_epoch, train_seconds = outcome.history, outcome.best_epoch, outcome.train_seconds
        if best_epoch is not None:
            dev_loss, dev_accuracy = history[best_epoch - 1]["dev_loss"], history[best_epoch - 1]["dev_accuracy"]
        else:
            best_epoch = epochs
            dev_loss, dev_accuracy, _ = evaluate(model, features["dev"], gold["dev"], config, pad_id, device)

        test_loss, test_accuracy, predicted = evaluate(model, features["test"], gold["test"], config, pad_id, device)
        majority = Counter(train_labels).most_common(1)[0][0]
        metrics = {
            "task": f"pronto:{task.name}",
            "primary_metric": "accuracy",
            "seed": config.seed,
            "encoder": cached_location(encoder),
            "labels": [str(label) for label in labels],
            "trained_on": trained_on,
            "model_selection": "lowest dev loss" if trained_on == "train" else "none: last epoch (dev is the training data)",
            "best_epoch": best_epoch,
            "dev": {"accuracy": dev_accuracy, "loss": dev_loss, "is_training_data": trained_on == "dev"},
            "test": {"accuracy": test_accuracy, "loss": test_loss},
            "majority_baseline": {
                "label": str(labels[majority]),
                "test_accuracy": 100.0 * sum(g == majority for g in gold["test"]) / len(gold["test"]),
            },
            "rows": {name: len(rows) for name, rows in splits.items()} | {"trained_on_rows": len(train_features)},
            "truncated_rows": truncated,
            "key_tokens_added": len(key_ids or {}),
            "max_length": max_length,
            "config": asdict(config),
            "epochs": epochs,
            "history": history,
            "train_seconds": train_seconds,
            "train_tokens_per_second": outcome.count / max(train_seconds, 1e-9),
            "device": str(device),
            "threads": torch.get_num_threads(),
            "resumed_from": outcome.resumed_from,
        }
        result = self.work_dir / "result"
        result.mkdir(parents=True, exist_ok=True)
        (result / "metrics.json").write_text(json.dumps(metrics, indent=2))
        with open(result / "predicted-test.tsv", "w", encoding="utf-8") as f:
            f.write("gold\tpredicted\n")
            for g, p in zip(gold["test"], predicted):
                f.write(f"{labels[g]}\t{labels[p]}\n")
        self.logger.info("%s: test accuracy %.2f%% (majority %s: %.2f%%), kept epoch %d", task.name, test_accuracy,
                         metrics["majority_baseline"]["label"], metrics["majority_baseline"]["test_accuracy"], best_epoch)
        outcome.discard_checkpoint()
        return result


__all__ = [
    "FinetunePronto", "PrOntoConfig", "PrOntoRow", "PrOntoTask", "TASKS", "add_key_tokens", "encode_rows",
    "get_task", "label_space", "read_pronto_tsv",
]


@Step.register("pronto_texts")
class PrOntoTexts(Step):
    """The whitespace-tokenized texts of PrOnto train files, shaped like a ``load_corpus`` result
    (``{"train": [[token, ...], ...], "dev": [...]}``) so ``train_tokenizer`` can build a vocabulary,
    and ``build_mlm_pretraining_data`` MLM rows, for a language that has PrOnto data but no corpus
    here (the Spanish sample).

    PrOnto's tasks annotate the same verses with different splits, so a verse of one task's test
    file is often a training verse of another's. ``exclude_files`` (with ``exclude_tasks``, their
    task names) drops every text that occurs in them, e.g. all dev and test files, so that an
    encoder pretrained on these texts has never seen an evaluation text. ``dedupe`` keeps the first
    copy of a repeated text; ``dev_every`` moves every k-th kept text to ``dev`` (validation rows
    for pretraining). Every dropped or moved text is counted in the log and in ``stats``.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "002"  # 002: exclude_files, dedupe, dev_every and stats

    def run(  # type: ignore[override]
        self,
        files: List[DataPath],
        tasks: List[str],
        exclude_files: Optional[List[DataPath]] = None,
        exclude_tasks: Optional[List[str]] = None,
        dedupe: bool = False,
        dev_every: int = 0,
    ) -> Dict[str, Any]:
        if len(files) != len(tasks):
            raise ValueError(f"pronto_texts: {len(files)} files but {len(tasks)} task names")
        exclude_files, exclude_tasks = exclude_files or [], exclude_tasks or []
        if len(exclude_files) != len(exclude_tasks):
            raise ValueError(f"pronto_texts: {len(exclude_files)} exclude_files but {len(exclude_tasks)} exclude_tasks")
        if dev_every < 0 or dev_every == 1:
            raise ValueError(f"pronto_texts: dev_every must be 0 (no dev texts) or at least 2, not {dev_every}")
        excluded = {text for path, name in zip(exclude_files, exclude_tasks) for text in _texts_of(path, name)}
        kept: List[str] = []
        seen = set()
        counts = {"texts": 0, "excluded": 0, "duplicates": 0}
        for path, name in zip(files, tasks):
            for text in _texts_of(path, name):
                counts["texts"] += 1
                if text in excluded:
                    counts["excluded"] += 1
                elif dedupe and text in seen:
                    counts["duplicates"] += 1
                else:
                    seen.add(text)
                    kept.append(text)
        if not kept:
            raise DataError(f"pronto_texts: no text left in {', '.join(str(f.path) for f in files)} "
                            f"({counts['excluded']} of {counts['texts']} occur in exclude_files)")
        train = [text.split() for i, text in enumerate(kept, 1) if not dev_every or i % dev_every]
        dev = [text.split() for i, text in enumerate(kept, 1) if dev_every and not i % dev_every]
        stats = dict(counts, train_texts=len(train), dev_texts=len(dev), train_tokens=sum(map(len, train)))
        self.logger.info("pronto_texts: %s", json.dumps(stats))
        return {"train": train, "dev": dev, "stats": stats}


def _texts_of(path: DataPath, task_name: str) -> List[str]:
    """Every text of a PrOnto file (both texts of a pair task), whitespace-normalised."""
    task = get_task(task_name)
    return [" ".join(text.split()) for row in read_pronto_tsv(path.resolve(), task) for text in (row.text, row.text2) if text]
