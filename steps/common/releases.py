"""Cache entries as folders that outlive the machine that computed them, checked before use.

A *release* is one cache entry written out as plain files: a finished step's result folder (a
pretrained encoder: safetensors weights, tokenizer, config, metrics.json; a tokenizer), a finished
step's result file (``data``: e.g. the pretraining rows Tango keeps as ``data.dill.gz``, so a machine
can go straight to pretraining; written xz-compressed, about half gzip's size, and restored as such,
since Tango reads an entry by the format its metadata names), or a stopped step's checkpoint (its
``work`` folder, to resume from), with

* ``step.json``: the step's unique ID, class, config and Tango's cache metadata for it;
* ``release.json``: the sha256 of every file above and one digest over them all.

Beside them, unhashed, an encoder release holds its model card (``README.md``) and the card's
downstream figures as data (``downstream.json``): fine-tuning an encoder again adds figures
without changing the encoder, so neither belongs to its content hash.

`restore_release` puts a release back as the cache entry of the step that built it, in any
workspace: Tango then finds the result (or resumes the checkpoint) under the same unique ID, so
`tango run` of the file that built it goes on from there. Nothing is restored that does not match
its recorded hashes or that declares a step this code would not compute: such a release is refused
with one line naming the file and the problem (`ReleaseRefused`), before anything is written.

The same manifest travels with cache entries packed for another machine (``tools/jobs.py``).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

from steps.common.data_root import sha256_hex as sha256_of  # read now, never remembered: a check

RELEASE_FILE = "release.json"
STEP_FILE = "step.json"
CARD_FILE = "README.md"
DOWNSTREAM_FILE = "downstream.json"  # the card's downstream table as data (reporting.cache)
METADATA_FILE = "cache-metadata.json"  # Tango writes it last: an entry without it is unfinished
RESULT_MANIFEST = "result-files.json"  # steps.common.formats.MANIFEST_NAME
# A finished step's result folder, a finished step's result file(s) at the entry's top, or a stopped step's work folder.
KINDS = ("result", "data", "checkpoint")
NOT_PAYLOAD = {METADATA_FILE, "lock"}  # what a "data" entry holds besides its result


class ReleaseRefused(ValueError):
    """A release or packed entry that does not match its record. One line: the file and the problem."""


def file_hashes(root: Path) -> Dict[str, str]:
    """{path relative to ``root``: sha256} of every file under ``root``."""
    return {p.relative_to(root).as_posix(): sha256_of(p) for p in sorted(Path(root).rglob("*")) if p.is_file()}


def digest_of(files: Dict[str, str]) -> str:
    """One sha256 over a {path: sha256} map: the release's content hash."""
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def entry_kind(entry_dir: Path) -> str:
    """"result" for a finished cache entry whose result is a folder, "data" for one whose result is
    a file at the entry's top (Tango's `DillFormat`), "checkpoint" for a stopped one (a work folder,
    no metadata)."""
    if (entry_dir / METADATA_FILE).is_file():
        return "result" if (entry_dir / "result").is_dir() else "data"
    if (entry_dir / "work").is_dir():
        return "checkpoint"
    raise ReleaseRefused(f"{entry_dir}: neither a finished cache entry ({METADATA_FILE}) nor a stopped one (work/)")


def _write_data_payload(payload, staging: Path, metadata: Dict[str, Any]) -> Dict[str, Any]:
    """Copy a "data" entry's result files into ``staging``; gzip-compressed ones (Tango's ``compress:
    "gz"``) are written xz-compressed instead, which takes about half the space (the Wolof paper-scale
    pretraining rows: 4.5 MB as gzip, 2.3 MB as xz). Returns the cache metadata naming the format the
    written files are in."""
    form = metadata.get("format") or {}
    recompress = form.get("compress") in ("gz", "gzip")
    for file in payload:
        if recompress and file.name.endswith(".gz"):
            with gzip.open(file, "rb") as source, lzma.open(staging / (file.name[:-3] + ".xz"), "wb", preset=9) as target:
                shutil.copyfileobj(source, target, 1 << 20)
        else:
            shutil.copy2(file, staging / file.name)
    # "lzma" is Tango's name for xz (its files end in .xz).
    return {**metadata, "format": {**form, "compress": "lzma"}} if recompress else metadata


