"""Where the datasets live, and how a step's cache key follows their *content*.

Configs name every input file by a path relative to the data root. The root is an
environment setting (``SIB_DATA_ROOT``, default ``./data``); tests and CI point it at
``../shared/data``. Absolute paths work as they are, and ``http(s)://`` URLs are fetched once
into Tango's download cache (``cached_path``) for users who pull the canonical sources.

A :class:`DataPath` hashes as (kind, relative name, sha256 of the bytes), never as the absolute
location: editing a file changes every downstream cache key, moving the root changes none.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from tango.common import FromParams
from tango.common.det_hash import CustomDetHash

DATA_ROOT_ENV = "SIB_DATA_ROOT"
DEFAULT_DATA_ROOT = "./data"


class DataError(ValueError):
    """Bad or missing input data. The message is one line naming the file (and line) at fault.

    ``rule``, where set, names the format rule the data breaks (e.g. a CoNLL-U rule of the UD
    validator, see :mod:`steps.data.validate`); the message is unchanged by it."""

    def __init__(self, message: str, rule: Optional[str] = None):
        super().__init__(message)
        self.rule = rule


def data_root() -> Path:
    return Path(os.environ.get(DATA_ROOT_ENV, DEFAULT_DATA_ROOT)).expanduser()


def _is_url(path: str) -> bool:
    return path.startswith(("http://", "https://", "s3://", "gs://"))


# (absolute path, size, mtime_ns) -> digest, so a directory of thousands of files is hashed once
# per process, not once per step that mentions it.
_DIGEST_CACHE: Dict[Tuple[str, int, int], str] = {}


def sha256_hex(path: Path) -> str:
    """The sha256 (hex) of a file's bytes, read now (releases and packed cache entries check with it)."""
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def file_digest(path: Path) -> str:
    """The sha256 (hex) of a file's bytes, remembered while its size and time stay the same."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _DIGEST_CACHE:
        _DIGEST_CACHE[key] = sha256_hex(path)
    return _DIGEST_CACHE[key]


# While `frozen_content_digests()` is active: (data root, path) -> DataPath digest. A tool that
# builds many step graphs at once (tables, report, step-ID record) names the same corpora hundreds
# of times; within its block the data cannot change, so each is listed and stat'ed once.
_FROZEN_DIGESTS: Optional[Dict[Tuple[str, str], str]] = None


@contextlib.contextmanager
def frozen_content_digests() -> Iterator[None]:
    """Within the block, each DataPath's content digest is computed once (nests harmlessly)."""
    global _FROZEN_DIGESTS
    outer = _FROZEN_DIGESTS
    _FROZEN_DIGESTS = {} if outer is None else outer
    try:
        yield
    finally:
        _FROZEN_DIGESTS = outer


class DataPath(FromParams, CustomDetHash):
    """A file or directory under the data root (or an absolute path / URL).

    In Jsonnet: ``{path: "wolof/ud/wo_wtb-ud-train.conllu"}``; ``configs/lib.libsonnet``
    builds these for you.
    """

    def __init__(self, path: str):
        if not path:
            raise DataError("empty data path")
        self.path = path

    def __repr__(self) -> str:
        return f"DataPath({self.path!r})"

    def resolve(self) -> Path:
        """The local path, fetching a URL if needed. Raises DataError if it does not exist."""
        if _is_url(self.path):
            from cached_path import cached_path

            return Path(cached_path(self.path))
        path = Path(self.path).expanduser()
        if not path.is_absolute():
            path = data_root() / path
        if not path.exists():
            hint = (
                f" (data root {data_root()} from ${DATA_ROOT_ENV}; tests and CI use ../shared/data)"
                if not Path(self.path).is_absolute()
                else ""
            )
            raise DataError(f"{path}: no such file or directory{hint}")
        return path

    def files(self, suffixes: Tuple[str, ...] = ()) -> List[Path]:
        """The file itself, or a directory's files (sorted by name, optionally by suffix)."""
        path = self.resolve()
        if path.is_file():
            return [path]
        found = sorted(p for p in path.iterdir() if p.is_file() and (not suffixes or p.name.endswith(suffixes)))
        if not found:
            raise DataError(f"{path}: directory holds no {'/'.join(suffixes) or ''} files")
        return found

    def content_digest(self) -> str:
        if _FROZEN_DIGESTS is not None:
            key = (str(data_root()), self.path)
            if key not in _FROZEN_DIGESTS:
                _FROZEN_DIGESTS[key] = self._compute_content_digest()
            return _FROZEN_DIGESTS[key]
        return self._compute_content_digest()

    def _compute_content_digest(self) -> str:
        sha = hashlib.sha256()
        path = self.resolve()
        for file in self.files():
            sha.update(file.relative_to(path).as_posix().encode() if path.is_dir() else b"")
            sha.update(file_digest(file).encode())
        return sha.hexdigest()

    def det_hash_object(self):
        # The relative name stays in the key so that two different files with equal bytes (e.g. a
        # dev and a test split that happen to match) still give different steps.
        name = self.path if not Path(self.path).is_absolute() else Path(self.path).name
        return ("DataPath", name, self.content_digest())


def _undecodable_line(path: Path, opener) -> Tuple[int, int]:
    """(1-based line, 1-based byte column) of the first byte of ``path`` that is not UTF-8."""
    import re

    with opener(path, "rb") as f:
        data = f.read()
    # Lines end as in text mode (universal newlines), so the number matches iter_lines' count.
    for number, raw in enumerate(re.split(rb"\r\n|\r|\n", data.removeprefix(b"\xef\xbb\xbf")), 1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            return number, e.start + 1
    return 0, 0


def iter_lines(path: Path, normalize: Optional[str] = None) -> Iterator[Tuple[int, str]]:
    """(1-based line number, line without newline) of a UTF-8 text or .gz file.

    A leading byte-order mark is dropped ("utf-8-sig") and CRLF/CR line ends read as LF, so an
    editor's BOM or Windows line ends give the same lines as the clean file. ``normalize`` (e.g.
    "NFC") applies a Unicode normal form to every line. Bytes that are not UTF-8, or a NUL byte
    (a binary file), raise a one-line DataError naming the line.
    """
    import gzip
    import unicodedata

    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig") as f:
            for number, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if "\x00" in line:
                    raise DataError(f"{path}:{number}: NUL byte at column {line.index(chr(0)) + 1} (binary data, not text)",
                                    rule="control-character")
                yield number, unicodedata.normalize(normalize, line) if normalize else line
    except UnicodeDecodeError as e:
        # The decoder works on blocks, so its offset is not a line: find the line once, here.
        number, column = _undecodable_line(path, opener)
        raise DataError(f"{path}:{number}: not UTF-8 text ({e.reason} at byte {column} of the line)", rule="invalid-utf") from None
    except (EOFError, gzip.BadGzipFile) as e:
        raise DataError(f"{path}: damaged gzip file ({e})") from None


def normalised_copy(source: Path, target: Path) -> Path:
    """``source`` rewritten as tools outside this package expect text: no BOM, LF line ends, NFC.

    Stanza's and UDPipe's trainers read files themselves; they get this copy, so that a BOM or
    CRLF file trains the same parser as the clean file. A clean file's copy is byte-identical.
    """
    with open(target, "w", encoding="utf-8", newline="\n") as f:
        for _, line in iter_lines(source, normalize="NFC"):
            f.write(line + "\n")
    return target
