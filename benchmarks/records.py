"""Benchmark records: one JSON object per line (the format: `reporting.records`), appended, so a
report can list every run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict

from reporting.records import append_jsonl, read_jsonl


def append_record(path: Path, record: Dict[str, Any]) -> None:
    """Append ``record`` measured by this process, with the thread setting it ran under."""
    record = {**record, "threads": os.environ.get("OMP_NUM_THREADS", "all")}
    append_jsonl(path, [record])
    print(json.dumps(record))


def main(argv=None) -> int:
    """``python -m benchmarks.records FROM.jsonl TO.jsonl --note "…"``: append records measured
    elsewhere (a GPU job's output folder) to a committed record, each with a note saying which code
    it measured; the records are otherwise kept as they were written."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--note", required=True)
    args = parser.parse_args(argv)
    records = read_jsonl(args.source)
    append_jsonl(args.target, [{**record, "note": args.note} for record in records])
    print(f"{args.source} → {args.target}: {len(records)} record(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
