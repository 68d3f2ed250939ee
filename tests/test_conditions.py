"""One parse of a condition name: `models.conditions.parse_condition`, and the Jsonnet builder's
table of the same conditions (configs/conditions.libsonnet) held to it."""
from __future__ import annotations

from pathlib import Path

import pytest
from tango.common import Params

from models import parse_condition
from models.objectives import OBJECTIVES, PER_BATCH, PER_LABELLED_ROW, PER_MASKED_TOKEN

REPO = Path(__file__).resolve().parents[1]
PAPER_CONDITIONS = ["M", "MP", "MT", "MPT", "MPT-SLA", "MX", "MXP", "MXT", "MXPT", "MXPT-SLA"]
LOCAL_CONDITIONS = ["M-A5", "M-A9", "M-A13", "C5", "C9", "C13"]  # Edman et al.


def libsonnet_table() -> dict:
    return Params.from_file(REPO / "configs" / "conditions.libsonnet").as_dict(quiet=True)


def test_libsonnet_table_agrees_with_parse_condition_for_every_condition():
    table = libsonnet_table()
    assert table["names"] == PAPER_CONDITIONS and set(LOCAL_CONDITIONS) <= set(table["related"])
    assert sorted(table["by_name"]) == sorted(table["names"] + table["related"])
    for name in table["names"] + table["related"]:
        condition, row = parse_condition(name), table["by_name"][name]
        assert condition.name == name
        assert row == {
            "objectives": condition.objectives,
            "attention": condition.attention,
            "encoder_needs_parse": condition.encoder_needs_parse,
        }, name


def test_the_builder_gives_the_corpus_parser_exactly_to_encoders_that_need_a_parse():
    for name in ("MPT", "MPT-SLA"):
        config = Params.from_file(REPO / "experiments" / "smoke" / f"wolof_{name.lower().replace('-', '_')}.jsonnet").as_dict(quiet=True)
        parser_step = config["steps"]["ud_parser_s42"]
        if parse_condition(name).encoder_needs_parse:
            assert parser_step["sla_parse"] == "parse" and parser_step["corpus_parser"] == {"type": "ref", "ref": "corpus_parser"}
        else:
            assert parser_step["sla_parse"] == "global" and "corpus_parser" not in parser_step


def test_what_each_condition_needs():
    # Written out by hand from the paper (§4): P and T read trees, X reads gold tags, SLA reads trees
    # in pretraining and in fine-tuning; M alone needs neither.
    expected = {  # name: (needs_parse, needs_gold_xpos, encoder_needs_parse)
        "M": (False, False, False), "MP": (True, False, False), "MT": (True, False, False),
        "MPT": (True, False, False), "MPT-SLA": (True, False, True), "MX": (False, True, False),
        "MXP": (True, True, False), "MXT": (True, True, False), "MXPT": (True, True, False),
        "MXPT-SLA": (True, True, True),
    }
    for name, flags in expected.items():
        condition = parse_condition(name)
        assert (condition.needs_parse, condition.needs_gold_xpos, condition.encoder_needs_parse) == flags, name
    assert parse_condition("µB-MX").name == "MX"
    for bad in ("X", "MPT-XYZ", "MM", "MPT-", "MQ", "M-sla", ""):
        with pytest.raises(ValueError, match="unrecognised condition"):
            parse_condition(bad)


def test_objective_registry_entries():
    assert list(OBJECTIVES)[:5] == ["M", "X", "P", "T", "S"]  # the order losses are computed and summed in
    assert set(OBJECTIVES) >= {"C", "H"}
    names = {letter: (o.name, o.training_only, o.dev_average) for letter, o in OBJECTIVES.items()}
    assert names == {
        "M": ("mlm", False, PER_MASKED_TOKEN), "X": ("xpos", False, PER_LABELLED_ROW),
        "P": ("phrase", True, PER_BATCH), "T": ("tree", True, PER_BATCH),
        "S": ("structural_probe", True, PER_BATCH),
        **{letter: ("mlm", False, PER_MASKED_TOKEN) for letter in OBJECTIVES if OBJECTIVES[letter].masked_lm and letter != "M"},
    }


def test_dev_weights_count_masked_tokens_labelled_rows_and_batches():
    import torch

    batch = {
        "labels": torch.tensor([[-100, 5, -100, 7], [-100, -100, -100, -100], [3, -100, -100, -100]]),
        "xpos": torch.tensor([[1, -100], [-100, -100], [2, 4]]),
    }
    assert OBJECTIVES["M"].dev_weight(batch) == 3  # masked tokens
    assert OBJECTIVES["X"].dev_weight(batch) == 2  # rows with any tag
    assert OBJECTIVES["P"].dev_weight(batch) == OBJECTIVES["T"].dev_weight(batch) == 1


def test_table_rows_are_titled_from_the_parsed_condition():
    from reporting.tables import _row_title

    titles = {row: _row_title(row) for row in ("M", "MXPT-SLA", "MX*", "mBERT", "random-init MPT-SLA", "µB-M", "Stanza")}
    assert titles == {
        "M": "µB-M", "MXPT-SLA": "µB-MXPT-SLA", "MX*": "µB-MX*", "mBERT": "mBERT",
        "random-init MPT-SLA": "random-init MPT-SLA", "µB-M": "µB-M", "Stanza": "Stanza",
    }
