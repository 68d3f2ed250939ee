"""Write the results report from whatever the Tango workspace cache holds.

    python -m reporting.report [--workspace workspace]   # writes <workspace>/RESULTS.md
    python -m reporting.report --update-docs             # rewrites the committed docs/RESULTS.md (+ docs/curves/)

Nothing is trained or recomputed: every figure is read from a cached step result, so the file
always matches the cache. Sections are empty ("nothing cached yet") until their steps have run.
With ``--update-docs`` a row of the committed report that this cache lacks is kept, marked †
(the tables do the same with their cells): a partial cache never erases a result of record.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from tango import Workspace
from tango.step_info import StepInfo

from reporting.cache import unfinished_entries
from reporting.cells import collect_cells, merge_record, record_cells
from reporting.graphs import REPO, FileGraph, experiment_files, load_graphs, scales_of_steps
from reporting.languages import languages
from reporting.records import read_jsonl
from reporting import tables
from reporting.tables import markdown_summary, related_summary

DOCS_RESULTS = REPO / "docs" / "RESULTS.md"

# UDPipe 1 on Wolof-WTB, measured on the 2-core machine (DEVELOPERS.md): the bar to beat.
UDPIPE_WOLOF_LAS = 70.15


def completed_steps(workspace: Workspace, class_name: str) -> List[StepInfo]:
    """Steps of ``class_name`` with a cached result. A cache entry copied in from another machine
    (benchmarks/gpu) has no record of its run in this workspace, and one a user deleted still has
    its completed run on record, so the cache decides, not the state."""
    infos = [info for info in workspace.search_step_info()
             if info.step_class_name == class_name and info in workspace.step_cache]
    # In order of finishing; copied entries, which have no end time, last.
    return sorted(infos, key=lambda info: (info.end_time is None, info.end_time.timestamp() if info.end_time else 0.0))


NOTHING = "_nothing cached yet_\n"  # an empty section's body; keep_record puts the record's table in its place


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    rows = [[("—" if cell is None else (f"{cell:.2f}" if isinstance(cell, float) else str(cell))) for cell in row] for row in rows]
    if not rows:
        return NOTHING
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def scale_of(unique_id: str, scales_by_step: Dict[str, List[str]]) -> str:
    """The scales (or benchmark folders) of the experiment files whose step graph holds this step;
    a cached step that no current file builds was made by an older config."""
    return ", ".join(scales_by_step.get(unique_id, [])) or "no current experiment"


def corpus_section(workspace: Workspace, scales_by_step: Dict[str, List[str]]) -> str:
    rows = []
    for info in completed_steps(workspace, "LoadCorpus"):
        stats = workspace.step_cache[info]["stats"]
        language = language_of(workspace, info)  # a corpus variant has no paper count
        paper = languages().get(language, {}).get("paper_train_tokens")  # paper Table 1
        ours = stats["train_whitespace_tokens"]
        rows.append((language, scale_of(info.unique_id, scales_by_step), stats["documents"], ours, paper,
                     None if paper is None else 100.0 * (ours - paper) / paper,
                     stats["train_sentences_kept"], stats["train_tokens_kept"]))
    return markdown_table(
        ["language", "scale", "documents", "train tokens (whitespace)", "paper Table 1", "Δ %", "train sentences used", "tokens used (punct. split)"],
        sorted(set(rows)),
    )


def parser_section(workspace: Workspace) -> str:
    rows = []
    for info in completed_steps(workspace, "TrainCorpusParser"):
        parser = json.loads((Path(workspace.step_cache[info]) / "parser.json").read_text())
        m, t, b = parser["metrics"], parser["timings"], parser["budget"]
        steps = f"{b['tagger_steps']}+{b['parser_steps']}" if parser["backend"] == "stanza" else f"{b['udpipe_iterations']} it."
        # Budgets recorded before the parser_uses_* switches existed embedded every tag column.
        tags = "all" if parser["backend"] == "udpipe" or b.get("parser_uses_feats", True) else ("UPOS+XPOS" if b.get("parser_uses_xpos") else "UPOS")
        optimizer = "—" if parser["backend"] == "udpipe" else (b.get("parser_optimizer") or "Stanza's")
        vectors = "—" if parser["backend"] == "udpipe" else ("corpus" if parser.get("word_vectors") else "none")
        learns = "—" if parser["backend"] == "udpipe" else ("UPOS" if b.get("tagger_tags") == "upos" else "all tags")
        layers = "—" if parser["backend"] == "udpipe" else f"{b.get('parser_layers', 3)}×{b['parser_hidden_dim']}, biaffine {b['parser_biaffine_dim']}"
        rows.append((language_of(workspace, info), parser["backend"], steps, learns, tags, layers, vectors, optimizer, t["tagger_seconds"] / 60,
                     t["parser_seconds"] / 60, m["test_upos_accuracy"], m["dev_las"], m["test_uas"], m["test_las"]))
    note = (f"Test scores use the parser's own predicted tags; UAS/LAS exclude gold PUNCT and SYM. "
            f"UDPipe 1 on Wolof-WTB reached {UDPIPE_WOLOF_LAS} test LAS when the bar was set (7.5 min of training on a "
            f"faster 2-core machine); its row here comes from `tango run experiments/wolof_data_udpipe.jsonnet -s corpus_parser`. "
            f"Minutes are on the machine that ran each step.\n\n")
    return note + markdown_table(
        ["language", "backend", "steps (tagger+parser)", "tagger learns", "parser sees tags", "parser LSTM", "word vectors",
         "parser optimizer", "tagger min",
         "parser min", "test UPOS", "dev LAS", "test UAS", "test LAS"], rows
    )


ABLATION_JSONL = Path("docs/benchmarks/corpus_parser_ablation.jsonl")
PRETRAIN_ABLATION_JSONL = Path("docs/benchmarks/pretrain_ablation.jsonl")


def pretrain_ablation_section(path: Path = PRETRAIN_ABLATION_JSONL) -> str:
    """Pretraining settings on one cached dataset (benchmarks/pretrain_ablation.py), if recorded."""
    if not path.exists():
        return "_not recorded: see benchmarks/pretrain_ablation.py_\n"
    records = read_jsonl(path)
    rows = [(r["experiment"], r["condition"], r["batch_size"], r["max_steps"], f"{r['lr']:g}", "yes" if r["bucket_by_length"] else "no",
             r["threads"], r.get("loader_workers", 0), r["minutes"], r.get("tokens_per_second"),
             ", ".join(f"{step}: {loss:.2f}" for step, loss in r["dev_mlm_loss"].items()),
             r.get("ud_dev_las"), r.get("ud_test_las"), r.get("note", ""))
            for r in records]
    return ("Recorded by `benchmarks/pretrain_ablation.py` on one cached Wolof dataset (runs with 1 thread ran two side by "
            "side, so their minutes are not comparable; tokens/s is the loop's own clock at its last validation, where "
            "recorded; UD LAS where the encoder was also fine-tuned, seed 42).\n\n"
            + markdown_table(["experiment", "condition", "batch", "steps", "lr", "length buckets", "threads", "loader workers",
                              "min", "tokens/s", "dev MLM loss (step: loss)", "UD dev LAS", "UD test LAS", "note"], rows))


def ablation_section(path: Path = ABLATION_JSONL) -> str:
    """What each corpus-parser choice bought (benchmarks/corpus_parser_ablation.py), if recorded."""
    if not path.exists():
        return f"_not recorded: see benchmarks/corpus_parser_ablation.py_\n"
    records = read_jsonl(path)
    vectors = {r["out"]: r for r in records if r["command"] == "vectors"}

    def vectors_label(name):
        v = vectors.get(name, {})
        return f"{v.get('words', '?')} words from {'all' if v.get('max_sentences') is None else v['max_sentences']} sentences"

    taggers = [(r["out"], vectors_label(r["vectors"]), r["steps"], r["threads"], r["seconds"] / 60,
                " ".join(f"{x:.1f}" for x in r["dev_upos_every_100_steps"])) for r in records if r["command"] == "tagger"]
    parsers = [(r["out"], r["tagger"], " ".join(r["stanza_args"]) or "(Stanza's defaults)", r["steps"], r["threads"],
                r["parser_seconds"] / 60, r["dev_las"], r["test_uas"], r["test_las"]) for r in records if r["command"] == "parser"]
    return ("Recorded by `benchmarks/corpus_parser_ablation.py` (cpu-scale sizes, one variable at a time; "
            "runs with 1 thread ran two side by side, so their minutes are not the DAG's).\n\n"
            + markdown_table(["tagger", "word vectors", "steps", "threads", "min", "dev UPOS per 100 steps (last: the kept model)"], taggers) + "\n"
            + markdown_table(["parser", "on tagger", "parser CLI flags", "steps", "threads", "min", "dev LAS", "test UAS", "test LAS"], parsers))


def throughput_section(workspace: Workspace) -> str:
    rows = []
    for info in completed_steps(workspace, "ParseCorpus"):
        result = workspace.step_cache[info]
        stats = result["stats"]
        rows.append((language_of(workspace, info), stats["parser"], len(result["train"]),
                     stats["train_sentences_per_second"], stats["train_tokens_per_second"]))
    return markdown_table(["language", "parser", "train sentences parsed", "sentences/s", "tokens/s"], rows)


def language_of(workspace: Workspace, info: StepInfo) -> str:
    """The language a step works on, found on the nearest upstream step that names one; with the
    corpus folder in brackets when an upstream `load_corpus` reads a variant ("coptic
    (corpus_no_ud_devtest)"), so the leak-free Coptic rows are told from the reference ones."""
    pending, seen = [info], set()
    language, folder = None, None
    while pending:
        current = pending.pop(0)
        config = current.config or {}
        if language is None and "language" in config:
            language = config["language"]
        if config.get("type") == "load_corpus" and isinstance(config.get("corpus"), dict):
            folder = folder or config["corpus"].get("path")
        for dependency in current.dependencies:
            if dependency not in seen:
                seen.add(dependency)
                pending.append(workspace.step_info(dependency))
    if language is None:
        return "?"
    variant = folder.split("/", 1)[-1] if folder and folder.startswith(language + "/") else None
    return language if variant in (None, "corpus") else f"{language} ({variant})"


def condition_label(metrics: dict) -> str:
    """A pretraining run's condition, with what sets it apart from the condition's own model and
    loop (the decomposition's relative positions, a GPU lever) in brackets: "M [relative_key_query
    positions]", "MXPT-SLA [bf16, fused AdamW]"; the bare condition otherwise."""
    model = metrics.get("model_config") or {}
    marks = []
    if model.get("position_embedding_type", "absolute") != "absolute":
        marks.append(f"{model['position_embedding_type']} positions")
    if metrics.get("precision", "fp32") != "fp32":
        marks.append(metrics["precision"])
    if metrics.get("fused_optimizer"):
        marks.append("fused AdamW")
    if metrics.get("compile_encoder") is not None:
        marks.append("compiled encoder")
    if metrics.get("compile_objectives") is not None:
        marks.append("compiled P/T losses")
    return metrics["condition"] + (f" [{', '.join(marks)}]" if marks else "")


def pretraining_section(workspace: Workspace) -> str:
    """One row per cached pretraining run, plus its dev MLM loss at every validation."""
    rows, curves = [], []
    for info in completed_steps(workspace, "PretrainMicrobert"):
        metrics = json.loads((Path(workspace.step_cache[info]) / "metrics.json").read_text())
        training, history = metrics["training"], metrics["history"]
        if not history:
            continue
        last = history[-1]
        language = language_of(workspace, info)
        rows.append((language, condition_label(metrics), training["max_steps"], training["batch_size"], metrics["train_rows"],
                     last["dev_mlm_loss"], metrics.get("best_step"), last["tokens_per_second"], last["wall_seconds"] / 60,
                     ", ".join(map(str, metrics.get("resumed_from") or [])) or None))
        curve = ", ".join(f"{h['step']}: {h['dev_mlm_loss']:.3f}" for h in history)
        curves.append(f"- µB-{condition_label(metrics)} ({language}, {training['max_steps']} steps): {curve}\n")
    table = markdown_table(
        ["language", "condition", "steps", "batch", "train rows", "final dev MLM loss", "best step", "tokens/s", "minutes", "resumed from"], rows
    )
    return table + ("\nDev MLM loss per validation (step: loss):\n\n" + "".join(curves) if curves else "")


BENCHMARK_JSON = Path("docs/benchmarks/pretrain_step.json")
GPU_BENCHMARK_JSON = Path("docs/benchmarks/gpu_pretrain_step.json")
GPU_BENCHMARK_COMMAND = "python benchmarks/gpu/campaign.py levers $OUT (on a GPU machine; README, GPU campaign), its record copied to {path}"


def benchmark_section(path: Path = BENCHMARK_JSON, command: str = "python benchmarks/bench_pretrain_step.py --json {path}") -> str:
    """The pretraining-step benchmark (benchmarks/bench_pretrain_step.py --json ...), if recorded;
    on a GPU its rows include the speed levers ("µB-M [bf16, fused]")."""
    if not path.exists():
        return f"_not recorded: run `{command.format(path=path)}`_\n"
    bench = json.loads(path.read_text())
    medians = bench["median_seconds"]
    m, hf = medians.get("µB-M"), medians["HF BertForMaskedLM"]
    rows = [(name, 1e3 * s, bench["batch_size"] / s, None if m is None else s / m, s / hf) for name, s in medians.items()]
    device = bench.get("device", "cpu")
    head = (f"Batch {bench['batch_size']}×{bench['length']}, vocabulary {bench['vocab_size']}, "
            f"{device if device != 'cpu' else str(bench['threads']) + ' threads'}, "
            f"torch {bench['torch']}; median of {bench['steps']} forward+backward+AdamW steps, all models in one process.\n\n")
    return head + markdown_table(["model", "ms/step", "sequences/s", "× µB-M", "× HF BertForMaskedLM"], rows)


GPU_PACE_JSONL = Path("docs/benchmarks/gpu_pace.jsonl")


def _levers_text(levers: Dict) -> str:
    compiled = levers.get("compile_encoder")
    return ", ".join([levers.get("precision") or "fp32", "fused AdamW" if levers.get("fused_optimizer") else "AdamW",
                      f"compiled ({compiled.get('mode', 'default')})" if compiled is not None else "eager"])


def gpu_pace_section(path: Path = GPU_PACE_JSONL) -> str:
    """The paper-scale pretraining loop's pace on a GPU (benchmarks/gpu/pace.py), a row per record:
    the figures the speed bars are about, each condition's projected run against µB-M's fastest."""
    if not path.exists():
        return f"_not recorded: run `bash benchmarks/gpu/allocation.sh 540 pace=m,mxpt_sla` on a GPU machine (README), records in {path}_\n"
    records = read_jsonl(path)
    fastest_m = min((r["full_run_minutes"] for r in records if r["condition"] == "M"), default=None)
    rows = [(r["condition"], r.get("gpu") or r["device"], _levers_text(r["levers"]), r["loader_workers"], r["steps"],
             r["steps_per_second"], r["full_run_minutes"], None if fastest_m is None else r["full_run_minutes"] / fastest_m,
             r.get("note", ""))
            for r in records]
    head = (f"Each record runs a file's own pretraining loop ({records[0]['batch_size']} rows a step) for its steps and "
            "projects the full run from the median pace of the windows after the first (compiles and loader start-up excluded). "
            "Bars (issue 14): µB-M ≤ 5 min; µB-MXPT-SLA ≤ 1.3× µB-M. `bash benchmarks/gpu/allocation.sh … pace=CELL` "
            f"(or `pace-eager=`), records appended to `{path}`.\n\n")
    return head + markdown_table(["condition", "device", "levers", "loader workers", "steps", "steps/s", "full run (min)",
                                  "× µB-M's fastest", "note"], rows)


LOADER_EPOCH_JSONL = Path("docs/benchmarks/loader_epoch.jsonl")


def loader_epoch_section(path: Path = LOADER_EPOCH_JSONL) -> str:
    """The slowest batch of a pretraining epoch as a loader worker builds it (benchmarks/bench_loader_epoch.py),
    a row per record: the tail, and the step rates past which the loop waits on the loader."""
    if not path.exists():
        return (f"_not recorded: run `python benchmarks/bench_loader_epoch.py benchmarks/gpu/wolof_mxpt_sla_paper_scale.jsonnet "
                f"-w workspace --json {path}`_\n")
    records = read_jsonl(path)
    rows = [(r["condition"], r["batches"], r["mean_ms"], r["median_ms"], r["p99_ms"], r["slowest_ms"], r["slowest_padded_length"],
             f"{r['loader_workers']} × {r['queued_batches'] // max(r['loader_workers'], 1)}", r["stalls_above_steps_per_second"],
             r["workers_keep_up_to_steps_per_second"], r.get("note", "")) for r in records]
    head = ("Every batch of one epoch of a file's pretraining, built as a loader worker builds it (collate, parse inputs, pack; "
            "one thread on this box). The loop takes batches in order, so it waits on the slowest once it runs faster than the "
            "queued batches over that batch's time (\"stalls above\"); \"keep up to\" is the workers' average capacity. "
            f"`python benchmarks/bench_loader_epoch.py FILE -w WORKSPACE --json {path}`.\n\n")
    return head + markdown_table(["condition", "batches", "mean ms", "median ms", "p99 ms", "slowest ms", "slowest padded to",
                                  "workers × queued", "stalls above (steps/s)", "keep up to (steps/s)", "note"], rows)


GPU_FINETUNE_JSONL = Path("docs/benchmarks/gpu_finetune.jsonl")


def gpu_finetune_section(path: Path = GPU_FINETUNE_JSONL) -> str:
    """What a fine-tuning epoch costs on a GPU (benchmarks/gpu/finetune_epochs.py), a row per task and call:
    the training and dev-evaluation shares, and how many fine-tunes shared the GPU."""
    if not path.exists():
        return (f"_not recorded: run `python benchmarks/gpu/finetune_epochs.py LOGS --processes N --label REGIME --json {path}` "
                "on a device call's fine-tuning logs_\n")
    records = read_jsonl(path)
    rows = [(r["task"], r["label"], r.get("gpu") or "—", r["processes_side_by_side"], r["runs"], r["epochs_timed"], r["epoch_seconds"],
             f"{r['dev_seconds']:.2f}" + (" (epoch 0)" if r["dev_from_epoch_0"] else "") if r["dev_seconds"] is not None else "—",
             r["train_ms_per_step"], r.get("note", "")) for r in records]
    head = ("Medians over every epoch after the first of every run in a call (one CPU thread a fine-tune). The paper regime's "
            "parser runs up to 300 such epochs a seed. Where a record predates the loop's `dev_seconds`, the untrained "
            "model's dev pass (epoch 0) stands in for the dev share. "
            f"`python benchmarks/gpu/finetune_epochs.py LOGS --processes N --label REGIME --json {path}`.\n\n")
    return head + markdown_table(["task", "regime", "device", "side by side", "runs", "epochs", "epoch s", "dev s",
                                  "train ms/step", "note"], rows)


def in_progress_section(entries: Sequence) -> str:
    """Pretraining and fine-tuning runs with a checkpoint and no result (`python -m reporting.cache
    unfinished`): how far a long run has got, and its best dev figure so far."""
    note = ("Runs with a checkpoint and no result yet, at the time this report was written (`python -m reporting.cache "
            "unfinished --workspace …`); `python benchmarks/gpu/run_steps.py FILE STEP` or `tango run FILE` resumes one.\n\n")
    rows = [(e.language, e.condition, e.scale, e.seed, e.step_class, f"{e.done:,}/{'?' if e.total is None else f'{e.total:,}'} {e.unit}s",
             e.patience, (e.metric or "").removeprefix("dev_"), e.best, e.best_at, e.last) for e in entries]
    if not rows:
        return note + "_no run in progress_\n"
    return note + markdown_table(["language", "condition", "scale", "seed", "step", "done", "patience", "dev metric", "best",
                                  "best at", "last"], rows)


FINETUNE_BENCHMARK_JSON = Path("docs/benchmarks/finetune_step.json")


def finetune_benchmark_section(path: Path = FINETUNE_BENCHMARK_JSON) -> str:
    """The fine-tuning-step benchmark (benchmarks/bench_finetune_step.py --json ...), if recorded."""
    if not path.exists():
        return f"_not recorded: run `python benchmarks/bench_finetune_step.py --encoder <encoder dir> --json {path}`_\n"
    bench = json.loads(path.read_text())
    rows = [(name, figures["median_ms"], figures["steps"]) for name, figures in bench["variants"].items()]
    head = (f"{bench['what']}; {bench['threads']} threads, torch {bench['torch']}: {bench['speedup']:.2f}× faster. "
            f"`{bench['command']}`\n\n")
    return head + markdown_table(["implementation", "median ms/step", "steps timed"], rows)


MAIN_COMMAND_JSON = Path("docs/benchmarks/main_command_cold.json")
SECOND_CONDITION_JSON = Path("docs/benchmarks/second_condition.json")


PAPER_TABLES_JSON = Path(__file__).resolve().parent.parent / "configs" / "paper_tables.json"
PAPER_COMPARISON = ("The paper's Table 2 figures are probably dev scores: the reference evaluation config points its "
                    "\"test\" file at the dev split (SPEC §H), so the paper column is best read beside our dev LAS; "
                    "our tables show test.")


def paper_comparison_note() -> str:
    """What the paper's Table 2 column compares with: configs/paper_tables.json's
    `compares_with_note` where recorded (its `compares_with` is the split alone), else the reading
    of SPEC §H."""
    table2 = json.loads(PAPER_TABLES_JSON.read_text()).get("table2", {})
    note = table2.get("compares_with_note")
    return (note[0].upper() + note[1:] + ".") if note else PAPER_COMPARISON


def finetune_section(workspace: Workspace) -> str:
    """Every cached score_cell: one fine-tuning run of one encoder on one task and seed, with the
    official CoNLL 2018 LAS where the run is a UD parser."""
    rows = []
    for info in completed_steps(workspace, "ScoreCell"):
        score = workspace.step_cache[info]  # not step_result(): that goes through runs, which may have been pruned
        seconds = score.get("train_seconds")
        metrics = finetune_metrics(workspace, info) or {}
        official = (metrics.get("udeval") or {}).get("LAS")
        rows.append((score["scale"], score["table"], score["row"], score["column"], score["seed"], score["metric"],
                     score["dev"], score["test"], official, None if seconds is None else seconds / 60, metrics.get("device")))
    rows.sort(key=lambda r: tuple(str(x) for x in r[:5]))
    note = ("dev and test: the table metric (UD parsing: LAS without gold PUNCT/SYM); official LAS: the CoNLL 2018 "
            "shared-task scorer on test (`udeval.LAS` of the run's metrics.json, punctuation included). "
            + paper_comparison_note() + "\n\n")
    return note + markdown_table(["scale", "table", "row", "column", "seed", "metric", "dev", "test", "official LAS (test)",
                                  "fine-tune min", "device"], rows)


def finetune_metrics(workspace: Workspace, score_info: StepInfo) -> Optional[Dict]:
    """The metrics.json of the fine-tuning a score_cell scored (device, udeval, …), if cached."""
    for dependency in score_info.dependencies:
        finetuned = workspace.step_info(dependency)
        if finetuned in workspace.step_cache:
            metrics = Path(workspace.step_cache[finetuned]) / "metrics.json"
            if metrics.exists():
                return json.loads(metrics.read_text())
    return None


def seed_noise_section(workspace_dir: Path, graphs: Sequence[FileGraph]) -> str:
    """Cells fine-tuned with several seeds by the files in benchmarks/seeds (mean ± sd over seeds),
    kept out of experiments/ so that the paper tables keep their one-seed cells."""
    from steps.evaluate.scoring import format_mean_sd

    files = experiment_files(("benchmarks/seeds", "benchmarks/gpu"))
    cells, _ = collect_cells(files, workspace_dir, graphs)
    rows = []
    for cell in sorted((c for c in cells if c.result), key=lambda c: (c.table, c.column, c.row)):
        test, dev = cell.result["test"], cell.result["dev"]
        rows.append((cell.table, cell.row, cell.column, cell.scale, len(test["values"]),
                     ", ".join(f"{seed}: {value:.2f}" for seed, value in zip(cell.result["seeds"], test["values"])),
                     format_mean_sd(test["mean"], test["sd"], len(test["values"])),
                     format_mean_sd(dev["mean"], dev["sd"], len(dev["values"]))))
    note = ("One encoder fine-tuned with several seeds (`tango run benchmarks/seeds/<file>`): how far "
            "one seed's test figure can move. Mean ± sample sd. A row ending in -long is the cpu cell with its µBERT "
            "pretrained on 27x the rows, on a GPU (`benchmarks/gpu/`, `long_pretraining.libsonnet`).\n\n")
    return note + markdown_table(["table", "row", "column", "scale", "seeds", "test per seed", "test", "dev"], rows)


def decomposition_section(workspace_dir: Path, graphs: Sequence[FileGraph], curves_dir: Optional[Path] = None,
                          report_dir: Optional[Path] = None, keep_record: bool = False) -> str:
    """Five encoders × five fine-tuning regimes on Wolof, each factor alone (reporting.decomposition);
    with ``curves_dir``, the cells' dev curves drawn there (kept when this cache has none) and linked."""
    from reporting import decomposition

    runs = decomposition.finetune_runs(workspace_dir, graphs)  # read once: the grid's effort and the figure
    cells, effort = decomposition.decomposition_cells(workspace_dir, graphs, runs=runs)
    text = decomposition.markdown(cells, effort, decomposition.seeds_so_far(runs, cells, decomposition.recorded_runs()))
    if curves_dir is not None:
        figure = Path(curves_dir) / "wolof_decomposition_dev_curves.png"
        decomposition.draw_dev_curves(runs, figure, keep_record)  # None, the committed figure kept, when nothing is cached
        if figure.exists():
            link = figure.resolve().relative_to(Path(report_dir or workspace_dir).resolve()).as_posix()
            text += f"\nDev score while fine-tuning, mean over each cell's seeds (the paper's µB-M dotted):\n\n![decomposition dev curves]({link})\n"
    return text


def table_cells(workspace_dir: Path, graphs: Sequence[FileGraph], keep_record: bool = False):
    """(cells of the paper tables' files, the files that could not be built): cached cells only;
    with ``keep_record``, the committed docs/tables cells this cache lacks too."""
    cells, problems = collect_cells(tables.table_files(), workspace_dir, graphs)
    if keep_record:
        cells = merge_record(cells, record_cells(tables.DOCS_TABLES))
    return cells, problems


def tables_section(cells, problems) -> str:
    """The paper tables as `python -m reporting.tables` builds them (a record cell marked †)."""
    files = tables.table_files()
    body = markdown_summary(cells) or NOTHING
    note = (f"Built from {len(files)} experiment files (experiments/, benchmarks/seeds/ and the paper-scale files of "
            f"benchmarks/gpu/, whose scale is gpu-<the task's fine-tuning regime>: a cell shows its cached "
            f"result with the most seeds) by `python -m reporting.tables` (full tables, LaTeX, CSV "
            f"and Δ-vs-µB-M plots in `docs/tables/`); ours first, the paper's value beside it. Under each table: "
            f"each condition's difference from µB-M, mean ± 95 % t-interval over the seeds both were fine-tuned with "
            f"(paired by seed). Table 2: {paper_comparison_note()}\n\n")
    if problems:
        note += f"{len(problems)} experiment files could not be built here (e.g. missing data); see the command's output.\n\n"
    return note + body


def related_section(cells) -> str:
    """The related-biases and MLM-accuracy tables as `python -m reporting.tables` writes them."""
    note = ("Syntax-guided attention (seed 001) and Edman et al.'s local MLMs (seed 003) as µBERT conditions, from "
            "`experiments/related/` (`python -m reporting.tables`: `docs/tables/<scale>/related.md`, `mlm_accuracy.md` "
            "and their CSVs; `benchmarks/related_campaign.py` runs the cells and records each file's wall time in "
            "`docs/benchmarks/related_campaign.jsonl`).\n\n")
    return note + (related_summary(cells) or NOTHING)


def tg_section(cells) -> str:
    """The TG perplexity and agreement tables (`experiments/*_tg.jsonnet`) and where the generation check is."""
    note = ("TG, TXL (trees) and TXL (terminals) trained with one budget on each language's trees, 3 seeds "
            "(`python -m reporting.tables`: `docs/tables/<scale>/tg.md`, `tg_agreement.md`; "
            "`benchmarks/tg_campaign.py` runs both files, records their wall times in "
            "`docs/benchmarks/tg_campaign.jsonl` and writes the generation check, [`docs/tg_samples.md`](tg_samples.md)).\n\n")
    return note + (markdown_summary(cells, tables=sorted(tables.LOCAL_TABLES)) or NOTHING)


CORPUS_PARSERS = "Corpus parsers trained in the DAG (Wolof bar: beat UDPipe 1)"


def corpus_parser_las(workspace: Workspace, recorded: Optional[str] = None) -> Dict[str, float]:
    """{language: test LAS} of the in-DAG Stanza corpus parsers: this cache's, and the committed
    report's (``recorded``) for a language this cache has none for."""
    las = {}
    for info in completed_steps(workspace, "TrainCorpusParser"):
        parser = json.loads((Path(workspace.step_cache[info]) / "parser.json").read_text())
        if parser["backend"] == "stanza":
            las[language_of(workspace, info)] = parser["metrics"]["test_las"]
    section = report_sections(recorded).get(CORPUS_PARSERS, "") if recorded else ""
    lines = section.splitlines()
    table = _first_table(lines)
    if table is not None:
        header = _cells(lines[table[0]])
        for line in lines[table[0] + 2:table[1]]:
            row = dict(zip(header, _cells(line)))
            if row.get("backend") == "stanza" and row.get("test LAS") not in (None, "", "—"):
                las.setdefault(_unkept(row["language"]), float(row["test LAS"]))
    return las


def parser_against_encoder_section(cells, parser_las: Dict[str, float]) -> str:
    """Per language, the corpus parser that made the pretraining parse against the µBERT parsers
    fine-tuned at cpu scale, on the same test split and metric (issue 14: a fine-tuned µB-M below
    a 15-minute BiLSTM parser of the same data points at the encoder or its fine-tuning regime)."""
    from steps.evaluate.scoring import format_mean_sd

    paper = tables.paper_values(json.loads(tables.PAPER_TABLES.read_text()), "table2")[2]
    found = {(c.row, c.column): c for c in cells if c.table == "table2" and c.scale == "cpu" and c.result}
    rows = []
    for language, las in parser_las.items():
        m, random_init = found.get(("M", language)), found.get(("random-init", language))
        if m is None:
            continue
        text = lambda c: "—" if c is None else format_mean_sd(c.result["test"]["mean"], c.result["test"]["sd"], c.result["n"]) + (" †" if c.recorded else "")  # noqa: E731
        rows.append((language, f"{las:.2f}", text(m), f"{m.result['test']['mean'] - las:+.2f}", text(random_init),
                     paper.get("M", {}).get(language) or "—"))
    if not rows:
        return NOTHING
    note = ("Test LAS, PUNCT/SYM excluded, subtypes kept, on the UD test split. The corpus parser (Stanza, cpu scale, "
            "its own predicted UPOS) made the parse that the syntactic conditions pretrain on; the µBERT parsers are "
            "fine-tuned at cpu scale (mean ± sd over seeds, † the committed record's). Both learn from the same UD "
            "train split and the same unlabeled corpus (Stanza through word vectors trained on it, µBERT through "
            "pretraining): where µB-M is below the corpus parser, the µBERT encoder or its fine-tuning regime, not "
            "the data, holds the cell back.\n\n")
    return note + markdown_table(["language", "corpus parser", "µB-M", "µB-M − corpus parser", "random-init", "paper µB-M"], rows)


def timing_section() -> str:
    rows = []
    for label, path in (("cold (fresh workspace)", MAIN_COMMAND_JSON), ("second condition, same workspace", SECOND_CONDITION_JSON)):
        if not path.exists():
            continue
        record = json.loads(path.read_text())
        ran = [f"{name} {step.get('seconds', 0) / 60:.1f}" for name, step in record["steps"].items() if step["status"] == "ran"]
        cached = [name for name, step in record["steps"].items() if step["status"] == "cached"]
        rows.append((label, f"`{record['command']}`", record["wall_minutes"], record["returncode"],
                     ", ".join(ran) or "—", ", ".join(cached) or "—"))
    if not rows:
        return "_not recorded: see benchmarks/time_experiment.py_\n"
    return ("Recorded with `benchmarks/time_experiment.py` (2 cores); step minutes are between Tango's start and "
            "finish log lines.\n\n" + markdown_table(["run", "command", "wall min", "exit", "steps run (min)", "steps from cache"], rows))


def curves_section(workspace_dir: Path, graphs: Sequence[FileGraph], curves_dir: Optional[Path], report_dir: Path,
                   keep_recorded: bool = False) -> str:
    """Dev loss / LAS / F1 / accuracy by step or epoch per condition, as PNGs in ``curves_dir``
    (``keep_recorded``: merged with the committed figures' lines, `draw_curves`)."""
    if curves_dir is None:
        return "_not drawn_\n"
    from reporting.cache import list_entries
    from reporting.curves import curves_markdown, draw_curves

    return curves_markdown(draw_curves(list_entries(workspace_dir, graphs), curves_dir, keep_recorded), report_dir)


def build_report(workspace: Workspace, workspace_dir: Path = Path("workspace"), keep_record: bool = False,
                 curves_dir: Optional[Path] = None, report_dir: Optional[Path] = None, recorded: Optional[str] = None) -> str:
    """The report's Markdown; with ``curves_dir``, the training curves are drawn there and linked
    relative to ``report_dir`` (the report's folder). ``recorded``: the committed report, whose
    corpus-parser rows stand in for the languages this cache has none for (with ``keep_record``)."""
    graphs = load_graphs(experiment_files(), workspace_dir)  # experiments/ and benchmarks/, each built once
    cells, problems = table_cells(workspace_dir, graphs, keep_record)
    sections: List[Tuple[str, str]] = [
        ("Unlabeled corpora (paper Table 1)", corpus_section(workspace, scales_of_steps(graphs))),
        ("Corpus parsers trained in the DAG (Wolof bar: beat UDPipe 1)", parser_section(workspace)),
        ("Corpus parser choices, one at a time", ablation_section()),
        ("Corpus parse throughput", throughput_section(workspace)),
        ("Pretraining", pretraining_section(workspace)),
        ("Training curves", curves_section(workspace_dir, graphs, curves_dir, report_dir or Path(workspace_dir), keep_record)),
        ("Pretraining settings, one at a time", pretrain_ablation_section()),
        ("Pretraining step benchmark", benchmark_section()),
        ("Pretraining step on a GPU, with its speed levers (issue 14)", benchmark_section(GPU_BENCHMARK_JSON, GPU_BENCHMARK_COMMAND)),
        ("Paper-scale pretraining pace on a GPU (issue 14 speed bars)", gpu_pace_section()),
        ("Pretraining loader: the slowest batch of an epoch (issue 14's MXPT-SLA stall)", loader_epoch_section()),
        ("Fine-tuning epochs on a GPU (issue 14: whether the paper regime fits a lending)", gpu_finetune_section()),
        ("Fine-tuning step benchmark", finetune_benchmark_section()),
        ("README main command: wall time", timing_section()),
        ("Fine-tuning runs (one per task, encoder and seed)", finetune_section(workspace)),
        ("Seed noise", seed_noise_section(workspace_dir, graphs)),
        ("Where the Wolof gap is (issue 14)", decomposition_section(workspace_dir, graphs, curves_dir, report_dir, keep_record)),
        ("Runs in progress", in_progress_section(unfinished_entries(workspace_dir, graphs))),
        ("Corpus parser against the fine-tuned µBERT parsers (cpu scale)",
         parser_against_encoder_section(cells, corpus_parser_las(workspace, recorded if keep_record else None))),
        ("Paper tables from the cache", tables_section(cells, problems)),
        ("Related biases (issue 18)", related_section(cells)),
        ("Transformer Grammars (issue 19)", tg_section(cells)),
    ]
    text = ["# Results\n",
            "Generated by `python -m reporting.report` from the Tango workspace cache; do not edit by hand.\n",
            "Commands that fill the cache are listed in the README (e.g. `tango run experiments/wolof_data.jsonnet`).\n"]
    for title, body in sections:
        text.append(f"\n## {title}\n\n{body}")
    return "".join(text)


# Sections whose table rows are results of record, and the columns that name a row: a committed
# row whose name this cache's table lacks is kept (marked †) when the record is rewritten.
RECORD_ROW_KEYS = {
    "Unlabeled corpora (paper Table 1)": ("language", "documents", "train tokens (whitespace)", "train sentences used"),
    "Corpus parsers trained in the DAG (Wolof bar: beat UDPipe 1)": ("language", "backend"),
    "Corpus parse throughput": ("language", "parser", "train sentences parsed"),
    "Pretraining": ("language", "condition", "steps", "batch", "train rows"),
    "Fine-tuning runs (one per task, encoder and seed)": ("scale", "table", "row", "column", "seed"),
    "Seed noise": ("table", "row", "column", "scale"),
}
# Sections where a row of record with more seeds than the cache's row of the same name is kept beside
# it (†), as the paper tables prefer the result with the most seeds: a 3-seed rerun on another box
# does not erase a 5-seed result of record.
RECORD_ROW_MORE_IS_KEPT = {"Seed noise": "seeds"}
KEPT = "†"
KEPT_NOTE = f"{KEPT} not in the cache that wrote this report: the committed record's row, kept."


def report_sections(text: str) -> Dict[str, str]:
    """{section title: body} of a report written by build_report."""
    parts = text.split("\n## ")
    return {part.split("\n", 1)[0].strip(): (part.split("\n", 1)[1] if "\n" in part else "") for part in parts[1:]}


def _cells(line: str) -> List[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _first_table(lines: List[str]) -> Optional[Tuple[int, int]]:
    """(header index, end index) of the first Markdown table in ``lines``, or None."""
    for i in range(len(lines) - 1):
        if lines[i].startswith("| ") and lines[i + 1].startswith("|---"):
            end = i + 2
            while end < len(lines) and lines[end].startswith("| "):
                end += 1
            return i, end
    return None


def _unkept(cell: str) -> str:
    return cell.replace(KEPT, "").strip()


def _count(cell: str) -> int:
    try:
        return int(_unkept(cell))
    except ValueError:
        return 0


def keep_recorded_rows(body: str, recorded: str, key_columns: Sequence[str], more_is_kept: Optional[str] = None) -> str:
    """``body`` (a section as this cache writes it) plus every row of ``recorded`` (the committed
    section) whose ``key_columns`` cells name no row of body's table, marked †; columns are
    matched by header, a column the record lacks reads —. With ``more_is_kept`` (a count column,
    e.g. seeds), a record row whose count exceeds that of body's row of the same name is kept too,
    after it. The pretraining section's per-run bullet lines are kept the same way, by their label."""
    old_lines = recorded.splitlines()
    old_table = _first_table(old_lines)
    if old_table is None:
        return body
    old_header = _cells(old_lines[old_table[0]])
    old_rows = [dict(zip(old_header, _cells(line))) for line in old_lines[old_table[0] + 2:old_table[1]]]
    lines = body.splitlines()
    table = _first_table(lines)
    if table is None:
        if NOTHING.strip() not in lines:
            return body
        at = lines.index(NOTHING.strip())
        lines[at:at + 1] = old_lines[old_table[0]:old_table[0] + 2]
        table = (at, at + 2)
    header = _cells(lines[table[0]])
    name_of = lambda row: tuple(_unkept(row.get(column, "")) for column in key_columns)  # noqa: E731
    names = {}
    for line in lines[table[0] + 2:table[1]]:
        row = dict(zip(header, _cells(line)))
        names[name_of(row)] = max(names.get(name_of(row), 0), _count(row.get(more_is_kept, ""))) if more_is_kept else 0
    kept = []
    for row in old_rows:
        name = name_of(row)
        if name in names and not (more_is_kept and _count(row.get(more_is_kept, "")) > names[name]):
            continue
        cells = [row.get(column, "—") for column in header]
        cells[0] = cells[0] if KEPT in cells[0] else f"{cells[0]} {KEPT}"
        kept.append("| " + " | ".join(cells) + " |")
    bullets = {line.split(":", 1)[0].replace(f" {KEPT}", "") for line in lines if line.startswith("- ")}
    old_bullets = [line for line in old_lines[old_table[1]:] if line.startswith("- ")]
    kept_bullets = [line if KEPT in line.split(":", 1)[0] else line.replace(":", f" {KEPT}:", 1)
                    for line in old_bullets if line.split(":", 1)[0].replace(f" {KEPT}", "") not in bullets]
    if not kept and not kept_bullets:
        return body
    lines[table[1]:table[1]] = kept
    if kept_bullets:
        if not bullets:
            intro = next((line for line in old_lines[old_table[1]:] if line and not line.startswith(("- ", KEPT))), None)
            lines += ["", intro, ""] if intro else [""]
        lines += kept_bullets
    text = "\n".join(lines).rstrip("\n")
    return text + "\n" if KEPT_NOTE in text else text + f"\n\n{KEPT_NOTE}\n"


# Sections of figures: a committed figure this cache does not redraw is kept, if its file still is.
RECORD_FIGURES = ("Training curves",)
KEPT_FIGURES_NOTE = f"{KEPT} Drawn from an earlier cache, not redrawn from this one (the committed figures, kept):"


def _figure_target(line: str) -> str:
    return line[line.index("](") + 2:].rstrip().rstrip(")")


def keep_recorded_figures(body: str, recorded: str, report_dir: Optional[Path]) -> str:
    """``body`` plus the committed section's figure links that body lacks and whose file exists
    under ``report_dir`` (none are kept without one)."""
    drawn = {_figure_target(line) for line in body.splitlines() if line.startswith("![")}
    kept = [line for line in recorded.splitlines() if line.startswith("![") and _figure_target(line) not in drawn
            and report_dir is not None and (report_dir / _figure_target(line)).is_file()]
    if not kept:
        return body
    body = "" if body.strip() == NOTHING.strip() else body.rstrip("\n") + "\n\n"
    return body + KEPT_FIGURES_NOTE + "\n\n" + "\n".join(kept) + "\n"


def keep_record(report: str, recorded: str, report_dir: Optional[Path] = None) -> str:
    """The report with the committed report's rows that this cache lacks (RECORD_ROW_KEYS), and
    its figures that this cache does not redraw (RECORD_FIGURES; files under ``report_dir``)."""
    old = report_sections(recorded)
    head, *parts = report.split("\n## ")
    out = [head]
    for part in parts:
        title, _, body = part.partition("\n")
        if title.strip() in RECORD_ROW_KEYS and title.strip() in old:
            body = keep_recorded_rows(body.lstrip("\n"), old[title.strip()], RECORD_ROW_KEYS[title.strip()],
                                      RECORD_ROW_MORE_IS_KEPT.get(title.strip()))
            body = "\n" + body
        elif title.strip() in RECORD_FIGURES and title.strip() in old:
            body = "\n" + keep_recorded_figures(body.lstrip("\n"), old[title.strip()], report_dir)
        out.append(f"{title}\n{body}")
    return "\n## ".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", default="workspace", help="Tango workspace directory (default: ./workspace)")
    parser.add_argument("--output", help="report file (default: <workspace>/RESULTS.md; docs/RESULTS.md with --update-docs)")
    parser.add_argument("--update-docs", action="store_true", help="rewrite the committed docs/RESULTS.md")
    args = parser.parse_args(argv)
    output = Path(args.output) if args.output else (DOCS_RESULTS if args.update_docs else Path(args.workspace) / "RESULTS.md")
    import steps  # noqa: F401  (registers step classes and formats so cached results can be read)

    workspace = Workspace.from_url(f"local://{Path(args.workspace).resolve()}")
    # The curves go beside the report: docs/curves/ with --update-docs, else <workspace>/curves/.
    recorded = output.read_text(encoding="utf-8") if args.update_docs and output.exists() else None
    report = build_report(workspace, Path(args.workspace).resolve(), keep_record=args.update_docs,
                          curves_dir=output.parent / "curves", report_dir=output.parent, recorded=recorded)
    if recorded is not None:
        report = keep_record(report, recorded, output.parent)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report)
    print(report)
    print(f"wrote {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
