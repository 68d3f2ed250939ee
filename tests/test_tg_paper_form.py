"""The TG comparison's two baselines as the TG paper defines them (§3): TXL (trees) on the plain
linearised tree (one position per closing nonterminal) and unclipped Transformer-XL positions, each
against an independent version; the defaults stay the committed figures' forms."""
from __future__ import annotations

import pytest
import torch

from models.attention.transformer_grammar import CNT1, CNT2, PAD, action_types, linear_relative_positions
from models.transformer_grammar import (
    IGNORE_INDEX,
    TransformerGrammarLM,
    lm_config,
    next_action_labels,
    sample_actions,
    well_formed,
)
from steps.common.data_root import DataPath
from steps.data.readers import read_conllu
from steps.tg.actions import ActionLayout, nonterminal_label, projectivize, tree_actions
from steps.tg.language_model import model_sequences

WOLOF_TRAIN = DataPath("wolof/ud/wo_wtb-ud-train.conllu")
SMALL = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)


def choe_charniak(pieces, heads, deprels) -> list[str]:
    """The plain linearised tree as strings, by recursion over the dependency tree: "<s> (ROOT …
    ROOT)", a word with dependents "(rel left w right rel)", a leaf its pieces."""
    children = {w: [d for d, h in enumerate(heads, 1) if h == w] for w in range(len(heads) + 1)}

    def word(w: int) -> list[str]:
        own = [str(p) for p in pieces[w - 1]]
        if not children[w]:
            return own
        label = nonterminal_label(deprels[w - 1])
        left = [t for d in children[w] if d < w for t in word(d)]
        right = [t for d in children[w] if d > w for t in word(d)]
        return [f"({label}"] + left + own + right + [f"{label})"]

    return ["<s>", "(ROOT"] + [t for d in children[0] for t in word(d)] + ["ROOT)"]


@pytest.fixture(scope="module")
def wolof_actions():
    """200 Wolof UD trees as `build_tg_actions` rows (pieces: ceil(k/3) ids a word) and their
    plain linearisations."""
    layout = ActionLayout(num_terminals=5000)
    rows, plain = [], []
    for sentence in read_conllu(WOLOF_TRAIN.resolve())[:200]:
        heads, _ = projectivize(sentence["head"])
        pieces = [[5 + (hash(word[i:i + 3]) % 4000) for i in range(0, len(word), 3)] or [3] for word in sentence["tokens"]]
        rows.append({"actions": tree_actions(pieces, heads, sentence["deprel"], layout), "words": len(pieces)})
        plain.append(choe_charniak(pieces, heads, sentence["deprel"]))
    return {"layout": {"num_terminals": 5000, "num_labels": layout.num_labels, "pad_id": 0, "sos_id": 1, "eos_id": 2},
            "train": rows}, plain


def as_strings(ids, layout) -> list[str]:
    strings = ActionLayout(num_terminals=layout["num_terminals"]).token_strings([str(i) for i in range(layout["num_terminals"])])
    return ["<s>" if i == 1 else strings[i] for i in ids]


def test_single_closings_are_the_plain_linearised_tree(wolof_actions):
    actions, plain = wolof_actions
    single = model_sequences(actions, "train", "txl_trees", "single")
    assert [as_strings(s, actions["layout"]) for s in single] == plain
    # The default is TG's action sequence: one CNT2 copy more per constituent.
    duplicated = model_sequences(actions, "train", "txl_trees")
    assert [len(d) - len(s) for d, s in zip(duplicated, single)] == [sum(x.endswith(")") for x in t) for t in plain]


def test_labels_are_the_same_prediction_events_in_either_form(wolof_actions):
    """Every action after <s> but a CNT2 copy is predicted once, in both forms; on TG's sequences the
    labels are the earlier rule's (nothing at a CNT1), checked by a loop over a padded batch."""
    actions, _ = wolof_actions
    layout = actions["layout"]
    terminals, labels = layout["num_terminals"], layout["num_labels"]
    for form in ("duplicated", "single"):
        sequences = model_sequences(actions, "train", "txl_trees", form)
        batch = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in sequences], batch_first=True, padding_value=0)
        got = next_action_labels(batch, terminals, labels)
        types = action_types(batch, terminals, labels)
        for row, sequence in enumerate(sequences):
            events = [int(t) for t in got[row] if t != IGNORE_INDEX]
            full = actions["train"][row]["actions"]
            full_types = action_types(torch.tensor(full), terminals, labels)
            assert events == [a for a, t in zip(full[1:], full_types[1:].tolist()) if t != CNT2]
            if form == "duplicated":
                expected = [IGNORE_INDEX if i + 1 >= len(sequence) or types[row, i] == CNT1 else sequence[i + 1]
                            for i in range(batch.shape[1])]
                expected = [IGNORE_INDEX if types[row, i] == PAD else e for i, e in enumerate(expected)]
                assert got[row].tolist() == expected


def test_unclipped_linear_positions_against_a_loop():
    unclipped = linear_relative_positions(2, 100, clip=False)
    clipped = linear_relative_positions(2, 100)
    for i in range(100):
        for j in range(100):
            assert unclipped[1, i, j] == max(i - j, -1)
            assert clipped[1, i, j] == min(max(i - j, -1), 62)


