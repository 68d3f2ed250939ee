"""Build the data root from its public sources, every file checked against its recorded sha256.

    python -m steps.data.fetch --languages wolof coptic --root data/
    python -m steps.data.fetch --languages all --only ud,wikiann
    python -m steps.data.fetch --languages wolof --source file:///path/to/a/copy/of/the/data/root

The manifest ``steps/data/sources.json`` names each file the configs read (and the UD licences and
READMEs): its path under the data root, the repository and pinned commit it comes from and its
sha256. A corpus folder of many files points to a listing in ``steps/data/sources/`` in
``sha256sum`` format. A file's URL is ``https://raw.githubusercontent.com/<repository>/<commit>/<path
in the repository>``; ``--source`` replaces that with ``<mirror root>/<path under the data root>``.

Files already present with the recorded hash are skipped; a download is written to a temporary
file and renamed into place only when its hash matches. A file whose hash differs is refused with
one line, ``<path>: sha256 <got> != <expected> (from <url>)``, and nothing is written at its path.
An existing file is never overwritten. Entries with no public source (files rebuilt or
reconstructed for this study) are listed with how they were made; a mirror can still supply them.

Exit status: 0 when every requested file is in place, 1 when a file was refused or could not be
downloaded, 2 when only files without a public source are missing.

``--record ROOT`` (maintainers) rewrites the manifest from a byte-identical copy of the data root.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from steps.common.data_root import DataPath, data_root, file_digest
from steps.data.languages import get_language, language_facts

MANIFEST = Path(__file__).with_name("sources.json")
LISTINGS = Path(__file__).with_name("sources")
KINDS = ("ud", "wikiann", "corpus", "bible", "pronto")
STAGING = ".fetch-partial"  # under the root: same file system as the destination, so rename is atomic
ATTEMPTS = 3

# ---------------------------------------------------------------------------------------------
# Where each file comes from (read by --record only; fetching reads the manifest).
# ---------------------------------------------------------------------------------------------

UD_TAG = "r2.11"
UD_REPOSITORIES = {  # language: (UniversalDependencies repository, commit of tag r2.11)
    "wolof": ("UD_Wolof-WTB", "561475235438c6a73aa8fb61a05c4e6f717d3c71"),
    "coptic": ("UD_Coptic-Scriptorium", "50352bc1cafe1a8756d97eb80d7828ae535e9c45"),
    "maltese": ("UD_Maltese-MUDT", "94c7500268d4048089df398cfaeea268ce619ab3"),
    "uyghur": ("UD_Uyghur-UDT", "292d478f346c751fabe6a0a0a8b4aade32dad6fb"),
    "ancient_greek": ("UD_Ancient_Greek-PROIEL", "a4e4884cfc8ecdbfad8a689f5b0aaa165f7d41a2"),
    "english": ("UD_English-EWT", "0512d7cbf7d0b1220eb0dc69085c14a1001e268c"),
}
OTHER_SOURCES = {  # name: (repository, commit, what the commit is)
    "microbert": ("lgessler/microbert", "d9c1e9fa9fc13071992a054e67b567a53995681b", "HEAD of 2024-09-28"),
    "microbert2": ("lgessler/microbert2", "14225d9d1156ba1eac6d69a695a6e5e9ebaf8109", "HEAD of 2026-03-18"),
    "pronto": ("lgessler/pronto", "0832de4d366ede004c67384f67843fe0b6db01ec", "HEAD of 2023-06-19"),
}
PRONTO_SAMPLE = "pronto_sample_spanish"
PRONTO_FILES = [f"{task}_{split}.tsv" for task in ("nonpronominal_mention", "proper_noun_subject", "sentence_mood")
                for split in ("train", "dev", "test")] + [
               f"{task}_{split}.tsv" for task in ("same_arg_count", "same_sense") for split in ("dev", "test")]
# Folders whose per-file listing is committed (the Wikipedia corpora of Maltese and Uyghur, 17k files,
# would add 1.6 MB of hashes; they are recorded as a count and a folder digest instead).
LISTED_FOLDERS = ("wolof/corpus", "wolof/bible")

# Files of the reference copy that were rebuilt, with how; "source" None: no public file has these bytes.
REBUILT = {
    "english/ud/en_ewt-ud-train.conllu": dict(note=(
        "rebuilt in the reference copy by concatenating not-to-release/sources/* in the order of "
        "not-to-release/file-lists/files.train at r2.11 (the treebank's build.py); its git blob equals "
        "r2.11's (3d6e137d1eb77f474352ed926734aaf429037acb), so the URL gives the same bytes")),
    "coptic/corpus/train.txt": dict(source="microbert2", remote="data/cop/train.txt", note=(
        "rebuilt in the reference copy from lgessler/microbert 8639c3f0 data/coptic/converted/train/*.conllu "
        "(each sentence's FORM column joined by spaces, documents in en_US.UTF-8 order of their file names); "
        "its git blob equals microbert2's data/cop/train.txt (ca95baed66943a36f9ebe70c2588a06459b261a1), "
        "so the URL gives the same bytes")),
    "ancient_greek/ud/grc_proiel-ud-train.conllu": dict(source=None, note=(
        "not fetchable; reconstructed from jmyerston/greCy 22159fe4 corpus/train/grc_proiel-ud-train.spacy "
        "with the sentence text of centre-for-humanities-computing/odyCy 7839c8f7 "
        "assets/treebanks/proiel/grc_proiel-ud-train.txt (annotation equal to r2.11, MISC and sent_id lost); "
        "the r2.11 file itself (blob 4205808522e5db97b35daaa359c7ee06266d59cc, at `upstream`) has other bytes, "
        "and no hash of it is recorded"),
        upstream=dict(source="ud:ancient_greek", remote="grc_proiel-ud-train.conllu")),
    "ancient_greek/corpus": dict(source=None, note=(
        "not fetchable; plain text extracted from the Diorisis XML at `upstream` (714 of its 820 works; "
        "the 106 files over 4 MiB are missing): one gzip file per work, one sentence per line, Beta Code "
        "forms as NFC Unicode, lemmas and analyses dropped; the extraction script is not part of this repository"),
        upstream=dict(source="microbert", remote="data/greek/corpora")),
    "coptic/corpus_no_ud_devtest": dict(source=None, note=(
        "not fetchable; the reference corpus (coptic/corpus) less the 41 documents (40 train, 1 dev) "
        "that share 5-word sequences with UD Coptic-Scriptorium dev/test, listed in dropped_documents.tsv; "
        "the filter script is not part of this repository")),
}
UNLISTED_NOTE = ("per-file listing not committed ({count:,} files): take {remote}/ of lgessler/microbert at "
                 "its pinned commit (e.g. a git sparse checkout) as {path}/; the tool then checks the folder's digest")


def layout() -> List[dict]:
    """Every entry of the data root, without hashes: path, kind, source and the path in it, notes."""
    entries: List[dict] = []
    for language in language_facts():
        lang = get_language(language)
        ud_files = [Path(lang.ud_path(split)).name for split in ("train", "dev", "test")] + ["LICENSE.txt", "README.md"]
        entries += [dict(path=f"{language}/ud/{name}", kind="ud", source=f"ud:{language}", remote=name) for name in ud_files]
        if lang.wikiann:
            names = [Path(lang.wikiann_path(split)).name for split in ("train", "dev", "test")] + [f"wikiann-{lang.wikiann}.bio"]
            entries += [dict(path=f"{language}/wikiann/{name}", kind="wikiann", source="microbert",
                             remote=f"data/{language}/{name}") for name in names]
        if lang.corpus_format == "wikipedia_html":
            entries.append(dict(path=lang.corpus_path, kind="corpus", source="microbert", remote=f"data/{language}/corpora",
                                folder=True))
        elif language == "coptic":
            entries += [dict(path=f"coptic/corpus/{name}", kind="corpus", source="microbert2", remote=f"data/cop/{name}")
                        for name in ("train.txt", "dev.txt")]
            entries += [dict(path=f"coptic/corpus_no_ud_devtest/{name}", kind="corpus")
                        for name in ("train.txt", "dev.txt", "dropped_documents.tsv")]
        elif language == "ancient_greek":
            entries.append(dict(path=lang.corpus_path, kind="corpus", folder=True))
        # English has no corpus: its experiments read the treebank only.
    entries.append(dict(path="wolof/bible", kind="bible", source="microbert", remote="data/wolof/bible", folder=True))
    entries += [dict(path=f"{PRONTO_SAMPLE}/{name}", kind="pronto", source="pronto", remote=f"data/sample_spavbl/{name}")
                for name in PRONTO_FILES]
    for entry in entries:
        for path, rebuilt in REBUILT.items():
            if entry["path"] == path or entry["path"].startswith(path + "/"):
                entry.update(rebuilt)
        if entry.get("source", "") is None:  # no public file has these bytes
            del entry["source"]
            entry.pop("remote", None)
    return entries


def sources() -> Dict[str, dict]:
    table = {f"ud:{language}": dict(repository=f"UniversalDependencies/{repo}", version=f"tag {UD_TAG}", commit=commit)
             for language, (repo, commit) in UD_REPOSITORIES.items()}
    table.update({name: dict(repository=repo, version=version, commit=commit)
                  for name, (repo, commit, version) in OTHER_SOURCES.items()})
    for source in table.values():
        source["url"] = f"https://raw.githubusercontent.com/{source['repository']}/{source['commit']}/"
    return table


def folder_digest(path: Path) -> str:
    """The folder's content digest as a step's cache key sees it (DataPath)."""
    return DataPath(str(path.resolve())).content_digest()


def listing_name(path: str) -> str:
    return path.replace("/", "_") + ".sha256"


def read_listing(name: str) -> List[Tuple[str, str]]:
    """(file name, sha256) of a committed listing, ``sha256sum`` format."""
    rows = []
    for number, line in enumerate((LISTINGS / name).read_text(encoding="utf-8").splitlines(), 1):
        sha, sep, file = line.partition("  ")
        if not sep or len(sha) != 64:
            raise ValueError(f"{LISTINGS / name}:{number}: not a '<sha256>  <name>' line")
        rows.append((file, sha))
    return rows


def record(root: Path, manifest: Path = MANIFEST, listings: Path = LISTINGS) -> int:
    """Write the manifest and listings from ``root``, a byte-identical copy of the data root."""
    entries = layout()
    listings.mkdir(exist_ok=True)
    for entry in entries:
        path = root / entry["path"]
        if not entry.pop("folder", False):
            entry["sha256"] = file_digest(path)
            continue
        files = sorted(p for p in path.iterdir() if p.is_file())
        if entry["path"] in LISTED_FOLDERS:
            entry["listing"] = listing_name(entry["path"])
            (listings / entry["listing"]).write_text("".join(f"{file_digest(p)}  {p.name}\n" for p in files), encoding="utf-8")
        else:
            entry["files"], entry["digest"] = len(files), folder_digest(path)
            if "source" in entry:
                entry["note"] = UNLISTED_NOTE.format(count=len(files), **entry)
    lines = ",\n".join("  " + json.dumps(entry, ensure_ascii=False) for entry in entries)
    about = ("Written by `python -m steps.data.fetch --record <data root>` from a byte-identical copy of the data root; "
             "a file's URL is its source's url + remote (+ '/' + name for a listed folder).")
    manifest.write_text(
        "{\n" + f' "about": {json.dumps(about)},\n' + ' "sources": ' + json.dumps(sources(), indent=1).replace("\n", "\n ")
        + ',\n "entries": [\n' + lines + "\n ]\n}\n", encoding="utf-8")
    return len(entries)


# ---------------------------------------------------------------------------------------------
# Fetching
# ---------------------------------------------------------------------------------------------


class Refused(Exception):
    """One file could not be put in place; the message is its one line."""


@dataclass(frozen=True)
class Item:
    path: str  # relative to the data root
    sha256: str
    url: Optional[str]  # None: no source for it
    note: str = ""


def load_manifest(path: Path = MANIFEST) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def mirror_url(source: str) -> str:
    """A mirror root as a URL; a bare directory becomes a file:// URL."""
    if "://" not in source:
        return Path(source).expanduser().resolve().as_uri()
    return source.rstrip("/")


