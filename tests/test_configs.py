"""Configs: configs/languages.libsonnet is the one table of language facts and what restates it
agrees; configs/scales.libsonnet is numbers, its reasons in docs/decisions.md."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from reporting.languages import languages, paper_languages
from steps.common.data_root import DataError
from steps.data import languages as step_languages

REPO = Path(__file__).resolve().parent.parent


def test_every_language_has_what_the_steps_read():
    for name, facts in languages().items():
        language = step_languages.get_language(name)
        assert (language.treebank, language.wikiann, language.stanza_code, language.corpus_format) == (
            facts["treebank"], facts.get("wikiann"), facts["stanza_code"], facts["corpus_format"]), name


KLINGON = ('  klingon: { treebank: "tlh_qo", wikiann: "tlh", stanza_code: "tlh", corpus_format: "plain_text",\n'
           '             title: "Klingon", short_title: "Kl." },\n')


@pytest.fixture
def table_with(tmp_path, monkeypatch):
    """``table_with(entry)``: a copy of configs/ whose languages.libsonnet has ``entry`` added, read
    by steps/data/languages.py (and so reporting/languages.py) instead of the real one."""
    import shutil

    def make(entry: str) -> Path:
        configs = tmp_path / "configs"
        shutil.copytree(REPO / "configs", configs)
        table = configs / "languages.libsonnet"
        text = table.read_text(encoding="utf-8")
        end = text.rindex("}")  # the table's closing brace
        table.write_text(text[:end] + entry + text[end:], encoding="utf-8")
        monkeypatch.setattr(step_languages, "LANGUAGES_LIBSONNET", table)
        step_languages.language_facts.cache_clear()
        return configs

    yield make
    step_languages.language_facts.cache_clear()


def test_a_language_is_one_entry_in_languages_libsonnet(table_with):
    from rjsonnet import evaluate_snippet

    from reporting.languages import short_title

    configs = table_with(KLINGON)
    language = step_languages.get_language("klingon")
    assert (language.ud_path("train"), language.wikiann_path("dev"), language.corpus_path, language.stanza_code) == (
        "klingon/ud/tlh_qo-ud-train.conllu", "klingon/wikiann/wikiann-tlh_dev.bio", "klingon/corpus", "tlh")
    assert short_title("klingon") == "Kl." and "klingon" not in paper_languages()
    # The builder reads the same entry: the control experiment's data, UD and NER steps.
    built = json.loads(evaluate_snippet("klingon", f'(import "{(configs / "lib.libsonnet").as_posix()}")'
                                                   '.random_init_experiment("klingon", "smoke")'))["steps"]
    assert built["corpus"]["corpus"]["path"] == language.corpus_path
    assert [built["ud_parser_s42"][split]["path"] for split in ("train", "dev", "test")] == [
        language.ud_path(split) for split in ("train", "dev", "test")]
    assert built["ner_s42"]["test"]["path"] == language.wikiann_path("test")


def test_a_language_entry_without_what_the_steps_need_is_refused(table_with):
    table_with('  vulcan: { treebank: "vul_x", corpus_format: "plain_text", title: "Vulcan", short_title: "Vulcan" },\n')
    with pytest.raises(DataError, match=r"languages.libsonnet: language 'vulcan' lacks stanza_code"):
        step_languages.get_language("vulcan")


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
    assert (chosen["ud_parser_score_s42"]["scale"], chosen["ner_score_s42"]["scale"]) == ("gpu-paper_tenth", "gpu-paper")
    assert chosen["ud_parser_s42"]["config"]["epochs"] == 30 and chosen["ner_s42"]["config"]["epochs"] == 300
    assert chosen["ud_parser_s42"]["num_threads"] == chosen["ner_s42"]["num_threads"] == 1
    assert chosen["pretrained_model"]["training"]["batch_size"] == 256 and chosen["pretraining_data"]["max_length"] == 512
    # Greek's 75 UD batches an epoch (its cpu setting) hold under the cpu regime; the paper head's 200 replace them.
    greek = {regime: _builder(f'random_init_experiment("ancient_greek", "paper", regime="{regime}")')["ud_parser_s42"]
             for regime in ("cpu", "paper_tenth")}
    assert greek["cpu"]["config"]["batches_per_epoch"] == 75 and greek["paper_tenth"]["config"]["batches_per_epoch"] == 200
    # PrOnto has no regime: its cells keep the scale's name.
    pronto = _builder('pronto_sample_experiment("paper")')
    assert {step["scale"] for step in pronto.values() if step["type"] == "score_cell"} == {"paper"}
    with pytest.raises(RuntimeError, match="unknown regime paper_half; known: cpu, cpu_x2, paper, paper_ner_decay, paper_tenth"):
        _builder('experiment("wolof", "M", "paper", regime="paper_half")')
    with pytest.raises(RuntimeError, match="scale cpu has no fine-tuning regimes"):
        _builder('experiment("wolof", "M", "cpu", regime="paper")')
