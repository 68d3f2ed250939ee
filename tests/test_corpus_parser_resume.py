"""Kill-and-resume of the corpus parser steps on small real Wolof slices.

A run stopped by a crash hook leaves its Tango work dir behind; running the same step again in
that workspace must skip the finished training phases (train_corpus_parser) or parsed batches
(parse_corpus) and end with the result of an uninterrupted run (timings aside).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tango.workspaces import LocalWorkspace

from steps.common.checkpoints import SimulatedCrash
from steps.common.data_root import DataPath
from steps.data.readers import read_conllu, write_conllu
from steps.parse.backends import CRASH_AFTER_PHASE_ENV, ParserBudget
from steps.parse.corpus_parser import PARSE_CRASH_AFTER_BATCH_ENV, ParseCorpus, TrainCorpusParser

UD = "wolof/ud/wo_wtb-ud-{}.conllu"
# A few optimizer steps of tiny models: seconds on one core, enough to learn something.
BUDGET = dict(tagger_steps=6, parser_steps=6, eval_interval=3, tagger_tags="upos", parser_layers=1,
              tagger_hidden_dim=16, tagger_batch_size=20, tagger_biaffine_dim=8, tagger_composite_biaffine_dim=4,
              parser_hidden_dim=16, parser_biaffine_dim=16, parser_batch_size=300, char_hidden_dim=8, word_emb_dim=8)
TIMINGS = {"tagger_seconds", "parser_seconds", "evaluation_seconds", "training_minutes"}


@pytest.fixture(scope="module")
def slices(data_root, tmp_path_factory) -> dict:
    """Train/dev/test slices of the Wolof treebank as files (the steps read them from disk)."""
    folder = tmp_path_factory.mktemp("ud")
    sizes = {"train": 60, "dev": 15, "test": 15}
    paths = {}
    for split, size in sizes.items():
        paths[split] = folder / f"{split}.conllu"
        write_conllu(read_conllu(data_root / UD.format(split))[:size], paths[split])
    return paths


def make_trainer(slices) -> TrainCorpusParser:
    return TrainCorpusParser(language="wolof", train=DataPath(str(slices["train"])), dev=DataPath(str(slices["dev"])),
                             test=DataPath(str(slices["test"])), budget=ParserBudget(**BUDGET))


@pytest.fixture(scope="module")
def reference(slices, tmp_path_factory) -> Path:
    """The uninterrupted run's parser directory."""
    return make_trainer(slices).result(LocalWorkspace(tmp_path_factory.mktemp("reference")))


def count_stanza_training(monkeypatch) -> dict:
    """Count the tagger and parser training runs (Stanza's CLI mains in train mode)."""
    from stanza.models import parser as stanza_parser
    from stanza.models import tagger as stanza_tagger

    calls = {"tagger": 0, "parser": 0}
    for name, module in (("tagger", stanza_tagger), ("parser", stanza_parser)):
        def counted(args, _main=module.main, _name=name):
            calls[_name] += "train" in args[args.index("--mode") + 1:][:1]
            return _main(args)
        monkeypatch.setattr(module, "main", counted)
    return calls


def model_weights(path: Path) -> dict:
    # Stanza's own model files (with its config objects); files these tests just wrote.
    saved = torch.load(path, map_location="cpu", weights_only=False)
    return saved["model"]


def assert_same_parser(resumed: Path, reference: Path) -> None:
    info, expected = (json.loads((d / "parser.json").read_text()) for d in (resumed, reference))
    assert info["metrics"] == expected["metrics"] and info["metrics"]["test_las"] > 0
    assert {k: v for k, v in info["timings"].items() if k not in TIMINGS} == \
        {k: v for k, v in expected["timings"].items() if k not in TIMINGS}
    for name in ("predicted-dev.conllu", "predicted-test.conllu"):
        assert (resumed / name).read_bytes() == (reference / name).read_bytes(), name
    for name in ("tagger.pt", "parser.pt"):
        ours, theirs = model_weights(resumed / name), model_weights(reference / name)
        assert ours.keys() == theirs.keys()
        assert all(torch.equal(ours[k], theirs[k]) for k in ours), name


@pytest.mark.parametrize("phase", ["tagger", "parser"])
def test_train_corpus_parser_killed_after_a_phase_resumes_without_redoing_it(phase, slices, reference, tmp_path, monkeypatch):
    workspace = LocalWorkspace(tmp_path / "workspace")
    monkeypatch.setenv(CRASH_AFTER_PHASE_ENV, phase)
    with pytest.raises(SimulatedCrash, match=f"after the {phase} phase"):
        make_trainer(slices).result(workspace)
    step = make_trainer(slices)
    assert step not in workspace.step_cache
    work = workspace.work_dir(step)
    assert phase in json.loads((work / "phases.json").read_text())
    if phase == "tagger":
        # The parser phase was under way when the process died: Stanza's half-written parser
        # checkpoint must be discarded, not continued from (it would change the result).
        (work / "parser" / "parser_checkpoint.pt").write_bytes(b"half a checkpoint")
    monkeypatch.delenv(CRASH_AFTER_PHASE_ENV)
    calls = count_stanza_training(monkeypatch)
    resumed = make_trainer(slices).result(workspace)
    assert calls == {"tagger": 0, "parser": int(phase == "tagger")}
    assert_same_parser(resumed, reference)


def test_an_uninterrupted_run_trains_both_phases_once(slices, tmp_path, monkeypatch):
    calls = count_stanza_training(monkeypatch)
    make_trainer(slices).result(LocalWorkspace(tmp_path / "workspace"))
    assert calls == {"tagger": 1, "parser": 1}


def test_parse_corpus_killed_after_a_batch_parses_only_the_rest(reference, data_root, tmp_path, monkeypatch):
    sentences = [s["tokens"] for s in read_conllu(data_root / UD.format("dev"))]
    corpus = {"train": sentences[:50], "dev": sentences[50:70]}

    def make_step() -> ParseCorpus:
        return ParseCorpus(corpus=corpus, parser=reference, batch_size=16)  # train: 4 batches, dev: 2

    expected = make_step().result(LocalWorkspace(tmp_path / "reference"))
    workspace = LocalWorkspace(tmp_path / "workspace")
    monkeypatch.setenv(PARSE_CRASH_AFTER_BATCH_ENV, "5")  # all of train and the first dev batch
    with pytest.raises(SimulatedCrash, match="after batch 5"):
        make_step().result(workspace)
    chunks = workspace.work_dir(make_step()) / "parsed"
    assert sorted(p.name for p in chunks.iterdir()) == sorted([f"train-{i:06d}.pt" for i in range(4)] + ["dev-000000.pt"])
    monkeypatch.delenv(PARSE_CRASH_AFTER_BATCH_ENV)

    from steps.parse.backends import CorpusParser

    parsed_batches = []
    original = CorpusParser.parse
    monkeypatch.setattr(CorpusParser, "parse", lambda self, batch: parsed_batches.append(len(batch)) or original(self, batch))
    resumed = make_step().result(workspace)
    assert parsed_batches == [4]  # only the last dev batch (20 = 16 + 4)
    assert resumed["train"] == expected["train"] and resumed["dev"] == expected["dev"]
    assert len(resumed["train"]) == 50 and all(len(s["head"]) == len(s["tokens"]) for s in resumed["train"])
    assert resumed["stats"]["parser"] == expected["stats"]["parser"] == "stanza"
    assert not chunks.exists()  # the result holds them now