def _quote(path: str) -> str:
    return urllib.parse.quote(path, safe="/")


def plan(manifest: dict, groups: Iterable[str], kinds: Iterable[str], source: Optional[str] = None
         ) -> Tuple[List[Item], List[dict]]:
    """The files to put in place, and the folders that can only be checked (no per-file listing)."""
    groups, kinds = set(groups), set(kinds)
    items: List[Item] = []
    unlisted: List[dict] = []
    for entry in manifest["entries"]:
        if entry["path"].split("/")[0] not in groups or entry["kind"] not in kinds:
            continue
        base = manifest["sources"][entry["source"]]["url"] + _quote(entry["remote"]) if "source" in entry else None
        if source is not None:
            base = f"{mirror_url(source)}/{_quote(entry['path'])}"
        if "listing" in entry:
            items += [Item(f"{entry['path']}/{name}", sha, base and f"{base}/{_quote(name)}", entry.get("note", ""))
                      for name, sha in read_listing(entry["listing"])]
        elif "sha256" in entry:
            items.append(Item(entry["path"], entry["sha256"], base, entry.get("note", "")))
        else:
            unlisted.append(entry)
    return items, unlisted


class Missing(Refused):
    """A file with no source (and no mirror) is not in place."""


def _get(url: str, path: Path) -> str:
    """Write the bytes at ``url`` to ``path``; their sha256. Network errors are retried."""
    for attempt in range(1, ATTEMPTS + 1):
        sha = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=60) as response, open(path, "wb") as out:
                for block in iter(lambda: response.read(1 << 20), b""):
                    sha.update(block)
                    out.write(block)
            return sha.hexdigest()
        except (urllib.error.URLError, OSError) as error:
            transient = url.startswith("http") and not isinstance(error, urllib.error.HTTPError)
            if attempt == ATTEMPTS or not transient:
                raise Refused(f"cannot fetch {url}: {getattr(error, 'reason', error)}") from None
    raise AssertionError("unreachable")


