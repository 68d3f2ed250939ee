"""A downstream task is one step class plus one builder entry. This file registers a toy task
("is this sentence longer than the training median?", a linear probe on a tiny random-init µBERT's
word vectors, on a few Wolof UD sentences) here, in the test, adds it to the builder's `tasks` from
a Jsonnet file of its own, and runs it through fine-tuning → score_cell → aggregate_cell in a
fresh workspace, with nothing under steps/, models/, reporting/ or configs/ knowing about it."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch
from tango import Step
from tango.common import Params
from tango.step_graph import StepGraph
from tango.workspaces import LocalWorkspace

import steps  # noqa: F401  (registers the real steps)
from steps.common.data_root import DataPath
from steps.common.formats import DirectoryFormat
from steps.data.readers import read_conllu
from steps.finetune.tasks import DOWNSTREAM_TASKS, downstream_task

REPO = Path(__file__).resolve().parents[1]
TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 128}


def is_long(words: List[str], threshold: int) -> int:
    return int(len(words) > threshold)


class ToyLongSentence(Step):
    """Label 1 for a sentence with more words than the training sentences' median, else 0: a linear
    layer on the mean of the encoder's word vectors (`WordEncoder`), fine-tuned with it."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DirectoryFormat()

    def run(self, encoder: Any, train: DataPath, dev: DataPath, test: DataPath, config: Dict[str, Any]) -> Path:  # type: ignore[override]
        from models.word_encoder import WordEncoder
        from steps.finetune.encoders import collate_word_features, encode_words_batch, load_encoder

        torch.manual_seed(config["seed"])
        splits = {name: [s["tokens"] for s in read_conllu(path.resolve())][: config["sentences"]]
                  for name, path in (("train", train), ("dev", dev), ("test", test))}
        threshold = int(statistics.median(len(words) for words in splits["train"]))
        model, tokenizer = load_encoder(encoder, sla_parse="global")
        words = WordEncoder(model)
        probe = torch.nn.Linear(words.output_dim, 2)
        optimizer = torch.optim.Adam([*words.parameters(), *probe.parameters()], lr=config["lr"])

        def logits(sentences: List[List[str]]) -> torch.Tensor:
            batch = collate_word_features(encode_words_batch(tokenizer, sentences, 128), tokenizer.pad_token_id)
            vectors = words(batch["input_ids"], batch["attention_mask"], batch["word_spans"], batch["word_mask"])
            mask = batch["word_mask"][..., None].to(vectors.dtype)
            return probe((vectors * mask).sum(1) / mask.sum(1))

        labels = torch.tensor([is_long(s, threshold) for s in splits["train"]])
        for _ in range(config["epochs"]):
            for start in range(0, len(labels), 16):
                loss = torch.nn.functional.cross_entropy(logits(splits["train"][start:start + 16]), labels[start:start + 16])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        out = self.work_dir / "result"
        out.mkdir(parents=True, exist_ok=True)
        metrics: Dict[str, Any] = {"task": "toy", "primary_metric": "accuracy", "seed": config["seed"], "threshold": threshold}
        with torch.no_grad():
            for name in ("dev", "test"):
                predicted = logits(splits[name]).argmax(-1).tolist()
                gold = [is_long(s, threshold) for s in splits[name]]
                metrics[name] = {"accuracy": 100.0 * sum(p == g for p, g in zip(predicted, gold)) / len(gold)}
                (out / f"predicted-{name}.tsv").write_text("".join(f"{len(s)}\t{p}\n" for s, p in zip(splits[name], predicted)))
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
        return out


@pytest.fixture
def toy_task():
    assert "toy_long_sentence" not in Step.list_available() and "ToyLongSentence" not in DOWNSTREAM_TASKS
    Step.register("toy_long_sentence")(ToyLongSentence)
    downstream_task("toy")(ToyLongSentence)
    try:
        yield
    finally:
        del Step._registry[Step]["toy_long_sentence"]
        del DOWNSTREAM_TASKS["ToyLongSentence"]


