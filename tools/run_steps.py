"""Run named steps of an experiment file, computing only what they need and the cache lacks.

    python tools/run_steps.py experiments/paper/wolof_m.jsonnet pretrained_model [-w workspace]

`tango run -s NAME` ensures every cacheable step above NAME, cached or not needed: on a GPU machine
given only the cached pretraining data, it would first retrain the corpus parser (10 minutes) whose
only use was a parse already in the cache. Here each named step runs through Tango's executor, and
a dependency is computed only when the step asks for its result and the cache does not hold it, so
the machine needs the data the step reads, not the whole DAG above it. Exit status 1 if a step failed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

REPO = Path(__file__).resolve().parents[1]


def run_steps(experiment: Path, names: Sequence[str], workspace_dir: Optional[Path] = None) -> int:
    sys.path.insert(0, str(REPO))
    import steps  # noqa: F401  (first: its compat shims let Tango read files without cached-path)
    from tango import Executor
    from tango.common import Params
    from tango.common.logging import initialize_logging
    from tango.settings import TangoGlobalSettings
    from tango.step_graph import StepGraph
    from tango.workspaces import LocalWorkspace
    from tango.common.util import import_extra_module

    settings = TangoGlobalSettings.from_file(REPO / "tango.yml")
    initialize_logging(log_level=settings.log_level or "info")
    for package in settings.include_package or ():
        import_extra_module(package)
    graph = StepGraph.from_params(Params.from_file(experiment).pop("steps"))
    unknown = [name for name in names if name not in graph]
    if unknown:
        raise SystemExit(f"{experiment}: no step named {', '.join(unknown)}; it has {', '.join(graph)}")
    workspace = LocalWorkspace(workspace_dir or REPO / settings.workspace["dir"])
    executor = Executor(workspace=workspace, include_package=settings.include_package)
    failed = []
    for name in names:
        try:
            executor.execute_step(graph[name])
        except Exception as error:  # noqa: BLE001 - reported, and the next step still runs
            print(f"run_steps: {name} failed: {error!r}", file=sys.stderr, flush=True)
            failed.append(name)
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", type=Path)
    parser.add_argument("steps", nargs="+", help="step names in the experiment file")
    parser.add_argument("-w", "--workspace", type=Path, help="local workspace folder (default: tango.yml's)")
    args = parser.parse_args(argv)
    return run_steps(args.experiment, args.steps, args.workspace)


if __name__ == "__main__":
    sys.exit(main())