def download(item: Item, root: Path) -> str:
    """Put ``item`` in place under ``root``: "present" or "fetched"; raises Refused with its one line."""
    dest = root / item.path
    if dest.exists():
        got = file_digest(dest)
        if got != item.sha256:
            raise Refused(f"{item.path}: sha256 {got} != {item.sha256} (present; remove it to fetch again)")
        return "present"
    if item.url is None:
        raise Missing(f"{item.path}: missing; {item.note}")
    staging = root / STAGING
    staging.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=staging, suffix=".part")
    os.close(fd)
    tmp = Path(name)
    try:
        try:
            got = _get(item.url, tmp)
        except Refused as refusal:
            raise Refused(f"{item.path}: {refusal}") from None
        if got != item.sha256:
            raise Refused(f"{item.path}: sha256 {got} != {item.sha256} (from {item.url})")
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, dest)
        return "fetched"
    finally:
        tmp.unlink(missing_ok=True)


def check_unlisted(entry: dict, root: Path) -> Optional[str]:
    """None when the folder is in place with its recorded digest, else the one line that says why not."""
    path = root / entry["path"]
    if not path.is_dir():
        return f"{entry['path']}: missing; {entry.get('note', '')}"
    digest = folder_digest(path)
    if digest != entry["digest"]:
        count = sum(p.is_file() for p in path.iterdir())
        return (f"{entry['path']}: folder digest {digest} != {entry['digest']} "
                f"({count:,} files, {entry['files']:,} recorded)")
    return None


