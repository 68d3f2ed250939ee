"""The reporting commands: the committed record survives a user's run, the scale of a step comes
from the experiment graphs, and the paired 95 % interval is what a hand computation gives."""
from __future__ import annotations

import hashlib
import json
import math
import shutil
import statistics
from pathlib import Path

import pytest
from tango.workspaces import LocalWorkspace

from reporting import report, tables
from reporting.cells import Cell, record_cells
from reporting.graphs import REPO, FileGraph, load_graphs, scale_label, scales_of_steps
from reporting.significance import T_975, interval, paired_difference, t_quantile_975, welch_difference
from test_tables import _experiment, _run


def _hashes(folder: Path):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def one_cached_cell(tmp_path, monkeypatch):
    """A fresh workspace holding one cached cell (Wolof µB-MP, seeds 1 and 2); the report reads
    only that file's graph, not the 194 real ones."""
    workspace = LocalWorkspace(tmp_path / "ws")
    experiment = _experiment(tmp_path / "wolof_mp.json", "MP", "wolof", [(1, 74.0), (2, 75.0)])
    _run(experiment, workspace)
    monkeypatch.setattr(report, "experiment_files", lambda folders=None: [experiment])
    monkeypatch.chdir(REPO)  # the report reads docs/benchmarks/*.json relative to the repository
    return workspace.dir, experiment


def test_user_run_leaves_docs_untouched(one_cached_cell):
    workspace_dir, experiment = one_cached_cell
    before = _hashes(REPO / "docs")
    assert tables.main([str(experiment), "--workspace", str(workspace_dir)]) == 0
    assert report.main(["--workspace", str(workspace_dir)]) == 0
    assert _hashes(REPO / "docs") == before

    markdown = (workspace_dir / "tables" / "cpu" / "table2.md").read_text()
    assert "| Wolof ours | docs | paper |" in markdown
    recorded_m = next(c for c in record_cells(tables.DOCS_TABLES) if (c.table, c.scale, c.row, c.column) == ("table2", "cpu", "M", "wolof"))
    m_line = next(line for line in markdown.splitlines() if line.startswith("| µB-M |"))
    assert m_line.startswith(f"| µB-M | — | {tables._cell_text(recorded_m, mark_recorded=False)} | 77.71 |")  # ours beside the record's
    assert next(line for line in markdown.splitlines() if line.startswith("| µB-MP |")).startswith("| µB-MP | 74.50 ± 0.71 |")
    runs = (workspace_dir / "runs.csv").read_text()  # the cached runs, one row each, beside the report
    assert "cpu,table2,MP,wolof,1,las,75.00,74.00," in runs and "cpu,table2,MP,wolof,2,las,76.00,75.00," in runs


def test_update_docs_writes_the_record_and_keeps_what_the_cache_lacks(one_cached_cell, tmp_path, monkeypatch):
    workspace_dir, experiment = one_cached_cell
    docs_tables, docs_results = tmp_path / "docs" / "tables", tmp_path / "docs" / "RESULTS.md"
    shutil.copytree(tables.DOCS_TABLES, docs_tables)
    # The fixture's cell stands for one the record lacks: drop the record's own Wolof µB-MP (it has more seeds, so it
    # would rightly win over the fixture's two).
    record_csv = docs_tables / "cpu" / "table2.csv"
    record_csv.write_text("".join(line for line in record_csv.read_text().splitlines(keepends=True)
                                  if not line.startswith("table2,cpu,MP,wolof,")))
    monkeypatch.setattr(tables, "DOCS_TABLES", docs_tables)
    monkeypatch.setattr(report, "DOCS_RESULTS", docs_results)
    recorded_m = next(c for c in record_cells(docs_tables) if (c.table, c.scale, c.row, c.column) == ("table2", "cpu", "M", "wolof"))

    assert tables.main([str(experiment), "--workspace", str(workspace_dir), "--update-docs"]) == 0
    assert report.main(["--workspace", str(workspace_dir), "--update-docs"]) == 0
    markdown = (docs_tables / "cpu" / "table2.md").read_text()
    assert "| Wolof ours | paper |" in markdown  # no record column in the record itself
    assert next(line for line in markdown.splitlines() if line.startswith("| µB-MP |")).startswith("| µB-MP | 74.50 ± 0.71 |")
    m_line = next(line for line in markdown.splitlines() if line.startswith("| µB-M |"))
    assert m_line.startswith(f"| µB-M | {tables._cell_text(recorded_m, mark_recorded=False)} † | 77.71 |")
    assert (docs_tables / "cpu" / "table2_delta.png").exists()  # the committed plot is not deleted
    results = docs_results.read_text()
    # Table 2 in RESULTS is the record's alone here (the fixture's file is not a table file): said once, no †.
    assert f"| µB-M | {tables._cell_text(recorded_m, mark_recorded=False)} | 77.71 |" in results
    assert "cpu,table2,MP,wolof,1," in (tmp_path / "docs" / "runs.csv").read_text()
    assert "most likely dev scores" in results and "Table 2: dev\n" not in results  # the note, not the bare split


def test_scale_labels_follow_the_folders():
    assert scale_label("experiments/wolof_m.jsonnet") == "cpu"
    assert scale_label("experiments/smoke/wolof_m.jsonnet") == "smoke"
    assert scale_label("experiments/paper/wolof_m.jsonnet") == "paper"
    assert scale_label("experiments/seeds/wolof_m_5seeds.jsonnet") == "seeds"
    assert scale_label("experiments/decomposition/wolof_cpu_cpu.jsonnet") == "decomposition"
    graphs = [FileGraph("experiments/a.jsonnet", {"corpus": ["LoadCorpus", "id1"]}),
              FileGraph("experiments/long_pretraining/b.jsonnet", {"corpus": ["LoadCorpus", "id1"], "x": ["X", "id2"]})]
    assert scales_of_steps(graphs) == {"id1": ["cpu", "long_pretraining"], "id2": ["long_pretraining"]}
    assert report.scale_of("id1", scales_of_steps(graphs)) == "cpu, long_pretraining"
    assert report.scale_of("gone", scales_of_steps(graphs)) == "no current experiment"


def test_scale_of_a_real_corpus_step(tmp_path):
    """The cpu Wolof corpus step is shared by experiments/ and experiments/seeds; smoke's is its own.
    A second load reads the remembered graphs and gives the same IDs."""
    files = [REPO / "experiments/wolof_data.jsonnet", REPO / "experiments/smoke/wolof_data.jsonnet",
             REPO / "experiments/seeds/wolof_m_5seeds.jsonnet"]
    graphs = load_graphs(files, tmp_path)
    scales = scales_of_steps(graphs)
    cpu_corpus, smoke_corpus = graphs[0].steps["corpus"][1], graphs[1].steps["corpus"][1]
    assert scales[cpu_corpus] == ["cpu", "seeds"] and scales[smoke_corpus] == ["smoke"]
    assert (tmp_path / "reporting" / "graphs.json").exists()
    assert [g.steps for g in load_graphs(files, tmp_path)] == [g.steps for g in graphs]


def test_a_fine_tune_takes_the_scale_of_the_cell_that_scores_it(tmp_path):
    """A paper-scale file runs UD and NER under different regimes: each fine-tune (and so its
    training curve and `reporting.cache ls` row) is labelled with its own task's scale, not the file's first cell's;
    the pretraining both read, with what the two scales share."""
    from reporting.cache import graph_labels

    [graph] = load_graphs([REPO / "experiments/paper/wolof_m.jsonnet"], tmp_path)
    labels = graph_labels([graph])
    scales = {name: labels[unique_id]["scale"] for name, (_, unique_id) in graph.steps.items()}
    assert {scales[f"ud_parser_s{seed}"] for seed in range(42, 47)} == {"gpu-paper_tenth"}
    assert {scales[f"ner_s{seed}"] for seed in range(42, 47)} == {"gpu-paper"}
    assert {cell["scale"] for cell in graph.cells} == {"gpu-paper_tenth", "gpu-paper", "paper"}  # paper: MLM accuracy
    assert scales["mlm_accuracy"] == "paper"
    # each cell knows the seeds its file fine-tunes, so a report can say which are still to run
    from reporting.cells import collect_cells
    cells, _ = collect_cells([REPO / "experiments/paper/wolof_m.jsonnet"], tmp_path, [graph])
    assert {cell.table: cell.planned_seeds for cell in cells if cell.scale.startswith("gpu-")} == {
        "table2": [42, 43, 44, 45, 46], "table3": [42, 43, 44, 45, 46]}
    # Upstream of all three: what their scales share, here nothing, so the file's own scale.
    assert scales["pretrained_model"] == "paper"
    [cpu] = load_graphs([REPO / "experiments/wolof_mxpt_sla.jsonnet"], tmp_path)  # one scale: its own
    assert graph_labels([cpu])[cpu.steps["pretrained_model"][1]]["scale"] == cpu.cells[0]["scale"] == "cpu"


def test_a_shared_step_takes_a_table_files_labels_then_a_checks_then_a_grids(tmp_path):
    """The paper-regime check fine-tunes µB-M with the decomposition grid's own steps: such a step
    is labelled by the check (row M, scale gpu-paper), not by the grid (row "paper", scale "paper"),
    and the encoder all three share by the table file, whatever order the files come in."""
    from reporting.cache import graph_labels

    names = ["experiments/decomposition/wolof_paper_paper.jsonnet", "experiments/paper/paper_regime/wolof_m.jsonnet",
             "experiments/paper/wolof_m.jsonnet"]
    grid, check, table = load_graphs([REPO / name for name in names], tmp_path)
    from reporting.graphs import is_check_file
    checks = {path.parent.name for path in (REPO / "experiments/paper").rglob("*.jsonnet") if is_check_file(str(path.relative_to(REPO)))}
    assert checks == {"paper_regime", "ner_decay"}  # not related/ (its own table's cells), not the table files
    assert grid.steps["ud_parser_s44"] == check.steps["ud_parser_s44"]
    for order in ([grid, check, table], [table, grid, check]):
        labels = graph_labels(order)
        fine_tune = labels[check.steps["ud_parser_s44"][1]]
        assert (fine_tune["condition"], fine_tune["scale"]) == ("M", "gpu-paper")
        assert labels[table.steps["pretrained_model"][1]]["scale"] == "paper"


