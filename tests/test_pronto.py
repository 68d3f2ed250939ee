"""PrOnto fine-tuning (reference `sequence_classifier.py`): the task table on the real Spanish sample, the reader's errors,
the pair tasks' key token, and short real fine-tunes of a tiny random-init µBERT through Tango."""
from __future__ import annotations

import json

import pytest
from tango.workspaces import LocalWorkspace

from steps.common.data_root import DataError, DataPath
from steps.pretrain.encoders import RandomInitEncoder
from steps.finetune.pronto import (
    TASKS, FinetunePronto, PrOntoConfig, add_key_tokens, encode_rows, get_task, label_space, read_pronto_tsv,
)

TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 128}
SAMPLE = "pronto_sample_spanish"


@pytest.fixture(scope="module")
def sample(data_root):
    return data_root / SAMPLE


def read_split(sample, task, split):
    return read_pronto_tsv(sample / f"{task}_{split}.tsv", TASKS[task])


@pytest.fixture(scope="module")
def spanish_tokenizer_dir(sample, tmp_path_factory):
    """A small WordPiece vocabulary from the sample's verses, so most words split into pieces."""
    from steps.data.vocab import train_wordpiece

    texts = [row.text.split() for task in ("sentence_mood", "proper_noun_subject") for row in read_split(sample, task, "train")[:600]]
    path = tmp_path_factory.mktemp("spanish-tokenizer")
    train_wordpiece(texts, vocab_size=500).save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def tiny_encoder(spanish_tokenizer_dir, tmp_path_factory):
    workspace = LocalWorkspace(tmp_path_factory.mktemp("encoder-workspace"))
    return RandomInitEncoder(tokenizer=spanish_tokenizer_dir, condition="M", model=TINY_MODEL, seed=3).result(workspace)


# --- the task table on the real sample ----------------------------------------------------------


@pytest.mark.parametrize(
    "task, labels, splits",
    [
        ("nonpronominal_mention", [0, 1, 2, 3], ("train", "dev", "test")),
        ("proper_noun_subject", [0, 1], ("train", "dev", "test")),
        ("sentence_mood", ["declarative", "imperative", "interrogative"], ("train", "dev", "test")),
        ("same_sense", ["different", "same"], ("dev", "test")),
        ("same_arg_count", ["different", "same"], ("dev", "test")),
    ],
)
def test_label_spaces_of_the_spanish_sample(sample, task, labels, splits):
    present = sorted(p.name for p in sample.glob(f"{task}_*.tsv"))
    assert present == sorted(f"{task}_{s}.tsv" for s in splits)  # the pair tasks have no train file
    rows = [read_split(sample, task, split) for split in splits]
    assert label_space(rows) == labels
    if TASKS[task].is_pair:
        assert all(row.key and row.text2 for split in rows for row in split)


def test_mention_counts_are_clipped_at_three(sample):
    raw = [int(line.rsplit("\t", 1)[1]) for line in (sample / "nonpronominal_mention_train.tsv").read_text(encoding="utf-8").splitlines()]
    rows = read_split(sample, "nonpronominal_mention", "train")
    assert max(raw) > 3 and len(rows) == len(raw)
    assert [row.label for row in rows] == [min(count, 3) for count in raw]


def test_task_table_follows_the_spec():
    assert {name: task.epochs for name, task in TASKS.items()} == {
        "nonpronominal_mention": 10, "proper_noun_subject": 10, "sentence_mood": 20, "same_sense": 10, "same_arg_count": 10}
    with pytest.raises(ValueError, match="unknown PrOnto task 'mood'; known: nonpronominal_mention, proper_noun_subject"):
        get_task("mood")


# --- reader errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "task, content, message",
    [
        ("sentence_mood", "Vengan acá .\timperative\nY  dijo .\n", r":2: 1 tab-separated columns, sentence_mood rows have 2"),
        ("sentence_mood", "Vengan acá .\texclamative\n", r":1: unknown label 'exclamative' \(known: declarative, imperative, interrogative\)"),
        ("proper_noun_subject", "\n\nJesús habló .\t2\n", r":3: unknown label '2'"),
        ("nonpronominal_mention", "Jesús habló .\tmany\n", r":1: label 'many' is not a non-negative integer"),
        ("same_sense", "give.01\tDio pan .\t \tsame\n", r":1: empty text in column 3"),
        ("same_arg_count", "give.01\tDio pan .\tsame\n", r":1: 3 tab-separated columns, same_arg_count rows have 4"),
    ],
)
def test_reader_errors_name_the_file_and_line(tmp_path, task, content, message):
    path = tmp_path / "bad.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message) as error:
        read_pronto_tsv(path, TASKS[task])
    assert str(error.value).startswith(f"{path}:") and "\n" not in str(error.value)


# --- the pair tasks' key token ------------------------------------------------------------------


