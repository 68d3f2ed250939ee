"""The data half of the DAG through Tango itself: smoke run, cache reuse, bad input, backends."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SUBPROCESS_TIMEOUT_S

from steps.evaluate.metrics import attachment_scores
from steps.parse.backends import CorpusParser, ParserBudget, evaluate_parser, train_udpipe
from steps.data.readers import read_conllu, write_conllu

REPO = Path(__file__).resolve().parents[1]


def tango_run(config: Path, workspace: Path, env_overrides=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(env_overrides or {}))
    return subprocess.run(
        [sys.executable, "-m", "tango", "--settings", str(REPO / "tango.yml"), "run", str(config), "-w", str(workspace)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S,
    )


@pytest.fixture(scope="module")
def smoke_workspace(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("workspace")
    first = tango_run(REPO / "experiments/smoke/wolof_data.jsonnet", workspace)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    return workspace, first


def test_smoke_data_pipeline_runs_and_second_run_reuses_every_step(smoke_workspace):
    workspace, first = smoke_workspace
    output = first.stdout + first.stderr
    for step in ("corpus", "corpus_parser", "parsed_corpus", "tokenizer", "pretraining_data"):
        assert f'Finished step "{step}"' in output
    second = tango_run(REPO / "experiments/smoke/wolof_data.jsonnet", workspace)
    assert second.returncode == 0
    output = second.stdout + second.stderr
    assert "Starting step" not in output
    assert output.count("in cache") >= 5


def test_smoke_outputs_are_consistent(smoke_workspace):
    from tango.format import DillFormat

    workspace, _ = smoke_workspace
    cache = workspace / "cache"
    [parser_dir] = cache.glob("TrainCorpusParser-*")
    info = json.loads((parser_dir / "result/parser.json").read_text())
    assert info["backend"] == "stanza" and 0 <= info["metrics"]["test_las"] <= 100
    assert (parser_dir / "result/predicted-test.conllu").exists()
    [data_dir] = cache.glob("BuildPretrainingData-*")
    data = DillFormat("gz").read(data_dir)
    train = data["train"]
    gold = sum(r["tree_is_gold"][0] for r in train)
    assert gold == (len(train) - gold) // 8  # the 1:8 mix
    assert all(len(r["head"]) == len(r["input_ids"]) - 2 for r in train)
    assert "NOUN" in data["xpos_labels"] or len(data["xpos_labels"]) > 5


def test_failing_step_leaves_no_cache_entry(tmp_path):
    (tmp_path / "data/wolof/corpus").mkdir(parents=True)
    (tmp_path / "data/wolof/corpus/wo_wikipedia_org__1.html").write_text("<html><body><text></text></body></html>")
    config = tmp_path / "bad.jsonnet"
    config.write_text(json.dumps({"steps": {"corpus": {"type": "load_corpus", "language": "wolof", "corpus": {"path": "wolof/corpus"}}}}))
    result = tango_run(config, tmp_path / "ws", {"SIB_DATA_ROOT": str(tmp_path / "data")})
    assert result.returncode != 0
    assert "corpus is empty" in result.stdout + result.stderr
    assert not list((tmp_path / "ws/cache").glob("LoadCorpus-*/cache-metadata.json"))
    assert not list((tmp_path / "ws/cache").glob("LoadCorpus-*/data.dill*"))


def test_udpipe_backend_trains_and_parses(tmp_path, data_root):
    train = read_conllu(data_root / "wolof/ud/wo_wtb-ud-train.conllu")[:150]
    dev = read_conllu(data_root / "wolof/ud/wo_wtb-ud-dev.conllu")[:30]
    write_conllu(train, tmp_path / "train.conllu")
    write_conllu(dev, tmp_path / "dev.conllu")
    out = tmp_path / "parser"
    out.mkdir()
    train_udpipe(out, tmp_path / "train.conllu", tmp_path / "dev.conllu", ParserBudget(udpipe_iterations=1))
    (out / "parser.json").write_text(json.dumps({"backend": "udpipe", "stanza_code": "wo", "metrics": {}}))
    scores = evaluate_parser(CorpusParser(out), dev, tmp_path / "pred.conllu")
    assert scores["upos_accuracy"] > 50 and scores["las"] > 10
    assert len(read_conllu(tmp_path / "pred.conllu")) == 30


def test_attachment_scores_exclude_punctuation():
    gold = [{"tokens": ["a", "b", "."], "upos": ["NOUN", "VERB", "PUNCT"], "head": [2, 0, 2], "deprel": ["nsubj", "root", "punct"]}]
    wrong_punct = [dict(gold[0], head=[2, 0, 1], deprel=["nsubj:x", "root", "dep"])]
    scores = attachment_scores(gold, wrong_punct)
    # The paper's LAS compares full labels (nsubj:x != nsubj); las_universal strips subtypes.
    assert scores["las"] == 50 and scores["las_universal"] == 100 and scores["uas"] == 100 and scores["scored_words"] == 2
    wrong_label = [dict(gold[0], deprel=["obj", "root", "punct"])]
    assert attachment_scores(gold, wrong_label)["las"] == 50


def test_smoke_cell_reuses_data_steps_and_tables_match_the_cache(smoke_workspace, tmp_path):
    """One whole smoke cell (µB-M: pretrain, UD parser, NER, scores) on top of the cached data
    steps, then the tables command on a partly filled cache (µB-MX never ran)."""
    workspace, _ = smoke_workspace
    run = tango_run(REPO / "experiments/smoke/wolof_m.jsonnet", workspace)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-4000:]
    for shared in ("corpus", "word_vectors", "corpus_parser", "parsed_corpus", "tokenizer", "pretraining_data"):
        assert f'Starting step "{shared}"' not in output, f"{shared} was re-run"
    for step in ("pretrained_model", "ud_parser_s42", "ner_s42", "ud_parser_cell", "ner_cell"):
        assert f'Finished step "{step}"' in output

    [parser_result] = (workspace / "cache").glob("FinetuneUdParser-*/result")
    parser_metrics = json.loads((parser_result / "metrics.json").read_text())
    [ner_result] = (workspace / "cache").glob("FinetuneNer-*/result")
    ner_metrics = json.loads((ner_result / "metrics.json").read_text())
    assert (parser_result / "predicted-test.conllu").exists() and (ner_result / "predicted-test.bio").exists()

    out = tmp_path / "tables"
    tables = subprocess.run(
        [sys.executable, "-m", "reporting.tables", "experiments/smoke/wolof_m.jsonnet", "experiments/smoke/wolof_mx.jsonnet",
         "--workspace", str(workspace), "--out", str(out), "--scale", "smoke"],
        cwd=REPO, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert tables.returncode == 0, tables.stdout[-2000:] + tables.stderr[-2000:]
    assert "4 table cells: 2 cached, 2 not cached" in tables.stdout  # UD + NER for each of M and MX
    rows = {(r["table"], r["row"], r["column"]): r for r in csv.DictReader((out / "smoke/table2.csv").open())}
    assert float(rows[("table2", "M", "wolof")]["ours_mean"]) == pytest.approx(parser_metrics["test"]["las"], abs=1e-4)
    assert rows[("table2", "MX", "wolof")]["ours_mean"] == "" and rows[("table2", "MX", "wolof")]["paper"] == "77.74"
    ner_rows = {(r["row"], r["column"]): r for r in csv.DictReader((out / "smoke/table3.csv").open())}
    assert float(ner_rows[("M", "wolof")]["ours_mean"]) == pytest.approx(ner_metrics["test"]["f1"], abs=1e-4)


def test_report_lists_cache_entries_copied_from_another_workspace(smoke_workspace, tmp_path):
    """Cache entries brought from another machine (a GPU job's) have no record of their run in
    this workspace's step-info database: the workspace records them as completed where they lie
    (`tango run -j` failed them before), and the report lists them from the cache."""
    import shutil

    from tango.step_info import StepState
    from tango.workspaces import LocalWorkspace

    from reporting.report import completed_steps

    workspace, _ = smoke_workspace
    copied = tmp_path / "copied"
    shutil.copytree(workspace / "cache", copied / "cache")  # the cache alone, not stepinfo.sqlite
    run = tango_run(REPO / "experiments/smoke/wolof_data.jsonnet", copied)
    assert run.returncode == 0 and "Starting step" not in run.stdout + run.stderr
    local = LocalWorkspace(copied)
    [info] = [i for i in local.search_step_info() if i.step_class_name == "TrainCorpusParser"]
    assert info.state == StepState.COMPLETED  # never seen running here, adopted from its complete entry
    assert [i.unique_id for i in completed_steps(local, "TrainCorpusParser")] == [info.unique_id]


def test_cache_ls_lists_every_encoder_and_cell_of_the_smoke_cell(smoke_workspace, capsys):
    """After the smoke cell above: `cache ls --json` holds exactly the pretrained encoders and
    fine-tuning steps Tango's step-info store records as cached, labelled by the experiment file."""
    from tango.workspaces import LocalWorkspace

    from reporting import cache

    workspace, _ = smoke_workspace
    assert cache.main(["ls", "--json", "--workspace", str(workspace), "--experiments", str(REPO / "experiments/smoke/wolof_m.jsonnet")]) == 0
    listed = json.loads(capsys.readouterr().out)
    local = LocalWorkspace(workspace)
    cached = [info for info in local.search_step_info() if info in local.step_cache]
    assert {e["unique_id"] for e in listed["encoders"]} == {i.unique_id for i in cached if i.step_class_name == "PretrainMicrobert"}
    assert {e["unique_id"] for e in listed["cells"]} == {i.unique_id for i in cached if i.step_class_name in ("FinetuneUdParser", "FinetuneNer")}
    [encoder] = listed["encoders"]
    assert (encoder["language"], encoder["condition"], encoder["scale"], encoder["steps"]) == ("wolof", "M", "smoke", 30)
    assert {(c["task"], c["condition"], c["seed"]) for c in listed["cells"]} == {("ud_parsing", "M", 42), ("ner", "M", 42)}


def test_the_loader_epoch_benchmark_times_every_batch_of_an_epoch_as_a_worker_builds_it(smoke_workspace, tmp_path):
    """benchmarks/bench_loader_epoch.py: one epoch of the smoke MXPT-SLA file's batches from the cache,
    the slowest one named by its padded length; the stall rate is the queue over the slowest batch."""
    import benchmarks.bench_loader_epoch as bench
    from steps.pretrain.pretrain import LOADER_PREFETCH

    workspace, _ = smoke_workspace
    entries = set((workspace / "cache").iterdir())
    record = bench.epoch_timings(REPO / "experiments/smoke/wolof_mxpt_sla.jsonnet", workspace)
    assert record["condition"] == "MXPT-SLA" and record["batches"] > 1
    assert record["median_ms"] <= record["p99_ms"] <= record["slowest_ms"] and record["slowest_padded_length"] > 2
    assert record["epoch_worker_seconds"] == pytest.approx(record["mean_ms"] * record["batches"] / 1e3)
    workers = record["loader_workers"]
    assert record["queued_batches"] == workers * LOADER_PREFETCH
    if workers:
        assert record["stalls_above_steps_per_second"] == pytest.approx(record["queued_batches"] / record["slowest_ms"] * 1e3)
    assert bench.epoch_timings(REPO / "experiments/smoke/wolof_mxpt_sla.jsonnet", workspace, condition="M")["condition"] == "M"
    out = tmp_path / "loader_epoch.jsonl"
    assert bench.main(["experiments/smoke/wolof_mxpt_sla.jsonnet", "-w", str(workspace), "--json", str(out), "--note", "x"]) == 0
    assert json.loads(out.read_text())["note"] == "x"
    assert set((workspace / "cache").iterdir()) == entries  # reads the cache, writes nothing there


def test_the_pace_probe_runs_a_files_pretraining_briefly_from_the_cached_inputs(smoke_workspace, monkeypatch):
    """benchmarks/gpu/pace.py: a few steps of the smoke file's own pretraining config (inputs from
    the cache, nothing kept), paced per window after the first, projected to the configured length."""
    from benchmarks.gpu.pace import measure_pace, window_paces

    workspace, _ = smoke_workspace
    entries = set((workspace / "cache").iterdir())
    record = measure_pace(REPO / "experiments/smoke/wolof_mxpt_sla.jsonnet", steps=6, window=2, workspace_dir=workspace)
    assert record["condition"] == "MXPT-SLA" and record["steps"] == 6 and len(record["window_steps_per_second"]) == 3
    assert record["steps_per_second"] > 0 and record["full_run_minutes"] == pytest.approx(
        record["full_run_steps"] / record["steps_per_second"] / 60)
    assert record["levers"]["parse_inputs_in_loader"] is True
    assert set((workspace / "cache").iterdir()) == entries  # the probe's run is not cached
    # Window pace: its steps over its training seconds, tokens / (tokens per second).
    assert window_paces([{"train_tokens": 100, "tokens_per_second": 50.0}, {"train_tokens": 300, "tokens_per_second": 400.0}], 4) == [2.0, 8.0]
    with pytest.raises(SystemExit, match="multiple of --window"):
        measure_pace(REPO / "experiments/smoke/wolof_m.jsonnet", steps=5, window=2, workspace_dir=workspace)
    # Overrides reach the step (a compiled stand-in here); --profile: the same run under torch.profiler,
    # its account written to one file.
    profile = workspace.parent / "pace-profile.txt"
    compiled = measure_pace(REPO / "experiments/smoke/wolof_m.jsonnet", steps=4, window=2, workspace_dir=workspace,
                            overrides={"compile_encoder": {"backend": "eager"}}, profile=profile)
    assert compiled["levers"]["compile_encoder"] == {"backend": "eager"}
    account = profile.read_text()
    assert "4 optimizer steps profiled (startup included" in account and "kernel launches: 0" in account  # CPU: nothing launched
    assert "Top ops by self host time:" in account and "aten::addmm" in account
    # --profile-steps: only the last steps are recorded, each optimizer step advancing the schedule.
    measure_pace(REPO / "experiments/smoke/wolof_m.jsonnet", steps=6, window=2, workspace_dir=workspace, profile=profile, profile_steps=2)
    account = profile.read_text()
    assert "2 optimizer steps profiled, after 4 unrecorded ones" in account
    steps_recorded = [line for line in account.splitlines() if "Optimizer.step#AdamW.step" in line]
    assert steps_recorded and steps_recorded[0].split()[-1] == "2"  # its "# of Calls" column
    # --without-compile overrides both compile levers with None.
    import benchmarks.gpu.pace as pace
    seen = []
    monkeypatch.setattr(pace, "measure_pace", lambda *args, overrides=None, profile=None, profile_steps=None:
                        seen.append(overrides) or {**record, "condition": "M"})
    assert pace.main(["experiments/smoke/wolof_m.jsonnet", "--without-compile"]) == 0
    assert pace.main(["experiments/smoke/wolof_m.jsonnet"]) == 0
    assert pace.main(["experiments/smoke/wolof_m.jsonnet", "--with-compile"]) == 0
    assert seen == [{"compile_encoder": None, "compile_objectives": None}, None,
                    {"compile_encoder": {"mode": "reduce-overhead"}, "compile_objectives": {}}]
    # --note goes into the appended record.
    records = workspace.parent / "pace.jsonl"
    assert pace.main(["experiments/smoke/wolof_m.jsonnet", "--json", str(records), "--note", "after the fix"]) == 0
    assert json.loads(records.read_text())["note"] == "after the fix"
