"""Small compatibility shims for the pinned Tango 1.3.2, applied when ``steps`` is imported."""
from __future__ import annotations

import sys
from pathlib import Path

from sqlitedict import SqliteDict
from tango.common.exceptions import StepStateError
from tango.common.file_lock import FileLock
from tango.common.util import utc_now_datetime
from tango.step_info import GitMetadata, StepInfo, StepState
from tango.step_caches import LocalStepCache
from tango.workspaces import LocalWorkspace

from steps.common.formats import DamagedCacheEntry


def _git_metadata_tolerating_no_remote(cls):
    # Tango records the commit of the working repo with each run, but crashes when the repo has no
    # remote named "origin" (a fresh `git init`, or a clone whose remote has another name).
    # Nor may a machine without GitPython or a git executable (a GPU image) fail the run over it.
    try:
        from git import Repo
        from git.exc import GitError
    except ImportError:
        return None

    try:
        repo = Repo(".")
        commit = str(repo.commit())
    except (GitError, ValueError):
        return None
    remote = repo.remotes[0].url if repo.remotes else None
    return cls(commit=commit, remote=remote)


# EnvironmentMetadata's dataclass field captured the classmethod itself as its default factory,
# so replacing the attribute is not enough: swap the code of the function it wraps.
GitMetadata.check_for_repo.__func__.__code__ = _git_metadata_tolerating_no_remote.__code__


def _step_starting_after_other_runs(self, step) -> None:
    """LocalWorkspace.step_starting that waits for a step another run is computing, then reuses it.

    Tango 1.3.2 reads the step's state *before* taking the step's lock (``<cache>/<id>/lock``), so
    a second ``tango run`` reaching a step that a first run is computing fails it with
    "unexpected state 'running'" and skips everything downstream; and two runs that both see it
    incomplete both compute it, the second then failing to write over the first's cache entry.
    Here the lock comes first: the second run waits for it, and if the entry is complete by then
    it raises StepStateError(COMPLETED), which ``Step.result()`` already answers by reading the
    cache. The state record is read directly once the lock is held: ``step_info()`` would take our
    own lock for another process's and call the record out of sync.
    """
    if not step.cache_results:
        return
    lock = FileLock(self._step_lock_file(step), read_only_ok=True)
    lock.acquire_with_updates(desc=f"waiting for another run's '{step.name}'")
    try:
        if step in self.step_cache:
            raise StepStateError(step, StepState.COMPLETED, "(computed by another run while this one waited)")
        with SqliteDict(self.step_info_file) as records:
            try:
                step_info = records[step.unique_id]
            except KeyError:
                step_info = StepInfo.new_from_step(step)
            if step_info.state == StepState.FAILED:
                step_info.refresh()
            # Holding the lock, any "running" record is a killed run's: start afresh.
            step_info.start_time = utc_now_datetime()
            step_info.end_time = None
            step_info.error = None
            step_info.result_location = None
            records[step.unique_id] = step_info
            records.commit()
    except BaseException:
        lock.release()
        raise
    self.locks[step] = lock


STOCK_STEP_STARTING = LocalWorkspace.step_starting  # kept for benchmarks/concurrency.py's stock-Tango case
LocalWorkspace.step_starting = _step_starting_after_other_runs


_stock_cache_getitem = LocalStepCache.__getitem__


def _cache_getitem_naming_damaged_entries(self, step):
    """A complete-looking entry whose result cannot be read (a deleted data.dill.gz, a truncated
    data.json) fails in one line naming the entry folder, not in a deep decoder traceback."""
    try:
        return _stock_cache_getitem(self, step)
    except (KeyError, DamagedCacheEntry):
        raise
    except Exception as error:
        reason = str(error).splitlines()[0] if str(error) else ""
        files = ", ".join(sorted(p.name for p in Path(self.step_dir(step)).iterdir()
                                 if p.name not in ("lock", "work", "cache-metadata.json"))) or "none"
        raise DamagedCacheEntry(f"{self.step_dir(step)}: damaged cache entry, its result cannot be read "
                                f"({type(error).__name__}: {reason}; files: {files}); delete this folder and run again "
                                f"to recompute it") from error


