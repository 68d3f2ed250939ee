"""Tango formats for step results that are directories (trained parsers, tokenizers, models)."""
from __future__ import annotations

import shutil
from pathlib import Path

from tango.common.aliases import PathOrStr
from tango.format import Format


@Format.register("directory")
class DirectoryFormat(Format[Path]):
    """The result is a directory; it is copied into the cache and read back as its cached path,
    so consumers load from the cache in place (``from_pretrained(path)``)."""

    VERSION = "001"

    def write(self, artifact: Path, dir: PathOrStr):
        shutil.copytree(artifact, Path(dir) / "result", dirs_exist_ok=True)

    def read(self, dir: PathOrStr) -> Path:
        return Path(dir) / "result"
