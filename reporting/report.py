"""Write the results report from whatever the Tango workspace cache holds.

    python -m reporting.report [--workspace workspace]   # writes <workspace>/RESULTS.md, engineering.md, runs.csv
    python -m reporting.report --update-docs             # rewrites docs/RESULTS.md, docs/engineering.md, docs/runs.csv (+ docs/curves/)

Nothing is trained or recomputed: every figure is read from a cached step result, so the files
always match the cache. RESULTS.md holds what a researcher reads (the paper's question first, then
the headline findings and the paper's tables); engineering.md the throughput, pace, loader, step
benchmarks and wall times; runs.csv one row per fine-tuning run. With ``--update-docs`` a row or
cell of the committed record that this cache lacks is kept, marked † (or named on the table's
provenance line when every figure of a table is the record's): a partial cache never erases a result
of record.
"""
from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from tango import Workspace
from tango.step_info import StepInfo

from reporting.cache import unfinished_entries
from reporting.cells import PREDICTIONS, collect_cells, exported_scores, merge_record, record_cells
from reporting.graphs import REPO, FileGraph, cached_result, experiment_files, load_graphs, scales_of_steps
from reporting.languages import language_of_file, languages, short_title
from reporting.records import command_files, read_jsonl
from reporting import significance, tables
from reporting.tables import markdown_summary, related_summary

DOCS_RESULTS = REPO / "docs" / "RESULTS.md"
ENGINEERING = "engineering.md"  # beside the report, as runs.csv is
RUNS_CSV = "runs.csv"

# UDPipe 1 on Wolof-WTB, measured on the 2-core machine (DEVELOPERS.md): the bar to beat.
UDPIPE_WOLOF_LAS = 70.15


def completed_steps(workspace: Workspace, class_name: str) -> List[StepInfo]:
    """Steps of ``class_name`` with a cached result. A cache entry copied in from another machine
    (a GPU machine's) has no record of its run in this workspace, and one a user deleted still has
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
    ) + ("\nTokens split on whitespace; docs/tables/table1.md counts them as the paper's reader did (Coptic's corpus "
         "is the reference's own file) and says why each language differs.\n")


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
GPU_BENCHMARK_COMMAND = "python benchmarks/bench_pretrain_step.py --device cuda --json {path} (on a GPU machine)"


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
        return f"_not recorded: run `python benchmarks/gpu/pace.py experiments/paper/wolof_m.jsonnet --steps 3000 --window 500 --json {path}` on a GPU machine_\n"
    records = read_jsonl(path)
    fastest_m = min((r["full_run_minutes"] for r in records if r["condition"] == "M"), default=None)
    rows = [(r["condition"], r.get("gpu") or r["device"], _levers_text(r["levers"]), r["loader_workers"], r["steps"],
             r["steps_per_second"], r["full_run_minutes"], None if fastest_m is None else r["full_run_minutes"] / fastest_m,
             r.get("note", ""))
            for r in records]
    head = (f"Each record runs a file's own pretraining loop ({records[0]['batch_size']} rows a step) for its steps and "
            "projects the full run from the median pace of the windows after the first (compiles and loader start-up excluded). "
            "Bars: µB-M ≤ 5 min; µB-MXPT-SLA ≤ 1.3× µB-M. `python benchmarks/gpu/pace.py FILE --json OUT` on a GPU machine "
            f"(`--without-compile` for the eager loop), records appended to `{path}`.\n\n")
    return head + markdown_table(["condition", "device", "levers", "loader workers", "steps", "steps/s", "full run (min)",
                                  "× µB-M's fastest", "note"], rows)


GPU_SIDE_BY_SIDE_JSON = Path("docs/benchmarks/gpu_side_by_side.json")


def gpu_side_by_side_section(path: Path = GPU_SIDE_BY_SIDE_JSON) -> str:
    """Paper-scale pretrainings sharing one GPU (``tools/jobs.py run`` with several targets): each
    run's pace windows beside the same run alone, and how busy the GPU was."""
    if not path.exists():
        return f"_not recorded: `python tools/jobs.py run FILE:pretrained_model FILE:pretrained_model --budget S --out OUT` on a GPU machine, summarised in {path}_\n"
    record = json.loads(path.read_text())
    side = record["side_by_side"]
    rows = [(condition, f"{run['steps'][0]:,}–{run['steps'][1]:,}", side["seconds"],
             min(run["pace_windows_steps_per_second"]), max(run["pace_windows_steps_per_second"]),
             ", ".join(f"{step}: {loss}" for step, loss in run["dev_mlm_loss"].items()))
            for condition, run in side.items() if isinstance(run, dict) and "steps" in run]
    alone = record["M_alone_resumed"]
    lost = ", ".join(f"{step}: {loss}" for step, loss in record["lost_encoder_dev_mlm_loss"].items())
    utilisation = side["gpu_sm_utilisation_percent"]
    alone_pace = record["alone_steps_per_second"]
    shares = "; ".join(f"µB-{condition} {min(side[condition]['pace_windows_steps_per_second']) / pace:.2f}–"
                       f"{max(side[condition]['pace_windows_steps_per_second']) / pace:.2f} of its pace alone ({pace} steps/s)"
                       for condition, pace in alone_pace.items() if condition in side)
    together = sum(statistics.median(side[c]["pace_windows_steps_per_second"]) / pace for c, pace in alone_pace.items() if c in side)
    return (f"{record['what']}; {record['device']}. `{record['command']}`. Side by side, the GPU's SMs were busy "
            f"{utilisation['median_while_training']:.0f}% (median of the {utilisation['samples_every_s']}-second samples while "
            f"training): {shares}; together {together:.2f} times the work of one run at a time (median windows; "
            f"the alone paces from {alone_pace['source']}). "
            f"µB-M alone, resumed: steps {alone['steps'][0]:,}–{alone['steps'][1]:,} in {alone['seconds']} s "
            f"({alone['note']}). Dev MLM loss of the lost encoder of the same step at the same steps: {lost}.\n\n"
            + markdown_table(["condition", "steps", "seconds", "slowest window (steps/s)", "fastest window (steps/s)", "dev MLM loss by step"], rows)
            + "\n" + gpu_side_by_side_records())


GPU_SIDE_BY_SIDE_JSONL = Path("docs/benchmarks/gpu_side_by_side.jsonl")


def _job_language(run: dict, command: str) -> str:
    """A job's run's language, from its experiment file (or the job's files where all share one language)."""
    found = {language_of_file(file) for file in ([run["experiment"]] if "experiment" in run else command_files(command))}
    return short_title(found.pop()) if len(found) == 1 and None not in found else "—"


def gpu_side_by_side_records(path: Path = GPU_SIDE_BY_SIDE_JSONL) -> str:
    """Later jobs of several pretrainings on one GPU (benchmarks/gpu/side_by_side.py), a row per run."""
    if not path.exists():
        return ""
    rows, records = [], read_jsonl(path)
    for record in records:
        busy = record["gpu_utilisation_percent"]["median_while_training"]
        for run in record["runs"]:
            windows = run["pace_windows_steps_per_second"]
            share = record["share_of_alone_pace"].get(run["condition"])
            rows.append((_job_language(run, record["command"]), run["condition"], record["device"], record["side_by_side"],
                         f"{run['steps'][0]:,}–{run['steps'][1]:,}" + ("" if run["finished"] else " (stopped)"),
                         min(windows), statistics.median(windows), max(windows), "—" if share is None else share,
                         "—" if busy is None else f"{busy:.0f}",
                         ", ".join(f"{step}: {loss}" for step, loss in run["dev_mlm_loss"].items())))
    commands = "; ".join(dict.fromkeys(f"`{r['command']}` ({r['note']})" if r["note"] else f"`{r['command']}`" for r in records))
    sources = "; ".join(dict.fromkeys(r["alone_steps_per_second"]["source"] for r in records if r["alone_steps_per_second"]))
    return (f"Later jobs, summarised from their own logs by `python benchmarks/gpu/side_by_side.py LOGS --smi SAMPLES --json {path}`: "
            f"{commands}. Pace windows are a minute each, the first of each process (start-up, compile) left out; a window "
            f"holding a dev evaluation is slower. \"× alone\": the median window over the run's pace alone ({sources}); "
            "GPU busy: the median nvidia-smi utilisation from the first busy sample to the last.\n\n"
            + markdown_table(["language", "condition", "device", "side by side", "steps", "slowest window (steps/s)", "median window (steps/s)",
                              "fastest window (steps/s)", "× alone", "GPU busy (%)", "dev MLM loss by step"], rows))


LOADER_EPOCH_JSONL = Path("docs/benchmarks/loader_epoch.jsonl")


def loader_epoch_section(path: Path = LOADER_EPOCH_JSONL) -> str:
    """The slowest batch of a pretraining epoch as a loader worker builds it (benchmarks/bench_loader_epoch.py),
    a row per record: the tail, and the step rates past which the loop waits on the loader."""
    if not path.exists():
        return (f"_not recorded: run `python benchmarks/bench_loader_epoch.py experiments/paper/wolof_mxpt_sla.jsonnet "
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
                "on a GPU machine's fine-tuning logs_\n")
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
            "unfinished --workspace …`); `tango run FILE` resumes one, or `python tools/jobs.py run FILE:STEP --budget SECONDS` in jobs of bounded length.\n\n")
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


SMOKE_COLD_JSON = Path("docs/benchmarks/smoke_cold.json")  # the README's two-minute run
MAIN_COMMAND_JSON = Path("docs/benchmarks/main_command_cold.json")
SECOND_CONDITION_JSON = Path("docs/benchmarks/second_condition.json")


PAPER_TABLES_JSON = Path(__file__).resolve().parent.parent / "configs" / "paper_tables.json"
PAPER_COMPARISON = ("The paper's Table 2 figures are probably dev scores: the reference evaluation config "
                    "(embur/configs/parser_eval.jsonnet) points its \"test\" file at the dev split, so the paper column "
                    "is best read beside our dev LAS; our tables show test.")


def paper_comparison_note() -> str:
    """What the paper's Table 2 column compares with: configs/paper_tables.json's
    `compares_with_note` where recorded (its `compares_with` is the split alone), else the reading
    of the reference evaluation config."""
    table2 = json.loads(PAPER_TABLES_JSON.read_text()).get("table2", {})
    note = table2.get("compares_with_note")
    return (note[0].upper() + note[1:] + ".") if note else PAPER_COMPARISON


RUN_FIELDS = ["scale", "table", "row", "column", "seed", "metric", "dev", "test", "official_las_test", "finetune_minutes",
              "device", "source", "cell_record"]