def extra_files(manifest: dict, items: Sequence[Item], root: Path) -> List[str]:
    """Files in a listed folder that the listing lacks: they would enter the folder's cache key."""
    listed = {item.path for item in items}
    extra = []
    for entry in manifest["entries"]:
        folder = root / entry["path"]
        if "listing" in entry and folder.is_dir() and any(path.startswith(entry["path"] + "/") for path in listed):
            extra += [f"{entry['path']}/{p.name}" for p in sorted(folder.iterdir())
                      if p.is_file() and f"{entry['path']}/{p.name}" not in listed]
    return extra


def fetch(root: Path, groups: Iterable[str], kinds: Iterable[str] = KINDS, source: Optional[str] = None,
          jobs: int = 8, manifest: Optional[dict] = None) -> int:
    """Put the requested entries in place under ``root``; the exit status (see the module's doc)."""
    manifest = manifest or load_manifest()
    items, unlisted = plan(manifest, groups, kinds, source)
    counts = {"present": 0, "fetched": 0}
    refused: List[str] = []
    missing: List[str] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(download, item, root) for item in items]
        for item, future in zip(items, futures):
            try:
                counts[future.result()] += 1
            except Missing as refusal:
                missing.append(str(refusal))
            except Refused as refusal:
                refused.append(str(refusal))
    for entry in unlisted:
        line = check_unlisted(entry, root)
        if line is None:
            counts["present"] += entry["files"]
        else:
            (missing if not (root / entry["path"]).is_dir() else refused).append(line)
    staging = root / STAGING
    if staging.is_dir() and not any(staging.iterdir()):
        staging.rmdir()
    for line in refused + missing:
        print(line, file=sys.stderr)
    for path in extra_files(manifest, items, root):
        print(f"{path}: not in the manifest; it enters its folder's cache key (remove it)", file=sys.stderr)
    print(f"{root}: {counts['fetched']:,} fetched, {counts['present']:,} already present, "
          f"{len(refused):,} refused, {len(missing):,} missing without a source")
    return 1 if refused else 2 if missing else 0


