"""The README and docs name files and modules that exist.

A page that points at a moved or deleted file sends the reader nowhere; this reads every repository
path (a name under one of the repository's top-level folders) and every ``python -m`` module in the
README, docs/ and releases/ and checks it against the checkout.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("configs", "steps", "models", "reporting", "benchmarks", "tools", "tests", "experiments", "releases", "docs")
PATH = re.compile(rf"(?<![\w./-])(?:{'|'.join(TOP_LEVEL)})/[\w./+-]*")
MODULE = re.compile(r"python -m ([A-Za-z_][\w.]*)")
# Names that are not this repository's files on purpose: a file the command writes, the reference
# code's config, the reader's own new experiment file, and a unit.
WRITTEN_BY = re.compile(r"(--json|--out|>)\s*$")
NOT_OURS = {"configs/sgcl.jsonnet", "experiments/my_wolof_m_reuse.jsonnet", "steps/s"}


class RepositoryPaths:
    """``path in RepositoryPaths()``: whether the checkout has that file or folder."""

    def __contains__(self, path: str) -> bool:
        return (REPO / path).exists()


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "releases").rglob("README.md"))]


def dangling_references(text: str, known) -> list[str]:
    """Repository paths and ``python -m`` modules in ``text`` that ``known`` lacks."""
    missing = []
    for match in PATH.finditer(text):
        path = match.group(0).rstrip(".")
        if text[match.end(): match.end() + 1] in ("{", "*"):
            continue  # a pattern, not a path
        if path.rstrip("/") in known or path in NOT_OURS or WRITTEN_BY.search(text[max(0, match.start() - 8): match.start()]):
            continue
        missing.append(path)
    for match in MODULE.finditer(text):
        module = match.group(1).replace(".", "/")
        if module.split("/")[0] in TOP_LEVEL and not any(name in known for name in (module + ".py", module + "/__init__.py")):
            missing.append(f"python -m {match.group(1)}")
    return missing


def test_every_path_and_module_the_docs_name_exists():
    known = RepositoryPaths()
    missing = {str(page.relative_to(REPO)): found for page in pages() if (found := dangling_references(page.read_text(), known))}
    assert not missing, missing


def test_a_moved_file_a_glob_and_an_output_are_told_apart():
    known = {"steps", "steps/data", "steps/data/inputs.py", "reporting", "reporting/tables.py", "docs"}
    text = ("schema in `steps/inputs.py`; rows from `steps/data/inputs.py`; `steps/data/*.py`; 10 steps/s; "
            "`python -m reporting.tables` and `python -m reporting.table`; --json docs/benchmarks/new.json")
    assert dangling_references(text, known) == ["steps/inputs.py", "python -m reporting.table"]


def test_the_committed_report_is_what_the_report_command_writes_from_an_empty_cache(tmp_path):
    """docs/RESULTS.md, docs/engineering.md and docs/runs.csv are the output of `python -m
    reporting.report --update-docs` over an empty workspace (the committed record alone): written
    again beside copies of them, they come out byte for byte the same. A change to the report's code
    that the committed docs do not show, or one that breaks their regeneration, fails here."""
    import shutil

    from reporting import report

    docs = tmp_path / "docs"
    docs.mkdir()
    names = ("RESULTS.md", "engineering.md", "runs.csv")
    for name in names:
        shutil.copy2(REPO / "docs" / name, docs / name)
    shutil.copytree(REPO / "docs" / "curves", docs / "curves")  # the figures the record keeps
    assert report.main(["--workspace", str(tmp_path / "empty"), "--update-docs", "--output", str(docs / "RESULTS.md")]) == 0
    for name in names:
        assert (docs / name).read_text(encoding="utf-8") == (REPO / "docs" / name).read_text(encoding="utf-8"), (
            f"docs/{name} is not what the report writes now: run python -m reporting.report --update-docs "
            "--workspace <an empty folder>")