RUN_KEY = ("scale", "table", "row", "column", "seed")


def run_row(score: Dict, metrics: Dict, source: str) -> Dict[str, str]:
    """One runs.csv row from a score_cell result (steps.evaluate.scoring.score) and its fine-tune's
    metrics (official CoNLL 2018 LAS, device); ``source``: "cache" or "record"."""
    number = lambda value: "" if value is None else f"{value:.2f}"  # noqa: E731
    seconds = score.get("train_seconds")
    return {"scale": score["scale"], "table": score["table"], "row": score["row"], "column": score["column"],
            "seed": str(score["seed"]), "metric": score["metric"], "dev": number(score["dev"]),
            "test": number(score["test"]), "official_las_test": number((metrics.get("udeval") or {}).get("LAS")),
            "finetune_minutes": number(None if seconds is None else seconds / 60),
            "device": metrics.get("device") or "", "source": source}


def finetune_runs(workspace: Workspace) -> List[Dict[str, str]]:
    """Every cached score_cell as a runs.csv row: one fine-tuning run of one encoder on one task and
    seed, with the official CoNLL 2018 LAS (punctuation included) where the run is a UD parser."""
    # not step_result(): that goes through runs, which may have been pruned
    return [run_row(workspace.step_cache[info], finetune_metrics(workspace, info) or {}, "cache")
            for info in completed_steps(workspace, "ScoreCell")]


def recorded_runs(runs_csv: Optional[Path], recorded_report: Optional[str]) -> List[Dict[str, str]]:
    """The committed runs: ``runs_csv`` where it exists, else the runs table of a committed report
    that still held one (section "Fine-tuning runs (one per task, encoder and seed)")."""
    if runs_csv is not None and runs_csv.exists():
        return [dict(line, source="record") for line in csv.DictReader(runs_csv.open(encoding="utf-8"))]
    section = report_sections(recorded_report or "").get("Fine-tuning runs (one per task, encoder and seed)", "")
    lines = section.splitlines()
    table = _first_table(lines)
    if table is None:
        return []
    header = ["scale", "table", "row", "column", "seed", "metric", "dev", "test", "official_las_test", "finetune_minutes", "device"]
    rows = []
    for line in lines[table[0] + 2:table[1]]:
        row = dict(zip(header, (_unkept(cell) for cell in _cells(line))))
        rows.append({key: ("" if value == "—" else value) for key, value in row.items()} | {"source": "record"})
    return rows


def predicted_runs(predictions: Path) -> List[Dict[str, str]]:
    """The committed predictions' runs as runs.csv rows (source record): each seed exported with the
    cell it fills, scored as its score_cell step would (`reporting.cells.exported_scores`). What an
    empty cache still knows of fine-tunes whose caches are gone, such as the seeds of one cell run on
    several machines."""
    return [run_row(seed_score, metrics, "record") for metrics, seed_score in exported_scores(predictions)]


def cell_records(cells) -> Dict[Tuple[str, str, str, str], Dict[int, float]]:
    """{(scale, table, row, column): {seed: test}} of every cell of record: the paper tables' and the
    decomposition grid's (whose scale is the fine-tuning regime, its row the encoder)."""
    from reporting import decomposition

    found = {}
    for cell in list(cells) + record_cells(decomposition.DOCS, pattern=f"{decomposition.RECORD}.csv"):
        values = (cell.result or {}).get("test", {}).get("values")
        if values and len(values) == len(cell.result["seeds"]):
            found[(cell.scale, cell.table, cell.row, cell.column)] = dict(zip(cell.result["seeds"], values))
    return found


def cell_record_text(run: Dict[str, str], records: Dict[Tuple[str, str, str, str], Dict[int, float]]) -> str:
    """Whether a run's test figure is the one its cell's record holds: "yes", or why not (another run
    of the same cell, e.g. in another machine's cache, which the record does not use)."""
    seeds = records.get((run["scale"], run["table"], run["row"], run["column"]))
    if seeds is None or not run.get("test"):
        return ""
    seed = int(run["seed"])
    if seed not in seeds:
        return f"no: not one of the record's seeds ({' '.join(map(str, sorted(seeds)))})"
    if abs(seeds[seed] - float(run["test"])) < 0.006:
        return "yes"
    return f"no: another run; the record's seed {seed} reads {seeds[seed]:.2f}"


def merged_runs(cached: List[Dict[str, str]], recorded: List[Dict[str, str]], cells,
                predicted: Sequence[Dict[str, str]] = ()) -> List[Dict[str, str]]:
    """This cache's runs, then the record's runs this cache lacks (by scale, table, row, column and
    seed), then the committed predictions' runs (`predicted_runs`) that neither holds; each with
    whether its cell's record holds its figure."""
    name = lambda run: tuple(run.get(k, "") for k in RUN_KEY)  # noqa: E731
    cached_names = {name(run) for run in cached}
    runs = cached + [run for run in recorded if name(run) not in cached_names]
    names = {name(run) for run in runs}
    runs += [run for run in predicted if name(run) not in names]
    records = cell_records(cells)
    runs = [dict(run, cell_record=cell_record_text(run, records)) for run in runs]
    return sorted(runs, key=lambda run: (run["scale"], run["table"], run["row"], run["column"], int(run["seed"] or 0)))


