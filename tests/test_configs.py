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


def _builder(call: str) -> dict:
    """The steps of one builder call, evaluated as an experiment file would be."""
    from rjsonnet import evaluate_snippet

    return json.loads(evaluate_snippet("call.jsonnet", f'(import "{REPO}/configs/lib.libsonnet").{call}'))["steps"]


def test_the_paper_scale_fine_tunes_each_task_under_a_named_regime():
    """A paper-scale cell fine-tunes each task under its `chosen` regime (or one named for both), on
    top of the cpu scale's fine-tuning with the language's own cpu settings, and labels its score cells
    gpu-<regime>; a regime that does not exist, or one at a scale without regimes, is refused by name."""
    import pytest

    chosen = _builder('experiment("wolof", "M", "paper", seeds=[42])')
    assert (chosen["ud_parser_score_s42"]["scale"], chosen["ner_score_s42"]["scale"]) == ("gpu-paper_tenth", "gpu-cpu_x2")
    assert chosen["ud_parser_s42"]["config"]["epochs"] == 30 and chosen["ner_s42"]["config"]["epochs"] == 40
    assert chosen["ud_parser_s42"]["num_threads"] == chosen["ner_s42"]["num_threads"] == 1
    assert chosen["pretrained_model"]["training"]["batch_size"] == 256 and chosen["pretraining_data"]["max_length"] == 512
    # Greek's 75 UD batches an epoch (its cpu setting) hold under the cpu regime; the paper head's 200 replace them.
    greek = {regime: _builder(f'random_init_experiment("ancient_greek", "paper", regime="{regime}")')["ud_parser_s42"]
             for regime in ("cpu", "paper_tenth")}
    assert greek["cpu"]["config"]["batches_per_epoch"] == 75 and greek["paper_tenth"]["config"]["batches_per_epoch"] == 200
    # PrOnto has no regime: its cells keep the scale's name.
    pronto = _builder('pronto_sample_experiment("paper")')
    assert {step["scale"] for step in pronto.values() if step["type"] == "score_cell"} == {"paper"}
    with pytest.raises(RuntimeError, match="unknown regime paper_half; known: cpu, cpu_x2, paper, paper_tenth"):
        _builder('experiment("wolof", "M", "paper", regime="paper_half")')
    with pytest.raises(RuntimeError, match="scale cpu has no fine-tuning regimes"):
        _builder('experiment("wolof", "M", "cpu", regime="paper")')