LocalStepCache.__getitem__ = _cache_getitem_naming_damaged_entries


def _keep_killed_result_writes_incomplete() -> None:
    # A `tango run` killed while it writes a result leaves files in the step directory but no
    # `cache-metadata.json` (written last, by rename). Tango 1.3.2 then guesses "any state" for
    # the directory, keeps the step marked "running" in its step-info database, and every later
    # `tango run` fails with StepStateError until someone deletes files by hand (found by
    # benchmarks/faults.py). Without the metadata file the entry is not complete, and with its
    # lock free nothing runs it: it is incomplete, and a rerun writes the result again.
    from tango.step_info import StepState
    from tango.step_caches.local_step_cache import LocalStepCache
    from tango.workspaces.local_workspace import LocalWorkspace

    guess = LocalWorkspace.guess_step_dir_state.__func__

    def guess_step_dir_state(cls, dir):
        states = guess(cls, dir)
        if states == set(StepState) and not (dir / LocalStepCache.METADATA_FILE_NAME).exists():
            return {StepState.INCOMPLETE, StepState.FAILED}
        return states

    LocalWorkspace.guess_step_dir_state = classmethod(guess_step_dir_state)


_keep_killed_result_writes_incomplete()


def _resolve_postponed_annotations_once() -> None:
    # Our step modules postpone annotations (`from __future__ import annotations`), and Tango's
    # from_params resolves them with `typing.get_type_hints(method)` once per parameter each time
    # it builds an object, so building the graphs of every experiment file spent over a third of
    # its time re-resolving the same few signatures. A function's hints do not change: remember
    # them per function (Tango only reads the returned mapping).
    import functools
    import typing

    import tango.common.from_params as from_params

    remembered = functools.lru_cache(maxsize=None)(typing.get_type_hints)

    def get_type_hints(obj, *args, **kwargs):
        if args or kwargs:
            return typing.get_type_hints(obj, *args, **kwargs)
        try:
            return remembered(obj)
        except TypeError as error:
            if "unhashable" not in str(error):
                raise
            return typing.get_type_hints(obj)

    from_params.get_type_hints = get_type_hints


_resolve_postponed_annotations_once()


def _local_cached_path(url_or_filename, **_unused) -> Path:
    """cached_path for local files only: all Tango's `Params.from_file` asks of it here."""
    path = Path(url_or_filename)
    if not path.exists():
        raise FileNotFoundError(f"{url_or_filename}: no such file (cached-path is not installed, so only local files are read)")
    return path


def _cached_path_or_local_stand_in() -> None:
    # Tango reads experiment files through cached-path, whose import pulls boto3 and the Google
    # Cloud client. A machine without it (the GPU image) gets a local-files stand-in; where it is
    # installed it is left to be imported when Tango needs it.
    import importlib.util
    import sys
    import types

    blocked = "cached_path" in sys.modules and sys.modules["cached_path"] is None  # `import` would fail
    if not blocked and ("cached_path" in sys.modules or importlib.util.find_spec("cached_path") is not None):
        return
    stand_in = types.ModuleType("cached_path")
    stand_in.cached_path = _local_cached_path
    sys.modules["cached_path"] = stand_in


_cached_path_or_local_stand_in()


