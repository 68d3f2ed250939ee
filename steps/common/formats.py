"""Tango formats for step results that are directories (trained parsers, tokenizers, models)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict

from tango.common.aliases import PathOrStr
from tango.format import Format

# Beside ``result/`` in a cache entry: {file under result/: size in bytes} as written.
MANIFEST_NAME = "result-files.json"


class DamagedCacheEntry(RuntimeError):
    """A cache entry Tango counts as complete whose result files are missing, cut short or
    unreadable. The message is one line naming the entry folder, the file and what to do."""


def _file_sizes(root: Path) -> Dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


def cached_location(path: PathOrStr) -> str:
    """Where a directory result lives once cached, for recording provenance.

    A step computed in the same ``tango run`` hands its consumers the folder it built in its work
    directory (``<folder>`` in the ``work`` folder of ``cache/<id>``); a later run hands them the cached copy
    (``cache/<id>/result``). Recording the latter either way keeps a result the same whichever
    run computed its inputs (benchmarks/faults.py compares killed and clean runs file by file)."""
    parts = Path(path).parts
    for i in range(2, len(parts) - 1):
        if parts[i] == "work" and parts[i - 2] == "cache":
            return str(Path(*parts[:i], "result", *parts[i + 2:]))
    return str(path)


@Format.register("directory")
class DirectoryFormat(Format[Path]):
    """The result is a directory; it is copied into the cache and read back as its cached path,
    so consumers load from the cache in place (``from_pretrained(path)``).

    The sizes of its files are recorded beside it, and reading checks them: a file deleted or
    truncated inside the cache stops the consumer with a DamagedCacheEntry, never a silently
    shorter input. (Entries written before the manifest existed are read unchecked.)"""

    VERSION = "001"

    def write(self, artifact: Path, dir: PathOrStr):
        result = Path(dir) / "result"
        shutil.copytree(artifact, result, dirs_exist_ok=True)
        # Tango renames cache-metadata.json into place only after this returns, so a run killed
        # before the manifest is written leaves an entry Tango recomputes.
        (Path(dir) / MANIFEST_NAME).write_text(json.dumps(_file_sizes(result), sort_keys=True))

    def read(self, dir: PathOrStr) -> Path:
        result = Path(dir) / "result"
        manifest = Path(dir) / MANIFEST_NAME
        if manifest.exists():
            expected = json.loads(manifest.read_text())
            for name, size in expected.items():
                path = result / name
                if not path.is_file():
                    problem = "is missing"
                elif path.stat().st_size != size:
                    problem = f"has {path.stat().st_size} bytes, {size} were written"
                else:
                    continue
                raise DamagedCacheEntry(f"{Path(dir)}: damaged cache entry, result/{name} {problem}; "
                                        f"delete this folder and run again to recompute it")
        return result
