"""The data root's builder (steps/data/fetch.py), run against a mirror of the reference copy given as a
file:// URL or a folder: no test touches the network (urlopen is replaced where no mirror is given)."""
from __future__ import annotations

import filecmp
import hashlib
import os
import shutil
import urllib.request
from pathlib import Path

import pytest

from steps.common.data_root import DataPath
from steps.data import fetch

SHA = hashlib.sha256


def no_network(*args, **kwargs):
    raise AssertionError(f"urlopen called: {args[0] if args else kwargs}")


def files_under(root: Path):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def run(capsys, *argv):
    code = fetch.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def test_the_manifest_records_the_reference_copy(tmp_path, data_root):
    # The committed hashes are those of the byte-identical copy, and the layout still writes them.
    fetch.record(data_root, tmp_path / "sources.json", tmp_path / "listings")
    assert (tmp_path / "sources.json").read_text(encoding="utf-8") == fetch.MANIFEST.read_text(encoding="utf-8")
    committed = sorted(p.name for p in fetch.LISTINGS.iterdir())
    assert sorted(p.name for p in (tmp_path / "listings").iterdir()) == committed == ["wolof_bible.sha256", "wolof_corpus.sha256"]
    for name in committed:
        assert (tmp_path / "listings" / name).read_bytes() == (fetch.LISTINGS / name).read_bytes()
    assert len(fetch.read_listing("wolof_corpus.sha256")) == 2240


def test_every_data_path_of_every_experiment_is_in_the_manifest(data_root):
    from tango.common import Params

    from reporting.graphs import experiment_files

    def paths(value):
        if isinstance(value, dict):
            if set(value) == {"path"}:
                yield value["path"]
            for item in value.values():
                yield from paths(item)
        elif isinstance(value, list):
            for item in value:
                yield from paths(item)

    read = {p for f in experiment_files() for p in paths(Params.from_file(f, ext_vars=dict(os.environ)).as_dict())}
    entries = {entry["path"] for entry in fetch.load_manifest()["entries"]}
    # A folder is covered as one entry (a corpus folder) or file by file (Coptic's pre-split corpora).
    uncovered = [p for p in read if p not in entries
                 and not ((data_root / p).is_dir() and all(f"{p}/{f}" in entries for f in files_under(data_root / p)))]
    assert len(read) >= 40 and "wolof/corpus" in read and "coptic/corpus_no_ud_devtest" in read
    assert uncovered == []


def test_public_urls_are_raw_files_at_the_pinned_commits():
    items, unlisted = fetch.plan(fetch.load_manifest(), fetch.groups_of(fetch.load_manifest()), fetch.KINDS)
    by_path = {item.path: item for item in items}
    raw = "https://raw.githubusercontent.com/"
    assert by_path["wolof/ud/wo_wtb-ud-train.conllu"].url == (
        raw + "UniversalDependencies/UD_Wolof-WTB/561475235438c6a73aa8fb61a05c4e6f717d3c71/wo_wtb-ud-train.conllu")
    assert by_path["wolof/corpus/wo_wikipedia_org__1.html"].url == (
        raw + "lgessler/microbert/d9c1e9fa9fc13071992a054e67b567a53995681b/data/wolof/corpora/wo_wikipedia_org__1.html")
    assert by_path["wolof/wikiann/wikiann-wo_train.bio"].url.endswith("/data/wolof/wikiann-wo_train.bio")
    assert by_path["coptic/corpus/train.txt"].url == (
        raw + "lgessler/microbert2/14225d9d1156ba1eac6d69a695a6e5e9ebaf8109/data/cop/train.txt")
    assert by_path["english/ud/en_ewt-ud-train.conllu"].url.startswith(raw + "UniversalDependencies/UD_English-EWT/0512d7cb")
    assert by_path["pronto_sample_spanish/sentence_mood_dev.tsv"].url.endswith("/data/sample_spavbl/sentence_mood_dev.tsv")
    # Each rebuilt file says so; those whose bytes no public file has have no URL.
    for path in ("coptic/corpus/train.txt", "english/ud/en_ewt-ud-train.conllu"):
        assert by_path[path].note.startswith("rebuilt") and by_path[path].url
    unfetchable = sorted(item.path for item in items if item.url is None)
    assert unfetchable == ["ancient_greek/ud/grc_proiel-ud-train.conllu", "coptic/corpus_no_ud_devtest/dev.txt",
                           "coptic/corpus_no_ud_devtest/dropped_documents.tsv", "coptic/corpus_no_ud_devtest/train.txt"]
    assert all(by_path[path].note.startswith("not fetchable; ") for path in unfetchable)
    assert sorted(entry["path"] for entry in unlisted) == ["ancient_greek/corpus", "maltese/corpus", "uyghur/corpus"]