def test_the_loader_epoch_section_prints_each_records_tail_and_stall_rate(tmp_path):
    record = {"condition": "MXPT-SLA", "batches": 149, "mean_ms": 51.0, "median_ms": 25.0, "p99_ms": 648.0, "slowest_ms": 1680.0,
              "slowest_padded_length": 475, "loader_workers": 10, "queued_batches": 320, "stalls_above_steps_per_second": 190.5,
              "workers_keep_up_to_steps_per_second": 195.0, "note": "after"}
    path = tmp_path / "loader_epoch.jsonl"
    path.write_text(json.dumps(record) + "\n")
    rows = [line for line in report.loader_epoch_section(path).splitlines() if line.startswith("| MXPT-SLA")]
    assert rows == ["| MXPT-SLA | 149 | 51.00 | 25.00 | 648.00 | 1680.00 | 475 | 10 × 32 | 190.50 | 195.00 | after |"]
    assert "not recorded" in report.loader_epoch_section(tmp_path / "absent.jsonl")


def test_the_gpu_pace_section_sets_each_record_against_m_s_fastest(tmp_path):
    """Each pace record is a row: its levers in words and its projected run against µB-M's
    fastest record, the 1.3× bar's ratio, and the record's note (which code it measured)."""
    def record(condition, minutes, compiled):
        return {"condition": condition, "device": "cuda", "gpu": "NVIDIA H100 80GB HBM3", "batch_size": 256, "loader_workers": 10,
                "levers": {"precision": "fp32", "fused_optimizer": True, "compile_encoder": {"mode": "reduce-overhead"} if compiled else None},
                "steps": 3000, "steps_per_second": 62500 / minutes / 60, "full_run_minutes": minutes}

    path = tmp_path / "gpu_pace.jsonl"
    noted = dict(record("MXPT-SLA", 40.0, False), note="before the loader fix")
    path.write_text("".join(json.dumps(r) + "\n" for r in (record("M", 8.0, True), noted, record("M", 10.0, False))))
    rows = [line for line in report.gpu_pace_section(path).splitlines() if line.startswith("| M")]
    assert rows == [
        "| M | NVIDIA H100 80GB HBM3 | fp32, fused AdamW, compiled (reduce-overhead) | 10 | 3000 | 130.21 | 8.00 | 1.00 |  |",
        "| MXPT-SLA | NVIDIA H100 80GB HBM3 | fp32, fused AdamW, eager | 10 | 3000 | 26.04 | 40.00 | 5.00 | before the loader fix |",
        "| M | NVIDIA H100 80GB HBM3 | fp32, fused AdamW, eager | 10 | 3000 | 104.17 | 10.00 | 1.25 |  |"]
    assert "not recorded" in report.gpu_pace_section(tmp_path / "absent.jsonl")


def test_fine_tuning_epoch_costs_come_from_the_runs_logs_or_their_metrics(tmp_path):
    """finetune_epochs reads the loop's epoch lines out of a log (progress-bar redraws, a resumed
    epoch logged twice) or a metrics.json history; the dev share is logged, or epoch 0 stands in."""
    from benchmarks.gpu import finetune_epochs

    def line(task, epoch, record, best=False):
        return (f"  fine-tuning:  5%|5  | 60/2400 [00:05<04:07]\r[11/26/26 22:11:04] INFO     {task} epoch {epoch}: "
                f"{json.dumps(record)}{' (best)' if best else ''}            steps/finetune/loop.py:282\n")

    log = tmp_path / "finetune0-0.log"
    log.write_text(line("parser", 0, {"step": 0, "las": 0.6, "seconds": 5.8})
                   + line("parser", 1, {"step": 200, "las": 23.5, "dev_seconds": 1.0, "seconds": 9.0}, best=True)
                   + line("parser", 2, {"step": 400, "las": 46.2, "dev_seconds": 3.0, "seconds": 12.0})
                   + line("parser", 2, {"step": 400, "las": 46.2, "dev_seconds": 2.0, "seconds": 11.0})  # resumed: the later one counts
                   + line("parser", 3, {"step": 600, "las": 50.0, "dev_seconds": 1.5, "seconds": 7.5}))
    old = tmp_path / "cell" / "seed42" / "x" / "metrics.json"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"task": "ud_parsing", "history": [{"epoch": 0, "step": 0, "seconds": 6.0},
                                                                  {"epoch": 1, "step": 200, "seconds": 14.0},
                                                                  {"epoch": 2, "step": 400, "seconds": 13.0}]}))
    [logged] = finetune_epochs.epoch_costs([log], 10, "paper_tenth", "H100", "after")
    # Medians: epoch of 9, 11, 7.5; dev of 1, 2, 1.5; training of 8, 9, 6 (each epoch's own difference).
    assert (logged["epoch_seconds"], logged["dev_seconds"], logged["train_seconds"]) == (9.0, 1.5, 8.0)
    assert (logged["epochs_timed"], logged["batches_per_epoch"], logged["train_ms_per_step"], logged["dev_from_epoch_0"]) == (3, 200, 40.0, False)
    [older] = finetune_epochs.epoch_costs([old], 7, "paper_tenth", None)
    assert (older["epoch_seconds"], older["dev_seconds"], older["train_seconds"], older["dev_from_epoch_0"]) == (13.5, 6.0, 7.5, True)

    path = tmp_path / "gpu_finetune.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (older, logged)))
    rows = [line for line in report.gpu_finetune_section(path).splitlines() if line.startswith("| ud_parsing")]
    assert rows == ["| ud_parsing | paper_tenth | — | 7 | 1 | 2 | 13.50 | 6.00 (epoch 0) | 37.50 |  |",
                    "| ud_parsing | paper_tenth | H100 | 10 | 1 | 3 | 9.00 | 1.50 | 40.00 | after |"]
    assert "not recorded" in report.gpu_finetune_section(tmp_path / "absent.jsonl")


def test_pretrainings_side_by_side_come_from_the_jobs_own_logs(tmp_path):
    """side_by_side reads each pretraining's log (progress-bar redraws, a resumed run, a stop, the
    first pace window left out) and the nvidia-smi samples; the report prints a row per run."""
    from benchmarks.gpu import side_by_side

    def window(step, rate):
        return f"  pretraining M: 69%|#  | {step}/62500 [01:00<04:00]\r[11/27/26 13:20:41] INFO     step {step}/62500: {rate} steps/s, 5 tokens/s in this window   pretrain.py:259\n"

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "0.log").write_text(
        "[11/27/26 13:19:38] INFO     resuming from step 43170 (checkpoint x/work/checkpoint.pt)\n"
        "[11/27/26 13:19:38] INFO     pretraining M: 1756 parameters, 38322 train rows\n"
        + window(44920, 29.0) + window(50050, 72.2) + window(55600, 92.2) + window(60450, 80.6)
        + '[11/27/26 13:24:21] INFO     step 62500: {"dev_mlm_loss": 3.01014, "dev_loss": 3.0101, "step": 62500}   pretrain.py:551\n')
    (logs / "1.log").write_text(
        "[11/27/26 13:19:38] INFO     pretraining MX: 1756 parameters, 38322 train rows\n"
        + window(750, 12.4).replace(" M:", " MX:") + window(4500, 62.0).replace(" M:", " MX:")
        + '[11/27/26 13:23:25] INFO     step 10000: {"dev_mlm_loss": 4.1982, "dev_xpos_loss": 0.6}\n'
        + window(11000, 40.0).replace(" M:", " MX:")
        + "[11/27/26 13:28:12] INFO     interrupted: stopped after step 12039 of 62500, checkpoint written\n")
    (logs / "2.log").write_text("a target that trains nothing\n")
    smi = tmp_path / "smi.csv"
    smi.write_text("2026/11/27 13:19:06.548, 0 %, 0 MiB\n2026/11/27 13:19:21.5, 40 %, 45 MiB\n"
                   "2026/11/27 13:19:36.6, 0 %, 45 MiB\n2026/11/27 13:19:51.6, 90 %, 46 MiB\n2026/11/27 13:20:06.6, 0 %, 0 MiB\n")
    command = "jobs.py run experiments/paper/wolof_m.jsonnet:pretrained_model experiments/paper/coptic_mx.jsonnet x_tg.jsonnet:lm"
    made = side_by_side.record(logs, smi, command, {"M": 100.0, "MX": 50.0}, "a pace file", device="H200")
    m, mx = made["runs"]
    assert (m["experiment"], mx["experiment"]) == ("experiments/paper/wolof_m.jsonnet", "experiments/paper/coptic_mx.jsonnet")
    assert (m["condition"], m["steps"], m["finished"], m["pace_windows_steps_per_second"]) == ("M", [43170, 62500], True, [72.2, 92.2, 80.6])
    assert m["dev_mlm_loss"] == {"62500": 3.0101}
    assert (mx["steps"], mx["finished"], mx["pace_windows_steps_per_second"], mx["dev_mlm_loss"]) == ([0, 12039], False, [62.0, 40.0], {"10000": 4.1982})
    assert made["gpu_utilisation_percent"]["median_while_training"] == 40  # 40, 0, 90: from the first busy sample to the last
    assert made["share_of_alone_pace"] == {"M": 0.81, "MX": 1.02} and made["together_times_one_at_a_time"] == 1.83

    path = tmp_path / "gpu_side_by_side.jsonl"
    path.write_text(json.dumps(made) + "\n")
    rows = [line for line in report.gpu_side_by_side_records(path).splitlines() if line.startswith(("| Wolof", "| Coptic"))]
    assert rows == ["| Wolof | M | H200 | 2 | 43,170–62,500 | 72.20 | 80.60 | 92.20 | 0.81 | 40 | 62500: 3.0101 |",
                    "| Coptic | MX | H200 | 2 | 0–12,039 (stopped) | 40.00 | 51.00 | 62.00 | 1.02 | 40 | 10000: 4.1982 |"]
    # A record from before runs named their file: the job's files, where they share one language.
    for run in made["runs"]:
        del run["experiment"]
    made["command"] = "jobs.py run experiments/paper/wolof_m.jsonnet:pretrained_model experiments/paper/wolof_mx.jsonnet"
    path.write_text(json.dumps(made) + "\n")
    assert [line.split(" | ")[0] for line in report.gpu_side_by_side_records(path).splitlines() if line.startswith("| Wolof")] == ["| Wolof"] * 2
    assert report.gpu_side_by_side_records(tmp_path / "absent.jsonl") == ""
    # A language whose name holds "_" is read whole, and shown by its title.
    assert report._job_language({"experiment": "experiments/paper/ancient_greek_mx.jsonnet"}, "") == "An. Gk."


