"""configs/languages.libsonnet is the one table of language facts; what restates it agrees."""
from __future__ import annotations

import json

from reporting.languages import languages, paper_languages
from steps.data.languages import LANGUAGES


def test_steps_language_table_agrees_with_the_builder_table():
    # steps/data/languages.py is imported by the hashed steps; until it reads the libsonnet
    # itself, it must say the same thing.
    table = languages()
    assert set(table) == set(LANGUAGES)
    for name, language in LANGUAGES.items():
        facts = table[name]
        assert (language.treebank, language.wikiann, language.stanza_code, language.corpus_format) == (
            facts["treebank"], facts.get("wikiann"), facts["stanza_code"], facts["corpus_format"]), name


def test_paper_languages_are_the_paper_tables_columns():
    from reporting.tables import PAPER_TABLES

    paper = json.loads(PAPER_TABLES.read_text())
    assert set(paper_languages()) == set(paper["table2"]["columns"]) - {"avg"}
    assert {n for n, f in languages().items() if "wikiann" in f} == set(paper["table3"]["columns"]) - {"avg"}
