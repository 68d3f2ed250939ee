"""The study's languages and where their datasets sit under the data root.

Paths follow ``../shared/data`` (see its README for provenance). ``python -m steps.data.fetch``
builds the same layout from the canonical sources (steps/data/fetch.py, docs/reproducing.md), or
a user passes explicit paths to the steps instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from steps.common.data_root import DataError


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


LANGUAGES: Dict[str, Language] = {
    lang.name: lang
    for lang in [
        Language("wolof", "wo", "wo_wtb", "wikipedia_html", wikiann="wo"),
        Language("coptic", "cop", "cop_scriptorium", "plain_text"),
        Language("maltese", "mt", "mt_mudt", "wikipedia_html", wikiann="mt"),
        Language("uyghur", "ug", "ug_udt", "wikipedia_html", wikiann="ug"),
        Language("ancient_greek", "grc", "grc_proiel", "plain_text_gz"),
        Language("english", "en", "en_ewt", "plain_text"),
    ]
}


def get_language(name: str) -> Language:
    try:
        return LANGUAGES[name]
    except KeyError:
        raise DataError(f"unknown language {name!r}; known: {', '.join(sorted(LANGUAGES))}") from None