def test_the_encoder_pretrained_again_is_compared_seed_by_seed_with_the_first(tmp_path, monkeypatch):
    """The first pretraining's committed cells against this cache's runs of the same steps: shared
    seeds only, again − first with its interval, and a verdict that says bit-identical only when it is."""
    from reporting.graphs import FileGraph

    first = tmp_path / "first"
    def cell(folder, seed, metric, value):
        path = folder / f"seed{seed}" / "metrics.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"seed": seed, "primary_metric": metric, "test": {metric: value}}))
        return path.parent

    for seed, value in ((42, 74.0), (43, 75.0), (44, 74.5)):
        cell(first / "gpu-paper_tenth" / "table2" / "M" / "wolof", seed, "las", value)
    for seed, value in ((42, 88.0), (43, 89.0)):
        cell(first / "gpu-cpu_x2" / "table3" / "M" / "wolof", seed, "f1", value)
    cache = {"ud42": cell(tmp_path / "ud", 42, "las", 75.0), "other42": cell(tmp_path / "other", 42, "f1", 50.0),
             "ner42": cell(tmp_path / "ner", 42, "f1", 88.0), "ner43": cell(tmp_path / "ner", 43, "f1", 89.0)}
    committed = tmp_path / "committed"  # a run this cache lacks, exported before: read from its predictions
    cell(committed / "gpu-paper_tenth" / "table2" / "M" / "wolof", 43, "las", 75.5)
    cell(committed / "gpu-cpu_x2" / "table3" / "M" / "wolof", 42, "f1", 80.0)  # the cache's own run wins
    monkeypatch.setattr(report, "cached_result", lambda workspace, unique_id: cache.get(unique_id))
    graph = FileGraph(report.PRETRAINED_AGAIN_FILE, steps={
        "ud_parser_s42": ["FinetuneUdParser", "ud42"], "ud_parser_s43": ["FinetuneUdParser", "ud43"],
        "ud_parser_s44": ["FinetuneUdParser", "ud44"], "ner_s42": ["FinetuneNer", "other42"],
        "ud_parser_score_s42": ["ScoreCell", "score"]})
    # NER's cells run again are the steps of the file that keeps their regime, not the cell file's own NER.
    [ner_file] = {file for *_, file, _ in report.PRETRAINED_AGAIN if file != report.PRETRAINED_AGAIN_FILE}
    ner_graph = FileGraph(ner_file, steps={"ner_s42": ["FinetuneNer", "ner42"], "ner_s43": ["FinetuneNer", "ner43"]})
    (first / "pretraining.json").write_text(json.dumps({"dev_mlm_loss": {"10000": 4.0816, "62500": 3.011}}))
    release = tmp_path / "release"  # the second pretraining is not in this cache: its release's metrics stand in
    release.mkdir()
    (release / "metrics.json").write_text(json.dumps({"history": [{"step": 10000, "dev_mlm_loss": 4.1112}, {"step": 62500, "dev_mlm_loss": 3.0101}]}))
    text = report.pretrained_again_section(tmp_path, [graph, ner_graph], first, committed, release)
    assert "Dev MLM loss by step, first / again: 10,000: 4.082 / 4.111; 62,500: 3.011 / 3.010." in text
    rows = [line for line in text.splitlines() if line.startswith("| UD") or line.startswith("| NER")]
    # UD: seeds 42, 43 shared (44 not run again): differences 1.0 and 0.5, mean 0.75, t(1) 12.706 × 0.3536 / √2.
    assert rows == ["| UD parsing, test LAS | `paper_tenth` | 42: 74.00, 43: 75.00 | 42: 75.00, 43: 75.50 | 74.50 / 75.25 | +0.75 ± 3.18 | 2 |",
                    "| NER, test F1 | `cpu_x2` | 42: 88.00, 43: 89.00 | 42: 88.00, 43: 89.00 | 88.50 / 88.50 | +0.00 ± 0.00 | 2 |"]
    assert "UD parsing, test LAS: not bit-identical, within seed noise" in text and "NER, test F1: bit-identical" in text
    assert "not available" in report.pretrained_again_section(tmp_path, [], first)


def test_the_in_progress_section_shows_how_far_each_checkpointed_run_got():
    from reporting.cache import Unfinished

    run = Unfinished(unique_id="FinetuneUdParser-003-x", step_class="FinetuneUdParser", state="running", language="wolof",
                     condition="paper", scale="paper", seed=42, unit="epoch", done=133, total=300, steps=26600,
                     metric="dev_las", best=76.01, best_at=122, last=74.87, patience=50)
    assert "| wolof | paper | paper | 42 | FinetuneUdParser | 133/300 epochs | 50 | las | 76.01 | 122 | 74.87 |" in report.in_progress_section([run])
    assert "_no run in progress_" in report.in_progress_section([])


