"""Experiment files → the unique IDs of their steps, built once and remembered under the workspace.

Building a file's step graph means hashing its inputs, and a corpus `DataPath` hashes thousands of
files: the 189 experiment files name the same few corpora over and over, so building them one by one
spent ~3-4 min of a read-only report rehashing them. Here each distinct DataPath is hashed once per
process (`steps.common.data_root.frozen_content_digests`), and the resulting IDs are kept in ``<workspace>/reporting/graphs.json`` keyed by everything
that decides them (the file's text, every .libsonnet it may import, the step code, Tango's version,
the data root's file sizes and times), so a second run rebuilds nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
EXPERIMENT_FOLDERS = ("experiments",)
INDEX_VERSION = 3


@dataclass
class FileGraph:
    """One experiment file: {step name: (class name, unique id)}, its aggregate cells, or why it failed."""

    path: str
    steps: Dict[str, List[str]] = field(default_factory=dict)
    # step, unique_id, table, scale, row, column, seeds (the file's fine-tuning seeds), and finetuned: the
    # unique ids of the steps its seeds score
    cells: List[Dict[str, Any]] = field(default_factory=list)
    error: Optional[str] = None


def experiment_files(folders: Sequence[str] = EXPERIMENT_FOLDERS) -> List[Path]:
    return [path for folder in folders for path in sorted((REPO / folder).rglob("*.jsonnet"))]


def display_path(path: Path) -> str:
    path = Path(path).resolve()
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def scale_label(path: str) -> str:
    """Where an experiment file sits says its scale: experiments/smoke and experiments/paper are
    those scales, experiments/*.jsonnet is cpu, any other experiments/<folder>/ (seeds, related,
    decomposition, long_pretraining) is labelled by its folder."""
    parts = Path(path).parts
    if len(parts) >= 2 and parts[0] == "experiments":
        return parts[1] if len(parts) > 2 else "cpu"
    return path


# Grids beside the paper tables, with tables of their own: the Wolof gap decomposition
# (reporting.decomposition) and the long-pretraining cells (reporting.report "Seed noise"). Their
# files relabel rows as encoders and scales as fine-tuning regimes.
GRID_FOLDERS = ("experiments/decomposition", "experiments/long_pretraining")


def is_grid_file(path: str) -> bool:
    """An experiment file of one of the `GRID_FOLDERS`."""
    return any(Path(path).is_relative_to(folder) for folder in GRID_FOLDERS)


def is_check_file(path: str) -> bool:
    """A paper-scale file in a folder of its own under experiments/paper other than related/
    (paper_regime/, ner_decay/): the paper-scale encoders fine-tuned under another regime than their
    cells' chosen one, a check on a table cell rather than a cell of its own."""
    parts = Path(path).parts
    return len(parts) > 3 and parts[:2] == ("experiments", "paper") and parts[2] != "related"


def _sha(*chunks: bytes) -> str:
    sha = hashlib.sha256()
    for chunk in chunks:
        sha.update(chunk)
        sha.update(b"\0")
    return sha.hexdigest()


def inputs_fingerprint() -> str:
    """Everything besides a file's own text that decides its step IDs."""
    from tango.version import VERSION as tango_version

    from steps.common.data_root import data_root

    parts = [f"index {INDEX_VERSION}, tango {tango_version}".encode()]
    for pattern in ("steps/**/*.py", "models/**/*.py", "configs/**/*.libsonnet", "configs/**/*.json", "experiments/**/*.libsonnet"):
        for path in sorted(REPO.glob(pattern)):
            parts += [path.relative_to(REPO).as_posix().encode(), path.read_bytes()]
    root = data_root().resolve()
    parts.append(str(root).encode())
    for directory, folders, names in sorted(os.walk(root)):
        folders.sort()
        for name in sorted(names):
            stat = os.stat(os.path.join(directory, name))
            parts.append(f"{os.path.relpath(os.path.join(directory, name), root)} {stat.st_size} {stat.st_mtime_ns}".encode())
    return _sha(*parts)


