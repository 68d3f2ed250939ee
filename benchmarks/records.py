"""Benchmark records: one JSON object per line, appended, so a report can list every run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Sequence


def read_jsonl(path: Path) -> List[Dict[str, Any]]:
    """The records appended to ``path``, one JSON object per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def append_jsonl(path: Path, records: Sequence[Dict[str, Any]]) -> None:
    """Append ``records`` to the JSON-lines file ``path`` as they are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(record) + "\n" for record in records)


def append_record(path: Path, record: Dict[str, Any]) -> None:
    """Append ``record`` measured by this process, with the thread setting it ran under."""
    record = {**record, "threads": os.environ.get("OMP_NUM_THREADS", "all")}
    append_jsonl(path, [record])
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
    records = read_jsonl(args.source)
    append_jsonl(args.target, [{**record, "note": args.note} for record in records])
    print(f"{args.source} → {args.target}: {len(records)} record(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
