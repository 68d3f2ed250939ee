"""Measurement records: one JSON object per line, appended, so a report can list every run.

The benchmark scripts (benchmarks/) write them and the report (reporting/report.py) reads them;
the format lives here so that the report never imports a benchmark."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Sequence


def read_jsonl(path: Path) -> List[Dict[str, Any]]:
    """The records appended to ``path``, one JSON object per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def command_files(command: str) -> List[str]:
    """The experiment files a recorded command names, in order (``FILE`` or ``FILE:STEP``: the file);
    ``tools/jobs.py run`` writes its n-th target's log as ``n.log``."""
    return re.findall(r"\S+?\.jsonnet", command)


def append_jsonl(path: Path, records: Sequence[Dict[str, Any]]) -> None:
    """Append ``records`` to the JSON-lines file ``path`` as they are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(record) + "\n" for record in records)