def test_pair_key_becomes_one_new_token_after_the_last_sep(sample, spanish_tokenizer_dir):
    from steps.data.vocab import load_tokenizer

    tokenizer = load_tokenizer(spanish_tokenizer_dir)
    original_size = len(tokenizer)
    rows = read_split(sample, "same_sense", "dev")[:40]
    keys = sorted({row.key for row in rows})
    key_ids = add_key_tokens(tokenizer, keys)
    assert len(tokenizer) == original_size + len(keys)
    assert sorted(key_ids.values()) == list(range(original_size, original_size + len(keys)))

    for max_length in (512, 24):  # whole pairs, and pairs cut down to leave room for the key
        features, truncated = encode_rows(tokenizer, rows, max_length, key_ids)
        if max_length == 24:
            assert truncated == len(rows)
        for row, feature in zip(rows, features):
            ids = feature["input_ids"]
            assert len(ids) <= max_length and ids[0] == tokenizer.cls_token_id
            assert ids[-1] == key_ids[row.key] and ids[-2] == tokenizer.sep_token_id
            assert ids.count(tokenizer.sep_token_id) == 2 and sum(i >= original_size for i in ids) == 1
            # Second segment (text2, its [SEP] and the key) is type 1, as in BERT sentence pairs.
            first_sep = ids.index(tokenizer.sep_token_id)
            assert feature["token_type_ids"] == [0] * (first_sep + 1) + [1] * (len(ids) - first_sep - 1)
            assert feature["attention_mask"] == [1] * len(ids)


def test_a_key_already_in_the_vocabulary_is_refused(spanish_tokenizer_dir):
    from steps.data.vocab import load_tokenizer

    tokenizer = load_tokenizer(spanish_tokenizer_dir)
    with pytest.raises(DataError, match="already vocabulary items"):
        add_key_tokens(tokenizer, ["give.01", "[SEP]"])


# --- fine-tuning end to end ----------------------------------------------------------------------


def excerpt(sample, tmp_path, task, split, lines):
    """The first `lines` rows of a real split, as a file of its own."""
    path = tmp_path / f"{task}_{split}.tsv"
    path.write_text("".join((sample / f"{task}_{split}.tsv").read_text(encoding="utf-8").splitlines(True)[:lines]), encoding="utf-8")
    return DataPath(str(path))


def test_pronto_texts_leave_out_every_evaluation_text(sample, tmp_path):
    """The pretraining texts of the Spanish sample: train texts of the three tasks with training
    data, none of which occurs in any of their dev or test files, each once, every 20th in dev."""
    from steps.finetune.pronto import PrOntoTexts

    tasks = ["nonpronominal_mention", "proper_noun_subject", "sentence_mood"]
    evaluation = [(task, split) for task in tasks for split in ("dev", "test")]
    step = PrOntoTexts(
        files=[DataPath(f"{SAMPLE}/{task}_train.tsv") for task in tasks], tasks=tasks,
        exclude_files=[DataPath(f"{SAMPLE}/{task}_{split}.tsv") for task, split in evaluation],
        exclude_tasks=[task for task, _ in evaluation], dedupe=True, dev_every=20,
    )
    texts = step.result(LocalWorkspace(tmp_path / "workspace"))
    kept = [" ".join(words) for words in texts["train"] + texts["dev"]]
    held_out = {" ".join(row.text.split()) for task, split in evaluation for row in read_split(sample, task, split)}
    stats = texts["stats"]
    assert held_out.isdisjoint(kept) and len(set(kept)) == len(kept)
    assert stats["texts"] == sum(len(read_split(sample, task, "train")) for task in tasks)
    assert stats["texts"] == stats["excluded"] + stats["duplicates"] + stats["train_texts"] + stats["dev_texts"]
    assert stats["excluded"] > 0 and stats["duplicates"] > 0 and stats["dev_texts"] == len(kept) // 20

    with pytest.raises(Exception, match="no text left.*occur in exclude_files"):
        PrOntoTexts(files=[DataPath(f"{SAMPLE}/sentence_mood_dev.tsv")], tasks=["sentence_mood"],
                    exclude_files=[DataPath(f"{SAMPLE}/sentence_mood_dev.tsv")], exclude_tasks=["sentence_mood"],
                    ).result(LocalWorkspace(tmp_path / "empty"))
    with pytest.raises(Exception, match="2 exclude_files but 1 exclude_tasks"):
        PrOntoTexts(files=[DataPath(f"{SAMPLE}/sentence_mood_dev.tsv")], tasks=["sentence_mood"],
                    exclude_files=[DataPath(f"{SAMPLE}/sentence_mood_dev.tsv")] * 2, exclude_tasks=["sentence_mood"],
                    ).result(LocalWorkspace(tmp_path / "mismatch"))


def finetune(encoder, task, paths, **settings):
    config = dict(lr=1e-3, epochs=3, batch_size=16, max_length=96, seed=7)
    config.update(settings)
    return FinetunePronto(encoder=encoder, task=task, config=PrOntoConfig(**config), num_threads=1, **paths)