def runs_csv_text(runs: List[Dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=RUN_FIELDS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(runs)
    return out.getvalue()


def runs_section(runs: List[Dict[str, str]]) -> str:
    """What RESULTS.md says of runs.csv: its link, its columns, and every run whose figure is not its
    cell's record, so that no two figures for one cell stand without a word."""
    others = [run for run in runs if run.get("cell_record", "").startswith("no")]
    text = (f"[`{RUNS_CSV}`]({RUNS_CSV}): {len(runs)} fine-tuning runs, one row per task, encoder and seed "
            "(dev and test: the table metric, UD parsing LAS without gold PUNCT/SYM; official_las_test: the CoNLL 2018 "
            "scorer, punctuation included; source: this cache, or the committed record (runs.csv and the exported "
            "predictions, docs/predictions/); cell_record: whether the cell's record holds this run's figure).\n")
    if not others:
        return text
    groups: Dict[Tuple[str, str, str, str, str], List[str]] = defaultdict(list)
    for run in others:
        why = "another run of the cell" if "another run" in run["cell_record"] else "a seed the record does not use"
        groups[(run["scale"], run["table"], run["row"], run["column"], why)].append(run["seed"])
    listed = "; ".join(f"{table} {row} {column} ({scale}) seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)}: {why}"
                       for (scale, table, row, column, why), seeds in sorted(groups.items()))
    return text + (f"\n{len(others)} of these runs are not their cell's record: earlier or parallel runs of the same cell "
                   "in another cache (another machine, or a pretraining from before the tokenizer's vocabulary was "
                   "deterministic, steps/data/vocab.py), superseded by the cell's record, which comes from one cache "
                   f"per cell: {listed}.\n")


def finetune_metrics(workspace: Workspace, score_info: StepInfo) -> Optional[Dict]:
    """The metrics.json of the fine-tuning a score_cell scored (device, udeval, …), if cached."""
    for dependency in score_info.dependencies:
        finetuned = workspace.step_info(dependency)
        if finetuned in workspace.step_cache:
            metrics = Path(workspace.step_cache[finetuned]) / "metrics.json"
            if metrics.exists():
                return json.loads(metrics.read_text())
    return None


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
        cells = merge_record(cells, tables.recorded_cells(cells))
    return cells, problems


def tables_section(cells, problems) -> str:
    """The paper tables as `python -m reporting.tables` builds them (a record cell marked †)."""
    files = tables.table_files()
    body = markdown_summary(cells) or NOTHING
    note = (f"Built from {len(files)} experiment files (experiments/, with experiments/seeds/ and the paper-scale files of "
            f"experiments/paper/, whose scale is gpu-<the task's fine-tuning regime>: a cell shows its cached "
            f"result with the most seeds) by `python -m reporting.tables` (full tables, LaTeX, CSV "
            f"and Δ-vs-µB-M plots in `docs/tables/`); ours (mean ± sd over seeds) first, the paper's value beside it. "
            f"Under each table: each condition's difference from µB-M, Δ ± 95% CI over the seeds both were fine-tuned "
            f"with (paired by seed). Table 2: {paper_comparison_note()}\n\n")
    if problems:
        note += f"{len(problems)} experiment files could not be built here (e.g. missing data); see the command's output.\n\n"
    return note + body


def related_section(cells) -> str:
    """The related-biases and MLM-accuracy tables as `python -m reporting.tables` writes them."""
    note = ("Syntax-guided attention (Ahmad et al.) and Edman et al.'s local MLMs as µBERT conditions, from "
            "`experiments/related/` (`python -m reporting.tables`: `docs/tables/<scale>/related.md`, `mlm_accuracy.md` "
            "and their CSVs; `benchmarks/related_campaign.py` runs the cells and records each file's wall time in "
            "`docs/benchmarks/related_campaign.jsonl`).\n\n")
    return note + (related_summary(cells) or NOTHING) + related_conflicts(cells)


def tg_section(cells) -> str:
    """The TG perplexity and agreement tables (`experiments/*_tg.jsonnet`) and where the generation check is."""
    note = ("TG, TXL (trees) and TXL (terminals) trained with one budget on each language's trees, 3 seeds "
            "(`python -m reporting.tables`: `docs/tables/<scale>/tg.md`, `tg_agreement.md`; "
            "`benchmarks/tg_campaign.py` runs both files, records their wall times in "
            "`docs/benchmarks/tg_campaign.jsonl` and writes the generation check, [`docs/tg_samples.md`](tg_samples.md)).\n\n")
    return note + (markdown_summary(cells, tables=sorted(tables.LOCAL_TABLES)) or NOTHING)


TG_BUDGETS = "Transformer Grammars: how long each language model trained"
DEFAULT_FORM = "default"  # the budget table's form column for an LM whose form settings are all defaults
STOP_RULES = {"perplexity": "dev perplexity rule", "plateau": "flat dev curve", "max_steps": "step limit",
              "budget_from": "TXL (terminals)' steps"}


def tg_budget_section(workspace_dir: Path, graphs: Sequence[FileGraph], recorded: Optional[str] = None) -> str:
    """Per language and seed, the steps each TG / TXL language model trained, the rule that ended it
    (a file's TXL (terminals) trains until its rule fires; TG and TXL (trees) then take its steps) and
    the step whose weights it kept, with that dev point; the committed section's rows (``recorded``)
    stay for the LMs this cache lacks."""
    from reporting.curves import tg_budgets
    from reporting.tables import TG_ROW_TITLES

    header = ["scale", "language", "form", "seed", "model", "steps", "stopped by", "kept step", "its dev point (ppl)",
              "dev words", "device"]
    rows = {}
    for row in recorded_rows(recorded, TG_BUDGETS):
        # Rows from before checkpoint selection kept their last step's weights; from before the form
        # settings, the default form.
        row.setdefault("kept step", row.get("steps")), row.setdefault("its dev point (ppl)", row.get("last dev point (ppl)"))
        row.setdefault("form", DEFAULT_FORM)
        rows[tuple(row.get(name) for name in header[:5])] = [row.get(name, "—") for name in header]
    for r in tg_budgets(workspace_dir, graphs):
        row = [r["scale"], r["language"].capitalize(), r["form"] or DEFAULT_FORM, str(r["seed"]), TG_ROW_TITLES.get(r["kind"], r["kind"]),
               f"{r['steps']:,}", STOP_RULES.get(r["stopped_by"], r["stopped_by"]), f"{r['kept_step']:,}", f"{r['kept_dev']:.2f}",
               f"{r['dev_words']:,}", r["device"]]
        rows[tuple(row[:5])] = row
    if not rows:
        return NOTHING
    note = ("The language models trained with a dev curve (`validate_every`; the paper-scale TG files): TXL (terminals) "
            "trains until its file's rule fires (Wolof: dev per-word perplexity ≤ 500; otherwise 3 dev points in a row "
            "improving < 1 %), TG and TXL (trees) of the same seed then train the same number of steps (`budget_from`); "
            "each keeps the weights of its lowest dev point (`select_best`, the TG paper's checkpoint selection). "
            "The rule reads a dev sample (`max_validation_sequences`, the first sentences of the split); the tables score "
            "the whole split. Form: the LM's `train_tg_lm` form settings off their defaults (the `tg_paper_form` files'), "
            f"{DEFAULT_FORM} for the `tg` files' default form.\n\n")
    order = {title: i for i, title in enumerate(TG_ROW_TITLES[k] for k in ("txl_terminals", "txl_trees", "tg"))}
    ordered = sorted(rows.values(), key=lambda row: (row[0], row[1], row[2] != DEFAULT_FORM,
                                                     int(row[3]) if row[3].isdigit() else 0, order.get(row[4], 9)))
    return note + markdown_table(header, ordered)


CORPUS_PARSERS = "Corpus parsers trained in the DAG (Wolof bar: beat UDPipe 1)"
PARSER_AGAINST_ENCODER = "Corpus parser against the fine-tuned µBERT parsers (cpu scale)"


def corpus_parser_las(workspace: Workspace, recorded: Optional[str] = None) -> Dict[str, Dict[str, float]]:
    """{language: {"cache": test LAS, "record": test LAS}} of the in-DAG Stanza corpus parsers:
    this cache's and the committed report's (``recorded``; of two committed runs, the earlier, ‡,
    one: the run behind the committed cells), each where it has one. A parser trained again need
    not reproduce the record's (Stanza's training need not reproduce exactly on another machine)."""
    las: Dict[str, Dict[str, float]] = {}
    for info in completed_steps(workspace, "TrainCorpusParser"):
        parser = json.loads((Path(workspace.step_cache[info]) / "parser.json").read_text())
        if parser["backend"] == "stanza":
            las.setdefault(language_of(workspace, info), {})["cache"] = parser["metrics"]["test_las"]
    for row in recorded_rows(recorded, CORPUS_PARSERS):
        if row.get("backend") == "stanza" and row.get("test LAS") not in (None, "", "—"):
            recorded_runs = las.setdefault(_unkept(row["language"]), {})
            if EARLIER in row["language"] or "record" not in recorded_runs:  # a ‡ row: the earlier run
                recorded_runs["record"] = float(row["test LAS"])
    # The figure the record already sets beside its µB-M cells wins: which ‡ row is that run's depends
    # on row order, and a run this cache reproduces exactly leaves the ‡ rows altogether.
    for row in recorded_rows(recorded, PARSER_AGAINST_ENCODER):
        if _unkept(row.get("corpus parser", "")) not in ("", "—"):
            las.setdefault(_unkept(row["language"]), {})["record"] = float(_unkept(row["corpus parser"]))
    return las


def parser_against_encoder_section(cells, parser_las: Dict[str, Dict[str, float]]) -> str:
    """Per language, the corpus parser that made the pretraining parse against the µBERT parsers
    fine-tuned at cpu scale, on the same test split and metric (a fine-tuned µB-M below a
    15-minute BiLSTM parser of the same data points at the encoder or its fine-tuning regime).
    Where µB-M's cell is the committed record's, so is the parser's figure (the parser of its run)."""
    from steps.evaluate.scoring import format_mean_sd

    published = json.loads(tables.PAPER_TABLES.read_text())
    paper = tables.paper_values(published, "table2")[2]
    found = {(c.row, c.column): c for c in cells if c.table == "table2" and c.scale == "cpu" and c.result}
    rank = language_rank(published)  # the paper's column order, whichever source came first
    rows = []
    for language in sorted(parser_las, key=rank):
        figures = parser_las[language]
        m, random_init = found.get(("M", language)), found.get(("random-init", language))
        if m is None:
            continue
        from_record = "record" in figures and (m.recorded or "cache" not in figures)
        las = figures["record" if from_record else "cache"]
        text = lambda c: "—" if c is None else format_mean_sd(c.result["test"]["mean"], c.result["test"]["sd"], c.result["n"]) + (" †" if c.recorded else "")  # noqa: E731
        rows.append((language, f"{las:.2f}" + (" †" if from_record else ""), text(m), f"{m.result['test']['mean'] - las:+.2f}",
                     text(random_init), paper.get("M", {}).get(language) or "—"))
    if not rows:
        return NOTHING
    marks, provenance_line = tables.provenance([row[i] for row in rows for i in (1, 2, 4)])
    if not marks:
        rows = [tuple(tables.unmarked(cell) if isinstance(cell, str) else cell for cell in row) for row in rows]
    note = ("Test LAS, PUNCT/SYM excluded, subtypes kept, on the UD test split. The corpus parser (Stanza, cpu scale, "
            "its own predicted UPOS) made the parse that the syntactic conditions pretrain on; the µBERT parsers are "
            "fine-tuned at cpu scale (mean ± sd over seeds). Both learn from the same UD "
            "train split and the same unlabeled corpus (Stanza through word vectors trained on it, µBERT through "
            "pretraining): where µB-M is below the corpus parser, the µBERT encoder or its fine-tuning regime, not "
            "the data, holds the cell back.\n\n")
    return note + markdown_table(["language", "corpus parser", "µB-M (± sd)", "µB-M − corpus parser", "random-init (± sd)",
                                  "paper µB-M"], rows) + (f"\n{provenance_line}\n" if provenance_line else "")


def timing_section() -> str:
    rows = []
    for label, path in (("two-minute run, cold (fresh workspace)", SMOKE_COLD_JSON), ("cold (fresh workspace)", MAIN_COMMAND_JSON),
                        ("second condition, same workspace", SECOND_CONDITION_JSON)):
        if not path.exists():
            continue
        record = json.loads(path.read_text())
        ran = [f"{name} {step.get('seconds', 0) / 60:.1f}" for name, step in record["steps"].items() if step["status"] == "ran"]
        cached = [name for name, step in record["steps"].items() if step["status"] == "cached"]
        probe = record.get("box", {}).get("box_seconds")
        rows.append((label, f"`{record['command']}`", record["wall_minutes"], record["returncode"],
                     ", ".join(ran) or "—", ", ".join(cached) or "—", record.get("date", "—"),
                     "—" if probe is None else f"{probe:.2f}"))
    if not rows:
        return "_not recorded: see benchmarks/time_experiment.py_\n"
    return ("Recorded with `benchmarks/time_experiment.py` (2 cores); step minutes are between Tango's start and "
            "finish log lines. Boxes differ in speed (up to ~1.9×): \"box probe\" is the seconds of "
            "`benchmarks/box_speed.py`'s fixed workload on the box that ran the row, just before it (\"—\": recorded "
            "before the probe existed). Run the probe on yours; a row's minutes × your probe / its probe is a "
            "first guess at your time.\n\n"
            + markdown_table(["run", "command", "wall min", "exit", "steps run (min)", "steps from cache", "recorded",
                              "box probe (s)"], rows))


def curves_section(workspace_dir: Path, graphs: Sequence[FileGraph], curves_dir: Optional[Path], report_dir: Path,
                   keep_recorded: bool = False) -> str:
    """Dev loss / LAS / F1 / accuracy by step or epoch per condition, and the TG LMs' dev perplexity, as PNGs in ``curves_dir``
    (``keep_recorded``: merged with the committed figures' lines, `draw_curves`)."""
    if curves_dir is None:
        return "_not drawn_\n"
    from reporting.cache import list_entries
    from reporting.curves import curves_markdown, draw_curves, draw_series, redraw_recorded, tg_curve_series

    written = draw_curves(list_entries(workspace_dir, graphs), curves_dir, keep_recorded)
    written += draw_series(tg_curve_series(workspace_dir, graphs), curves_dir, keep_recorded)
    if keep_recorded:
        redraw_recorded(curves_dir, skip=written)  # the rest of the record: its own lines, drawn as now
    return curves_markdown(written, report_dir)


QUESTION_TABLES = (("table2", "UD LAS"), ("table3", "NER F1"))
NOT_A_BIAS = ("M", "mBERT", "mBERT-VA")  # the baseline and the paper's multilingual rows


def _is_bias(row: str) -> bool:
    """A syntactic-bias condition of the question: a µBERT condition other than µB-M (not random-init)."""
    return row not in NOT_A_BIAS and tables._is_condition(row)


def _seeds_text(seeds: Sequence[int]) -> str:
    seeds = sorted(seeds)
    if not seeds:
        return "none shared"
    runs = len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1))
    return f"{seeds[0]}–{seeds[-1]}" if runs else ", ".join(map(str, seeds))


def regime_text(scale: str) -> str:
    """What a table scale means for its cells: the pretraining and the fine-tuning regime."""
    if scale.startswith("gpu-"):
        return (f"µBERT pretrained at the paper's scale on a GPU (experiments/paper/), fine-tuned under "
                f"the `{scale[4:]}` regime (configs/scales.libsonnet)")
    return (f"µBERT pretrained at `{scale}` scale (configs/scales.libsonnet), fine-tuned under that scale's regime "
            "(experiments/, experiments/seeds/)")