def _t_coverage(q: float, df: int, pieces: int = 20000) -> float:
    """P(|T| ≤ q) for Student's t with df degrees of freedom, by Simpson's rule on its density."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    density = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)  # noqa: E731
    h = q / pieces
    total = density(0) + density(q) + sum((4 if i % 2 else 2) * density(i * h) for i in range(1, pieces))
    return 2 * total * h / 3


def test_t_quantiles():
    textbook = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 10: 2.228, 20: 2.086, 30: 2.042}
    for df, value in textbook.items():
        assert t_quantile_975(df) == pytest.approx(value, abs=5e-4)
    for df in T_975:
        assert _t_coverage(T_975[df], df) == pytest.approx(0.95, abs=2e-6 if df > 1 else 1e-4), df
    assert _t_coverage(t_quantile_975(60), 60) == pytest.approx(0.95, abs=2e-4)  # beyond the table


def test_paired_interval_by_hand():
    m = {"seeds": [1, 2, 3, 4, 5], "test": {"values": [70.1, 71.0, 69.5, 70.7, 70.2]}}
    mx = {"seeds": [3, 1, 2, 5, 4], "test": {"values": [70.4, 71.5, 71.4, 71.2, 71.9]}}  # other order
    differences = [71.5 - 70.1, 71.4 - 71.0, 70.4 - 69.5, 71.9 - 70.7, 71.2 - 70.2]
    mean = sum(differences) / 5
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 4)
    found = paired_difference(mx, m)
    assert found.n == 5 and found.mean == pytest.approx(mean)
    assert found.half_width == pytest.approx(2.776445 * sd / math.sqrt(5))
    assert found.text() == f"{mean:+.2f} ± {2.776445 * sd / math.sqrt(5):.2f}"
    # unpaired seeds are said, not paired by position
    assert paired_difference({"seeds": [6], "test": {"values": [1.0]}}, m).text().startswith("unpaired seeds")
    assert interval([2.0]).text() == "+2.00 (1 seed, no interval)"
    # a condition with 3 of µB-M's 5 seeds pairs over those 3, and says so
    three = {"seeds": [2, 1, 3], "test": {"values": [71.4, 71.5, 70.4]}}
    shared = paired_difference(three, m)
    first = differences[:3]
    sd3 = statistics.stdev(first)
    assert shared.n == 3 and shared.mean == pytest.approx(statistics.fmean(first))
    assert shared.text() == f"{statistics.fmean(first):+.2f} ± {4.302653 * sd3 / math.sqrt(3):.2f} (3 shared seeds)"
    assert paired_difference({"seeds": [1, 9], "test": {"values": [71.5, 0.0]}}, m).text() == "+1.40 (1 shared seed, 1 seed, no interval)"
    assert paired_difference({"seeds": [1], "test": {"values": None}}, m).mean is None
    assert statistics.fmean(differences) == pytest.approx(mean)


def test_welch_interval_by_hand():
    """Unpaired: the difference of means ± t(0.975, ⌊ν⌋)·√(s₁²/n₁ + s₂²/n₂), ν by Welch–Satterthwaite; its
    coverage checked on the t density; a seed that moves both cells alike stays in it, not in the paired one."""
    sla, m = [77.00, 75.88, 76.40], [76.19, 76.05, 76.71, 75.90]
    v1, v2 = statistics.variance(sla) / 3, statistics.variance(m) / 4
    nu = (v1 + v2) ** 2 / (v1 ** 2 / 2 + v2 ** 2 / 3)
    assert 2 < nu < 5
    found = welch_difference(sla, m)
    assert found.mean == pytest.approx(sum(sla) / 3 - sum(m) / 4)
    assert _t_coverage(found.half_width / math.sqrt(v1 + v2), math.floor(nu)) == pytest.approx(0.95, abs=1e-5)
    assert found.text() == f"{found.mean:+.2f} ± {found.half_width:.2f} (unpaired, Welch, 3 vs 4 seeds)"
    assert welch_difference([1.0], m).text().endswith("(unpaired, Welch, 1 vs 4 seeds, no interval)")
    assert welch_difference([2.0, 2.0], [1.0, 1.0]).text() == "+1.00 ± 0.00 (unpaired, Welch, 2 vs 2 seeds)"
    # a seed that moves both cells alike: pairing removes it, the unpaired interval keeps it
    base, shifted = [70.0, 72.0, 74.0], [70.6, 72.4, 74.5]
    paired = paired_difference({"seeds": [1, 2, 3], "test": {"values": shifted}}, {"seeds": [1, 2, 3], "test": {"values": base}})
    assert welch_difference(shifted, base).mean == pytest.approx(paired.mean)
    assert welch_difference(shifted, base).half_width > 10 * paired.half_width


def test_update_docs_keeps_the_report_rows_the_cache_lacks():
    """A committed row this cache has no row for is kept, marked † (columns matched by header, a new
    column reads —); a row the cache has again is the cache's; an empty section keeps the record's
    table; the pretraining bullets are kept by their label; a second rewrite changes nothing."""
    recorded = "\n".join([
        "# Results", "", "## Pretraining", "",
        "| language | condition | steps | batch | train rows | loss |", "|---|---|---|---|---|---|",
        "| wolof | M | 3000 | 64 | 11127 | 5.99 |", "| wolof | MX | 3000 | 64 | 11127 | 5.92 |", "",
        "Dev MLM loss per validation (step: loss):", "",
        "- µB-M (wolof, 3000 steps): 500: 6.6", "- µB-MX (wolof, 3000 steps): 500: 6.4", "",
        "## Corpus parse throughput", "",
        "| language | parser | train sentences parsed | sentences/s | tokens/s |", "|---|---|---|---|---|",
        "| wolof | stanza | 10000 | 32.54 | 536.04 |", "",
        "## Pretraining step benchmark", "", "| model | ms |", "|---|---|", "| old | 1 |", ""])
    fresh = "\n".join([
        "# Results", "", "## Pretraining", "",
        "| language | condition | steps | batch | train rows | loss |", "|---|---|---|---|---|---|",
        "| wolof | MX | 3000 | 64 | 11127 | 5.80 |", "",
        "Dev MLM loss per validation (step: loss):", "", "- µB-MX (wolof, 3000 steps): 500: 6.3", "",
        "## Corpus parse throughput", "", "note", "", report.NOTHING,
        "## Pretraining step benchmark", "", "| model | ms |", "|---|---|", "| new | 2 |", ""])
    merged = report.keep_record(fresh, recorded)
    sections = report.report_sections(merged)
    pretraining = sections["Pretraining"].splitlines()
    assert "| wolof | MX | 3000 | 64 | 11127 | 5.80 |" in pretraining and "| wolof † | M | 3000 | 64 | 11127 | 5.99 |" in pretraining
    assert not any("5.92" in line for line in pretraining)
    assert "- µB-M † (wolof, 3000 steps): 500: 6.6".replace(" †", "") not in pretraining
    assert "- µB-M (wolof, 3000 steps) †: 500: 6.6" in pretraining and "- µB-MX (wolof, 3000 steps): 500: 6.3" in pretraining
    assert sum(line.startswith("- µB-MX") for line in pretraining) == 1
    throughput = sections["Corpus parse throughput"]  # every row the record's: said once, no †
    assert "| wolof | stanza | 10000 | 32.54 | 536.04 |" in throughput and "note" in throughput
    assert report.NOTHING.strip() not in throughput and report.RECORD_ONLY_NOTE in throughput and report.KEPT not in throughput
    assert sections["Pretraining step benchmark"] == report.report_sections(fresh)["Pretraining step benchmark"]  # not a record section
    assert report.keep_record(merged, merged) == merged
    # A new column the record lacks reads —; rows are named by their key columns, wherever they are.
    assert report.RECORD_ROW_KEYS["Pretraining"] == ("language", "condition", "steps", "batch", "train rows")
    wider = fresh.replace("| loss |", "| loss | official |").replace("|---|---|---|---|---|---|", "|---|---|---|---|---|---|---|", 1) \
        .replace("5.80 |", "5.80 | 70.1 |")
    assert "| wolof † | M | 3000 | 64 | 11127 | 5.99 | — |" in report.keep_record(wider, recorded)


def test_update_docs_keeps_the_figures_the_cache_does_not_redraw(tmp_path):
    """A committed figure link this cache does not draw is kept under the † note if its PNG is still
    there, dropped if it is not; a redrawn one is listed once; a second rewrite changes nothing."""
    (tmp_path / "curves" / "cpu").mkdir(parents=True)
    for name in ("wolof_ud_dev_las", "maltese_ud_dev_las"):
        (tmp_path / "curves" / "cpu" / f"{name}.png").write_bytes(b"png")
    recorded = "\n".join(["# Results", "", "## Training curves", "", "Drawn from the cache.", "",
                           "![wolof_ud_dev_las](curves/cpu/wolof_ud_dev_las.png)",
                           "![maltese_ud_dev_las](curves/cpu/maltese_ud_dev_las.png)",
                           "![gone](curves/cpu/gone.png)", "", "## Pretraining step benchmark", "", "x", ""])
    fresh = "\n".join(["# Results", "", "## Training curves", "", "Drawn from the cache.", "",
                        "![maltese_ud_dev_las](curves/cpu/maltese_ud_dev_las.png)", "", "## Pretraining step benchmark", "", "x", ""])
    merged = report.keep_record(fresh, recorded, tmp_path)
    curves = report.report_sections(merged)["Training curves"].splitlines()
    assert curves.count("![maltese_ud_dev_las](curves/cpu/maltese_ud_dev_las.png)") == 1
    assert report.KEPT_FIGURES_NOTE in curves
    assert curves.index("![wolof_ud_dev_las](curves/cpu/wolof_ud_dev_las.png)") > curves.index(report.KEPT_FIGURES_NOTE)
    assert not any("gone" in line for line in curves)
    assert report.keep_record(merged, merged, tmp_path) == merged
    # An empty cache keeps the record's figures in place of its placeholder; without a folder, none.
    empty = fresh.replace("Drawn from the cache.\n\n![maltese_ud_dev_las](curves/cpu/maltese_ud_dev_las.png)\n", report.NOTHING)
    kept = report.report_sections(report.keep_record(empty, recorded, tmp_path))["Training curves"]
    assert report.NOTHING.strip() not in kept and "wolof_ud_dev_las" in kept and "maltese_ud_dev_las" in kept
    from reporting.curves import INTRO
    assert kept.index(INTRO) < kept.index(report.KEPT_FIGURES_NOTE)  # what the lines are, still said first
    assert report.keep_record(empty, recorded) == empty


def test_the_record_keeps_each_seeds_dev_score(tmp_path):
    """The tables' CSV carries the per-seed dev scores, so a cell read back from the record (its
    cache lost) still has its dev mean and sd, as the scoring step computed them."""
    cell = Cell("table2", "cpu", "M", "wolof", {
        "seeds": [42, 43, 44], "n": 3, "test": {"mean": 68.0, "sd": 1.0, "values": [67.0, 68.0, 69.0]},
        "dev": {"mean": 70.0, "sd": 2.0, "values": [68.0, 70.0, 72.0]}})
    columns, table_rows = tables.build_table("table2", "cpu", [cell], json.loads(tables.PAPER_TABLES.read_text()))
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "table2.csv").write_text(tables.to_csv("table2", "cpu", columns, table_rows, [cell]))
    (back,) = record_cells(tmp_path)
    assert back.recorded and back.result["dev"]["values"] == [68.0, 70.0, 72.0]
    assert back.result["dev"]["mean"] == pytest.approx(70.0) and back.result["dev"]["sd"] == pytest.approx(2.0)
    assert back.result["test"]["values"] == [67.0, 68.0, 69.0]


def test_throughput_rows_are_named_by_language():
    """Two languages' corpus parses of the same size are two rows of record, not one."""
    assert report.RECORD_ROW_KEYS["Corpus parse throughput"][0] == "language"
    recorded = "\n".join(["# Results", "", "## Corpus parse throughput", "",
                           "| parser | train sentences parsed | sentences/s | tokens/s |", "|---|---|---|---|",
                           "| stanza | 10000 | 32.54 | 536.04 |", ""])
    fresh = "\n".join(["# Results", "", "## Corpus parse throughput", "",
                        "| language | parser | train sentences parsed | sentences/s | tokens/s |", "|---|---|---|---|---|",
                        "| maltese | stanza | 10000 | 107.36 | 1500.49 |", ""])
    rows = report.report_sections(report.keep_record(fresh, recorded))["Corpus parse throughput"].splitlines()
    assert "| maltese | stanza | 10000 | 107.36 | 1500.49 |" in rows and "| — † | stanza | 10000 | 32.54 | 536.04 |" in rows


