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
