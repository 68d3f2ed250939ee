"""The study's languages and where their datasets sit under the data root.

A thin reader of ``configs/languages.libsonnet``, the one table of per-language facts: the
builder (``configs/lib.libsonnet``) imports the same file, the steps read a language's treebank,
WikiAnn code, Stanza code and corpus format through `get_language`, and the reports its titles and
notes through `reporting.languages`. Adding a language is one entry there plus its data.

Paths follow ``../shared/data`` (see its README for provenance). ``python -m steps.data.fetch``
builds the same layout from the canonical sources (steps/data/fetch.py, docs/reproducing.md), or
a user passes explicit paths to the steps instead.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Optional

from steps.common.data_root import DataError

LANGUAGES_LIBSONNET = Path(__file__).resolve().parents[2] / "configs" / "languages.libsonnet"


@lru_cache(maxsize=None)
def language_facts() -> Dict[str, Dict[str, Any]]:
    """{language: its facts}, as configs/languages.libsonnet states them (rjsonnet is the Jsonnet
    evaluator Tango itself uses)."""
    from rjsonnet import evaluate_file

    return json.loads(evaluate_file(str(LANGUAGES_LIBSONNET)))


@dataclass(frozen=True)
class Language:
    name: str
    stanza_code: str
    treebank: str  # UD file prefix, e.g. "wo_wtb"
    corpus_format: str  # "wikipedia_html" | "plain_text" | "plain_text_gz"
    corpus_dir: str = "corpus"
    wikiann: Optional[str] = None  # WikiAnn code, e.g. "wo"

    def ud_path(self, split: str) -> str:
        return f"{self.name}/ud/{self.treebank}-ud-{split}.conllu"

    @property
    def corpus_path(self) -> str:
        return f"{self.name}/{self.corpus_dir}"

    def wikiann_path(self, split: str) -> str:
        if self.wikiann is None:
            raise DataError(f"language {self.name!r} has no WikiAnn data")
        return f"{self.name}/wikiann/wikiann-{self.wikiann}_{split}.bio"


def get_language(name: str) -> Language:
    facts = language_facts()
    if name not in facts:
        raise DataError(f"unknown language {name!r}; known: {', '.join(sorted(facts))}")
    entry = facts[name]
    missing = [key for key in ("stanza_code", "treebank", "corpus_format") if key not in entry]
    if missing:
        raise DataError(f"{LANGUAGES_LIBSONNET}: language {name!r} lacks {', '.join(missing)}")
    return Language(name, entry["stanza_code"], entry["treebank"], entry["corpus_format"], wikiann=entry.get("wikiann"))


__all__ = ["LANGUAGES_LIBSONNET", "Language", "get_language", "language_facts"]
