"""Browse, reuse, export and prune the step cache; reads Tango's own records, never runs a step.

    python -m reporting.cache ls [--json] [--language wolof] [--condition MXPT-SLA] [--scale cpu]
    python -m reporting.cache unfinished [--json]                  # runs in progress or stopped, how far
    python -m reporting.cache export <unique id or prefix> DIR     # a self-contained HF folder
    python -m reporting.cache prune [--yes]                        # dry run unless --yes
    python -m reporting.cache release <unique id or prefix> [--root releases] [--name NAME]
    python -m reporting.cache restore releases/<language>/<name> [...]  # back into --workspace's cache

``ls`` lists every cached pretrained encoder (``pretrain_microbert``, ``random_init_encoder``:
language, condition, scale, seed, steps, final dev MLM loss, size, age, the HF folder to load)
and every fine-tuned cell (UD parser, NER, PrOnto: task, seed, dev and test figures). It reads the
workspace's step-info store (``stepinfo.sqlite``), the cache folders and their ``metrics.json``;
language, condition and scale come from the experiment graphs (`reporting.graphs`, remembered in
``<workspace>/reporting/graphs.json``) where a current experiment file holds the step, else from
the step's own config and its upstream steps. A cache entry copied in from another machine, with
no step-info row, is listed too.

``unfinished`` lists the pretraining, fine-tuning and TG LM training steps that have a checkpoint
but no result yet: running (a process holds the entry's lock, as Tango decides) or stopped
(killed, out of time; ``tango run`` of the same file resumes it), with how far each got (optimizer
steps or epochs of the configured total), the best dev figure so far and when the checkpoint was
written. It reads only
the checkpoint's bookkeeping (memory-mapped, no weights loaded), so it is cheap beside a run.

``release`` writes a pretrained encoder to ``releases/<language>/<name>/`` (safetensors weights,
tokenizer, config, metrics.json, the step's config, a content hash and a model card in the Hugging
Face card format: `steps.common.releases`); a stopped pretraining goes out as its checkpoint
(``<name>-partial``), to go on from on another machine. ``restore`` puts releases back as the
cached results (or stopped runs) of the steps that built them, after checking every file against
the release's hashes and the step version it declares: ``tango run`` of the file that built an
encoder then goes straight to what follows it.

``prune`` lists the cache entries that no experiment file in ``experiments/``
builds any more (an edited config orphans them), with their sizes; ``--yes`` removes each entry's
folder, its step-info row, and the run links and run records that point to it.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from reporting.graphs import REPO, FileGraph, display_path, experiment_files, is_check_file, is_grid_file, load_graphs, scale_label

ENCODER_CLASSES = ("PretrainMicrobert", "RandomInitEncoder")


def finetune_classes() -> Dict[str, str]:
    """The fine-tuning step classes whose results are cells (step class → task), as they register
    (`steps.finetune.tasks`)."""
    import steps  # noqa: F401  (registers the step classes)
    from steps.finetune.tasks import DOWNSTREAM_TASKS

    return DOWNSTREAM_TASKS


@dataclass
class Entry:
    """One cache entry as `ls` shows it."""

    unique_id: str
    kind: str  # "encoder" or "cell"
    step_class: str
    language: Optional[str] = None
    condition: Optional[str] = None  # for a cell: its encoder's row in the tables (condition, random-init, mBERT)
    scale: Optional[str] = None
    seed: Optional[int] = None
    size_bytes: int = 0
    age_days: Optional[float] = None
    path: Optional[str] = None  # the HF folder (encoders) or the result folder (cells)
    steps: Optional[int] = None  # encoders: optimizer steps of pretraining
    final_dev_mlm_loss: Optional[float] = None
    task: Optional[str] = None  # cells: ud_parsing, ner, pronto:<task>
    metric: Optional[str] = None
    dev: Optional[float] = None
    test: Optional[float] = None
    encoder: Optional[str] = None  # cells: the unique id (or HF name / path) of the encoder fine-tuned
    added_attention: Optional[str] = None  # cells: attention the fine-tuning put on the encoder ("syntax_gat"), if any
    experiments: List[str] = field(default_factory=list)  # files whose graph holds the step


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def cache_dirs(workspace_dir: Path) -> Dict[str, Path]:
    """{unique id: folder} of every completed cache entry (one with Tango's metadata file)."""
    from tango.step_caches.local_step_cache import LocalStepCache

    cache = Path(workspace_dir) / "cache"
    if not cache.is_dir():
        return {}
    return {d.name: d for d in sorted(cache.iterdir()) if (d / LocalStepCache.METADATA_FILE_NAME).exists()}


def step_infos(workspace_dir: Path) -> Dict[str, Any]:
    """{unique id: StepInfo} from the workspace's step-info store (empty if it has none)."""
    from tango.workspaces import LocalWorkspace

    if not (Path(workspace_dir) / "stepinfo.sqlite").exists():
        return {}
    return {info.unique_id: info for info in LocalWorkspace(workspace_dir).search_step_info()}


def graph_labels(graphs: Sequence[FileGraph]) -> Dict[str, Dict[str, Any]]:
    """{unique id: language, condition, scale, experiments} from the experiment files holding the
    step; a file's cells say its row (condition), column (language) and scale."""
    labels: Dict[str, Dict[str, Any]] = {}
    # A step several files share takes the labels of a table cell's file, then a check's
    # (graphs.is_check_file: the paper-scale encoders under another regime), then a grid's
    # (graphs.is_grid_file: the gap decomposition and long-pretraining files relabel rows as encoders and scales as regimes).
    for graph in sorted(graphs, key=lambda graph: (is_grid_file(graph.path), is_check_file(graph.path))):
        cell = graph.cells[0] if graph.cells else {}
        # A file whose tasks run at different scales (experiments/paper: UD and NER each under its own
        # regime) says each fine-tune's scale through the cell that scores it.
        scored_in = {unique_id: scored for scored in graph.cells for unique_id in scored.get("finetuned", ())}
        # Steps upstream of several (pretraining) get what the scales share ("gpu" of "gpu-paper_tenth"
        # and "gpu-cpu_x2"; with a paper-scale MLM-accuracy cell, nothing: the file's own scale),
        # not whichever cell comes first.
        scales = sorted({scored["scale"] for scored in graph.cells if scored.get("scale")})
        upstream = {"scale": os.path.commonprefix(scales).rstrip("-_") or None} if len(scales) > 1 else cell
        for _, unique_id in graph.steps.values():
            entry = labels.setdefault(unique_id, {"experiments": []})
            entry["experiments"].append(graph.path)
            own = scored_in.get(unique_id, upstream)
            for key, value in (("language", cell.get("column")), ("condition", cell.get("row")),
                               ("scale", own.get("scale") or scale_label(graph.path))):
                if value is not None:
                    entry.setdefault(key, value)
    return labels


def _language_upstream(unique_id: str, infos: Dict[str, Any]) -> Optional[str]:
    pending, seen = [unique_id], set()
    while pending:
        info = infos.get(pending.pop(0))
        if info is None:
            continue
        if info.config and "language" in info.config:
            return info.config["language"]
        for dependency in info.dependencies:
            if dependency not in seen:
                seen.add(dependency)
                pending.append(dependency)
    return None


def _read_metrics(result: Path) -> Dict[str, Any]:
    path = result / "metrics.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _class_of(unique_id: str) -> str:
    return unique_id.split("-", 1)[0]


def list_entries(workspace_dir: Path, graphs: Sequence[FileGraph] = ()) -> List[Entry]:
    """Every cached encoder and fine-tuned cell of the workspace (see the module docstring)."""
    workspace_dir = Path(workspace_dir)
    infos, labels, now = step_infos(workspace_dir), graph_labels(graphs), time.time()
    cell_classes = finetune_classes()
    entries = []
    for unique_id, folder in cache_dirs(workspace_dir).items():
        step_class = _class_of(unique_id)
        if step_class not in ENCODER_CLASSES and step_class not in cell_classes:
            continue
        info, label = infos.get(unique_id), labels.get(unique_id, {})
        result = folder / "result"
        metrics = _read_metrics(result)
        config = (info.config or {}) if info is not None else {}
        finished = info.end_time.timestamp() if info is not None and info.end_time else (folder / "cache-metadata.json").stat().st_mtime
        entry = Entry(unique_id, "encoder" if step_class in ENCODER_CLASSES else "cell", step_class,
                      language=label.get("language") or _language_upstream(unique_id, infos),
                      condition=label.get("condition"), scale=label.get("scale"),
                      size_bytes=folder_size(folder), age_days=round((now - finished) / 86400, 3),
                      experiments=sorted(set(label.get("experiments", []))))
        if entry.kind == "encoder":
            entry.path = str((result / "encoder").resolve())
            entry.condition = metrics.get("condition") or config.get("condition") or entry.condition
            if step_class == "PretrainMicrobert":
                entry.seed = (metrics.get("training") or {}).get("seed")
                entry.steps = metrics.get("exported_step")
                entry.final_dev_mlm_loss = (metrics.get("final") or {}).get("dev_mlm_loss")
                entry.condition = entry.condition or "?"
            else:
                entry.seed, entry.steps = metrics.get("seed"), 0
                entry.condition = "random-init" + ("" if metrics.get("condition", "M") == "M" else " " + metrics["condition"])
        else:
            entry.path = str(result.resolve())
            entry.task, entry.seed, entry.metric = metrics.get("task"), metrics.get("seed"), metrics.get("primary_metric")
            if entry.metric:
                entry.dev = (metrics.get("dev") or {}).get(entry.metric)
                entry.test = (metrics.get("test") or {}).get(entry.metric)
            entry.added_attention = added_attention(metrics)
            encoders = [d for d in (info.dependencies if info is not None else ()) if _class_of(d) in ENCODER_CLASSES]
            entry.encoder = encoders[0] if encoders else metrics.get("encoder")
        entries.append(entry)
    return entries


@dataclass
class Unfinished:
    """One step with a checkpoint and no result, as `unfinished` shows it."""

    unique_id: str
    step_class: str
    state: str  # "running" (its lock is held) or "stopped"
    language: Optional[str] = None
    condition: Optional[str] = None
    scale: Optional[str] = None
    seed: Optional[int] = None
    unit: str = "step"  # what `done` and `total` count: "step" (pretraining) or "epoch" (fine-tuning)
    done: int = 0
    total: Optional[int] = None
    steps: int = 0  # optimizer steps so far
    metric: Optional[str] = None  # the dev figure below: the fine-tuning's selection metric, dev MLM loss or TG dev perplexity
    best: Optional[float] = None
    best_at: Optional[int] = None  # epoch (fine-tuning) or step (pretraining) of `best`
    last: Optional[float] = None
    patience: Optional[int] = None
    resumed_from: List[int] = field(default_factory=list)
    checkpoint_age_minutes: float = 0.0
    experiments: List[str] = field(default_factory=list)


def _checkpoint_names() -> Dict[str, str]:
    from steps.finetune.loop import CHECKPOINT_NAME as FINETUNE_CHECKPOINT
    from steps.pretrain.pretrain import CHECKPOINT_NAME as PRETRAIN_CHECKPOINT
    from steps.tg.language_model import CHECKPOINT_NAME as TG_CHECKPOINT

    return {"PretrainMicrobert": PRETRAIN_CHECKPOINT, "TrainTgLanguageModel": TG_CHECKPOINT,
            **{name: FINETUNE_CHECKPOINT for name in finetune_classes()}}


def _tg_run_defaults() -> Dict[str, Any]:
    """The defaults of `train_tg_lm`'s arguments, which its config may leave out."""
    import inspect

    from steps.tg.language_model import TrainTgLanguageModel

    parameters = inspect.signature(TrainTgLanguageModel.run).parameters.items()
    return {name: p.default for name, p in parameters if p.default is not inspect.Parameter.empty}


def _selection_metrics() -> Dict[str, str]:
    from steps.finetune.ner import FinetuneNer
    from steps.finetune.pronto import FinetunePronto
    from steps.finetune.ud_parser import FinetuneUdParser

    return {step.__name__: step.SELECTION_METRIC for step in (FinetuneUdParser, FinetuneNer, FinetunePronto)}


def unfinished_entries(workspace_dir: Path, graphs: Sequence[FileGraph] = ()) -> List[Unfinished]:
    """Every pretraining, fine-tuning or TG LM training entry of the workspace with a checkpoint and
    no result."""
    import torch
    from tango.step_caches.local_step_cache import LocalStepCache
    from tango.step_info import StepState
    from tango.workspaces import LocalWorkspace

    cache = Path(workspace_dir) / "cache"
    if not cache.is_dir():
        return []
    checkpoints, metrics, labels = _checkpoint_names(), _selection_metrics(), graph_labels(graphs)
    infos, now, found = step_infos(workspace_dir), time.time(), []
    for folder in sorted(cache.iterdir()):
        step_class = _class_of(folder.name)
        checkpoint = folder / "work" / checkpoints.get(step_class, "")
        if step_class not in checkpoints or (folder / LocalStepCache.METADATA_FILE_NAME).exists() or not checkpoint.is_file():
            continue
        # mmap: only the pickled bookkeeping is read, not the model and optimizer tensors.
        saved = torch.load(checkpoint, map_location="cpu", weights_only=True, mmap=True)
        state, info, label = saved["state"], infos.get(folder.name), labels.get(folder.name, {})
        config = _step_config(folder.name, info, label)
        running = LocalWorkspace.guess_step_dir_state(folder) == {StepState.RUNNING}
        entry = Unfinished(folder.name, step_class, "running" if running else "stopped",
                           language=label.get("language") or _language_upstream(folder.name, infos),
                           condition=label.get("condition"), scale=label.get("scale"),
                           resumed_from=list(state.get("resumed_from", [])),
                           checkpoint_age_minutes=round((now - checkpoint.stat().st_mtime) / 60, 1),
                           experiments=sorted(set(label.get("experiments", []))))
        history = state.get("history") or []
        if step_class == "PretrainMicrobert":
            training = config.get("training") or {}
            entry.seed, entry.total, entry.metric = training.get("seed"), training.get("max_steps"), "dev_mlm_loss"
            entry.done = entry.steps = state["step"]
            scored = [record for record in history if record.get("dev_mlm_loss") is not None]
            if scored:
                best = min(scored, key=lambda record: record["dev_mlm_loss"])
                entry.best, entry.best_at, entry.last = best["dev_mlm_loss"], best["step"], scored[-1]["dev_mlm_loss"]
        elif step_class == "TrainTgLanguageModel":
            defaults = _tg_run_defaults()
            entry.seed, entry.total = config.get("seed", defaults["seed"]), config.get("max_steps", defaults["max_steps"])
            entry.condition = entry.condition or config.get("kind")
            entry.metric, entry.done = "dev_perplexity", state["step"]
            entry.steps = state["step"]
            curve = state.get("dev_history") or []
            if curve:
                best = min(curve, key=lambda point: point["perplexity"])
                entry.best, entry.best_at, entry.last = best["perplexity"], best["step"], curve[-1]["perplexity"]
        else:
            tuning = config.get("config") or {}
            entry.unit, entry.seed, entry.total, entry.patience = "epoch", tuning.get("seed"), tuning.get("epochs"), tuning.get("patience")
            entry.done, entry.steps, entry.metric = state["epoch"], state["steps"], metrics[step_class]
            by_epoch = {record["epoch"]: record for record in history}
            if state.get("best_epoch") in by_epoch:
                entry.best, entry.best_at = by_epoch[state["best_epoch"]].get(entry.metric), state["best_epoch"]
            if history:
                entry.last = history[-1].get(entry.metric)
        found.append(entry)
    return found


def _step_config(unique_id: str, info, label: Dict[str, Any]) -> Dict[str, Any]:
    """A cache entry's step config: its step-info record's, or, for an entry copied in from another
    machine (`tools/jobs.py unpack`), which has no such record here, the step's own from an
    experiment file that holds it."""
    return (info.config if info is not None else None) or _config_from_files(unique_id, label.get("experiments", ()))


def _config_from_files(unique_id: str, files: Sequence[str]) -> Dict[str, Any]:
    for file in files:
        for step in steps_of_files([REPO / file]):
            if step.unique_id == unique_id:
                return step.config
    return {}


def unlabelled_note(entries: Sequence[Any]) -> List[str]:
    """A line under a listing with "?" for a scale: no experiment file read here builds that entry.
    Step IDs hash the data files, so the usual cause is a data root other than the one it ran with."""
    if not any(e.scale is None for e in entries):
        return []
    from steps.common.data_root import DATA_ROOT_ENV, data_root

    return [f"? : no experiment file read here builds this entry; step IDs hash the data files, so {DATA_ROOT_ENV} must name "
            f"the data the entry was built with (now {data_root()})"]


def format_unfinished(entries: Sequence[Unfinished]) -> str:
    lines = [f"{len(entries)} unfinished steps (a checkpoint, no result)"]
    for e in entries:
        total = "?" if e.total is None else f"{e.total:,}"
        progress = f"{e.unit} {e.done:,}/{total}" + (f" ({e.steps:,} steps)" if e.unit == "epoch" else "")
        metric = e.metric.removeprefix("dev_") if e.metric else e.metric
        best = (f"best dev {metric} {_figure(e.best)} at {e.unit} {e.best_at:,}, last {_figure(e.last)}"
                if e.best is not None else "no dev figure yet")
        patience = f", patience {e.patience}" if e.patience else ""
        lines.append(f"  {e.unique_id}  {e.state}  {e.language or '?'}  {e.condition or '?'}  {e.scale or '?'}  seed {e.seed}  "
                     f"{progress}{patience}  {best}  checkpoint {e.checkpoint_age_minutes:.0f} min ago"
                     + (f"  resumed after {', '.join(map(str, e.resumed_from))}" if e.resumed_from else ""))
    return "\n".join(lines + unlabelled_note(entries))


def matches(entry: Entry, language: Optional[str], condition: Optional[str], scale: Optional[str]) -> bool:
    return all(wanted is None or str(value).lower() == wanted.lower()
               for value, wanted in ((entry.language, language), (entry.condition, condition), (entry.scale, scale)))


def _size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def _devices(metrics: Dict[str, Any]) -> str:
    """Where the encoder was trained: each run of a resumed pretraining (`runs`, from its step on),
    else the device of the run that finished it. A checkpoint written before runs were recorded
    left its earlier runs' devices unknown; the card says so rather than claim them."""
    runs, resumed = metrics.get("runs") or [], metrics.get("resumed_from") or []
    if runs:
        # Consecutive runs on the same kind of machine read as one stretch, with their count.
        stretches = [list(group) for _, group in itertools.groupby(runs, key=lambda run: (run["device"], run["threads"]))]
        where = [f"{stretch[0]['device']} ({stretch[0]['threads']} threads) from step {stretch[0]['from_step']:,}"
                 + (f" ({len(stretch)} runs)" if len(stretch) > 1 else "") for stretch in stretches]
        if runs[0]["from_step"] > 0:
            where.insert(0, "not recorded before step {:,}".format(runs[0]["from_step"]))
        return "device " + ("; ".join(where) if len(where) > 1 or len(runs) > 1 else runs[0]["device"])
    device = metrics.get("device", "?")
    if not resumed:
        return f"device {device}"
    return f"device {device} from step {resumed[-1]:,} on (resumed at steps {', '.join(f'{step:,}' for step in resumed)})"


def _figure(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.2f}"


def format_table(entries: Sequence[Entry]) -> str:
    encoders = [e for e in entries if e.kind == "encoder"]
    cells = [e for e in entries if e.kind == "cell"]
    lines = [f"{len(encoders)} encoders"]
    for e in sorted(encoders, key=lambda e: (str(e.language), str(e.scale), str(e.condition), str(e.seed))):
        lines.append(f"  {e.unique_id}  {e.language or '?'}  {e.condition}  {e.scale or '?'}  seed {e.seed}  steps {e.steps}  "
                     f"dev MLM {_figure(e.final_dev_mlm_loss)}  {_size(e.size_bytes)}  {e.age_days:.1f} d  {e.path}")
    lines.append(f"{len(cells)} fine-tuned cells")
    for e in sorted(cells, key=lambda e: (str(e.language), str(e.scale), str(e.task), str(e.condition), str(e.seed))):
        lines.append(f"  {e.unique_id}  {e.language or '?'}  {e.condition or '?'}  {e.scale or '?'}  {e.task}  seed {e.seed}  "
                     f"{e.metric} dev {_figure(e.dev)} test {_figure(e.test)}  {_size(e.size_bytes)}  {e.age_days:.1f} d")
    return "\n".join(lines + unlabelled_note(encoders + cells))


# --- export ---------------------------------------------------------------------------------------


def resolve_entry(workspace_dir: Path, key: str, stopped: bool = False) -> Path:
    """The cache folder of a unique id or an unambiguous prefix of one (``stopped``: unfinished ones too)."""
    cache = Path(workspace_dir) / "cache"
    folders = {d.name: d for d in sorted(cache.iterdir()) if d.is_dir() and (d / "work").is_dir()} if stopped and cache.is_dir() else {}
    folders.update(cache_dirs(workspace_dir))
    found = [folder for unique_id, folder in folders.items() if unique_id == key or unique_id.startswith(key)]
    if len(found) != 1:
        raise SystemExit(f"{key}: {'no' if not found else len(found)} cache entries match in {workspace_dir}/cache")
    return found[0]


def model_card(entry: Entry, metrics: Dict[str, Any], config: Dict[str, Any], stock: bool,
               downstream: Sequence[Entry] = (), release: Optional[Dict[str, Any]] = None,
               earlier: Sequence[Entry] = (), committed: Sequence[Entry] = ()) -> str:
    """The encoder's model card in the Hugging Face card format (YAML metadata, then prose): language,
    data and licences, tokens, steps, dev MLM loss, downstream figures with their seeds, how to load
    it, and (for a release) its content hash and how to restore it into a cache. ``committed``: cells
    of the committed predictions fine-tuned from these weights, ``earlier``: the release's recorded
    cells that neither this cache nor the predictions have; each marked as such."""
    from reporting.languages import languages

    facts = languages().get(entry.language or "", {})
    language = facts.get("title") or entry.language or "(language unknown)"
    training = metrics.get("training") or {}
    history = metrics.get("history") or []
    curve = ", ".join(f"{h['step']}: {h['dev_mlm_loss']:.3f}" for h in history if "dev_mlm_loss" in h)
    tokens = sum(h.get("tokens", 0) for h in history) or (metrics.get("final") or {}).get("tokens")
    load = ("```python\nfrom transformers import AutoModel, AutoTokenizer\n\nmodel = AutoModel.from_pretrained(FOLDER)\n"
            "tokenizer = AutoTokenizer.from_pretrained(FOLDER)\n```\n" if stock else
            "This condition's attention reads a dependency parse (`model_type: microbert`), so loading it needs the "
            "project's `models` package (`import models` before `AutoModel.from_pretrained`) and a parse of every "
            "sentence; see the project README.\n")
    folder = "the `encoder` folder of this release" if release else "this folder"
    data = {key: value for key, value in config.items() if key not in ("type", "training", "model")}
    header = ["---", f"language: {facts.get('stanza_code', 'unknown')}", "license: other",
              f"license_name: \"{facts.get('ud_license', 'unknown')} (treebank); CC BY-SA (Wikipedia text)\"",
              "library_name: transformers", "pipeline_tag: fill-mask",
              "tags: [bert, microbert, syntactic-inductive-bias, low-resource]",
              "datasets: [universal_dependencies, wikipedia]", "---", ""]
    # A cell's scale names its fine-tuning (gpu-<regime> for a paper-scale file's, a grid's regime),
    # so one encoder's cells under two regimes read apart.
    marked = [(c, "") for c in downstream] + [(c, COMMITTED_MARK) for c in committed] + [(c, EARLIER_MARK) for c in earlier]
    # A column for what a fine-tuning put on the encoder only where some cell did (M+G's GAT).
    added = any(c.added_attention for c, _ in marked)
    columns = ["task", "scale", *(["added at fine-tuning"] if added else []), "seed", "dev", "test", "metric"]
    head = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    rows = ["| " + " | ".join(map(str, [c.task, c.scale or "—",
                                        *([ADDED_ATTENTION.get(c.added_attention, c.added_attention or "—")] if added else []),
                                        c.seed, _figure(c.dev), _figure(c.test) + mark, c.metric])) + " |"
            for c, mark in sorted(marked, key=lambda cm: _cell_order(cm[0]))]
    if committed:
        rows += ["", f"{COMMITTED_MARK.strip()} from the project's committed predictions (`docs/predictions/`, re-scorable there): "
                     "fine-tuned from these weights (the same sha256) in a cache other than the one that wrote this card."]
    if earlier:
        rows += ["", f"{EARLIER_MARK.strip()} from this release's earlier card: fine-tuned in a cache other than the one that wrote this card."]
    body = [
        f"# µBERT {language}, condition {entry.condition} ({entry.scale or 'unknown'} scale, seed {entry.seed})",
        "",
        "A small BERT pretrained by the syntactic-inductive-bias Tango workspace, reproducing Gessler & Schneider, "
        "*Syntactic Inductive Bias in Transformer Language Models: Especially Helpful for Low-Resource Languages?* "
        "(M = masked LM, X = XPOS tagging, P/T = SynCLM phrase/tree losses, -SLA = syntax-aware local attention).",
        "",
        "## Data",
        "",
        f"- unlabeled text: the {language} reference corpus of the MicroBERT paper (Wikipedia articles where the "
        "language has them; CC BY-SA)",
        (f"- treebank: {facts['ud_name']} (Universal Dependencies r2.11; licence {facts['ud_license']}), which trains the "
         "corpus parser whose parse gives the X, P, T and SLA signals" if "ud_name" in facts else
         "- treebank: none named (this encoder's language has no Universal Dependencies entry here)"),
        f"- the step's inputs: `{json.dumps(data, sort_keys=True)}`; {metrics.get('train_rows', '?')} training rows"
        + (f", {tokens:,} training tokens seen" if tokens else ""),
        "",
        "## Training",
        "",
        f"- steps: {entry.steps} (batch {training.get('batch_size', '?')}, lr {training.get('lr', '?')}, warmup "
        f"{training.get('warmup_steps', training.get('warmup', '?'))}); {_devices(metrics)}",
        f"- metrics: final dev MLM loss {_figure(entry.final_dev_mlm_loss)}; best {_figure(metrics.get('best_dev_mlm_loss'))} "
        f"at step {metrics.get('best_step', '?')}; dev MLM loss by step: {curve or '—'}",
        f"- cache entry (Tango unique ID): `{entry.unique_id}`",
        "",
        "## Downstream",
        "",
        *([*head, *rows] if rows else
          ["No fine-tuned cell of this encoder was in the cache that wrote this card."]),
        "",
        "## Load",
        "",
        f"`FOLDER` is {folder}.",
        "",
        load,
    ]
    if release:
        body += ["## Release", "",
                 f"- content sha256: `{release['sha256']}` over the files listed in `release.json`",
                 "- put it back as the cached result of the step that built it: "
                 "`python -m reporting.cache restore <this folder> --workspace WORKSPACE`", ""]
    return "\n".join(header + body)


# A release written again from another cache keeps the downstream cells it recorded before that
# this cache lacks (a cell fine-tuned on another machine), marked on the card; a cell of the committed
# predictions fine-tuned from the same weights is taken from there instead, marked apart.
EARLIER_MARK = " †"
COMMITTED_MARK = " ‡"
PREDICTIONS = Path("docs/predictions")  # tools/export_predictions.py's record
DOWNSTREAM_FIELDS = ("task", "scale", "added_attention", "seed", "dev", "test", "metric")
ADDED_ATTENTION = {"syntax_gat": "syntax-guided GAT"}  # how a card names what a fine-tuning put on the encoder


def added_attention(metrics: Dict[str, Any]) -> Optional[str]:
    """What a fine-tuning result's metrics say it put on the encoder: "syntax_gat" (the M+G rows of
    the related-biases table), else None. Such a cell shares the task, scale and seed of the
    encoder's plain cell, so a card keeps the two apart by it."""
    return "syntax_gat" if metrics.get("syntax_gat") is not None else None


def _cell_key(cell: Entry) -> Tuple[Optional[str], Optional[str], Optional[str], Optional[int]]:
    """What one downstream cell of an encoder is: task, scale, attention added at fine-tuning, seed."""
    return cell.task, cell.scale, cell.added_attention, cell.seed


def _cell_order(cell: Entry) -> Tuple[str, str, str, int]:
    """A downstream cell's place on a card and in downstream.json: task, scale, added attention, seed."""
    return cell.task or "", cell.scale or "", cell.added_attention or "", cell.seed or 0


def release_downstream(folder: Path) -> List[Entry]:
    """The downstream cells a release records (its downstream.json: task, scale, added attention
    (absent in a record written before cards kept it: none), seed, dev, test and metric of each), as
    cells; none without one."""
    from steps.common.releases import DOWNSTREAM_FILE

    path = Path(folder) / DOWNSTREAM_FILE
    if not path.is_file():
        return []
    try:
        return [Entry("", "cell", "", **{key: row.get(key) for key in DOWNSTREAM_FIELDS})
                for row in json.loads(path.read_text())["cells"]]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise SystemExit(f"{path}: not a list of downstream cells ({error})") from None


def write_downstream(folder: Path, cells: Sequence[Entry]) -> None:
    """Record a release's downstream cells (release_downstream reads them back), dev and test at the
    card's two decimals, so a row from this cache and one kept from an earlier record read alike."""
    from steps.common.releases import DOWNSTREAM_FILE

    rows = [{key: _two_decimals(getattr(c, key)) if key in ("dev", "test") else getattr(c, key) for key in DOWNSTREAM_FIELDS}
            for c in sorted(cells, key=_cell_order)]
    (Path(folder) / DOWNSTREAM_FILE).write_text(json.dumps({"cells": rows}, indent=2) + "\n")


def _two_decimals(figure: Optional[float]) -> Optional[float]:
    return None if figure is None else round(float(figure), 2)


def committed_cells(predictions: Path, weights_sha256: Optional[str]) -> List[Entry]:
    """The cells of the committed predictions (``metrics.json`` files under ``predictions``, as
    tools/export_predictions.py writes them) whose encoder's weights had this sha256; one per task,
    scale, added attention and seed. Predictions exported without a weights hash match nothing."""
    cells: List[Entry] = []
    if weights_sha256 is None or not Path(predictions).is_dir():
        return cells
    for metrics_file in sorted(Path(predictions).rglob("metrics.json")):
        try:
            metrics = json.loads(metrics_file.read_text())
        except ValueError as error:
            raise SystemExit(f"{metrics_file}: not JSON ({error})") from None
        if not isinstance(metrics, dict) or metrics.get("encoder_sha256") != weights_sha256:
            continue
        metric = metrics.get("primary_metric")
        cell = Entry("", "cell", "", task=metrics.get("task"), scale=(metrics.get("cell") or {}).get("scale"),
                     seed=metrics.get("seed"), metric=metric, dev=(metrics.get("dev") or {}).get(metric),
                     test=(metrics.get("test") or {}).get(metric), added_attention=added_attention(metrics))
        cells += earlier_rows(cells, [cell])
    return cells


def earlier_rows(cached: Sequence[Entry], earlier: Sequence[Entry]) -> List[Entry]:
    """The earlier record's cells that this cache has none for (the same `_cell_key`)."""
    have = {_cell_key(c) for c in cached}
    return [c for c in earlier if _cell_key(c) not in have]


def export_entry(workspace_dir: Path, key: str, out: Path, graphs: Optional[Sequence[FileGraph]] = None) -> Path:
    """Copy an encoder's HF folder (config, safetensors weights, tokenizer) to ``out`` with a model card."""
    folder = resolve_entry(workspace_dir, key)
    graphs = remembered_graphs(workspace_dir) if graphs is None else graphs
    [entry] = [e for e in list_entries(workspace_dir, graphs) if e.unique_id == folder.name] or [None]
    if entry is None or entry.kind != "encoder":
        raise SystemExit(f"{folder.name} is not a cached encoder (pretrain_microbert / random_init_encoder)")
    source = Path(entry.path)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for file in source.iterdir():
        if file.is_file():
            shutil.copy2(file, out / file.name)
    config = json.loads((out / "config.json").read_text())
    info = step_infos(workspace_dir).get(entry.unique_id)
    card = model_card(entry, _read_metrics(folder / "result"), (info.config or {}) if info else {},
                      stock=config.get("model_type") == "bert", downstream=downstream_cells(workspace_dir, entry.unique_id, graphs))
    (out / "README.md").write_text(card)
    return out


def downstream_cells(workspace_dir: Path, encoder_id: str, graphs: Sequence[FileGraph] = ()) -> List[Entry]:
    """The cached fine-tuned cells whose encoder is ``encoder_id``."""
    return [e for e in list_entries(workspace_dir, graphs) if e.kind == "cell" and e.encoder == encoder_id]


def record_steps(workspace_dir: Path, files: Sequence[Path]) -> int:
    """Put the steps of ``files`` whose entries lie in the workspace's cache (finished, or stopped with
    a checkpoint) on its step-info record, as `tango run` would on meeting them: an entry copied in
    from another machine has no record, and a stopped run's seed and length are read from there."""
    from tango.workspaces import LocalWorkspace

    workspace = LocalWorkspace(workspace_dir)
    recorded = 0
    for step in steps_of_files(files):
        if (Path(workspace_dir) / "cache" / step.unique_id).is_dir():
            workspace.step_info(step)
            recorded += 1
    return recorded


def steps_of_files(files: Sequence[Path]) -> Iterator[Any]:
    """Every step of the experiment ``files``, as Tango builds it (a step several files share comes once per file)."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    for file in files:
        yield from StepGraph.from_params(Params.from_file(str(file)).pop("steps")).values()


RELEASE_LIMIT = 10 * 2**20  # an encoder release; a stopped pretraining's checkpoint may take up to
PARTIAL_LIMIT = 25 * 2**20  # this much (model, optimizer and scheduler state)


def release_entry(workspace_dir: Path, key: str, root: Path = Path("releases"), name: Optional[str] = None,
                  graphs: Optional[Sequence[FileGraph]] = None, predictions: Optional[Path] = PREDICTIONS) -> Path:
    """Write a cached encoder (or a stopped pretraining's checkpoint) as a release under
    ``root/<language>/<name>/`` (`steps.common.releases`) with its model card; returns the folder.
    Its downstream figures are the cache's cells of the encoder, then the cells under ``predictions``
    fine-tuned from the same weights (`committed_cells`), then the release's earlier record.
    Any other finished step (a tokenizer, the pretraining rows, a corpus parse) goes out the same
    way with a short card (`_step_release`): restored, it spares a machine the steps above it."""
    from steps.common.releases import entry_kind, write_release

    folder = resolve_entry(workspace_dir, key, stopped=True)
    graphs = remembered_graphs(workspace_dir) if graphs is None else graphs
    kind = entry_kind(folder)
    config = _step_config(folder.name, step_infos(workspace_dir).get(folder.name), graph_labels(graphs).get(folder.name, {}))
    if kind in ("result", "data"):
        [entry] = [e for e in list_entries(workspace_dir, graphs) if e.unique_id == folder.name] or [None]
        if entry is None or entry.kind != "encoder":
            return _step_release(workspace_dir, folder, kind, config, graphs, root, name)
    else:
        [stopped] = [u for u in unfinished_entries(workspace_dir, graphs) if u.unique_id == folder.name] or [None]
        if stopped is None or stopped.step_class not in ENCODER_CLASSES:
            raise SystemExit(f"{folder.name}: a stopped step that is not a pretraining; only encoders are released")
        entry = Entry(folder.name, "encoder", stopped.step_class, language=stopped.language, condition=stopped.condition,
                      scale=stopped.scale, seed=stopped.seed, steps=stopped.steps)
    language = entry.language or _language_upstream(folder.name, step_infos(workspace_dir))
    if language is None:
        # A restored entry has no step record until a run meets it: its card would lose its language
        # and labels, and the release would land beside the one it came from, under "unknown".
        raise SystemExit(f"{folder.name}: this workspace does not record which experiment file builds it (a restored "
                         "entry has no step record), so its language and labels are unknown; pass --experiments FILE")
    default = f"{(entry.condition or 'encoder').lower().replace(' ', '_')}-{entry.scale or 'unknown'}-s{entry.seed}"
    out = Path(root) / language / ((name or default) + ("-partial" if kind == "checkpoint" else ""))
    step = {"step_class": entry.step_class, "config": config, "language": language, "condition": entry.condition,
            "scale": entry.scale, "seed": entry.seed, "steps": entry.steps}
    recorded = release_downstream(out)  # read before write_release replaces the folder
    record = write_release(folder, out, step)
    if kind == "result":
        metrics = _read_metrics(out)
        stock = json.loads((out / "encoder" / "config.json").read_text()).get("model_type") == "bert"
        cached = downstream_cells(workspace_dir, folder.name, graphs)
        weights = record["files"].get("encoder/model.safetensors")
        committed = earlier_rows(cached, committed_cells(predictions, weights)) if predictions is not None else []
        earlier = earlier_rows(cached + committed, recorded)
        write_downstream(out, cached + committed + earlier)
        card = model_card(entry, metrics, config, stock, cached, record, earlier, committed)
    else:
        card = (f"# Stopped pretraining: {language} {entry.condition}, {entry.scale} scale, seed {entry.seed}\n\n"
                f"The checkpoint of `{folder.name}` at optimizer step {entry.steps} of {stopped.total}: restore it "
                "(`python -m reporting.cache restore <this folder> --workspace WORKSPACE`) and `tango run` the file that "
                f"builds it goes on from that step.\n\nContent sha256: `{record['sha256']}` (release.json).\n")
    (out / "README.md").write_text(card)
    warn_if_over(out, RELEASE_LIMIT if kind == "result" else PARTIAL_LIMIT)
    return out


def warn_if_over(out: Path, limit: int) -> None:
    """A release folder larger than its kind is meant to take: a warning, not a refusal."""
    size = folder_size(out)
    if size > limit:
        print(f"warning: {out} holds {_size(size)}, over the {_size(limit)} a release of this kind is meant to take", file=sys.stderr)


def _step_release(workspace_dir: Path, folder: Path, kind: str, config: Dict[str, Any], graphs: Sequence[FileGraph],
                  root: Path, name: Optional[str]) -> Path:
    """A finished step that is not an encoder, released under ``root/<language>/<name>/`` (default
    name: the step's name in the experiment files, e.g. ``pretraining_data``) with a card saying
    what it is and which files use it."""
    from steps.common.releases import write_release

    step_class = _class_of(folder.name)
    language = _language_upstream(folder.name, step_infos(workspace_dir)) or "unknown"
    uses = sorted({(step, graph.path) for graph in graphs for step, (_, unique_id) in graph.steps.items() if unique_id == folder.name})
    out = Path(root) / language / (name or (uses[0][0] if uses else step_class.lower()))
    record = write_release(folder, out, {"step_class": step_class, "config": config, "language": language})
    used_by = "".join(f"- `{step}` of `{path}`\n" for step, path in uses[:12]) + (f"- and {len(uses) - 12} more\n" if len(uses) > 12 else "")
    (out / "README.md").write_text(
        f"# Cached result: {step_class} ({language})\n\n"
        f"The result of `{folder.name}`, a Tango cache entry ({', '.join(sorted(record['files']))}; a pickle Tango "
        "keeps gzip-compressed is written with xz, half the size). Restore it "
        "(`python -m reporting.cache restore <this folder> --workspace WORKSPACE`) and `tango run` of a file that "
        "uses it reads it instead of computing it, and skips what only it needed. Its unique ID hashes the data "
        "files it was built from, so it is found only with the same data root.\n\n"
        + (f"Used by:\n\n{used_by}\n" if used_by else "")
        + f"Content sha256: `{record['sha256']}` (release.json).\n")
    warn_if_over(out, RELEASE_LIMIT)
    return out


def remembered_graphs(workspace_dir: Path) -> List[FileGraph]:
    """The graphs the index last remembered (labels for a model card), without rebuilding any: a
    stale label on a card is cheaper than hashing every experiment's inputs for one export."""
    index = Path(workspace_dir) / "reporting" / "graphs.json"
    try:
        return [FileGraph(**entry["graph"]) for entry in json.loads(index.read_text())["files"].values()]
    except (OSError, ValueError, KeyError, TypeError):
        return []


# --- prune ----------------------------------------------------------------------------------------


def referenced_ids(graphs: Sequence[FileGraph]) -> set:
    return {unique_id for graph in graphs for _, unique_id in graph.steps.values()}


def unreferenced(workspace_dir: Path, graphs: Sequence[FileGraph]) -> List[Tuple[str, int]]:
    """(unique id, bytes) of every cache entry no graph holds."""
    keep = referenced_ids(graphs)
    cache = Path(workspace_dir) / "cache"
    folders = sorted(d for d in cache.iterdir() if d.is_dir()) if cache.is_dir() else []
    return [(d.name, folder_size(d)) for d in folders if d.name not in keep]


def remove_entries(workspace_dir: Path, unique_ids: Sequence[str]) -> None:
    """Delete the entries' cache folders, step-info rows, run links and run-record lines."""
    from sqlitedict import SqliteDict

    workspace_dir, doomed = Path(workspace_dir), set(unique_ids)
    runs = workspace_dir / "runs"
    for run_dir in (sorted(d for d in runs.iterdir() if d.is_dir() and not d.is_symlink()) if runs.is_dir() else []):
        record = run_dir / "stepinfo.json"
        names = json.loads(record.read_text()) if record.exists() else {}
        for name, unique_id in list(names.items()):
            if unique_id in doomed:
                del names[name]
                if (run_dir / name).is_symlink():
                    (run_dir / name).unlink()
        for link in run_dir.iterdir():  # links of runs recorded before stepinfo.json existed
            if link.is_symlink() and Path(str(link.readlink())).name in doomed:
                link.unlink()
        if record.exists():
            record.write_text(json.dumps(names))
    database = workspace_dir / "stepinfo.sqlite"
    if database.exists():
        with SqliteDict(str(database)) as rows:
            for unique_id in doomed:
                if unique_id in rows:
                    del rows[unique_id]
            rows.commit()
    for unique_id in doomed:
        shutil.rmtree(workspace_dir / "cache" / unique_id, ignore_errors=True)


# --- command line ---------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", default="workspace", help="Tango workspace directory (default: ./workspace)")
    common.add_argument("--experiments", nargs="+", type=Path,
                        help="experiment files whose graphs label (ls) or keep (prune) entries (default: experiments/)")
    commands = parser.add_subparsers(dest="command", required=True)
    ls = commands.add_parser("ls", parents=[common], help="list cached encoders and fine-tuned cells")
    ls.add_argument("--json", action="store_true", help="one JSON object: {encoders: [...], cells: [...]}")
    ls.add_argument("--language")
    ls.add_argument("--condition", help="a condition (M, MXPT-SLA, …) or table row (random-init, mBERT)")
    ls.add_argument("--scale", help="smoke, cpu, paper (or an experiments/<folder> label: seeds, related, decomposition, …)")
    export = commands.add_parser("export", parents=[common], help="write a cached encoder as a self-contained HF folder with a model card")
    export.add_argument("entry", help="unique id (or an unambiguous prefix) of a pretrain_microbert / random_init_encoder entry")
    export.add_argument("out", type=Path)
    unfinished = commands.add_parser("unfinished", parents=[common],
                                     help="pretraining, fine-tuning and TG LM steps with a checkpoint and no result: "
                                          "running or stopped, how far")
    unfinished.add_argument("--json", action="store_true", help="one JSON object: {unfinished: [...]}")
    release = commands.add_parser("release", parents=[common],
                                  help="write a cached encoder, a stopped pretraining or another finished step's result "
                                       "to releases/<language>/<name>/ with hashes and a card")
    release.add_argument("entry", help="unique id (or an unambiguous prefix) of a cache entry")
    release.add_argument("--root", type=Path, default=Path("releases"), help="where releases go (default: ./releases)")
    release.add_argument("--name", help="the release folder's name (default: <condition>-<scale>-s<seed> for an encoder, "
                                        "else the step's name in the experiment files)")
    release.add_argument("--predictions", type=Path, default=PREDICTIONS,
                         help="committed predictions whose cells fine-tuned from the same weights join the card "
                              "(default: ./docs/predictions)")
    restore = commands.add_parser("restore", parents=[common], help="put releases back as their steps' cache entries (checked first)")
    restore.add_argument("releases", nargs="+", type=Path, help="release folders (releases/<language>/<name>)")
    prune = commands.add_parser("prune", parents=[common], help="remove the cache entries no experiment file refers to (dry run unless --yes)")
    prune.add_argument("--yes", action="store_true", help="remove them")
    prune.add_argument("--allow-broken", action="store_true",
                       help="remove even though some experiment files could not be built here (their steps count as unreferenced)")
    args = parser.parse_args(argv)
    import steps  # noqa: F401  (registers step classes and formats)

    workspace_dir = Path(args.workspace).resolve()
    if args.command == "restore":
        from steps.common.releases import ReleaseRefused, restore_release

        try:
            targets = [restore_release(folder, workspace_dir) for folder in args.releases]
        except ReleaseRefused as refused:
            print(f"refused: {refused}", file=sys.stderr)
            return 2
        for folder, target in zip(args.releases, targets):
            print(f"{folder} -> {target}")
        return 0
    if args.command == "release":
        graphs = load_graphs(args.experiments, workspace_dir) if args.experiments else None
        record_steps(workspace_dir, args.experiments or ())
        print(release_entry(workspace_dir, args.entry, args.root, args.name, graphs, args.predictions))
        return 0
    files = args.experiments or experiment_files()
    if args.command == "export":
        print(export_entry(workspace_dir, args.entry, args.out, load_graphs(files, workspace_dir) if args.experiments else None))
        return 0
    graphs = load_graphs(files, workspace_dir)
    if args.command == "unfinished":
        found = unfinished_entries(workspace_dir, graphs)
        print(json.dumps({"workspace": str(workspace_dir), "unfinished": [asdict(e) for e in found]}, indent=2)
              if args.json else format_unfinished(found))
        return 0
    if args.command == "ls":
        entries = [e for e in list_entries(workspace_dir, graphs) if matches(e, args.language, args.condition, args.scale)]
        if args.json:
            print(json.dumps({"workspace": str(workspace_dir),
                              "encoders": [asdict(e) for e in entries if e.kind == "encoder"],
                              "cells": [asdict(e) for e in entries if e.kind == "cell"]}, indent=2))
        else:
            print(format_table(entries))
        return 0
    broken = [graph for graph in graphs if graph.error]
    doomed = unreferenced(workspace_dir, graphs)
    for unique_id, size in doomed:
        print(f"{_size(size):>10}  {unique_id}")
    print(f"{len(doomed)} cache entries ({_size(sum(s for _, s in doomed))}) are not built by any of {len(files)} experiment files")
    if broken:
        print(f"{len(broken)} experiment files could not be built here, so their steps count as unreferenced: "
              + ", ".join(display_path(Path(g.path)) if Path(g.path).is_absolute() else g.path for g in broken[:10])
              + (" …" if len(broken) > 10 else ""))
    if not args.yes:
        print("dry run: nothing removed (--yes removes them)")
        return 0
    if broken and not args.allow_broken:
        print("not removing anything: some experiment files could not be built (--allow-broken removes anyway)")
        return 1
    remove_entries(workspace_dir, [unique_id for unique_id, _ in doomed])
    print(f"removed {len(doomed)} cache entries with their step-info rows and run links")
    return 0


if __name__ == "__main__":
    sys.exit(main())