def experiment_file(folder: Path, tokenizer_dir: Path) -> Path:
    """An experiment that adds the toy task to the builder's tasks (the one builder entry) and
    evaluates a random-init encoder on every task of Wolof at smoke scale, with two seeds."""
    text = f"""
local lib = (import "{(REPO / 'configs' / 'lib.libsonnet').as_posix()}") + {{
  tasks+:: {{
    toy(c):: c.cells("toy", "toy", {{
      type: "toy_long_sentence",
      encoder: c.encoder,
      train: lib.ud(c.language, "train"),
      dev: lib.ud(c.language, "dev"),
      test: lib.ud(c.language, "test"),
      config: {{ sentences: 48, epochs: 3, lr: 0.01 }},
    }}),
  }},
}};
{{
  steps: {{
    encoder: {{ type: "random_init_encoder", tokenizer: "{tokenizer_dir.as_posix()}", model: {json.dumps(TINY_MODEL)}, seed: 1 }},
  }} + lib.evaluation_steps("wolof", "smoke", {{ type: "ref", ref: "encoder" }}, "random-init", [42, 43]),
}}
"""
    path = folder / "wolof_toy.jsonnet"
    path.write_text(text)
    return path


def test_a_task_registered_in_a_test_runs_through_finetune_score_and_aggregate(toy_task, small_wolof_tokenizer, data_root, tmp_path):
    tokenizer_dir = tmp_path / "tokenizer"
    small_wolof_tokenizer.save_pretrained(str(tokenizer_dir))
    graph = StepGraph.from_params(Params.from_file(experiment_file(tmp_path, tokenizer_dir)).pop("steps"))
    # The entry adds the toy cells beside the real tasks' (Wolof has UD and NER data).
    assert {"ud_parser_cell", "ner_cell", "toy_cell", "toy_s42", "toy_score_s43"} <= set(graph)
    assert graph["toy_s42"].kwargs["config"] == {"sentences": 48, "epochs": 3, "lr": 0.01, "seed": 42}

    workspace = LocalWorkspace(tmp_path / "workspace")
    cell = graph["toy_cell"].result(workspace)  # fine-tunes both seeds, scores them, aggregates
    assert (cell["table"], cell["row"], cell["column"], cell["scale"], cell["task"], cell["metric"]) == (
        "toy", "random-init", "wolof", "smoke", "toy", "accuracy")
    assert cell["seeds"] == [42, 43] and cell["n"] == 2

    # Each seed's figure, recomputed from its predictions and the treebank (brute force).
    test_sentences = [s["tokens"] for s in read_conllu(data_root / "wolof" / "ud" / "wo_wtb-ud-test.conllu")][:48]
    recomputed = []
    for seed in (42, 43):
        result = graph[f"toy_s{seed}"].result(workspace)
        threshold = json.loads((result / "metrics.json").read_text())["threshold"]
        rows = [line.split("\t") for line in (result / "predicted-test.tsv").read_text().splitlines()]
        assert [int(n) for n, _ in rows] == [len(s) for s in test_sentences]
        recomputed.append(100.0 * sum(int(p) == is_long(s, threshold) for (_, p), s in zip(rows, test_sentences)) / len(rows))
    assert cell["test"]["values"] == pytest.approx(recomputed)
    assert cell["test"]["mean"] == pytest.approx(statistics.fmean(recomputed))
    assert cell["test"]["sd"] == pytest.approx(statistics.stdev(recomputed))

    # The Python side's one registry: the cache listing shows the toy results as cells of the task.
    from reporting.cache import list_entries

    toy_entries = [e for e in list_entries(workspace.dir) if e.step_class == "ToyLongSentence"]
    assert len(toy_entries) == 2 and {e.kind for e in toy_entries} == {"cell"} and {e.task for e in toy_entries} == {"toy"}
    assert sorted(e.test for e in toy_entries) == pytest.approx(sorted(recomputed))


def test_registering_a_step_class_twice_is_refused(toy_task):
    with pytest.raises(ValueError, match="already registered"):
        downstream_task("other")(ToyLongSentence)
    assert DOWNSTREAM_TASKS["ToyLongSentence"] == "toy"