def test_corpus_parser_against_fine_tuned_encoder(tmp_path):
    """The corpus parser's test LAS comes from the committed report when this cache has no corpus
    parser (stanza rows only, † stripped); each language with a µB-M cell gets one row, with µB-M
    minus the corpus parser and the paper's µB-M beside it."""
    recorded = "\n".join(["# Results", "", f"## {report.CORPUS_PARSERS}", "", "note", "",
                           "| language | backend | dev LAS | test LAS |", "|---|---|---|---|",
                           "| wolof † | stanza | 70.81 | 71.99 |", "| wolof † | udpipe | 69.38 | 70.15 |",
                           "| maltese | stanza | 76.03 | 74.31 |", "", "## Pretraining", "", "x", ""])
    las = report.corpus_parser_las(LocalWorkspace(tmp_path / "ws"), recorded)
    assert las == {"wolof": {"record": 71.99}, "maltese": {"record": 74.31}}
    result = lambda values: {"seeds": list(range(len(values))), "n": len(values),  # noqa: E731
                             "test": {"mean": statistics.fmean(values), "sd": statistics.stdev(values), "values": values}}
    cells = [Cell("table2", "cpu", "M", "wolof", result([68.0, 69.0]), recorded=True),
             Cell("table2", "cpu", "random-init", "wolof", result([67.0, 67.0])),
             Cell("table2", "paper", "M", "maltese", result([80.0, 80.0]))]  # another scale: no Maltese row
    rows = [line for line in report.parser_against_encoder_section(cells, las).splitlines() if line.startswith("| ")]
    assert rows[1:] == ["| wolof | 71.99 † | 68.50 ± 0.71 † | -3.49 | 67.00 ± 0.00 | 77.71 |"]
    assert report.parser_against_encoder_section(cells[2:], las) == report.NOTHING
    # A parser trained again in this cache: the recorded µB-M cell keeps the recorded parser (its
    # run's); a cached µB-M cell takes the cache's parser.
    las["wolof"]["cache"] = 71.49
    rows = [line for line in report.parser_against_encoder_section(cells, las).splitlines() if line.startswith("| ")]
    assert rows[1] == "| wolof | 71.99 † | 68.50 ± 0.71 † | -3.49 | 67.00 ± 0.00 | 77.71 |"
    cells[0].recorded = False
    rows = [line for line in report.parser_against_encoder_section(cells, las).splitlines() if line.startswith("| ")]
    assert rows[1] == "| wolof | 71.49 | 68.50 ± 0.71 | -2.99 | 67.00 ± 0.00 | 77.71 |"
    # Rows follow the paper's column order, not the order the sources were read in (cache first).
    cells.append(Cell("table2", "cpu", "M", "maltese", result([70.0, 70.0])))
    las = {"maltese": {"cache": 74.31}, "wolof": las["wolof"]}
    rows = [line for line in report.parser_against_encoder_section(cells, las).splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == ["| wolof", "| maltese"]
    # The record's own pairing wins over the order of its ‡ rows (three runs of one step: the cache's,
    # reproducing the run behind the committed cells exactly, and two others).
    recorded = "\n".join(["# Results", "", f"## {report.PARSER_AGAINST_ENCODER}", "", "note", "",
                           "| language | corpus parser | µB-M (± sd) |", "|---|---|---|", "| wolof | 71.68 † | 68.51 ± 0.36 † |", "",
                           f"## {report.CORPUS_PARSERS}", "", "| language | backend | test LAS |", "|---|---|---|",
                           "| wolof | stanza | 71.68 |", "| wolof ‡ | stanza | 72.03 |", "| wolof ‡ | stanza | 72.08 |", ""])
    assert report.corpus_parser_las(LocalWorkspace(tmp_path / "ws"), recorded) == {"wolof": {"record": 71.68}}


def test_a_step_run_again_that_does_not_reproduce_its_record_shows_both_rows(tmp_path):
    """Where this cache's row and the committed row of the same name differ in a result column,
    the committed row stays under it, marked ‡, with its note; rows that differ only in timings,
    or not at all, are this cache's alone; a second rewrite changes nothing."""
    title = report.CORPUS_PARSERS
    assert report.RECORD_RESULT_COLUMNS[title] == ("test UPOS", "dev LAS", "test UAS", "test LAS")
    header = ["| language | backend | parser min | test UPOS | dev LAS | test UAS | test LAS |", "|---|---|---|---|---|---|---|"]
    recorded = "\n".join(["# Results", "", f"## {title}", "", *header,
                           "| wolof | stanza | 8.41 | 93.26 | 70.40 | 80.47 | 72.08 |",
                           "| coptic | stanza | 5.45 | 96.40 | 83.83 | 88.36 | 84.66 |", "", "## Pretraining", "", "x", ""])
    fresh = "\n".join(["# Results", "", f"## {title}", "", *header,
                        "| wolof | stanza | 4.12 | 93.22 | 70.39 | 80.12 | 71.68 |",
                        "| coptic | stanza | 4.00 | 96.40 | 83.83 | 88.36 | 84.66 |", "", "## Pretraining", "", "x", ""])
    merged = report.keep_record(fresh, recorded)
    rows = [line for line in report.report_sections(merged)[title].splitlines() if line.startswith("| ")]
    assert rows[1:] == ["| wolof | stanza | 4.12 | 93.22 | 70.39 | 80.12 | 71.68 |",
                        "| wolof ‡ | stanza | 8.41 | 93.26 | 70.40 | 80.47 | 72.08 |",
                        "| coptic | stanza | 4.00 | 96.40 | 83.83 | 88.36 | 84.66 |"]
    assert report.EARLIER_NOTE in merged and report.KEPT_NOTE not in merged
    assert report.keep_record(merged, merged) == merged
    assert report.keep_record(fresh, merged) == merged  # the record's ‡ row, once
    assert report.keep_record(fresh, fresh) == fresh
    # A cache without the step keeps both committed rows, each with its mark, and both notes.
    elsewhere = fresh.replace("| wolof | stanza | 4.12 | 93.22 | 70.39 | 80.12 | 71.68 |\n", "")
    rows = [line for line in report.report_sections(report.keep_record(elsewhere, merged))[title].splitlines() if line.startswith("| ")]
    assert rows[1:] == ["| coptic | stanza | 4.00 | 96.40 | 83.83 | 88.36 | 84.66 |",
                        "| wolof † | stanza | 4.12 | 93.22 | 70.39 | 80.12 | 71.68 |",
                        "| wolof ‡ | stanza | 8.41 | 93.26 | 70.40 | 80.47 | 72.08 |"]
    assert report.EARLIER_NOTE in report.keep_record(elsewhere, merged) and report.KEPT_NOTE in report.keep_record(elsewhere, merged)
    # A cache whose run reproduces the ‡ row's figures drops that row; the other committed run is now the ‡ one.
    again = fresh.replace("4.12 | 93.22 | 70.39 | 80.12 | 71.68", "9.00 | 93.26 | 70.40 | 80.47 | 72.08")
    rows = [line for line in report.report_sections(report.keep_record(again, merged))[title].splitlines() if line.startswith("| wolof")]
    assert rows == ["| wolof | stanza | 9.00 | 93.26 | 70.40 | 80.47 | 72.08 |", "| wolof ‡ | stanza | 4.12 | 93.22 | 70.39 | 80.12 | 71.68 |"]
    # Once committed, the ‡ row, the earlier run, is the record's parser figure for the against-µB-M table.
    assert report.corpus_parser_las(LocalWorkspace(tmp_path / "ws"), merged)["wolof"] == {"record": 72.08}


def test_a_corpus_variant_is_named_beside_its_language():
    """Report rows of the leak-free Coptic corpus parser and pretraining name the corpus folder."""
    from types import SimpleNamespace

    def info(name, config, dependencies=()):
        return SimpleNamespace(unique_id=name, config=config, dependencies=set(dependencies))

    def corpus(path):
        return {"type": "load_corpus", "language": "coptic", "corpus": {"path": path}}

    steps = {
        "variant": info("variant", corpus("coptic/corpus_no_ud_devtest")), "own": info("own", corpus("coptic/corpus")),
        "vectors": info("vectors", {"type": "train_word_vectors"}, ["variant"]),
        "parser": info("parser", {"type": "train_corpus_parser", "language": "coptic"}, ["vectors"]),
        "pretrain": info("pretrain", {"type": "pretrain_microbert"}, ["parser"]),
        "own_pretrain": info("own_pretrain", {"type": "pretrain_microbert"}, ["own"]),
        "lonely": info("lonely", {"type": "pretrain_microbert"}),
    }
    workspace = SimpleNamespace(step_info=lambda name: steps[name])
    assert report.language_of(workspace, steps["parser"]) == "coptic (corpus_no_ud_devtest)"
    assert report.language_of(workspace, steps["pretrain"]) == "coptic (corpus_no_ud_devtest)"
    assert report.language_of(workspace, steps["own_pretrain"]) == "coptic"
    assert report.language_of(workspace, steps["lonely"]) == "?"


def test_a_pretraining_row_names_what_sets_its_run_apart_from_its_condition():
    """The decomposition's cpu_relpos encoder and a GPU lever run are rows of their own in the
    report, not a second unexplained "wolof | M" row beside the cpu µB-M."""
    from reporting.report import condition_label

    plain = {"condition": "M", "model_config": {"position_embedding_type": "absolute"}, "precision": "fp32", "fused_optimizer": False}
    assert condition_label(plain) == "M"
    assert condition_label({"condition": "MXPT-SLA"}) == "MXPT-SLA"  # an older metrics.json
    relpos = dict(plain, model_config={"position_embedding_type": "relative_key_query"})
    assert condition_label(relpos) == "M [relative_key_query positions]"
    levers = dict(plain, condition="MXPT-SLA", precision="bf16", fused_optimizer=True, compile_encoder={"mode": "reduce-overhead"})
    assert condition_label(levers) == "MXPT-SLA [bf16, fused AdamW, compiled encoder]"
    assert condition_label(dict(levers, compile_objectives={})) == "MXPT-SLA [bf16, fused AdamW, compiled encoder, compiled P/T losses]"


def test_committed_curves_keep_their_lines_when_a_partial_cache_redraws_them(tmp_path, monkeypatch):
    """A figure of record is redrawn from its sidecar's lines plus the cache's (the cache wins on a
    shared label), never from the cache's alone; a committed PNG without a sidecar is left as it is."""
    import json

    from reporting import curves

    key = ("cpu", "wolof", "ud_dev_las")
    figure = tmp_path / "cpu" / "wolof_ud_dev_las.png"
    monkeypatch.setattr(curves, "curve_series", lambda entries: {key: {"M s42": [(0, 1.0), (1, 60.0)]}})
    assert curves.draw_curves([], tmp_path, keep_recorded=True) == [figure]

    def lines():
        return json.loads(figure.with_suffix(".json").read_text())["lines"]

    assert lines() == {"M s42": [[0, 1.0], [1, 60.0]]}
    monkeypatch.setattr(curves, "curve_series", lambda entries: {key: {"M s42": [(0, 2.0)], "cpu_relpos s42": [(0, 3.0)]}})
    curves.draw_curves([], tmp_path, keep_recorded=True)
    assert lines() == {"M s42": [[0, 2.0]], "cpu_relpos s42": [[0, 3.0]]}
    monkeypatch.setattr(curves, "curve_series", lambda entries: {key: {"random-init s42": [(0, 4.0)]}})
    curves.draw_curves([], tmp_path, keep_recorded=True)
    assert set(lines()) == {"M s42", "cpu_relpos s42", "random-init s42"}
    curves.draw_curves([], tmp_path)  # a workspace report draws this cache alone
    assert set(lines()) == {"random-init s42"}

    figure.with_suffix(".json").unlink()  # a figure committed before sidecars
    before = figure.read_bytes()
    assert curves.draw_curves([], tmp_path, keep_recorded=True) == []
    assert figure.read_bytes() == before and not figure.with_suffix(".json").exists()


def test_a_curves_seeds_of_one_model_share_a_colour_and_differ_in_dash():
    """reporting.curves.line_styles: one colour per condition / LM kind, one dash per seed within it
    (a cache-suffixed label is the same family); a label without a seed stands alone."""
    from reporting.curves import line_styles

    styles = line_styles(["tg s43", "tg s42", "txl_trees s42", "MX s44 (a1b2c3)", "MX s42", "trigram"])
    colours = {label: style["color"] for label, style in styles.items()}
    assert colours["tg s42"] == colours["tg s43"] and colours["MX s42"] == colours["MX s44 (a1b2c3)"]
    assert len({colours["tg s42"], colours["txl_trees s42"], colours["MX s42"], colours["trigram"]}) == 4
    assert [styles[label]["linestyle"] for label in ("tg s42", "tg s43", "MX s42", "MX s44 (a1b2c3)", "trigram")] == ["-", "--", "-", "--", "-"]
    # eleven conditions in one figure (a cpu-scale language's grid): still eleven colours
    eleven = line_styles([f"{row} s42" for row in ("M", "MP", "MPT", "MPT-SLA", "MT", "MX", "MXP", "MXPT", "MXPT-SLA", "MXT", "random-init")])
    assert len({style["color"] for style in eleven.values()}) == 11


def test_runs_csv_keeps_the_records_runs_and_says_which_are_not_their_cells_record(tmp_path):
    """runs.csv: a committed run this cache lacks is kept (source record), a cached run of the same
    name replaces it; each run says whether its cell's record holds its figure, and RESULTS names
    every run that is not, so no cell has two figures without a word."""
    cell = tables.Cell("table2", "cpu", "MXPT-SLA", "wolof", {
        "seeds": [42, 43, 44], "n": 3, "test": {"mean": 67.46, "sd": 0.17, "values": [67.52, 67.27, 67.60]}}, recorded=True)
    run = lambda seed, test, source: {"scale": "cpu", "table": "table2", "row": "MXPT-SLA", "column": "wolof", "seed": str(seed),  # noqa: E731
                                      "metric": "las", "dev": "", "test": test, "official_las_test": "", "finetune_minutes": "",
                                      "device": "cpu", "source": source}
    cached = [run(42, "67.52", "cache")]
    recorded = [run(42, "68.55", "record"), run(43, "68.06", "record"), run(45, "69.10", "record")]
    runs = report.merged_runs(cached, recorded, [cell])
    assert [(r["seed"], r["test"], r["source"]) for r in runs] == [("42", "67.52", "cache"), ("43", "68.06", "record"), ("45", "69.10", "record")]
    assert [r["cell_record"] for r in runs] == ["yes", "no: another run; the record's seed 43 reads 67.27",
                                                "no: not one of the record's seeds (42 43 44)"]
    text = report.runs_section(runs)
    assert "2 of these runs are not their cell's record" in text
    assert "table2 MXPT-SLA wolof (cpu) seed 43: another run of the cell" in text and "seed 45: a seed the record does not use" in text
    (tmp_path / "runs.csv").write_text(report.runs_csv_text(runs), encoding="utf-8")
    back = report.recorded_runs(tmp_path / "runs.csv", None)
    assert [(r["seed"], r["test"], r["source"]) for r in back] == [("42", "67.52", "record"), ("43", "68.06", "record"), ("45", "69.10", "record")]
    # Before runs.csv existed, the committed report's runs table is the record.
    legacy = "\n".join(["# Results", "", "## Fine-tuning runs (one per task, encoder and seed)", "",
                        "| scale | table | row | column | seed | metric | dev | test | official LAS (test) | fine-tune min | device |",
                        "|---|---|---|---|---|---|---|---|---|---|---|", "| cpu † | table2 | M | wolof | 42 | las | 68.65 | 68.45 | 70.07 | 5.81 | cpu |", ""])
    (row,) = report.recorded_runs(tmp_path / "absent.csv", legacy)
    assert (row["scale"], row["seed"], row["test"], row["official_las_test"], row["source"]) == ("cpu", "42", "68.45", "70.07", "record")


def test_runs_csv_gains_the_committed_predictions_runs_that_no_cache_or_record_holds(tmp_path):
    """A seed exported to docs/predictions/ from a cache since gone is a runs.csv row (its cell, test,
    dev, official LAS, minutes and device read from its metrics.json); a seed the cache or runs.csv
    already holds keeps that row, and an export that names no cell is passed over."""
    def export(folder, seed, test, cell=True):
        metrics = {"primary_metric": "las", "seed": seed, "train_seconds": 2100.0, "device": "cpu",
                   "dev": {"las": 83.5}, "test": {"las": test}, "udeval": {"LAS": test - 0.4}}
        if cell:
            metrics["cell"] = {"scale": "gpu-paper_tenth", "table": "table2", "row": "random-init", "column": "coptic", "seed": seed}
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")

    export("seed42", 42, 84.901)
    export("seed43", 43, 84.7)
    export("seed44", 44, 80.0, cell=False)
    predicted = report.predicted_runs(tmp_path)
    assert [(r["seed"], r["test"], r["dev"], r["official_las_test"], r["finetune_minutes"], r["source"]) for r in predicted] == [
        ("42", "84.90", "83.50", "84.50", "35.00", "record"), ("43", "84.70", "83.50", "84.30", "35.00", "record")]
    recorded = [dict(predicted[1], test="84.71", official_las_test="")]  # runs.csv's row of seed 43 stands
    runs = report.merged_runs([], recorded, [], predicted)
    assert [(r["seed"], r["test"]) for r in runs] == [("42", "84.90"), ("43", "84.71")]
    assert report.predicted_runs(tmp_path / "absent") == []


def test_a_cell_whose_every_seed_is_exported_is_aggregated_from_them(tmp_path):
    """A cell whose seeds were fine-tuned in separate caches has no aggregate anywhere; once every seed
    its files plan is exported to docs/predictions/, the record aggregates them (mean, sample sd, per
    seed test and dev, in seed order), checked here by hand. A cell still missing a seed, or one this
    cache already aggregates, gets nothing from the exports."""
    from reporting.cells import exported_cells

    tests, devs = {43: 84.79, 42: 84.90, 46: 84.70}, {43: 83.69, 42: 84.28, 46: 83.51}
    for row in ("random-init", "M"):
        for seed in tests:
            folder = tmp_path / "gpu-paper_tenth" / "table2" / row / "coptic" / f"seed{seed}"
            folder.mkdir(parents=True)
            metrics = {"primary_metric": "las", "task": "ud_parsing", "test": {"las": tests[seed]}, "dev": {"las": devs[seed]},
                       "cell": {"scale": "gpu-paper_tenth", "table": "table2", "row": row, "column": "coptic", "seed": seed}}
            (folder / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    planned = [42, 43, 46]
    cells = [Cell("table2", "gpu-paper_tenth", "random-init", "coptic", planned_seeds=planned),
             Cell("table2", "gpu-paper_tenth", "random-init", "wolof", planned_seeds=planned),  # nothing exported
             Cell("table2", "gpu-paper_tenth", "M", "coptic", {"seeds": [42], "n": 1, "test": {"mean": 88.0, "sd": 0.0, "values": [88.0]}},
                  planned_seeds=planned),  # aggregated in this cache already
             Cell("table2", "gpu-paper_tenth", "MX", "coptic", planned_seeds=planned)]
    (assembled,) = exported_cells(tmp_path, cells)
    values = [tests[seed] for seed in planned]
    assert (assembled.row, assembled.column, assembled.recorded, assembled.result["seeds"]) == ("random-init", "coptic", True, planned)
    assert assembled.result["test"]["values"] == values and assembled.result["dev"]["values"] == [devs[s] for s in planned]
    assert math.isclose(assembled.result["test"]["mean"], sum(values) / 3)
    assert math.isclose(assembled.result["test"]["sd"], math.sqrt(sum((v - sum(values) / 3) ** 2 for v in values) / 2))
    cells[0].planned_seeds = [42, 43, 44, 46]  # seed 44 still to run: no figure yet
    assert exported_cells(tmp_path, cells) == [] and exported_cells(tmp_path / "absent", cells) == []


def test_the_paper_question_pairs_each_bias_with_m_beside_the_papers_delta():
    """Per scale, each syntactic-bias condition − µB-M, paired by seed with its 95 % interval, the
    paper's own Δ beside it (its condition minus its µB-M), the shared seeds, and a verdict computed
    from the intervals; a scale with µB-M and random-init only is named as having no bias cell yet."""
    def cell(table, scale, row, column, values):
        return tables.Cell(table, scale, row, column, {"seeds": [42, 43, 44][:len(values)], "n": len(values),
                                                       "test": {"mean": statistics.fmean(values), "sd": None, "values": values}})
    cells = [cell("table2", "cpu", "M", "wolof", [68.0, 68.2, 68.4]), cell("table2", "cpu", "MX", "wolof", [69.0, 69.3, 69.5]),
             cell("table2", "cpu", "random-init", "wolof", [67.0, 67.0, 67.0]),
             cell("table3", "cpu", "M", "wolof", [83.0, 84.0, 85.0]), cell("table3", "cpu", "MX", "wolof", [83.5, 83.0, 86.0]),
             cell("table2", "gpu-paper_tenth", "M", "wolof", [74.0, 75.0]), cell("table2", "gpu-paper_tenth", "random-init", "wolof", [69.0, 69.5])]
    text = report.question_section(cells)
    paper = json.loads(tables.PAPER_TABLES.read_text())
    ud = paired_difference(cells[1].result, cells[0].result)
    ner = paired_difference(cells[4].result, cells[3].result)
    ud_paper = paper["table2"]["rows"]["MX"]["wolof"] - paper["table2"]["rows"]["M"]["wolof"]
    ner_paper = paper["table3"]["rows"]["MX"]["wolof"] - paper["table3"]["rows"]["M"]["wolof"]
    row = next(line for line in text.splitlines() if line.startswith("| Wolof | µB-MX |"))
    assert row == (f"| Wolof | µB-MX | {ud.mean:+.2f} ± {ud.half_width:.2f} | {ud_paper:+.2f} | 42–44 | "
                   f"{ner.mean:+.2f} ± {ner.half_width:.2f} | {ner_paper:+.2f} | 42–44 |")
    assert ud.mean - ud.half_width > 0 and ner.mean - ner.half_width < 0 < ner.mean + ner.half_width
    assert "Of 2 differences, 1 lies above 0 (µB-MX Wolof UD LAS" in text and "and 0 below 0; the other 1 includes 0." in text
    one = report.question_section(cells[3:5])  # NER alone: one difference, its interval across 0
    assert f"The one difference's interval includes 0 (µB-MX Wolof NER F1 {ner.mean:+.2f} ± {ner.half_width:.2f})." in one
    assert "µB-random-init" not in text and "No syntactic-bias condition has cells yet at `gpu-paper_tenth`" in text
    coptic = report.question_section(cells + [cell("table2", "cpu", "M", "coptic", [84.0, 84.5, 85.0])])
    assert "\nCoptic: µB-M only so far (UD LAS 84.50, 42–44), no syntactic-bias condition beside it at this scale.\n" in coptic
    assert "Wolof: µB-M only" not in coptic and "Coptic: µB-M only" not in text
    # A regime that is no task's chosen one (configs/scales.libsonnet `chosen`) is a check: its own
    # section, after the tables, and not the question's.
    assert report.check_scale("gpu-paper_ner_decay") and not report.check_scale("gpu-paper") and not report.check_scale("cpu")
    checked = cells + [cell("table3", "gpu-paper_ner_decay", row, "wolof", values) for row, values in (("M", [84.0, 85.0]), ("MX", [83.0, 85.5]))]
    assert "gpu-paper_ner_decay" not in report.question_section(checked)
    assert "### Scale `gpu-paper_ner_decay`" in (checks := report.question_section(checked, checks=True)) and "`cpu`" not in checks
    assert report.question_section(cells, checks=True) == report.NOTHING
    assert "NER F1" in (headline := report.question_headline(report.question_points(checked))) and "`paper_ner_decay` check regime, seeds 42, 43" in headline


def _tables_of(text: str):
    """(the lines above a Markdown table's header, its header, its rows) of every table in ``text``."""
    lines = text.splitlines()
    found = []
    for i in range(len(lines) - 1):
        if lines[i].startswith("| ") and lines[i + 1].startswith("|---") and not (i and lines[i - 1].startswith("| ")):
            end = i + 2
            while end < len(lines) and lines[end].startswith("| "):
                end += 1
            found.append((lines[max(0, i - 2):i], lines[i], lines[i + 2:end]))
    return found


def _check_results_layout(text: str):
    head = text.splitlines()[:120]
    assert "## The paper's question" in head and "## Headline findings" in head
    assert head.index("## The paper's question") < head.index("## Headline findings")
    assert any(line.startswith("### Table 2: UD parsing") for line in head)
    for above, header, rows in _tables_of(text):
        if any("±" in row for row in rows):
            assert any(label in line for line in [header] + above for label in ("± sd", "± 95% CI")), header


def test_results_open_with_the_papers_question_and_table_2_and_label_every_plus_minus(one_cached_cell, tmp_path, monkeypatch):
    """A generated RESULTS holds the paper's-question section and Table 2 in its first 120 lines, and
    every table with a "±" says in its header which one ("± sd" or "± 95% CI"); the engineering
    figures and the runs go to their own files beside it. The committed RESULTS obeys the same."""
    workspace_dir, _ = one_cached_cell
    monkeypatch.setattr(report, "DOCS_RESULTS", tmp_path / "docs" / "RESULTS.md")
    assert report.main(["--workspace", str(workspace_dir), "--update-docs"]) == 0
    results = (tmp_path / "docs" / "RESULTS.md").read_text()
    _check_results_layout(results)
    assert "## Paper-scale pretraining pace on a GPU" in (tmp_path / "docs" / "engineering.md").read_text()
    assert "## Paper-scale pretraining pace on a GPU" not in results and "## Seed noise" not in results
    assert (tmp_path / "docs" / "runs.csv").read_text().startswith(",".join(report.RUN_FIELDS))
    _check_results_layout((REPO / "docs" / "RESULTS.md").read_text())
    with pytest.raises(AssertionError):
        _check_results_layout(results.replace("± sd", "±").replace("± 95% CI", "±"))


def test_pretrain_ablation_rows_carry_loader_workers_and_throughput_where_recorded(tmp_path):
    old = {"experiment": "wolof_m.jsonnet", "condition": "M", "batch_size": 64, "max_steps": 1500, "lr": 1e-3,
           "bucket_by_length": True, "threads": "all", "minutes": 3.5, "dev_mlm_loss": {"1500": 6.1}}
    new = old | {"experiment": "wolof_h.jsonnet", "condition": "H", "max_steps": 500, "loader_workers": 1,
                 "tokens_per_second": 6880, "note": "campaign paused"}
    path = tmp_path / "ablation.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (old, new)))
    lines = [line for line in report.pretrain_ablation_section(path).splitlines() if line.startswith("| wolof_")]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    header = [cell.strip() for cell in report.pretrain_ablation_section(path).splitlines()[2].strip("|").split("|")]
    columns = {name: header.index(name) for name in ("loader workers", "tokens/s", "note")}
    assert [row[columns["loader workers"]] for row in cells] == ["0", "1"]
    assert [row[columns["tokens/s"]] for row in cells] == ["—", "6880"]
    assert [row[columns["note"]] for row in cells] == ["", "campaign paused"]


def test_a_step_whose_cache_entry_was_deleted_is_not_reported(tmp_path):
    from tango import Step

    class CountRows(Step):
        DETERMINISTIC = True
        CACHEABLE = True

        def run(self, rows: int) -> dict:  # type: ignore[override]
            return {"rows": rows}

    workspace = LocalWorkspace(tmp_path / "workspace")
    kept, deleted = CountRows(rows=1), CountRows(rows=2)
    kept.result(workspace), deleted.result(workspace)
    assert {info.unique_id for info in report.completed_steps(workspace, "CountRows")} == {kept.unique_id, deleted.unique_id}
    # A user prunes an entry by hand: its run stays on record as completed, but there is nothing to read.
    shutil.rmtree(tmp_path / "workspace" / "cache" / deleted.unique_id)
    reopened = LocalWorkspace(tmp_path / "workspace")  # as `python -m reporting.report` opens it
    assert [info.unique_id for info in report.completed_steps(reopened, "CountRows")] == [kept.unique_id]


def test_headline_gives_each_regimes_paper_scale_mu_b_m_in_one_sentence():
    """Every language's paper-scale µB-M under one regime goes in one sentence, each beside the paper's."""
    from types import SimpleNamespace

    cells = [SimpleNamespace(table="table2", scale=scale, row="M", column=language, result={"n": n}, mean=mean)
             for scale, language, n, mean in (("gpu-paper_tenth", "wolof", 5, 75.17), ("gpu-paper_tenth", "coptic", 5, 88.58),
                                              ("gpu-paper", "wolof", 2, 76.12))]
    text = report.headline_section(cells, [], {})
    assert ("Pretrained at the paper's scale and fine-tuned under the `paper_tenth` regime, µB-M reaches test LAS "
            "Coptic 88.58 (5 seeds; paper 88.47), Wolof 75.17 (5 seeds; paper 77.71). ") in text
    assert "under the `paper` regime, µB-M reaches test LAS Wolof 76.12 (2 seeds; paper 77.71). " in text
    assert text.count("Pretrained at the paper's scale") == 2


def test_related_baselines_that_differ_from_table_2_are_named_as_fewer_seeds_or_separate_runs():
    """The related table's µB-M over seeds 42-44 that are Table 2's own runs is one baseline over fewer
    seeds; one whose seed-42 score differs is a separate run of the same cell. Each is said so."""
    def cell(table, scale, seeds, values):
        return Cell(table, scale, "M", "wolof", {"seeds": seeds, "n": len(seeds),
                                                 "test": {"mean": statistics.fmean(values), "sd": 0.1, "values": values}})

    cells = [cell("related:ud", "gpu-paper_tenth", [42, 43, 44], [75.0, 74.9, 75.1]),
             cell("table2", "gpu-paper_tenth", [42, 43, 44, 45, 46], [75.0, 74.9, 75.1, 75.6, 75.3]),
             cell("related:ud", "cpu", [42, 43, 44], [68.9, 68.5, 68.6]),
             cell("table2", "cpu", [42, 43, 44, 45, 46], [68.0, 68.5, 68.6, 68.9, 68.6])]
    text = report.related_conflicts(cells)
    subsets, separate = text.split("Two records of one cell")
    assert "One baseline, two seed sets: gpu-paper_tenth µB-M Wolof UD LAS: 75.00 in the related table (seeds 42–44), " \
           "75.18 in Table 2 (seeds 42–46). The same runs" in subsets and "cpu" not in subsets
    assert "cpu µB-M Wolof UD LAS: 68.67 in the related table (seeds 42–44), 68.52 in Table 2" in separate
    assert "gpu-paper_tenth" not in separate
    assert report.related_conflicts(cells[:2] + [cell("related:ud", "cpu", [42], [68.52])]).count("Two records") == 0


def test_the_papers_question_shows_the_finished_seeds_of_cells_with_no_aggregate():
    """A cell has no figure until one cache holds all its seeds (a long regime's seeds still running, or
    seeds run in separate caches): its finished seeds show under the scale's verdict, "of" the seeds its
    file fine-tunes where some are still to run, each bias paired with µB-M over the seeds both have,
    µB-M's including the decomposition grid's runs of the same fine-tuning (marked), beside the
    authors' published figures."""
    def run(scale, table, row, seed, test, dev):
        return {"scale": scale, "table": table, "row": row, "column": "wolof", "seed": str(seed), "test": f"{test:.2f}", "dev": f"{dev:.2f}"}

    runs = [run("gpu-paper", "table2", "M", 44, 76.5, 75.9), run("gpu-paper", "table2", "MXPT-SLA", 44, 75.5, 75.3),
            run("paper", "decomposition:ud", "paper", 42, 76.19, 76.23), run("paper", "decomposition:ud", "paper", 43, 76.05, 76.01),
            run("paper", "decomposition:ud", "cpu", 42, 71.0, 71.0),  # another encoder: not µB-M's
            run("gpu-paper", "table3", "M", 42, 83.0, 88.0)]  # a cell with a figure already: not "so far"
    cells = [Cell("table3", "gpu-paper", row, "wolof", {"seeds": [42, 43], "n": 2, "test": {"mean": 83.0, "sd": 1.0, "values": [82.0, 84.0]}})
             for row in ("M", "MX")] + [Cell("table2", "gpu-paper", row, "wolof", planned_seeds=planned)  # cells with no aggregate
                                        for row, planned in (("M", [44]), ("MXPT-SLA", [42, 43, 44, 45, 46]))]
    runs.append(run("gpu-paper", "table2", "M-long", 44, 70.0, 70.0))  # a grid's run, no table file's cell: not the question's
    cells.append(Cell("table2", "gpu-paper", "random-init", "wolof", planned_seeds=[44]))  # a baseline, not a bias
    runs.append(run("gpu-paper", "table2", "random-init", 44, 70.5, 70.1))
    cells.append(Cell("table3", "gpu-paper", "MXPT-SLA", "wolof", planned_seeds=[42, 43]))  # waiting, no seed finished:
    # the aggregated µB-M NER beside it has nothing to be compared with
    cells += [Cell("related:ner", "gpu-paper", row, "wolof", planned_seeds=[42]) for row in ("M", "C5")]  # no table of the question's
    runs += [run("gpu-paper", "related:ner", "M", 42, 80.0, 85.0), run("gpu-paper", "related:ner", "C5", 42, 81.0, 86.0)]
    text = report.question_section(cells, runs)
    assert "Cells at `gpu-paper` with no aggregate yet, read from the seeds they have finished." in text and "| Δ from µB-M ± 95% CI (paired over shared seeds; Welch's unpaired over all seeds where they differ) |" in text
    assert "| Wolof | UD LAS | µB-M | 42–44* | 76.19 / 76.05 / 76.50 | 76.25 | 76.05 | — | — |" in text
    # µB-M has every seed its file fine-tunes (and the grid's beside them); µB-MXPT-SLA has 1 of 5
    assert "| Wolof | UD LAS | µB-MXPT-SLA | 44 of 42–46 | 75.50 | 75.50 | 75.30 | -1.00 (seed 44, no interval) | -0.82 |" in text
    # two seeds of the condition, one shared: the unpaired interval over all seeds goes beside the one pair
    runs.append(run("gpu-paper", "table2", "MXPT-SLA", 45, 76.7, 76.0))
    welch = welch_difference([75.5, 76.7], [76.19, 76.05, 76.5]).text()
    assert f"| 44, 45 of 42–46 | 75.50 / 76.70 | 76.10 | 75.65 | -1.00 (seed 44, no interval); all seeds: {welch} | -0.82 |" in report.question_section(cells, runs)
    # two pairs: the paired interval (1 df, wide), and still the unpaired one over the seeds µB-M has beyond them
    runs.append(run("gpu-paper", "table2", "M", 45, 76.3, 76.1))
    paired = paired_difference({"seeds": [44, 45], "test": {"values": [75.5, 76.7]}}, {"seeds": [44, 45], "test": {"values": [76.5, 76.3]}})
    welch = welch_difference([75.5, 76.7], [76.19, 76.05, 76.5, 76.3]).text()
    assert f"| {paired.mean:+.2f} ± {paired.half_width:.2f} (seeds 44, 45); all seeds: {welch} |" in report.question_section(cells, runs)
    # the same seeds on both sides: the paired interval alone
    both = [r for r in runs if r["table"] == "table2" and r["seed"] in ("44", "45")]
    assert "; all seeds:" not in report.question_section(cells, both) and "(seeds 44, 45) |" in report.question_section(cells, both)
    del runs[-2:]
    assert "seeds 42, 43: the decomposition grid's runs of the same fine-tuning" in text
    assert "the authors published 75.69 (Gessler and Zeldes (2022), MicroBERT, UD 2.9) and 77.71 (this paper's Table 2, most likely a dev figure)" in text
    assert "NER F1 | µB-M" not in text.split("with no aggregate yet")[1] and "M-long" not in text and "random-init" not in text
    assert "µB-C5" not in text and "80.00" not in text
    assert "with no aggregate yet" not in report.question_section(cells, runs[:1])  # µB-M alone answers nothing
    # A condition with an aggregate (its seeds exported) beside a µB-M without one: still read by seed,
    # as no paired table holds it; once both have aggregates, the paired table does.
    done = {"seeds": [44, 45], "n": 2, "test": {"mean": 76.1, "sd": 0.85, "values": [75.5, 76.7]}}
    exported = [c if c.row != "MXPT-SLA" or c.table != "table2" else Cell("table2", "gpu-paper", "MXPT-SLA", "wolof", done)
                for c in cells]
    runs.append(run("gpu-paper", "table2", "MXPT-SLA", 45, 76.7, 76.0))
    assert "| Wolof | UD LAS | µB-MXPT-SLA | 44, 45 | 75.50 / 76.70 |" in report.question_section(exported, runs)
    m_done = {"seeds": [44, 45], "n": 2, "test": {"mean": 76.4, "sd": 0.14, "values": [76.5, 76.3]}}
    both_done = [c if c.row != "M" or c.table != "table2" else Cell("table2", "gpu-paper", "M", "wolof", m_done) for c in exported]
    assert "with no aggregate yet" not in report.question_section(both_done, runs)


def test_the_headline_answers_the_papers_question_from_the_figures(tmp_path):
    """The headline's first paragraph reads the question's differences: at cpu scale how many intervals
    lie above, below or across 0; at the paper's scale each difference, cells' and those read from the
    finished seeds of cells with no aggregate (µB-M's grid seeds named), beside the paper's Δ. The
    intervals are checked against Student's t computed here from the per-seed differences."""
    from scipy import stats

    def cell(table, scale, row, values, seeds=(42, 43, 44)):
        return Cell(table, scale, row, "wolof", {"seeds": list(seeds), "n": len(values),
                                                 "test": {"mean": statistics.fmean(values), "sd": statistics.stdev(values), "values": values}})

    def run(scale, table, row, seed, test):
        return {"scale": scale, "table": table, "row": row, "column": "wolof", "seed": str(seed), "test": f"{test:.2f}", "dev": ""}

    def interval(ours, base):
        differences = [a - b for a, b in zip(ours, base)]
        half = stats.t.ppf(0.975, len(differences) - 1) * statistics.stdev(differences) / len(differences) ** 0.5
        return f"{statistics.fmean(differences):+.2f} ± {half:.2f}"

    m, mx, mp = [68.0, 68.5, 69.0], [69.5, 70.0, 70.4], [68.1, 68.2, 69.4]  # MX above 0, MP across it
    tenth_m, tenth_sla = [75.0, 75.2, 74.8], [75.5, 75.1, 75.6]
    cells = [cell("table2", "cpu", "M", m), cell("table2", "cpu", "MX", mx), cell("table2", "cpu", "MP", mp),
             cell("table2", "gpu-paper_tenth", "M", tenth_m), cell("table2", "gpu-paper_tenth", "MXPT-SLA", tenth_sla),
             Cell("table2", "gpu-paper", "M", "wolof", planned_seeds=[44, 45]),
             Cell("table2", "gpu-paper", "MXPT-SLA", "wolof", planned_seeds=[42, 43, 44, 45])]
    base, sla = {42: 76.2, 43: 76.0, 44: 76.7, 45: 76.2}, {42: 76.3, 43: 77.1, 44: 77.0, 45: 75.9}
    runs = ([run("paper", "decomposition:ud", "paper", seed, base[seed]) for seed in (42, 43)]
            + [run("gpu-paper", "table2", "M", seed, base[seed]) for seed in (44, 45)]
            + [run("gpu-paper", "table2", "MXPT-SLA", seed, test) for seed, test in sla.items()])
    text = report.question_headline(report.question_points(cells, runs))
    assert text.startswith("**Does syntactic inductive bias help?**")
    assert ("At cpu scale, with undertrained encoders, 1 of 2 differences lies above 0 and 0 below; the other 1 includes 0, "
            "and the paper's Δ lies inside our interval in ") in text
    so_far = interval(list(sla.values()), list(base.values()))
    assert (f"Wolof µB-MXPT-SLA: UD LAS {so_far} (`paper` regime, seeds 42–45, read from the finished seeds, µB-M's 42, 43 from "
            f"its first pretraining; paper -0.82), UD LAS {interval(tenth_sla, tenth_m)} (`paper_tenth` regime, seeds 42–44; "
            "paper -0.82).") in text
    assert "At the paper's scale, no interval excludes 0" in text
    above = [cell("table2", "gpu-paper_tenth", "MXPT-SLA", [76.5, 76.6, 76.4])]
    assert (f"At the paper's scale, 1 of 2 intervals lies above 0 and 0 below (µB-MXPT-SLA Wolof UD LAS "
            f"{interval([76.5, 76.6, 76.4], tenth_m)})") in report.question_headline(report.question_points(cells[:4] + above + cells[5:], runs))
    assert report.question_headline(report.question_points(cells[:1], [])) == ""  # µB-M alone: nothing to read
    # The same points drawn: one panel per task with a point the paper has a Δ for, linked from the question
    points = report.question_points(cells, runs)
    assert [(p.scale, p.row, p.how != "") for p in points] == [("cpu", "MP", False), ("cpu", "MX", False),
                                                               ("gpu-paper", "MXPT-SLA", True), ("gpu-paper_tenth", "MXPT-SLA", False)]
    figure = tmp_path / "question_deltas.png"
    assert report.question_figure(points, figure) and figure.stat().st_size > 10_000
    assert not report.question_figure([p._replace(published=None) for p in points], tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()
    link = report.question_figure_link(points, tmp_path / "curves", tmp_path)
    assert link == "curves/question_deltas.png" and (tmp_path / "curves" / link.split("/")[1]).exists()
    assert f"![our differences from µB-M against the paper's]({link})" in report.question_section(cells, runs, link)


def test_curves_fit_the_y_axis_to_where_runs_differ():
    """A dev score climbs from ~0 in its first epochs; the figure's y axis fits every run's last 90 %
    of epochs (each run's own length), so the plateau where conditions differ is not a flat band."""
    from reporting.curves import fitted_limits

    climb = [(0, 0.0), (1, 40.0), (2, 65.0)]
    lines = {"M s44": climb + [(epoch, 74.0 + (epoch % 3) * 0.5) for epoch in range(3, 281)],
             "MXPT-SLA s46": climb + [(epoch, 73.5 + (epoch % 2)) for epoch in range(3, 172)]}
    low, high = fitted_limits(lines)
    tails = [y for points in lines.values() for x, y in points if x >= 0.1 * max(p[0] for p in points)]
    assert low < min(tails) == 73.5 and high > max(tails) == 75.0 and high - low < 2  # by hand: every tail point, and nothing of the climb
    assert low > 65.0
    # the last 90 % is each run's own: a short run's late epochs are not cut by a long run's start
    low, high = fitted_limits({"short": [(0, 0.0), (5, 50.0), (10, 60.0)], "long": [(0, 0.0)] + [(e, 75.0) for e in range(1, 301)]})
    assert low < 50.0 and high > 75.0 and low > 0.0
    # already filling its range (a loss falling steadily, a flat line): nothing to fit
    assert fitted_limits({"loss": [(step, 10.0 - step) for step in range(10)]}) is None
    assert fitted_limits({"flat": [(epoch, 70.0) for epoch in range(10)]}) == (69.5, 70.5)


def test_committed_figures_are_redrawn_from_their_own_lines(tmp_path):
    """`--update-docs` redraws every committed figure the cache does not draw from its sidecar's lines,
    so the whole record shows the current drawing; the lines stay the record's, and a figure the cache
    drew is left to the cache."""
    from reporting.curves import draw_series, redraw_recorded

    lines = {"M s42": [(0, 0.0), (1, 60.0)] + [(epoch, 74.0 + epoch % 2) for epoch in range(2, 40)]}
    [figure] = draw_series({("gpu-paper_tenth", "wolof", "ud_dev_las"): lines}, tmp_path)
    sidecar = figure.with_suffix(".json").read_text()
    figure.write_bytes(b"drawn by older code")
    (tmp_path / "gpu-paper_tenth" / "notes.json").write_text("{}")  # not a figure's sidecar
    assert redraw_recorded(tmp_path) == [figure]
    assert figure.read_bytes().startswith(b"\x89PNG") and figure.with_suffix(".json").read_text() == sidecar
    figure.write_bytes(b"drawn by the cache")
    assert redraw_recorded(tmp_path, skip=[figure]) == [] and figure.read_bytes() == b"drawn by the cache"