def question_deltas(cells, scale: str):
    """{(language, condition): {table: (Difference, shared seeds, the paper's Δ, from the record)}} of
    one scale: each syntactic-bias condition − µB-M, paired by seed, beside the paper's difference."""
    from reporting.significance import paired_difference

    paper = json.loads(tables.PAPER_TABLES.read_text())
    by_key = {(c.table, c.row, c.column): c for c in cells if c.scale == scale and c.result}
    found: Dict[Tuple[str, str], Dict[str, tuple]] = defaultdict(dict)
    for table, _ in QUESTION_TABLES:
        columns, order, paper_rows = tables.paper_values(paper, table)
        for (cell_table, row, column), cell in by_key.items():
            m = by_key.get((table, "M", column))
            if cell_table != table or m is None or not _is_bias(row):
                continue
            difference = paired_difference(cell.result, m.result)
            shared = sorted(set(cell.result["seeds"]) & set(m.result["seeds"]))
            published = tables.paper_delta(paper_rows, row, column)
            found[(column, row)][table] = (difference, shared, published, cell.recorded or m.recorded)
    rank = language_rank(paper)
    return dict(sorted(found.items(), key=lambda item: (rank(item[0][0]), item[0][1])))


def language_rank(paper: dict):
    """A sort key putting languages in the paper's Table 2 column order, any others after them by name."""
    order = {language: i for i, language in enumerate(tables.paper_values(paper, "table2")[0])}
    return lambda language: (order.get(language, len(order)), language)


def _delta_text(difference) -> str:
    if difference.mean is None:
        return difference.note or "—"
    return f"{difference.mean:+.2f}" + (f" ± {difference.half_width:.2f}" if difference.half_width is not None else " (1 seed)")


def _intervals(named):
    """``named``: (name, Difference, the paper's Δ or None). Those with an interval; the texts of those
    lying above and below 0; how many paper Δs lie inside their interval, of how many compared."""
    with_interval = [(name, d, published) for name, d, published in named if d is not None and d.half_width is not None]
    text = lambda name, d: f"{name} {d.mean:+.2f} ± {d.half_width:.2f}"  # noqa: E731
    above = [text(name, d) for name, d, _ in with_interval if d.mean - d.half_width > 0]
    below = [text(name, d) for name, d, _ in with_interval if d.mean + d.half_width < 0]
    inside = sum(1 for _, d, p in with_interval if p is not None and abs(p - d.mean) <= d.half_width)
    compared = sum(1 for *_, p in with_interval if p is not None)
    return with_interval, above, below, inside, compared


def verdict(deltas) -> str:
    """One sentence from the figures: which intervals exclude 0, and where the paper's Δ falls."""
    named = [(f"µB-{row} {short_title(language)} {label}", d, published)
             for (language, row), by_table in deltas.items() for table, label in QUESTION_TABLES
             for d, _, published, _ in [by_table.get(table, (None,) * 4)]]
    with_interval, above, below, inside, compared = _intervals(named)
    if not with_interval:
        return "No difference here has more than one shared seed, so none has an interval."
    lie = lambda count: "lies" if count == 1 else "lie"  # noqa: E731
    rest = len(with_interval) - len(above) - len(below)
    if len(with_interval) == 1 and not above and not below:
        (name, d, _), = with_interval
        head = f"The one difference's interval includes 0 ({name} {d.mean:+.2f} ± {d.half_width:.2f})."
    elif not above and not below:
        head = f"No condition's interval excludes 0 ({len(with_interval)} differences)."
    else:
        head = (f"Of {len(with_interval)} difference{'s' if len(with_interval) > 1 else ''}, {len(above)} {lie(len(above))} above 0"
                + (f" ({'; '.join(above)})" if above else "") + f" and {len(below)} below 0"
                + (f" ({'; '.join(below)})" if below else "") + f"; the other {rest} include{'s' if rest == 1 else ''} 0.")
    return head + (f" The paper's Δ lies inside our interval in {inside} of {compared}." if compared else "")


def _m_alone_text(cells, scale: str, compared) -> str:
    """The languages whose µB-M has cells at ``scale`` with no syntactic-bias condition beside it yet."""
    labels, alone = dict(QUESTION_TABLES), {}
    for cell in cells:
        if cell.scale == scale and cell.row == "M" and cell.result and cell.column not in compared and cell.table in labels:
            alone.setdefault(cell.column, []).append(f"{labels[cell.table]} {cell.mean:.2f}, {_seeds_text(cell.result['seeds'])}")
    return "".join(f"\n{short_title(language)}: µB-M only so far ({'; '.join(figures)}), no syntactic-bias condition beside it at this scale.\n"
                   for language, figures in sorted(alone.items()))


# The authors' earlier published figure for a cell, beside this paper's own (configs/paper_tables.json).
EARLIER_PUBLISHED = {("table2", "M", "wolof"): (75.69, "Gessler and Zeldes (2022), MicroBERT, UD 2.9")}
def _finished_seeds(runs, cells, scale: str) -> Dict[Tuple[str, str, str], Dict[int, Tuple[float, Optional[float], str]]]:
    """{(table, column, row): {seed: (test, dev, where)}} of the question's cells at ``scale`` (µB-M and
    the syntactic-bias conditions, `_is_bias`) that have no aggregate yet, or whose pair has none
    (seeds still running, or run in separate caches); a paper-scale µB-M's seeds include the
    decomposition grid's runs of the same fine-tuning (``where``: "grid"): its `paper` encoder under
    the scale's regime, for Wolof (decomposition.PAPER_SCALE_TABLES)."""
    from reporting import decomposition

    # A bias condition of the paper's Tables 2 and 3 waits unless it and its µB-M both have an aggregate
    # (then question_deltas pairs them); µB-M waits without one, or beside a waiting condition, whose Δ
    # needs its seeds.
    has = {(c.table, c.row, c.column): bool(c.result) for c in cells
           if c.scale == scale and c.table in dict(QUESTION_TABLES) and (c.row == "M" or _is_bias(c.row))}
    biases = {(table, row, column) for (table, row, column), done in has.items()
              if row != "M" and not (done and has.get((table, "M", column)))}
    waiting = biases | {(table, "M", column) for table, _, column in biases if (table, "M", column) in has} \
        | {key for key, done in has.items() if key[1] == "M" and not done}
    found: Dict[Tuple[str, str, str], Dict[int, Tuple[float, Optional[float], str]]] = defaultdict(dict)
    for run in runs:
        if not run.get("test") or not run.get("seed"):
            continue
        key = (run["table"], run["column"], run["row"]) if run["scale"] == scale else None
        if scale.startswith("gpu-") and (run["scale"], run["row"]) == (scale[4:], "paper") and run["column"] == "wolof":
            table = decomposition.PAPER_SCALE_TABLES.get(run["table"])
            key = (table, run["column"], "M") if table else None
        if key is None or (key[0], key[2], key[1]) not in waiting:
            continue
        where = "grid" if run["scale"] != scale else "cell"
        if where == "cell" or int(run["seed"]) not in found[key]:
            found[key][int(run["seed"])] = (float(run["test"]), float(run["dev"]) if run.get("dev") else None, where)
    # A µB-M with an aggregate is read by seed only beside a condition that has finished seeds.
    compared = {(table, column) for (table, column, row), seeds in found.items() if row != "M" and seeds}
    return {key: seeds for key, seeds in found.items()
            if seeds and (key[2] != "M" or (key[0], key[1]) in compared or not has[(key[0], "M", key[1])])}


def _so_far_difference(seeds, base):
    """A condition's paired difference from µB-M over the seeds both have finished (None before one is
    shared), and those seeds; ``seeds``, ``base``: {seed: (test, dev, where)}."""
    from reporting.significance import paired_difference

    shared = sorted(set(seeds) & set(base))
    as_result = lambda figures: {"seeds": shared, "test": {"values": [figures[seed][0] for seed in shared]}}  # noqa: E731
    return (paired_difference(as_result(seeds), as_result(base)) if shared else None), shared


def _so_far_pairs(found, paper):
    """Each cell of `_finished_seeds` with what the question reads of it, in table, language, µB-M-first
    order: (key, seeds, µB-M's seeds or None, `_so_far_difference` (None, [] for µB-M or before a
    shared seed), the paper's Δ). `question_so_far`'s rows and `question_points`' points both read this."""
    for (table, language, row), seeds in sorted(found.items(), key=lambda item: (item[0][0], item[0][1], item[0][2] != "M", item[0][2])):
        base = found.get((table, language, "M"))
        difference, shared = _so_far_difference(seeds, base) if row != "M" and base else (None, [])
        published = None if row == "M" else tables.paper_delta(paper.get(table, {}).get("rows", {}), row, language)
        yield (table, language, row), seeds, base, difference, shared, published


