"""Every step's unique ID in every experiment file: the cache keys a refactor must keep.

    python tools/step_ids.py > tests/data/step_ids.json      # record (only when IDs change on purpose)
    python tools/step_ids.py --check tests/data/step_ids.json

Tango hashes a step's class name, VERSION, its format's module path and its arguments (config
objects and `DataPath`s hash with their class's module path too), so moving a class between modules
changes every key it enters. `tests/test_step_ids.py` compares against the recorded file.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict

REPO = Path(__file__).resolve().parent.parent


def step_ids(repo: Path = REPO) -> Dict[str, Dict[str, str]]:
    """{experiment file (relative): {step name: unique id}}, built like the tables build them
    (`reporting.graphs.build_graph`, each data path hashed once); data files hash by content, so
    the data root must be the one the IDs were recorded with (../shared/data)."""
    sys.path.insert(0, str(repo))
    from reporting.graphs import build_graph, experiment_files
    from steps.common.data_root import frozen_content_digests

    ids: Dict[str, Dict[str, str]] = {}
    with frozen_content_digests():
        for path in experiment_files():
            graph = build_graph(path)
            if graph.error is not None:
                raise RuntimeError(f"{graph.path}: {graph.error}")
            ids[graph.path] = {name: unique_id for name, (_, unique_id) in sorted(graph.steps.items())}
    return ids


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=Path, help="compare with a recorded file; exit 1 on any difference")
    args = parser.parse_args(argv)
    ids = step_ids()
    if args.check is None:
        json.dump(ids, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    recorded = json.loads(args.check.read_text())
    changed = [(f, s, recorded[f].get(s), i) for f in ids for s, i in ids[f].items() if f in recorded and recorded[f].get(s) != i]
    for f, s, old, new in changed:
        print(f"{f}:{s}: {old} -> {new}")
    missing = sorted(set(recorded) ^ set(ids))
    for f in missing:
        print(f"{f}: only in {'the record' if f in recorded else 'the tree'}")
    return 1 if changed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