def _adopt_entries_copied_from_another_machine() -> None:
    # A complete cache entry copied in from another machine (a GPU job's) has no record in this
    # workspace's step-info database: Tango 1.3.2 makes one that says "incomplete", and under
    # `tango run -j` a step whose record still says so after its process found it in the cache is
    # failed. An "incomplete" record beside a complete entry (metadata written last) is such a copy:
    # record it as completed where it lies. So is a "failed" one: a run stopped here (a short job's
    # budget) and finished on another machine, whose entry was then unpacked here (tools/jobs.py).
    from tango.step_caches.local_step_cache import LocalStepCache

    stock = LocalWorkspace.step_info

    def step_info(self, step_or_unique_id):
        record = stock(self, step_or_unique_id)
        if not record.cacheable or record.state not in (StepState.INCOMPLETE, StepState.FAILED):
            return record
        step_dir = self.step_dir(record.unique_id)
        if not (step_dir / LocalStepCache.METADATA_FILE_NAME).exists():
            return record
        record.start_time = record.end_time = utc_now_datetime()
        record.error = None
        record.result_location = str(step_dir.absolute())
        with SqliteDict(self.step_info_file) as records:
            records[record.unique_id] = record
            records.commit()
        return record

    LocalWorkspace.step_info = step_info


_adopt_entries_copied_from_another_machine()


def needed_steps(step_graph, cached) -> dict:
    """The steps of ``step_graph`` that a run must execute, with the cached steps they read.

    Tango 1.3.2 ensures every cacheable step of a graph, so a workspace holding a restored
    pretraining (``python -m reporting.cache restore``) would first rebuild the corpus, parser and
    parse above it, though nothing downstream reads them any more. A step is needed here when its
    result is not cached and it is a leaf of the graph (a table cell) or feeds a needed step, as
    `make` decides; the cached steps that needed ones read stay in the graph, so both executors
    see them completed. ``cached(step)``: whether the workspace holds the step's result."""
    consumers = {name: [] for name in step_graph}
    for name, step in step_graph.items():
        for dependency in step.dependencies:
            if dependency.name in consumers:
                consumers[dependency.name].append(name)
    needed: dict = {}

    def is_needed(name: str) -> bool:
        if name not in needed:
            step = step_graph[name]
            needed[name] = not (step.cache_results and cached(step)) and (
                not consumers[name] or any(is_needed(consumer) for consumer in consumers[name]))
        return needed[name]

    kept = {name for name in step_graph if is_needed(name)}
    kept |= {dependency.name for name in set(kept) for dependency in step_graph[name].dependencies if dependency.name in step_graph}
    # Cached steps stay too: Tango reports them found in the cache and records them where they lie.
    kept |= {name for name, step in step_graph.items() if step.cache_results and cached(step)}
    return {name: step for name, step in step_graph.items() if name in kept}





def _run_only_what_is_needed() -> None:
    # `tango run` (and each step process of `tango run -j`) executes the needed part of the graph.
    import tango.__main__ as tango_main
    import tango.cli as tango_cli
    from tango.executors.multicore_executor import MulticoreExecutor
    from tango.step_graph import StepGraph

    stock = tango_cli.execute_step_graph

    def execute_step_graph(step_graph, workspace=None, executor=None, name=None, called_by_executor=False, step_names=None):
        if workspace is not None:
            kept = needed_steps(step_graph, lambda step: step in workspace.step_cache)
            if isinstance(executor, MulticoreExecutor):
                # It reads the state of every step above each one it runs: the whole graph stays, and
                # the steps left out count as completed (it never starts them).
                executor.not_needed = {step.unique_id for name, step in step_graph.items() if name not in kept}
            elif len(kept) < len(step_graph):
                # StepGraph() insists on every dependency being in the graph; the steps above the
                # cached ones are not, on purpose, so the pruned graph is made as its parsed form.
                step_graph = StepGraph.__new__(StepGraph)
                step_graph.parsed_steps = kept
        return stock(step_graph, workspace, executor, name, called_by_executor, step_names)

    tango_cli.execute_step_graph = tango_main.execute_step_graph = execute_step_graph
    state = MulticoreExecutor._get_state

    def _get_state(self, step):
        return StepState.COMPLETED if step.unique_id in getattr(self, "not_needed", ()) else state(self, step)

    MulticoreExecutor._get_state = _get_state
    running = sys.modules.get("__main__")  # `python -m tango` runs its own copy of tango.__main__
    if getattr(running, "execute_step_graph", None) is stock:
        running.execute_step_graph = execute_step_graph


_run_only_what_is_needed()