def test_single_sentence_task_selects_the_lowest_dev_loss(sample, tiny_encoder, tmp_path):
    task = "proper_noun_subject"
    paths = {split: excerpt(sample, tmp_path, task, split, n) for split, n in (("train", 160), ("dev", 48), ("test", 64))}
    workspace = LocalWorkspace(tmp_path / "workspace")
    result = finetune(tiny_encoder, task, paths).result(workspace)
    metrics = json.loads((result / "metrics.json").read_text())

    assert metrics["task"] == "pronto:proper_noun_subject" and metrics["primary_metric"] == "accuracy"
    assert metrics["trained_on"] == "train" and metrics["rows"] == {"train": 160, "dev": 48, "test": 64, "trained_on_rows": 160}
    history = metrics["history"]
    assert [r["epoch"] for r in history] == [1, 2, 3]
    best = min(history, key=lambda r: r["dev_loss"])
    assert metrics["best_epoch"] == best["epoch"] and metrics["dev"]["loss"] == best["dev_loss"]
    assert metrics["dev"]["accuracy"] == best["dev_accuracy"] and not metrics["dev"]["is_training_data"]
    assert metrics["train_seconds"] > 0 and metrics["seed"] == 7 and metrics["labels"] == ["0", "1"]

    # The majority baseline is the most frequent *training* label scored on test.
    train_labels = [row.label for row in read_pronto_tsv(paths["train"].resolve(), TASKS[task])]
    test_labels = [str(row.label) for row in read_pronto_tsv(paths["test"].resolve(), TASKS[task])]
    majority = max(set(train_labels), key=train_labels.count)
    assert metrics["majority_baseline"] == {"label": str(majority), "test_accuracy": 100.0 * test_labels.count(str(majority)) / 64}

    # predicted-test.tsv re-scores to the reported accuracy, with the gold labels in file order.
    lines = (result / "predicted-test.tsv").read_text().splitlines()
    assert lines[0] == "gold\tpredicted" and [line.split("\t")[0] for line in lines[1:]] == test_labels
    assert 100.0 * sum(g == p for g, p in (line.split("\t") for line in lines[1:])) / 64 == pytest.approx(metrics["test"]["accuracy"])

    # Same inputs: served from the cache; threads are not part of the key.
    assert finetune(tiny_encoder, task, paths) in workspace.step_cache
    assert finetune(tiny_encoder, task, paths).unique_id == FinetunePronto(
        encoder=tiny_encoder, task=task, config=PrOntoConfig(lr=1e-3, epochs=3, max_length=96, seed=7), num_threads=2, **paths
    ).unique_id


def test_a_killed_run_resumes_from_its_checkpoint_and_ends_identically(sample, tiny_encoder, tmp_path, resumed_run_matches):
    task = "proper_noun_subject"
    paths = {split: excerpt(sample, tmp_path, task, split, n) for split, n in (("train", 64), ("dev", 32), ("test", 32))}
    reference = finetune(tiny_encoder, task, paths).result(LocalWorkspace(tmp_path / "reference"))
    metrics = resumed_run_matches(lambda: finetune(tiny_encoder, task, paths), tmp_path / "w", 1, reference)
    assert metrics["resumed_from"] == [1] and [r["epoch"] for r in metrics["history"]] == [1, 2, 3]


def test_pair_task_without_a_train_file_trains_on_dev_and_says_so(sample, tiny_encoder, tmp_path):
    task = "same_arg_count"
    paths = {split: excerpt(sample, tmp_path, task, split, 48) for split in ("dev", "test")}
    result = finetune(tiny_encoder, task, paths, epochs=2).result(LocalWorkspace(tmp_path / "workspace"))
    metrics = json.loads((result / "metrics.json").read_text())
    assert metrics["trained_on"] == "dev" and metrics["dev"]["is_training_data"]
    assert metrics["best_epoch"] == 2 and metrics["model_selection"].startswith("none")
    assert all("dev_loss" not in record for record in metrics["history"])
    keys = {row.key for split in paths.values() for row in read_pronto_tsv(split.resolve(), TASKS[task])}
    assert metrics["key_tokens_added"] == len(keys) and metrics["labels"] == ["different", "same"]
    assert 0.0 <= metrics["test"]["accuracy"] <= 100.0 and len((result / "predicted-test.tsv").read_text().splitlines()) == 49

    with pytest.raises(Exception, match="no train file given"):
        finetune(tiny_encoder, task, paths, without_train="error").result(LocalWorkspace(tmp_path / "refused"))


def test_config_and_task_errors(tiny_encoder, tmp_path):
    with pytest.raises(ValueError, match="without_train must be one of"):
        PrOntoConfig(without_train="test")
    paths = {split: DataPath(f"{SAMPLE}/sentence_mood_{split}.tsv") for split in ("dev", "test")}
    with pytest.raises(Exception, match="unknown PrOnto task 'mood'"):
        FinetunePronto(encoder=tiny_encoder, task="mood", **paths).result(LocalWorkspace(tmp_path / "workspace"))