def question_so_far(runs, cells, scale: str) -> str:
    """The question's cells at ``scale`` that have no aggregate yet: each condition's finished seeds and
    its difference from µB-M over the seeds both have, so that a long regime's answer shows as its seeds
    come in (or where they ran in separate caches); the µB-M row beside the authors' published figures."""
    from reporting.significance import welch_difference

    found = _finished_seeds(runs, cells, scale)
    if not any(row != "M" for _, _, row in found):
        return ""
    planned = {(c.table, c.column, c.row): c.planned_seeds for c in cells if c.scale == scale}
    labels, paper = dict(QUESTION_TABLES), json.loads(tables.PAPER_TABLES.read_text())
    rows, notes = [], []
    for (table, column, row), seeds, base, difference, shared, published in _so_far_pairs(found, paper):
        tests = [seeds[seed][0] for seed in sorted(seeds)]
        devs = [seeds[seed][1] for seed in sorted(seeds) if seeds[seed][1] is not None]
        delta = "—"
        if row != "M" and base:
            delta = ("no shared seed yet" if difference is None else f"{difference.mean:+.2f} (seed {shared[0]}, no interval)"
                     if len(shared) == 1 else f"{_delta_text(difference)} (seeds {_seeds_text(shared)})")
            # seeds outside the pairs (or no pair yet): the unpaired interval over every seed goes beside it
            if set(shared) != set(seeds) | set(base) and len(seeds) > 1 and len(base) > 1:
                delta += "; all seeds: " + welch_difference(tests, [base[seed][0] for seed in sorted(base)]).text()
        grid = [seed for seed in sorted(seeds) if seeds[seed][2] == "grid"]
        wanted = planned.get((table, column, row)) or []
        to_run = f" of {_seeds_text(wanted)}" if not set(wanted) <= set(seeds) else ""
        paper_delta = "—" if published is None else f"{published:+.2f}"
        rows.append([short_title(column), labels[table], f"µB-{row}", _seeds_text(list(seeds)) + ("*" if grid else "") + to_run,
                     " / ".join(f"{test:.2f}" for test in tests), f"{_mean(tests):.2f}", f"{_mean(devs):.2f}" if devs else "—", delta,
                     paper_delta])
        if grid:
            notes.append(f"\\* µB-M {short_title(column)} seeds {_seeds_text(grid)}: the decomposition grid's runs of the same "
                         f"fine-tuning (its `paper` encoder under the `{scale[4:]}` regime; \"Where the Wolof gap is\"), fine-tuned "
                         "from the encoder's first pretraining (\"µB-M pretrained again at the paper's scale\").")
        published = [(value, where) for value, where in [EARLIER_PUBLISHED.get((table, row, column), (None, None)),
                                                          (paper.get(table, {}).get("rows", {}).get(row, {}).get(column),
                                                           f"this paper's {table.replace('table', 'Table ')}, most likely a dev figure")]
                     if value is not None]
        if row == "M" and published:
            notes.append(f"µB-M {short_title(column)} {labels[table]} under this regime so far: test {_mean(tests):.2f}"
                         + (f", dev {_mean(devs):.2f}" if devs else "") + "; the authors published "
                         + " and ".join(f"{value:.2f} ({where})" for value, where in published) + ".")
    header = ["language", "task", "condition", "seeds finished", "test, by seed", "test mean", "dev mean",
              "Δ from µB-M ± 95% CI (paired over shared seeds; Welch's unpaired over all seeds where they differ)", "paper Δ"]
    return (f"\nCells at `{scale}` with no aggregate yet, read from the seeds they have finished. A cell's figure is its "
            "aggregate step's, which needs every seed's score in one cache, or every seed exported to docs/predictions/ "
            "(then the record aggregates them); these seeds ran in separate caches, and "
            "\"of\" marks a cell whose experiment file still has seeds to run:\n\n"
            + markdown_table(header, rows) + ("\n" + "\n\n".join(notes) + "\n" if notes else ""))


QUESTION_CHECKS = "The paper's question under regimes that check the chosen ones"


def check_scale(scale: str) -> bool:
    """A paper-scale label whose fine-tuning regime is no task's chosen one (configs/scales.libsonnet
    `chosen`): a check of a chosen regime, such as the reference's NER weight decay."""
    return scale.startswith("gpu-") and scale[4:] not in tables.chosen_regimes().values()


def question_section(cells, runs=(), figure_link: Optional[str] = None, checks: bool = False) -> str:
    """The paper's question first: does a syntactic inductive bias help? Per scale with the cells,
    each bias condition − µB-M (UD LAS, NER F1) with its paired 95 % interval, the paper's Δ beside it,
    the seeds and regime behind each figure, and a verdict read from the figures; ``figure_link``: the
    `question_figure` drawn for them, shown first. ``checks``: the scales of `check_scale` alone (their
    own section, after the tables) in place of every other scale."""
    scales = sorted({c.scale for c in cells if c.table in dict(QUESTION_TABLES) and c.result and check_scale(c.scale) == checks},
                    key=lambda scale: (scale != "cpu", scale))
    if checks:
        if not scales:
            return NOTHING
        parts = ["The question's differences (as in \"The paper's question\": Δ ± 95% CI paired by seed, the paper's Δ "
                 "beside them) under fine-tuning regimes that are no task's chosen one (configs/scales.libsonnet "
                 "`chosen`), each a check of a chosen regime on the same encoders.\n"]
    else:
        parts = ["Each syntactic-inductive-bias condition's difference from µB-M on the same language, paired by the "
                 "fine-tuning seeds both cells share: Δ ± 95% CI (Student's t over the per-seed differences, "
                 "reporting/significance.py). The paper's Δ is its own figure for the condition minus its µB-M "
                 "(configs/paper_tables.json, the paper's Tables 2 and 3), which has no interval. The paper's answer "
                 "(its abstract): the methods \"produce uneven results in low-resource settings, and provide surprisingly "
                 "little benefit in most cases\". Regimes that check the chosen ones follow the tables "
                 f"(\"{QUESTION_CHECKS}\").\n"]
    if figure_link:
        parts.append(f"Every difference below against the paper's (on the dashed line we agree; above 0 the bias helps):\n\n"
                     f"![our differences from µB-M against the paper's]({figure_link})\n")
    without = []
    for scale in scales:
        deltas = question_deltas(cells, scale)
        if not deltas:
            without.append(scale)
            continue
        recorded = any(by_table[t][3] for by_table in deltas.values() for t in by_table)
        header = ["language", "condition"] + [x for _, label in QUESTION_TABLES for x in (f"{label} Δ ± 95% CI", "paper Δ", "seeds")]
        rows = []
        for (language, row), by_table in deltas.items():
            line = [short_title(language), f"µB-{row}"]
            for table, _ in QUESTION_TABLES:
                difference, shared, published, _ = by_table.get(table, (None, [], None, False))
                line += ["—", "—", "—"] if difference is None else [
                    _delta_text(difference), "—" if published is None else f"{published:+.2f}", _seeds_text(shared)]
            rows.append(line)
        parts.append(f"### Scale `{scale}`\n\n{regime_text(scale)}."
                     + (" Provenance: the committed record (docs/tables/) wherever this cache lacks a cell." if recorded
                        else " Provenance: every figure is from the cache that wrote this.")
                     + (f"\n\n{tables.undertrained_note(cells)}" if scale == "cpu" else "")
                     + "\n\n" + markdown_table(header, rows) + f"\n**Verdict ({scale}):** {verdict(deltas)}\n"
                     + _m_alone_text(cells, scale, {language for language, _ in deltas}) + question_so_far(runs, cells, scale))
    if without:
        parts.append(f"No syntactic-bias condition has cells yet at {', '.join(f'`{s}`' for s in without)} "
                     "(µB-M and random-init only): those scales answer the question once such a condition is run.\n")
    if not scales:
        parts.append(NOTHING)
    return "\n".join(parts)


def _mean(values) -> Optional[float]:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


class QuestionPoint(NamedTuple):
    """One difference the paper's question reads: a syntactic-bias condition − µB-M on one language and
    task at one scale; ``how`` says where its seeds come from when not from two cells' aggregates."""

    scale: str
    table: str
    language: str
    row: str
    difference: object  # reporting.significance.Difference
    shared: List[int]
    published: Optional[float]  # the paper's Δ
    how: str = ""


def question_points(cells, runs=()) -> List[QuestionPoint]:
    """Every difference of the paper's question: each scale's cells paired by seed, then at the paper's
    scales those read from the finished seeds of cells with no aggregate (two or more shared seeds)."""
    labels, paper = dict(QUESTION_TABLES), json.loads(tables.PAPER_TABLES.read_text())
    points = []
    for scale in sorted({c.scale for c in cells}, key=lambda scale: (scale != "cpu", scale)):
        for (language, row), by_table in question_deltas(cells, scale).items():
            for table, _ in QUESTION_TABLES:
                if table in by_table:
                    difference, shared, published, _ = by_table[table]
                    points.append(QuestionPoint(scale, table, language, row, difference, shared, published))
        if not scale.startswith("gpu-"):
            continue
        found = _finished_seeds(runs, cells, scale)
        for (table, language, row), _, base, difference, shared, published in _so_far_pairs(found, paper):
            if difference is not None and len(shared) > 1 and table in labels:
                grid = [seed for seed in shared if base[seed][2] == "grid"]
                how = "read from the finished seeds" + (f", µB-M's {_seeds_text(grid)} from its first pretraining" if grid else "")
                points.append(QuestionPoint(scale, table, language, row, difference, shared, published, how))
    return points


def question_headline(points: Sequence[QuestionPoint]) -> str:
    """The paper's question in one paragraph from its `question_points`: at cpu scale, how many
    differences from µB-M lie above, below or across 0; at the paper's scale, each condition's
    differences (with those read from the finished seeds of cells that have no aggregate yet), beside
    the paper's Δ."""
    labels, paper = dict(QUESTION_TABLES), json.loads(tables.PAPER_TABLES.read_text())
    name = lambda p: f"µB-{p.row} {short_title(p.language)} {labels[p.table]}"  # noqa: E731
    sentences = []
    with_interval, above, below, inside, compared = _intervals([(name(p), p.difference, p.published) for p in points if p.scale == "cpu"])
    if with_interval:
        rest = len(with_interval) - len(above) - len(below)
        sentences.append(f"At cpu scale, with undertrained encoders, {len(above)} of {len(with_interval)} differences "
                         f"{'lies' if len(above) == 1 else 'lie'} above 0 and {len(below)} below; the other {rest} "
                         f"include{'s' if rest == 1 else ''} 0"
                         + (f", and the paper's Δ lies inside our interval in {inside} of {compared}" if compared else "") + ".")
    figures = defaultdict(list)  # (language, row): the paper-scale points
    for point in points:
        if point.scale.startswith("gpu-"):
            figures[(point.language, point.row)].append(point)
    if figures:
        rank, parts = language_rank(paper), []
        for language, row in sorted(figures, key=lambda key: (rank(key[0]), key[1])):
            found = sorted(figures[(language, row)], key=lambda p: (p.table, p.scale))
            parts.append(f"{short_title(language)} µB-{row}: " + ", ".join(
                f"{labels[p.table]} {_delta_text(p.difference)} (`{p.scale[4:]}` {'check regime' if check_scale(p.scale) else 'regime'}, seeds {_seeds_text(p.shared)}"
                + (f", {p.how}" if p.how else "") + ("" if p.published is None else f"; paper {p.published:+.2f}") + ")"
                for p in found))
        named = [(name(p), p.difference, p.published) for group in figures.values() for p in group]
        with_interval, above, below, inside, compared = _intervals(named)
        reading = ("no interval excludes 0" if not above and not below else
                   f"{len(above)} of {len(with_interval)} intervals {'lies' if len(above) == 1 else 'lie'} above 0 and "
                   f"{len(below)} below ({'; '.join(above + below)})")
        sentences.append("At the paper's scale, " + reading
                         + (f", and the paper's Δ lies inside our interval in {inside} of {compared}" if compared else "")
                         + ". " + ". ".join(parts) + ".")
    if not sentences:
        return ""
    return ("**Does syntactic inductive bias help?** (each condition − µB-M, Δ ± 95% CI paired by seed; \"The paper's "
            "question\" above) " + " ".join(sentences))