@pytest.mark.parametrize("kind", ["txl_trees", "txl_terminals"])
def test_unclipped_txl_equals_the_clipped_one_within_the_clip_and_not_beyond(kind):
    """Same weights: identical logits while every distance is ≤ 62; past it the unclipped model
    tells distances apart that the clipped one shares."""
    torch.manual_seed(0)
    layout = ActionLayout(num_terminals=40)
    settings = dict(kind=kind, vocab_size=layout.vocab_size, num_terminals=40, num_labels=layout.num_labels, **SMALL)
    clipped = TransformerGrammarLM(lm_config(**settings)).eval()
    unclipped = TransformerGrammarLM(lm_config(**settings, clip_relative_positions=False)).eval()
    unclipped.load_state_dict(clipped.state_dict())
    short, long = torch.randint(5, 40, (2, 60)), torch.randint(5, 40, (2, 120))
    assert torch.allclose(unclipped(short).logits, clipped(short).logits, atol=1e-6)
    assert torch.allclose(unclipped(long).logits[:, :63], clipped(long).logits[:, :63], atol=1e-6)  # causal

    def key_of_pair(model, i, j):  # layer 0's relative key r_{R_ij}
        relative = model.transformer_xl_terms(long).relative_keys[0]
        return relative.keys[relative.index[0, i, j]]

    assert torch.equal(key_of_pair(clipped, 119, 49), key_of_pair(clipped, 119, 39))  # 70 and 80 back: one position
    assert not torch.allclose(key_of_pair(unclipped, 119, 49), key_of_pair(unclipped, 119, 39))
    assert torch.allclose(key_of_pair(unclipped, 119, 69), key_of_pair(clipped, 119, 69), atol=1e-6)  # 50 back: the same
    assert unclipped.transformer_xl_terms(long).relative_keys[0].keys.shape[0] == 121  # R = −1 … 119


def test_each_setting_is_refused_where_the_paper_has_no_such_choice():
    layout = ActionLayout(num_terminals=40)
    base = dict(vocab_size=layout.vocab_size, num_terminals=40, num_labels=layout.num_labels)
    for kind in ("tg", "txl_terminals"):
        with pytest.raises(ValueError, match="closing_nonterminals 'single' is a form of TXL"):
            lm_config(kind, closing_nonterminals="single", **base)
    with pytest.raises(ValueError, match="unknown closing_nonterminals"):
        lm_config("txl_trees", closing_nonterminals="none", **base)
    with pytest.raises(ValueError, match="clip_relative_positions: false"):
        lm_config("tg", clip_relative_positions=False, **base)
    with pytest.raises(ValueError, match="clip_relative_positions: false"):
        lm_config("txl_trees", clip_relative_positions=False, relative_form="bias", **base)


def test_a_single_closing_model_samples_plain_trees():
    layout = ActionLayout(num_terminals=40)
    strings = layout.token_strings(["[PAD]", "<s>", "[SEP]", "[UNK]", "[MASK]"] + [f"w{i}" for i in range(5, 40)])
    torch.manual_seed(0)
    model = TransformerGrammarLM(lm_config("txl_trees", layout.vocab_size, 40, layout.num_labels,
                                           closing_nonterminals="single", **SMALL))
    samples = sample_actions(model, 8, max_length=24, generator=torch.Generator().manual_seed(1))
    for sample in samples:
        tokens = [strings[i] for i in sample]
        assert well_formed(tokens, duplicated=False) and not well_formed(tokens), " ".join(tokens)
        assert len(sample) <= 24 and not (action_types(torch.tensor(sample), 40, layout.num_labels) == CNT2).any()
    assert well_formed("<s> (ROOT (nsubj w5 nsubj) w6 ROOT)".split(), duplicated=False)
    assert not well_formed("<s> (ROOT (nsubj w5 nsubj) nsubj)² w6 ROOT)".split(), duplicated=False)
    assert not well_formed("<s> (ROOT w5 ROOT) w6".split(), duplicated=False)


def test_the_paper_form_is_keyed_only_when_set_and_trains_end_to_end(tmp_path):
    """Default arguments keep every recorded key; each paper-form setting changes its LM's; a
    paper-form TXL (trees) reloads with its settings and scores the same words on single closings."""
    import math

    from steps.tg.actions import BuildTgActions
    from steps.tg.language_model import EvaluateTgLanguageModel, TrainTgLanguageModel, load_lm

    sentences = read_conllu(WOLOF_TRAIN.resolve())[:40]
    trees = {"train": sentences[:30], "dev": sentences[30:]}
    actions = BuildTgActions(trees=trees).run(trees=trees)
    default = TrainTgLanguageModel(actions=actions, kind="txl_trees", max_steps=1)
    same = TrainTgLanguageModel(actions=actions, kind="txl_trees", max_steps=1, closing_nonterminals="duplicated",
                                clip_relative_positions=True)
    assert same.unique_id == default.unique_id
    paper = dict(closing_nonterminals="single", clip_relative_positions=False)
    ids = {TrainTgLanguageModel(actions=actions, kind="txl_trees", max_steps=1, **{k: v}).unique_id for k, v in paper.items()}
    assert len(ids) == 2 and default.unique_id not in ids
    step = TrainTgLanguageModel(actions=actions, kind="txl_trees", max_steps=2, **paper)
    step.work_dir_for_run = tmp_path / "txl_trees"
    step.work_dir_for_run.mkdir()
    directory = step.run(actions=actions, kind="txl_trees", max_steps=2, batch_size=8, **paper)
    model = load_lm(directory)
    assert model.config.tg_closing_nonterminals == "single" and model.config.tg_clip_relative_positions is False
    cell = dict(table="tg_paper_form", row="txl_trees", column="wolof", scale="test")
    result = EvaluateTgLanguageModel(model=directory, actions=actions, **cell).run(model=directory, actions=actions, split="dev", **cell)
    assert result["words"] == sum(len(s["tokens"]) for s in sentences[30:]) and math.isfinite(result["test"])
    with pytest.raises(ValueError, match="a form of TXL"):
        TrainTgLanguageModel(actions=actions, kind="tg", max_steps=1).run(actions=actions, kind="tg", closing_nonterminals="single")