def test_wolof_from_a_mirror_is_the_reference_copy_and_a_rerun_downloads_nothing(tmp_path, data_root, capsys, monkeypatch):
    root = tmp_path / "data"
    code, out, err = run(capsys, "--languages", "wolof", "--root", root, "--source", data_root.as_uri())
    assert (code, err) == (0, [])
    reference = files_under(data_root / "wolof")
    assert len(reference) == 5 + 4 + 2240 + 27
    assert out.strip() == f"{root}: {len(reference):,} fetched, 0 already present, 0 refused, 0 missing without a source"
    assert files_under(root) == [f"wolof/{f}" for f in reference]  # nothing else: no temporary file left
    _, mismatch, errors = filecmp.cmpfiles(data_root / "wolof", root / "wolof", reference, shallow=False)
    assert mismatch == errors == []
    for folder in ("wolof/corpus", "wolof/bible"):  # the same cache keys as the reference copy's
        assert DataPath(str(root / folder)).content_digest() == DataPath(str(data_root / folder)).content_digest()

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    code, out, err = run(capsys, "--languages", "wolof", "--root", root, "--source", data_root.as_uri())
    assert (code, err) == (0, [])
    assert f"0 fetched, {len(reference):,} already present" in out


def test_a_file_with_one_byte_changed_is_refused_in_one_line(tmp_path, data_root, capsys):
    mirror, root = tmp_path / "mirror", tmp_path / "data"
    shutil.copytree(data_root / "wolof" / "ud", mirror / "wolof" / "ud")
    bad = mirror / "wolof/ud/wo_wtb-ud-dev.conllu"
    data = bytearray(bad.read_bytes())
    data[1000] ^= 0x01
    bad.write_bytes(bytes(data))
    code, out, err = run(capsys, "--languages", "wolof", "--only", "ud", "--root", root, "--source", mirror)
    expected = SHA((data_root / "wolof/ud/wo_wtb-ud-dev.conllu").read_bytes()).hexdigest()
    assert code == 1
    assert err == [f"wolof/ud/wo_wtb-ud-dev.conllu: sha256 {SHA(bytes(data)).hexdigest()} != {expected} "
                   f"(from {mirror.as_uri()}/wolof/ud/wo_wtb-ud-dev.conllu)"]
    assert not (root / "wolof/ud/wo_wtb-ud-dev.conllu").exists()
    assert files_under(root) == sorted(f"wolof/ud/{f}" for f in ("LICENSE.txt", "README.md", "wo_wtb-ud-test.conllu",
                                                                   "wo_wtb-ud-train.conllu"))
    assert "4 fetched, 0 already present, 1 refused" in out


def test_a_present_file_with_other_bytes_is_refused_and_kept(tmp_path, data_root, capsys, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    root = tmp_path / "data"
    shutil.copytree(data_root / "wolof" / "wikiann", root / "wolof" / "wikiann")
    edited = root / "wolof/wikiann/wikiann-wo_test.bio"
    edited.write_bytes(edited.read_bytes() + b"\n")
    code, _, err = run(capsys, "--languages", "wolof", "--only", "wikiann", "--root", root)
    assert code == 1 and len(err) == 1
    assert err[0].startswith("wolof/wikiann/wikiann-wo_test.bio: sha256 ") and err[0].endswith("(present; remove it to fetch again)")
    assert edited.read_bytes() == (data_root / "wolof/wikiann/wikiann-wo_test.bio").read_bytes() + b"\n"


def test_folders_without_a_public_listing_are_reported_or_checked(tmp_path, data_root, capsys, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    code, out, err = run(capsys, "--languages", "ancient_greek", "maltese", "--only", "corpus", "--root", tmp_path / "data")
    assert code == 2 and [line.split(";")[0] for line in err] == ["ancient_greek/corpus: missing", "maltese/corpus: missing"]
    assert "not fetchable; plain text extracted from the Diorisis XML" in err[0]
    assert not (tmp_path / "data").exists()
    # Present as in the reference copy: checked by its folder digest, nothing written.
    code, out, err = run(capsys, "--languages", "maltese", "--only", "corpus", "--root", data_root)
    assert (code, err) == (0, []) and "6,464 already present" in out
    # A folder with one file changed is refused.
    folder = tmp_path / "copy" / "x" / "corpus"
    folder.mkdir(parents=True)
    (folder / "a.html").write_text("a")
    entry = {"path": "x/corpus", "files": 1, "digest": fetch.folder_digest(folder)}
    assert fetch.check_unlisted(entry, tmp_path / "copy") is None
    (folder / "a.html").write_text("b")
    assert fetch.check_unlisted(entry, tmp_path / "copy").startswith("x/corpus: folder digest ")


def test_unknown_names_are_refused(capsys):
    with pytest.raises(SystemExit):
        fetch.main(["--languages", "klingon"])
    assert "unknown language 'klingon'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        fetch.main(["--languages", "wolof", "--only", "ud,trees"])
    assert "unknown kind 'trees'" in capsys.readouterr().err