def question_figure_link(points: Sequence[QuestionPoint], curves_dir: Optional[Path], report_dir: Optional[Path]) -> Optional[str]:
    """`question_figure` of ``points`` drawn into ``curves_dir`` and its link relative to the report, or None."""
    if curves_dir is None:
        return None
    Path(curves_dir).mkdir(parents=True, exist_ok=True)
    path = Path(curves_dir) / "question_deltas.png"
    if not question_figure(points, path):
        return None
    return path.resolve().relative_to(Path(report_dir or Path(curves_dir).parent).resolve()).as_posix()


def question_figure(points: Sequence[QuestionPoint], path: Path) -> bool:
    """Our Δ (± 95 % CI) against the paper's for every difference of the question, one panel a task: on
    the diagonal we agree with the paper, above 0 the bias helps. cpu-scale points small and grey, the
    paper scale's large, each named in the legend. False (nothing drawn) without a point the paper has a Δ for."""
    shown = [p for p in points if p.published is not None and p.difference.mean is not None
             and (p.scale == "cpu" or p.scale.startswith("gpu-"))]
    if not shown:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = dict(QUESTION_TABLES)
    panels = [table for table, _ in QUESTION_TABLES if any(p.table == table for p in shown)]
    # one marker and colour per paper-scale condition and regime, the same in both panels
    styles = {key: i for i, key in enumerate(sorted({(p.row, p.language, p.scale) for p in shown if p.scale.startswith("gpu-")}))}
    figure, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.6), squeeze=False)
    for axis, table in zip(axes[0], panels):
        group = [p for p in shown if p.table == table]
        cpu = [p for p in group if not p.scale.startswith("gpu-")]
        if cpu:
            axis.errorbar([p.published for p in cpu], [p.difference.mean for p in cpu],
                          yerr=[0.0 if p.difference.half_width is None else p.difference.half_width for p in cpu],
                          fmt=".", color="0.6", markersize=4, elinewidth=0.5, label="cpu scale (undertrained)", zorder=2)
        # each paper-scale difference its own marker, named in the legend (labels beside points collide);
        # those of one cell under two regimes share their x, so they are spread a little
        gpu = [p for p in group if p.scale.startswith("gpu-")]
        for index, p in enumerate(gpu):
            before = sum(q.published == p.published for q in gpu[:index])
            axis.errorbar([p.published + 0.05 * before], [p.difference.mean],
                          yerr=[0.0 if p.difference.half_width is None else p.difference.half_width],
                          fmt="osD^v"[styles[(p.row, p.language, p.scale)] % 5], color=f"C{styles[(p.row, p.language, p.scale)] % 10}", markersize=6, elinewidth=1.2, capsize=2, zorder=3,
                          label=f"µB-{p.row} {short_title(p.language)}, {p.scale[4:]} regime" + (" (finished seeds)" if p.how else ""))
        values = [v for p in group for v in (p.published, p.difference.mean)]
        low, high = min(values + [0.0]) - 0.5, max(values + [0.0]) + 0.5
        axis.plot([low, high], [low, high], linestyle="--", color="black", linewidth=0.7, label="ours = the paper's")
        axis.axhline(0, color="black", linewidth=0.8)
        axis.axvline(0, color="black", linewidth=0.4)
        axis.set_xlabel(f"the paper's Δ ({labels[table]})")
        axis.set_ylabel(f"our Δ ± 95% CI ({labels[table]}, paired by seed)")
        axis.set_title(f"{labels[table]}: each condition − µB-M", fontsize=9)
        axis.legend(fontsize=6.5, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def headline_section(cells, grid, so_far, points: Sequence[QuestionPoint] = ()) -> str:
    """The headline findings, each a short paragraph built from the figures: the paper's question, how
    close the tables come to the paper and why, and where the Wolof gap went (the decomposition grid)."""
    from reporting import decomposition

    paper = json.loads(tables.PAPER_TABLES.read_text())
    parts = [text for text in [question_headline(points)] if text]
    closeness = []
    for table, label in QUESTION_TABLES:
        columns, _, paper_rows = tables.paper_values(paper, table)
        languages = [c for c in columns if c != "avg"]
        by_key = {c.column: c for c in cells if c.table == table and c.scale == "cpu" and c.row == "M" and c.result}
        if all(language in by_key for language in languages):
            ours = _mean(by_key[language].mean for language in languages)
            published = _mean(paper_rows.get("M", {}).get(language) for language in languages)
            closeness.append(f"µB-M's {label} averages {ours:.2f} over the paper's {len(languages)} languages against the "
                             f"paper's {published:.2f} ({ours - published:+.2f})")
    paper_scale = sorted((c for c in cells if c.table == "table2" and c.scale.startswith("gpu-") and c.row == "M" and c.result),
                         key=lambda c: (c.column, c.scale))
    text = "**How close we are.** "
    if closeness:
        text += "At cpu scale " + "; ".join(closeness) + ". "
    m_mlm = {(c.row, c.column): c.mean for c in cells if c.table == "mlm:accuracy" and c.scale == "cpu" and c.result}
    if ("M", "wolof") in m_mlm and ("trigram-LM", "wolof") in m_mlm:
        text += (f"Those encoders are undertrained: µB-M predicts {m_mlm[('M', 'wolof')]:.2f} % of masked Wolof tokens, "
                 f"a trigram LM {m_mlm[('trigram-LM', 'wolof')]:.2f} %. ")
    for scale, group in itertools.groupby(sorted(paper_scale, key=lambda c: c.scale), key=lambda c: c.scale):
        figures = [f"{short_title(c.column)} {c.mean:.2f} ({c.result['n']} seeds; paper {paper['table2']['rows']['M'].get(c.column):.2f})"
                   for c in group]
        text += (f"Pretrained at the paper's scale and fine-tuned under the `{scale[4:]}` regime, µB-M reaches test LAS "
                 + ", ".join(figures) + ". ")
    note = paper_comparison_note()
    text += "The paper's column of Table 2, read against ours: " + (note[len("Dev: "):] if note.startswith("Dev: ") else note)
    parts.append(text)

    by_key = decomposition._by_key(grid)
    factors = [row for row in decomposition.factor_rows(grid) if row[0] == "UD" and row[2] in ("regime cpu", "encoder paper")]
    if factors:
        base, best = by_key.get(("decomposition:ud", "cpu", "cpu")), None
        for (table, encoder, regime), cell in by_key.items():
            if table == "decomposition:ud" and (best is None or cell.mean > best[1].mean):
                best = ((encoder, regime), cell)
        text = ("**Where the Wolof gap went** (UD test LAS; the decomposition grid below, each factor paired by seed, "
                "Δ ± 95% CI): " + "; ".join(f"{what.split(' (')[0]} ({where}) {delta.replace(' †', '')}" for _, what, where, delta, _ in factors) + ". ")
        if base is not None and best is not None:
            gap = decomposition.PAPER["decomposition:ud"]
            text += (f"From the cpu encoder under the cpu regime ({base.mean:.2f}) to the `{best[0][0]}` encoder under the "
                     f"`{best[0][1]}` regime ({best[1].mean:.2f}, the grid's best cell), {best[1].mean - base.mean:+.2f} of the "
                     f"{gap - base.mean:.2f} points to the paper's {gap:.2f}; {gap - best[1].mean:.2f} remain. ")
        for (table, encoder, regime), finished in sorted((so_far or {}).items()):
            if table == "decomposition:ud" and finished.seeds:
                test = _mean(t for t, _ in finished.seeds)
                gap = decomposition.PAPER[table]
                text += (f"The `{regime}` regime with the `{encoder}` encoder, read from its {len(finished.seeds)} finished seed"
                         f"{'s' if len(finished.seeds) > 1 else ''} (no aggregate yet): {test:.2f}, {gap - test:.2f} short of "
                         f"the paper's {gap:.2f}. ")
        parts.append(text.rstrip())
    parts += tg_headline(cells, paper)
    return "\n\n".join(parts) + "\n"


def tg_headline(cells, paper) -> List[str]:
    """The TG comparison at the paper-scale budget in one paragraph: each TG table's TG − TXL (trees)
    read against the TG paper's (the tables' own reading), or nothing before those cells exist."""
    readings = []
    for table, measure in (("tg", "Held-out perplexity"), ("tg_agreement", "EWT subject–verb agreement accuracy"),
                           ("tg_paper_form", "Held-out perplexity, the three models as the TG paper defines them (`tg_paper_form`)"),
                           ("tg_paper_form_agreement", "EWT subject–verb agreement accuracy, the same models")):
        columns, table_rows = tables.build_table(table, "paper", cells, paper)
        reading = tables.contrast_markdown(table, columns, table_rows).strip()
        if reading:
            readings.append(f"{measure}: {reading}")
    if not readings:
        return []
    return ["**Transformer Grammars at the paper-scale budget** (Δ ± 95% CI, paired by seed; the `tg` tables below). " + " ".join(readings)]


def related_conflicts(cells) -> str:
    """A word wherever the related table's µB-M (or random-init) and Table 2/3's figures differ: the
    same runs over fewer seeds (the related conditions' seeds), or separate runs of the same cell,
    each table pairing its conditions with its own baseline; both stay, named."""
    subsets, separate = [], []
    for related, paper_table, label in (("related:ud", "table2", "UD LAS"), ("related:ner", "table3", "NER F1")):
        for row in ("M", "random-init"):
            for cell in cells:
                if (cell.table, cell.row) != (related, row) or not cell.result:
                    continue
                other = next((c for c in cells if (c.table, c.scale, c.row, c.column) == (paper_table, cell.scale, row, cell.column)
                              and c.result), None)
                if other is None or abs(other.mean - cell.mean) < 0.005:
                    continue
                line = (f"{cell.scale} {_title(row)} {short_title(cell.column)} {label}: {cell.mean:.2f} in the related table "
                        f"(seeds {_seeds_text(cell.result['seeds'])}), {other.mean:.2f} in {paper_table.replace('table', 'Table ')} "
                        f"(seeds {_seeds_text(other.result['seeds'])})")
                (subsets if _same_runs(cell.result, other.result) else separate).append(line)
    text = ""
    if subsets:
        text += ("\nOne baseline, two seed sets: " + "; ".join(subsets) + ". The same runs: the related table's µB-M and "
                 "random-init use the seeds its conditions were fine-tuned with, so its Δs pair seed by seed.\n")
    if separate:
        text += ("\nTwo records of one cell, both kept: " + "; ".join(separate) + ". The related conditions were pretrained and "
                 "fine-tuned in their own cache (benchmarks/related_campaign.py), with their own µB-M and random-init, so each "
                 "table's Δs pair its conditions with its own baseline; the two baselines are separate pretrainings and "
                 "fine-tunings of the same configuration (runs.csv names the runs).\n")
    return text


def _same_runs(fewer: dict, more: dict) -> bool:
    """Whether the seeds of one aggregate are runs of the other: each of its seeds there, with the same score."""
    from reporting.significance import per_seed

    mine, theirs = per_seed(fewer), per_seed(more) or {}
    return bool(mine) and all(seed in theirs and abs(theirs[seed] - value) < 1e-3 for seed, value in mine.items())


FIRST_PRETRAINING = Path("docs/predictions/first-pretraining")
PRETRAINED_AGAIN_FILE = "experiments/paper/wolof_m.jsonnet"
# The paper-scale µB-M cells whose first encoder is gone: (task, the committed predictions' scale
# folder and table, the experiment file whose steps run them again, fine-tuning step prefix). NER's
# were fine-tuned under cpu_x2, which the decomposition grid keeps for that encoder.
PRETRAINED_AGAIN = (("UD parsing, test LAS", "gpu-paper_tenth", "table2", PRETRAINED_AGAIN_FILE, "ud_parser_s"),
                    ("NER, test F1", "gpu-cpu_x2", "table3", "experiments/decomposition/wolof_paper_cpu_x2.jsonnet", "ner_s"))


def _test_by_seed(metrics_files: Iterable[Path]) -> Dict[int, float]:
    """{seed: test figure} of fine-tuning metrics.json files (each names its primary metric)."""
    found = {}
    for path in metrics_files:
        metrics = json.loads(Path(path).read_text())
        found[metrics["seed"]] = metrics["test"][metrics["primary_metric"]]
    return found


def pretrained_again_section(workspace_dir: Path, graphs: Sequence[FileGraph], first: Path = FIRST_PRETRAINING,
                             committed: Path = Path("docs/predictions"), release: Path = Path("releases/wolof/m-paper-s42")) -> str:
    """The Wolof paper-scale µB-M pretrained a second time (same step, same config, same seed) against
    the first pretraining, whose encoder was not kept but whose fine-tuned cells are committed: per seed,
    and the paired difference. The second's figures are this cache's runs, else their committed
    predictions (``committed``) and its release's metrics. Answers whether a paper-scale pretraining
    is reproduced bit for bit."""
    by_path = {g.path: g for g in graphs if not g.error}
    graph = by_path.get(PRETRAINED_AGAIN_FILE)
    if graph is None or not first.is_dir():
        return f"_not available: {PRETRAINED_AGAIN_FILE} or {first} is missing_\n"
    rows, differences = [], []
    for task, scale, table, file, prefix in PRETRAINED_AGAIN:
        before = _test_by_seed(sorted((first / scale / table / "M" / "wolof").glob("seed*/metrics.json")))
        steps = by_path[file].steps if file in by_path else {}
        results = [cached_result(workspace_dir, unique_id) for name, (_, unique_id) in steps.items()
                   if name.startswith(prefix) and name[len(prefix):].isdigit()]
        again = {**_test_by_seed(sorted((committed / scale / table / "M" / "wolof").glob("seed*/metrics.json"))),
                 **_test_by_seed(Path(r) / "metrics.json" for r in results if r is not None and (Path(r) / "metrics.json").exists())}
        shared = sorted(set(before) & set(again))
        regime = f"`{scale.removeprefix('gpu-')}`"
        if not shared:
            rows.append((task, regime, "—", "—", "—", "—", "none yet"))
            continue
        values = [again[seed] - before[seed] for seed in shared]
        difference = significance.interval(values)
        differences.append((task, difference, values))
        rows.append((task, regime, ", ".join(f"{seed}: {before[seed]:.2f}" for seed in shared),
                     ", ".join(f"{seed}: {again[seed]:.2f}" for seed in shared),
                     f"{statistics.fmean(before[s] for s in shared):.2f} / {statistics.fmean(again[s] for s in shared):.2f}",
                     difference.text(), f"{len(shared)}"))
    losses = ""
    first_curve = first / "pretraining.json"
    pretraining = cached_result(workspace_dir, graph.steps["pretrained_model"][1]) if "pretrained_model" in graph.steps else None
    metrics_file = Path(pretraining) / "metrics.json" if pretraining is not None else release / "metrics.json"
    if first_curve.exists() and metrics_file.exists():
        lost = json.loads(first_curve.read_text())["dev_mlm_loss"]
        history = {str(r["step"]): r["dev_mlm_loss"] for r in json.loads(metrics_file.read_text())["history"]}
        pairs = [f"{int(step):,}: {lost[step]:.3f} / {history[step]:.3f}" for step in lost if step in history]
        if pairs:
            losses = f" Dev MLM loss by step, first / again: {'; '.join(pairs)}."
    verdicts = []
    for task, difference, values in differences:
        if all(value == 0 for value in values):
            verdicts.append(f"{task}: bit-identical")
        elif difference.half_width is None:
            verdicts.append(f"{task}: differs ({difference.text()}), too few seeds for an interval")
        else:
            inside = abs(difference.mean) <= difference.half_width
            verdicts.append(f"{task}: not bit-identical, {'within' if inside else 'beyond'} seed noise "
                            f"({difference.text()}, the interval {'includes' if inside else 'excludes'} 0)")
    head = (f"The paper-scale Wolof µB-M of `{PRETRAINED_AGAIN_FILE}` was pretrained twice with the same step, configuration and "
            "seed (the first on one GPU, its encoder not kept; the second resumed its own checkpoints across GPU jobs, "
            "releases/wolof/m-paper-s42). The first pretraining's fine-tuned cells are committed under "
            f"`{first}/`; the second's are the runs of the same steps and seeds (this cache's, else `{committed}/`). "
            "Each task is compared under the fine-tuning regime of its first cells (configs/scales.libsonnet), which for "
            "NER is not the `paper` regime of Table 3's paper-scale cells. Δ ± 95% CI: again − first, "
            f"paired by seed.{losses} "
            + ("Verdict: " + "; ".join(verdicts) + "." if verdicts else "No seed of the second pretraining is fine-tuned in this cache yet.")
            + "\n\n")
    return head + markdown_table(["task", "fine-tuning regime", "first pretraining, by seed", "pretrained again, by seed", "mean (first / again)",
                                  "Δ ± 95% CI", "seeds"], rows)


def _title(row: str) -> str:
    return f"µB-{row}" if row == "M" else row


def build_report(workspace: Workspace, workspace_dir: Path = Path("workspace"), keep_record: bool = False,
                 curves_dir: Optional[Path] = None, report_dir: Optional[Path] = None, recorded: Optional[str] = None,
                 recorded_runs_csv: Optional[Path] = None) -> Dict[str, str]:
    """{"RESULTS.md": …, "engineering.md": …, "runs.csv": …}; with ``curves_dir``, the training curves
    are drawn there and linked relative to ``report_dir`` (the report's folder). ``recorded``: the
    committed reports (RESULTS.md and engineering.md), whose corpus-parser rows stand in for the
    languages this cache has none for, and ``recorded_runs_csv`` the committed runs (with ``keep_record``)."""
    from reporting import decomposition

    graphs = load_graphs(experiment_files(), workspace_dir)  # every file under experiments/, each built once
    cells, problems = table_cells(workspace_dir, graphs, keep_record)
    runs = merged_runs(finetune_runs(workspace), recorded_runs(recorded_runs_csv, recorded) if keep_record else [], cells,
                       predicted_runs(PREDICTIONS) if keep_record else ())
    grid_runs = decomposition.finetune_runs(workspace_dir, graphs)
    grid, _ = decomposition.decomposition_cells(workspace_dir, graphs, runs=grid_runs)
    so_far = decomposition.seeds_so_far(grid_runs, grid, decomposition.recorded_runs())
    cpu_note = tables.undertrained_note(cells)
    points = question_points(cells, runs)  # read by the headline and the question's figure
    results: List[Tuple[str, str]] = [
        ("The paper's question", question_section(cells, runs, question_figure_link(points, curves_dir, report_dir))),
        ("Headline findings", headline_section(cells, grid, so_far, points)),
        ("Paper tables", tables.with_cpu_notes(tables_section(cells, problems), cells)),
        (QUESTION_CHECKS, question_section(cells, runs, checks=True)),
        ("Related biases", tables.with_cpu_notes(related_section(cells), cells)),
        ("Transformer Grammars", tables.with_cpu_notes(tg_section(cells), cells)),
        (TG_BUDGETS, tg_budget_section(workspace_dir, graphs, recorded if keep_record else None)),
        ("µB-M pretrained again at the paper's scale", pretrained_again_section(workspace_dir, graphs)),
        ("Where the Wolof gap is", decomposition_section(workspace_dir, graphs, curves_dir, report_dir, keep_record)),
        (PARSER_AGAINST_ENCODER,
         f"{cpu_note}\n\n" + parser_against_encoder_section(cells, corpus_parser_las(workspace, recorded if keep_record else None))),
        ("Fine-tuning runs", runs_section(runs)),
        ("Unlabeled corpora (paper Table 1)", corpus_section(workspace, scales_of_steps(graphs))),
        ("Corpus parsers trained in the DAG (Wolof bar: beat UDPipe 1)", parser_section(workspace)),
        ("Pretraining", pretraining_section(workspace)),
        ("Training curves", curves_section(workspace_dir, graphs, curves_dir, report_dir or Path(workspace_dir), keep_record)),
    ]
    engineering: List[Tuple[str, str]] = [
        ("Corpus parser choices, one at a time", ablation_section()),
        ("Corpus parse throughput", throughput_section(workspace)),
        ("Pretraining settings, one at a time", pretrain_ablation_section()),
        ("Pretraining step benchmark", benchmark_section()),
        ("Pretraining step on a GPU, with its speed levers", benchmark_section(GPU_BENCHMARK_JSON, GPU_BENCHMARK_COMMAND)),
        ("Paper-scale pretraining pace on a GPU", gpu_pace_section()),
        ("Paper-scale pretrainings side by side on one GPU", gpu_side_by_side_section()),
        ("Pretraining loader: the slowest batch of an epoch", loader_epoch_section()),
        ("Fine-tuning epochs on a GPU", gpu_finetune_section()),
        ("Fine-tuning step benchmark", finetune_benchmark_section()),
        ("README commands: wall time", timing_section()),
        ("Runs in progress", in_progress_section(unfinished_entries(workspace_dir, graphs))),
    ]
    intro = ["# Results\n",
             "Gessler and Schneider, *Syntactic Inductive Bias in Transformer Language Models: Especially Helpful for "
             "Low-Resource Languages?*: whether pretraining a MicroBERT (µB) with XPOS tagging (X), SynCLM's phrase (P) and "
             "tree (T) contrastive losses and syntax-aware local attention (SLA) beside its masked LM (M) helps "
             "low-resource languages' UD parsing, NER and PrOnto tasks over the plain "
             "masked-LM µB-M, reproduced here at reduced (`cpu`) and paper-like (`gpu-…`) scales. The paper's question "
             "comes first, then the headline findings, the paper's tables and the question under the regimes that check "
             "the chosen ones; the decomposition of the Wolof gap, "
             "the corpora, parsers and pretraining runs follow. \"± sd\": the sample standard deviation over "
             "fine-tuning seeds; \"± 95% CI\": a paired t-interval over shared seeds (Welch's unpaired one where marked \"unpaired\"). Provenance: each table says "
             "whether its figures come from the cache that wrote this report or from the committed record (docs/tables/, "
             "docs/decomposition/, docs/predictions/); † marks a record figure only in a table that mixes both. "
             f"Engineering figures (throughput, pace, loader, step benchmarks, wall times) are in [{ENGINEERING}]({ENGINEERING}); "
             f"every fine-tuning run is a row of [{RUNS_CSV}]({RUNS_CSV}). Generated by `python -m reporting.report "
             "--update-docs`; do not edit by hand.\n"]
    head = ["# Engineering figures\n",
            "Throughput, pace, loader, step benchmarks and wall times of this reproduction; the results are in "
            "[RESULTS.md](RESULTS.md). Generated by `python -m reporting.report --update-docs` with RESULTS.md; "
            "do not edit by hand. Minutes and rates are on the machine each record names.\n"]
    documents = {}
    for name, first, sections in (("RESULTS.md", intro, results), (ENGINEERING, head, engineering)):
        text = list(first)
        for title, body in sections:
            text.append(f"\n## {title}\n\n{body}")
        documents[name] = "".join(text)
    documents[RUNS_CSV] = runs_csv_text(runs)
    return documents


# Sections whose table rows are results of record, and the columns that name a row: a committed
# row whose name this cache's table lacks is kept (marked †) when the record is rewritten.
RECORD_ROW_KEYS = {
    "Unlabeled corpora (paper Table 1)": ("language", "documents", "train tokens (whitespace)", "train sentences used"),
    CORPUS_PARSERS: ("language", "backend"),
    "Corpus parse throughput": ("language", "parser", "train sentences parsed"),
    "Pretraining": ("language", "condition", "steps", "batch", "train rows"),
}
# Columns that are a row's results, not its timings: where this cache's row and the committed row of
# the same name disagree in one of them, the committed row stays beside it, marked ‡.
RECORD_RESULT_COLUMNS = {
    CORPUS_PARSERS: ("test UPOS", "dev LAS", "test UAS", "test LAS"),
    "Pretraining": ("final dev MLM loss",),
}
KEPT = "†"
KEPT_NOTE = f"{KEPT} not in the cache that wrote this report: the committed record's row, kept."
EARLIER = "‡"
EARLIER_NOTE = (f"{EARLIER} the committed record's run of the same step, whose figures this cache's run (the row "
                "above it) does not reproduce: both kept.")
RECORD_ONLY_NOTE = "Provenance: every row is the committed record's, kept; the cache that wrote this report has none of them."


def report_sections(text: str) -> Dict[str, str]:
    """{section title: body} of a report written by build_report."""
    parts = text.split("\n## ")
    return {part.split("\n", 1)[0].strip(): (part.split("\n", 1)[1] if "\n" in part else "") for part in parts[1:]}


def recorded_rows(recorded: Optional[str], title: str) -> List[Dict[str, str]]:
    """The rows of the first table in section ``title`` of a committed report, as {header: cell}."""
    lines = report_sections(recorded).get(title, "").splitlines() if recorded else []
    table = _first_table(lines)
    if table is None:
        return []
    header = _cells(lines[table[0]])
    return [dict(zip(header, _cells(line))) for line in lines[table[0] + 2:table[1]]]


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
    return cell.replace(KEPT, "").replace(EARLIER, "").strip()


def keep_recorded_rows(body: str, recorded: str, key_columns: Sequence[str], result_columns: Sequence[str] = ()) -> str:
    """``body`` (a section as this cache writes it) plus every row of ``recorded`` (the committed
    section) whose ``key_columns`` cells name no row of body's table, marked †; columns are
    matched by header, a column the record lacks reads —. A committed row that names a row of body
    but differs from it in one of ``result_columns`` is kept under that row, marked ‡: two runs of
    one step that disagree are both shown. The pretraining section's per-run bullet lines are kept
    the same way as † rows, by their label."""
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
    rows = {}  # name -> this cache's row, for the committed rows that repeat it
    for line in lines[table[0] + 2:table[1]]:
        row = dict(zip(header, _cells(line)))
        if EARLIER not in row[header[0]]:
            rows[name_of(row)] = row
    kept, earlier = [], {}  # † rows; {name: ‡ rows}
    for row in old_rows:
        name = name_of(row)
        cells = [row.get(column, "—") for column in header]
        differs = name in rows and any(
            column in row and _unkept(row[column]) != _unkept(rows[name].get(column, "")) for column in result_columns)
        if differs or (EARLIER in row[old_header[0]] and name not in rows):
            cells[0] = f"{_unkept(cells[0])} {EARLIER}"
            earlier.setdefault(name, {})["| " + " | ".join(cells) + " |"] = None
        elif name not in rows and EARLIER not in row[old_header[0]]:
            cells[0] = cells[0] if KEPT in cells[0] else f"{cells[0]} {KEPT}"
            kept.append("| " + " | ".join(cells) + " |")
    ours = [line for line in lines[table[0] + 2:table[1]] if EARLIER not in _cells(line)[0]]  # ‡ rows come from the record
    notes = [EARLIER_NOTE] if earlier else []
    below = lambda line: [line, *earlier.pop(name_of(dict(zip(header, _cells(line)))), {})]  # noqa: E731  its ‡ rows under it
    ours = [row for line in ours for row in below(line)]
    kept = [row for line in kept for row in below(line)] + [row for rest in earlier.values() for row in rest]
    lines[table[0] + 2:table[1]] = ours
    table = (table[0], table[0] + 2 + len(ours))
    bullets = {line.split(":", 1)[0].replace(f" {KEPT}", "") for line in lines if line.startswith("- ")}
    old_bullets = [line for line in old_lines[old_table[1]:] if line.startswith("- ")]
    kept_bullets = [line if KEPT in line.split(":", 1)[0] else line.replace(":", f" {KEPT}:", 1)
                    for line in old_bullets if line.split(":", 1)[0].replace(f" {KEPT}", "") not in bullets]
    if kept or kept_bullets:
        if table[1] == table[0] + 2 and not bullets:  # every row is the record's: say so once, mark none
            kept = [line.replace(f" {KEPT}", "", 1) for line in kept]
            kept_bullets = [line.replace(f" {KEPT}", "", 1) for line in kept_bullets]
            notes.append(RECORD_ONLY_NOTE)
        else:
            notes.append(KEPT_NOTE)
    if not notes:
        return body
    lines[table[1]:table[1]] = kept
    if kept_bullets:
        if not bullets:
            intro = next((line for line in old_lines[old_table[1]:] if line and not line.startswith(("- ", KEPT))), None)
            lines += ["", intro, ""] if intro else [""]
        lines += kept_bullets
    text = "\n".join(lines).rstrip("\n")
    for note in notes:
        text = text if note in text else text + f"\n\n{note}"
    return text + "\n"


# Sections of figures: a committed figure this cache does not redraw is kept, if its file still is.
RECORD_FIGURES = ("Training curves",)
KEPT_FIGURES_NOTE = f"{KEPT} The lines of an earlier cache, not this one's (the committed figures, kept):"


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
    from reporting.curves import INTRO  # what the lines are, said once the cache draws none of them

    body = INTRO + "\n\n" if body.strip() == NOTHING.strip() else body.rstrip("\n") + "\n\n"
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
                                      RECORD_RESULT_COLUMNS.get(title.strip(), ()))
            body = "\n" + body
        elif title.strip() in RECORD_FIGURES and title.strip() in old:
            body = "\n" + keep_recorded_figures(body.lstrip("\n"), old[title.strip()], report_dir)
        out.append(f"{title}\n{body}")
    return "\n## ".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", default="workspace", help="Tango workspace directory (default: ./workspace)")
    parser.add_argument("--output", help="report file (default: <workspace>/RESULTS.md; docs/RESULTS.md with --update-docs); "
                                         f"{ENGINEERING} and {RUNS_CSV} are written beside it")
    parser.add_argument("--update-docs", action="store_true", help=f"rewrite the committed docs/RESULTS.md, docs/{ENGINEERING} and docs/{RUNS_CSV}")
    args = parser.parse_args(argv)
    output = Path(args.output) if args.output else (DOCS_RESULTS if args.update_docs else Path(args.workspace) / "RESULTS.md")
    import steps  # noqa: F401  (registers step classes and formats so cached results can be read)

    workspace = Workspace.from_url(f"local://{Path(args.workspace).resolve()}")
    targets = {"RESULTS.md": output, ENGINEERING: output.parent / ENGINEERING, RUNS_CSV: output.parent / RUNS_CSV}
    # The committed reports, both at once: a section moved from one to the other keeps its rows of record.
    committed = {name: path.read_text(encoding="utf-8") for name, path in targets.items()
                 if args.update_docs and path.exists() and name != RUNS_CSV}
    recorded = "\n".join(committed.values()) or None
    # The curves go beside the report: docs/curves/ with --update-docs, else <workspace>/curves/.
    documents = build_report(workspace, Path(args.workspace).resolve(), keep_record=args.update_docs,
                             curves_dir=output.parent / "curves", report_dir=output.parent, recorded=recorded,
                             recorded_runs_csv=targets[RUNS_CSV] if args.update_docs else None)
    output.parent.mkdir(parents=True, exist_ok=True)
    for name, text in documents.items():
        if recorded is not None and name != RUNS_CSV:
            text = keep_record(text, recorded, output.parent)
        targets[name].write_text(text, encoding="utf-8")
        print(f"wrote {targets[name]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
