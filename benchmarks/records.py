"""Benchmark records: one JSON object per line, appended, so a report can list every run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict


def append_record(path: Path, record: Dict[str, Any]) -> None:
    """Append ``record`` (with the thread setting it ran under) to the JSON-lines file ``path``."""
    record = {**record, "threads": os.environ.get("OMP_NUM_THREADS", "all")}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps(record))


def main(argv=None) -> int:
    """``python -m benchmarks.records FROM.jsonl TO.jsonl --note "…"``: append records measured
    elsewhere (a device call's ``$OUT``) to a committed record, each with a note saying which code
    it measured; the records are otherwise kept as they were written."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--note", required=True)
    args = parser.parse_args(argv)
    lines = [line for line in args.source.read_text(encoding="utf-8").splitlines() if line.strip()]
    args.target.parent.mkdir(parents=True, exist_ok=True)
    with open(args.target, "a", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps({**json.loads(line), "note": args.note}) + "\n")
    print(f"{args.source} → {args.target}: {len(lines)} record(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