def build_graph(path: Path) -> FileGraph:
    import steps  # noqa: F401  (registers the step classes)
    from tango.common import Params
    from tango.step_graph import StepGraph

    from steps.evaluate.scoring import AggregateCell

    graph_record = FileGraph(display_path(path))
    try:
        graph = StepGraph.from_params(Params.from_file(path, ext_vars=dict(os.environ)).pop("steps"))
    except Exception as error:  # a broken or data-less experiment must not hide the others
        graph_record.error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        return graph_record
    for name, step in sorted(graph.items()):
        graph_record.steps[name] = [step.class_name, step.unique_id]
        if isinstance(step, AggregateCell):
            scores = step.kwargs["scores"]
            graph_record.cells.append(dict(step=name, unique_id=step.unique_id,
                                           **{k: scores[0].kwargs[k] for k in ("table", "scale", "row", "column")},
                                           seeds=[score.kwargs.get("seed") for score in scores],
                                           finetuned=[score.kwargs["finetuned"].unique_id for score in scores
                                                      if hasattr(score.kwargs.get("finetuned"), "unique_id")]))
    return graph_record


def load_graphs(files: Sequence[Path], workspace_dir: Optional[Path]) -> List[FileGraph]:
    """The graph of every file, from ``<workspace>/reporting/graphs.json`` where its inputs are
    unchanged, else built (and remembered)."""
    index_path = Path(workspace_dir) / "reporting" / "graphs.json" if workspace_dir else None
    fingerprint = inputs_fingerprint()
    remembered: Dict[str, dict] = {}
    if index_path and index_path.exists():
        try:
            stored = json.loads(index_path.read_text())
            if stored.get("fingerprint") == fingerprint:
                remembered = stored["files"]
        except (ValueError, KeyError):
            remembered = {}  # a damaged index is rebuilt, never trusted
    graphs, changed = [], False
    from steps.common.data_root import frozen_content_digests

    with frozen_content_digests():
        for path in files:
            key, text_sha = display_path(path), _sha(Path(path).read_bytes())
            entry = remembered.get(key)
            if entry is None or entry["text_sha"] != text_sha:
                graph = build_graph(Path(path))
                remembered[key] = dict(text_sha=text_sha, graph=graph.__dict__)
                changed = True
            graphs.append(FileGraph(**remembered[key]["graph"]))
    if index_path and changed:
        index_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = index_path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"fingerprint": fingerprint, "files": remembered}, sort_keys=True))
        temporary.replace(index_path)
    return graphs


def scales_of_steps(graphs: Sequence[FileGraph]) -> Dict[str, List[str]]:
    """{unique id: the scales (or benchmark folders) of the experiment files whose graph holds it}."""
    scales: Dict[str, set] = {}
    for graph in graphs:
        for _, unique_id in graph.steps.values():
            scales.setdefault(unique_id, set()).add(scale_label(graph.path))
    return {unique_id: sorted(labels) for unique_id, labels in scales.items()}


def cached_result(workspace_dir: Path, unique_id: str):
    """A step's cached result by its unique id (None if not cached), read as Tango's LocalStepCache
    writes it: ``<workspace>/cache/<id>/cache-metadata.json`` names the format."""
    from tango.common import Params
    from tango.step_cache import CacheMetadata
    from tango.step_caches.local_step_cache import LocalStepCache

    directory = Path(workspace_dir) / "cache" / unique_id
    metadata = directory / LocalStepCache.METADATA_FILE_NAME
    if not metadata.exists():
        return None
    from steps.common.formats import DamagedCacheEntry

    try:
        return CacheMetadata.from_params(Params.from_file(metadata)).format.read(directory)
    except DamagedCacheEntry:
        raise
    except Exception as error:  # a deleted or cut-short result file: say which entry, never guess
        reason = str(error).splitlines()[0] if str(error) else ""
        files = ", ".join(sorted(p.name for p in Path(directory).iterdir()
                                 if p.name not in ("lock", "work", "cache-metadata.json"))) or "none"
        raise DamagedCacheEntry(f"{directory}: damaged cache entry, its result cannot be read "
                                f"({type(error).__name__}: {reason}; files: {files}); delete this folder and run again "
                                f"to recompute it") from error
