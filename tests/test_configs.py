"""Configs: configs/languages.libsonnet is the one table of language facts and what restates it
agrees; configs/scales.libsonnet is numbers, its reasons in docs/decisions.md."""
from __future__ import annotations

import json
from pathlib import Path

from reporting.languages import languages, paper_languages
from steps.data.languages import LANGUAGES

REPO = Path(__file__).resolve().parent.parent


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


def comment_and_code_characters(text: str):
    """(characters after `//` on each line, the other characters), whitespace excluded. Written for
    scales.libsonnet, which has no `//` inside strings."""
    comment = code = 0
    for line in text.splitlines():
        before, marker, after = line.partition("//")
        code += len("".join(before.split()))
        comment += len("".join(after.split())) if marker else 0
    return comment, code


def test_comment_counter_counts_by_hand():
    assert comment_and_code_characters('a: 1,  // two words\n// x y\nb: "c",\n') == (len("twowords") + len("xy"), len('a:1,') + len('b:"c",'))


def test_scales_are_numbers_with_short_comments():
    """The measurement history lives in docs/decisions.md; scales.libsonnet keeps the numbers."""
    comment, code = comment_and_code_characters((REPO / "configs" / "scales.libsonnet").read_text(encoding="utf-8"))
    assert comment < code, (comment, code)
