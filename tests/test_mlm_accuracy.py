"""MLM accuracy of an encoder whose attention reads a parse (SLA): the corpus parser's tree of each
scored sentence reaches the encoder, as it does in fine-tuning."""
from __future__ import annotations

import json

import pytest
from tango.workspaces import LocalWorkspace
from test_pretrain import make_step, pretraining_data, tokenizer_dir  # noqa: F401  (fixtures)

from steps.common.data_root import DataPath
from steps.evaluate.mlm_accuracy import MlmAccuracy


def test_an_sla_encoder_is_scored_with_the_corpus_parsers_trees(pretraining_data, tokenizer_dir, tmp_path, monkeypatch):
    import steps.parse.backends

    workspace = LocalWorkspace(tmp_path / "workspace")
    pretrained = make_step(pretraining_data, tokenizer_dir, "MXPT-SLA", max_steps=3, validate_every=3).result(workspace)

    def score(parser_dir, name):
        step = MlmAccuracy(pretrained=pretrained, pretraining_data=pretraining_data, condition="MXPT-SLA",
                           sentences=DataPath("wolof/ud/wo_wtb-ud-dev.conllu"), max_sentences=4, num_threads=1,
                           corpus_parser=parser_dir)
        return json.loads((step.result(LocalWorkspace(tmp_path / name)) / "metrics.json").read_text())

    with pytest.raises(ValueError, match="reads a parse: give mlm_accuracy a corpus_parser"):
        score(None, "without")

    parsed = []

    def stand_in(tree):
        class Parser:  # a stand-in corpus parser: every sentence gets the same shape of tree
            def __init__(self, directory):
                assert directory == tmp_path

            def parse_all(self, sentences):
                parsed.extend(sentences)
                yield [{"head": tree(len(words))} for words in sentences]
        return Parser

    import models

    seen = []
    forward = models.MicroBertModel.forward

    def spy(self, *args, heads=None, **kwargs):
        output = forward(self, *args, heads=heads, **kwargs)
        seen.append((heads, output.last_hidden_state))
        return output

    monkeypatch.setattr(models.MicroBertModel, "forward", spy)
    monkeypatch.setattr(steps.parse.backends, "CorpusParser", stand_in(lambda n: list(range(n))))  # a chain: word i on word i-1
    chain = score(tmp_path, "chain")
    chain_seen, seen[:] = list(seen), []
    monkeypatch.setattr(steps.parse.backends, "CorpusParser", stand_in(lambda n: [0] * n))  # every word on the root
    flat = score(tmp_path, "flat")
    assert len(parsed) == 8 and chain["counts"] == flat["counts"] and chain["counts"]["sentences"] == 4
    words = [len(sentence) for sentence in parsed[:4]]
    for number, ((chain_heads, chain_hidden), (flat_heads, flat_hidden)) in enumerate(zip(chain_seen, seen)):
        # One row per masked subword, each with the unmasked sentence's tree; [CLS] and [SEP] have none.
        assert chain_heads.shape[0] == chain_hidden.shape[0] and bool((chain_heads == chain_heads[:1]).all())
        assert int(chain_heads[0, 0]) == int(chain_heads[0, -1]) == -1
        # The root (0) heads exactly one word in a chain and every word in the flat tree.
        assert int((chain_heads[0] == 0).sum()) == 1 and int((flat_heads[0] == 0).sum()) == words[number]
        assert not chain_hidden.equal(flat_hidden)  # the tree shapes the attention