def write_release(entry_dir: Path, out: Path, step: Dict[str, Any], card: Optional[str] = None) -> Dict[str, Any]:
    """Write the cache entry ``entry_dir`` to the folder ``out`` as a release (see the module doc).

    ``step``: what step.json records beside the unique ID (class, config, labels). A finished
    entry's files are its ``result`` folder's, at the top of ``out`` (an encoder loads from
    ``out/encoder``), or its result files themselves (``data``; gzip ones as xz); a stopped one's are
    its ``work`` folder's, under ``out/work``. Returns the release record (release.json's content)."""
    entry_dir, out = Path(entry_dir), Path(out)
    kind = entry_kind(entry_dir)
    payload = [p for p in entry_dir.iterdir() if p.is_file() and p.name not in NOT_PAYLOAD] if kind == "data" else []
    if kind == "data" and not payload:
        raise ReleaseRefused(f"{entry_dir}: a finished entry with neither a result folder nor a result file")
    staging = Path(tempfile.mkdtemp(prefix=".release-", dir=out.parent if out.parent.exists() else None))
    try:
        if kind == "result":
            shutil.copytree(entry_dir / "result", staging, dirs_exist_ok=True)
        if kind in ("result", "data"):
            metadata = json.loads((entry_dir / METADATA_FILE).read_text())
            if kind == "data":
                metadata = _write_data_payload(payload, staging, metadata)
        else:
            shutil.copytree(entry_dir / "work", staging / "work", dirs_exist_ok=True)
            metadata = None
        files = file_hashes(staging)
        (staging / STEP_FILE).write_text(json.dumps(
            {**step, "unique_id": entry_dir.name, "kind": kind, "cache_metadata": metadata}, indent=2, sort_keys=True) + "\n")
        files[STEP_FILE] = sha256_of(staging / STEP_FILE)
        record = {"unique_id": entry_dir.name, "kind": kind, "files": files, "sha256": digest_of(files)}
        (staging / RELEASE_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        if card is not None:
            (staging / CARD_FILE).write_text(card)
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return record


def verify_release(folder: Path, known_versions: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The release record of ``folder`` once every file matches it; else `ReleaseRefused`.

    Checked: release.json's digest over its file hashes; every recorded file present with its
    sha256; no file that the record does not name (the card and its downstream figures aside); step.json declares the
    unique ID that release.json and Tango's cache metadata name; and, given ``known_versions``
    ({step class: VERSION} of this code), that ID's class and version are ones this code computes."""
    folder = Path(folder)
    record_file = folder / RELEASE_FILE
    try:
        record = json.loads(record_file.read_text())
        files, unique_id, kind = record["files"], record["unique_id"], record["kind"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ReleaseRefused(f"{record_file}: not a release record ({error})") from None
    if kind not in KINDS:
        raise ReleaseRefused(f"{record_file}: unknown kind {kind!r}; known: {', '.join(KINDS)}")
    if digest_of(files) != record.get("sha256"):
        raise ReleaseRefused(f"{record_file}: its file hashes do not give its recorded sha256 {str(record.get('sha256'))[:16]}…")
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {RELEASE_FILE, CARD_FILE, DOWNSTREAM_FILE}
    for name in sorted(set(files) - present):
        raise ReleaseRefused(f"{folder / name}: missing, recorded in {RELEASE_FILE}")
    for name in sorted(present - set(files)):
        raise ReleaseRefused(f"{folder / name}: not recorded in {RELEASE_FILE}")
    for name, expected in sorted(files.items()):
        found = sha256_of(folder / name)
        if found != expected:
            raise ReleaseRefused(f"{folder / name}: sha256 {found[:16]}… differs from the {expected[:16]}… recorded in {RELEASE_FILE}")
    step = json.loads((folder / STEP_FILE).read_text())
    claimed = {step.get("unique_id"), (step.get("cache_metadata") or {}).get("step", unique_id)}
    if claimed != {unique_id}:
        raise ReleaseRefused(f"{folder / STEP_FILE}: declares step {sorted(map(str, claimed))}, {RELEASE_FILE} {unique_id}")
    if known_versions is not None:
        step_class, version = (unique_id.split("-") + ["", ""])[:2]
        if known_versions.get(step_class) != version:
            expected = known_versions.get(step_class)
            raise ReleaseRefused(f"{record_file}: step {unique_id} was made by {step_class} version {version}; "
                                 + (f"this code's is {expected}" if expected else "this code has no such step"))
    return record


def registered_versions() -> Dict[str, str]:
    """{step class name: VERSION} of every step this code registers (for `verify_release`)."""
    from tango import Step

    import steps  # noqa: F401  (registers them)

    classes = [Step.resolve_class_name(name)[0] for name in Step.list_available()]
    return {cls.__name__: cls.VERSION or "" for cls in classes}


def restore_release(folder: Path, workspace_dir: Path) -> Path:
    """Put the release ``folder`` back as its cache entry in ``workspace_dir`` (checked first, written
    to a temporary folder and renamed into place). A finished entry already in the cache is left as
    it is; a stopped one replaces what is there (a checkpoint travels to go on from it). Returns the
    entry's folder."""
    folder = Path(folder)
    record = verify_release(folder, registered_versions())
    cache = Path(workspace_dir) / "cache"
    target = cache / record["unique_id"]
    if record["kind"] != "checkpoint" and (target / METADATA_FILE).is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{record['unique_id']}-", dir=cache))
    try:
        step = json.loads((folder / STEP_FILE).read_text())
        payload = [name for name in record["files"] if name != STEP_FILE]
        for name in payload:
            destination = staging / ("result" if record["kind"] == "result" else "") / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(folder / name, destination)
        if record["kind"] == "result":
            result = staging / "result"
            result.mkdir(exist_ok=True)
            sizes = {name: (result / name).stat().st_size for name in sorted(payload)}
            (staging / RESULT_MANIFEST).write_text(json.dumps(sizes, sort_keys=True))
        if record["kind"] != "checkpoint":
            (staging / METADATA_FILE).write_text(json.dumps(step["cache_metadata"], indent=4))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


__all__ = ["ReleaseRefused", "digest_of", "entry_kind", "file_hashes", "registered_versions", "restore_release",
           "sha256_of", "verify_release", "write_release"]