def groups_of(manifest: dict) -> List[str]:
    return sorted({entry["path"].split("/")[0] for entry in manifest["entries"]})


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m steps.data.fetch", description=__doc__.splitlines()[0])
    parser.add_argument("--languages", nargs="+", metavar="NAME",
                        help="top-level folders of the data root to build (a language, pronto_sample_spanish), or all")
    parser.add_argument("--only", default=",".join(KINDS), help=f"comma-separated kinds of file (default: {','.join(KINDS)})")
    parser.add_argument("--root", type=Path, default=None, help="the data root to build (default: $SIB_DATA_ROOT or ./data)")
    parser.add_argument("--source", default=None,
                        help="a mirror of the data root (URL or directory) to fetch every file from, by its relative path")
    parser.add_argument("--jobs", type=int, default=8, help="parallel downloads")
    parser.add_argument("--record", type=Path, metavar="ROOT", help="rewrite the manifest from this byte-identical copy")
    args = parser.parse_args(argv)
    if args.record is not None:
        print(f"{MANIFEST.name}: {record(args.record)} entries recorded from {args.record}")
        return 0
    manifest = load_manifest()
    known = groups_of(manifest)
    if not args.languages:
        parser.error(f"--languages is required (one or more of: {', '.join(known)}, all)")
    groups = known if args.languages == ["all"] else args.languages
    kinds = [kind.strip() for kind in args.only.split(",") if kind.strip()]
    for name in groups:
        if name not in known:
            parser.error(f"unknown language {name!r}; known: {', '.join(known)}, all")
    for kind in kinds:
        if kind not in KINDS:
            parser.error(f"unknown kind {kind!r} in --only; known: {', '.join(KINDS)}")
    return fetch(args.root or data_root(), groups, kinds, args.source, args.jobs, manifest)


if __name__ == "__main__":
    sys.exit(main())
