"""Transformer Grammars (Sartran et al., Algorithm 1): action sequences from dependency trees, the STACK/COMPOSE mask and
relative positions, each against an independent brute-force version."""
from __future__ import annotations

import itertools

import pytest
import torch

from models.attention.transformer_grammar import (
    CNT1,
    CNT2,
    ONT,
    PAD,
    SOS,
    TERMINAL,
    action_types,
    causal_attention_mask,
    stack_compose_attention,
    tg_attention_mask,
    tg_relative_positions,
    tree_depths,
)
from steps.common.data_root import DataPath
from steps.data.readers import read_conllu
from steps.tg.actions import ActionLayout, projectivize, tree_actions

WOLOF_TRAIN = DataPath("wolof/ud/wo_wtb-ud-train.conllu")


def types_of(actions: str) -> torch.Tensor:
    """Types of a whitespace-separated action sequence: "(X" ONT, "X)" CNT1 then CNT2 (its
    duplicate), "<s>" SOS, anything else a terminal."""
    types, previous = [], None
    for action in actions.split():
        if action == "<s>":
            types.append(SOS)
        elif action.startswith("("):
            types.append(ONT)
        elif action.endswith(")"):
            types.append(CNT2 if previous == CNT1 else CNT1)
        else:
            types.append(TERMINAL)
        previous = types[-1]
    return torch.tensor(types)


def algorithm_1(types: list[int], cnt2_attends_self: bool = True) -> tuple[list[list[int]], list[int]]:
    """Direct stack simulation of the paper's Algorithm 1 (by default with the reference code's CNT2
    self-attention), plus depths by walking the bracketing: (mask, depths)."""
    length = len(types)
    mask = [[0] * length for _ in range(length)]
    stack: list[int] = []
    for i, kind in enumerate(types):
        if kind == CNT1:  # COMPOSE
            mask[i][i] = 1
            j = stack.pop()
            while types[j] != ONT:
                mask[i][j] = 1
                j = stack.pop()
            mask[i][j] = 1
            stack.append(i)
        else:  # STACK
            if kind != CNT2:
                stack.append(i)
            for j in stack:
                mask[i][j] = 1
            if cnt2_attends_self:
                mask[i][i] = 1
    depths, open_depths = [], [0]
    for kind in types:
        if kind == SOS:
            depths.append(0)
        elif kind == ONT:
            depths.append(open_depths[-1] + 1)
            open_depths.append(depths[-1])
        elif kind == CNT1:
            depths.append(open_depths.pop())
        elif kind == CNT2:
            depths.append(depths[-1])
        else:
            depths.append(open_depths[-1] + 1)
    return mask, depths


def test_paper_figure_2_mask_cell_by_cell():
    """(S (NP the blue bird NP) (VP sings VP) S) → the 14 × 14 mask of the paper's Figure 2b."""
    actions = "<s> (S (NP the blue bird NP) NP) (VP sings VP) VP) S) S)"
    # Row i: the positions i attends to.  STACK everywhere but the COMPOSE rows 6, 10, 12.
    expected_rows = {
        0: {0},
        1: {0, 1},
        2: {0, 1, 2},
        3: {0, 1, 2, 3},
        4: {0, 1, 2, 3, 4},
        5: {0, 1, 2, 3, 4, 5},
        6: {2, 3, 4, 5, 6},  # COMPOSE NP: (NP, the, blue, bird, itself
        7: {0, 1, 6, 7},  # STACK: <s>, (S, the composed NP), itself
        8: {0, 1, 6, 8},
        9: {0, 1, 6, 8, 9},
        10: {8, 9, 10},  # COMPOSE VP
        11: {0, 1, 6, 10, 11},
        12: {1, 6, 10, 12},  # COMPOSE S: (S, NP), VP), itself
        13: {0, 12, 13},
    }
    mask = tg_attention_mask(types_of(actions)[None])[0]
    assert mask.shape == (14, 14)
    for i, j in itertools.product(range(14), range(14)):
        assert bool(mask[i, j]) == (j in expected_rows[i]), (i, j)
    depths = [0, 1, 2, 3, 3, 3, 2, 2, 2, 3, 2, 2, 1, 1]
    assert tree_depths(types_of(actions)[None])[0].tolist() == depths
    relative = tg_relative_positions(types_of(actions)[None])[0]
    assert relative[9, 6] == 1 and relative[9, 8] == 1 and relative[13, 0] == 1 and relative[0, 0] == 0
    # T' = 1 + #terminals + 3·#constituents
    assert len(actions.split()) == 1 + 4 + 3 * 3
    # Algorithm 1 as printed: a CNT2 (rows 7, 11, 13) attends to the stack alone; no other row changes.
    paper = tg_attention_mask(types_of(actions)[None], cnt2_attends_self=False)[0]
    for i, j in itertools.product(range(14), range(14)):
        assert bool(paper[i, j]) == (j in expected_rows[i] - ({i} if i in (7, 11, 13) else set())), (i, j)


def test_padding_and_causality():
    types = types_of("<s> (S (NP the blue bird NP) NP) (VP sings VP) VP) S) S)")
    padded = torch.stack([torch.cat([types, torch.full((3,), PAD)]), torch.cat([types[:8], torch.full((9,), PAD)])])
    mask = tg_attention_mask(padded)
    full = tg_attention_mask(types[None])[0]
    assert torch.equal(mask[0, :14, :14], full)
    # A prefix's mask is the prefix of the full mask (causal; what sampling relies on).
    assert torch.equal(mask[1, :8, :8], full[:8, :8])
    assert not mask[0, :14, 14:].any() and torch.equal(mask[0, 14:, 14:], torch.eye(3, dtype=torch.bool))
    assert torch.equal(torch.tril(full), full) and full[:, 0].sum() > 0
    causal = causal_attention_mask(torch.tensor([[1, 1, 1, 0]]))[0]
    assert causal.int().tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]]


def crossing_free(heads: list[int]) -> bool:
    """Projective iff no two arcs (the root's from position 0 included) cross."""
    arcs = [tuple(sorted((head, dependent))) for dependent, head in enumerate(heads, 1)]
    return not any(a < c < b < d for (a, b), (c, d) in itertools.permutations(arcs, 2))


def test_projectivize_by_lifting():
    # 1 ← 3 crosses the root arc to 2; 1 → 4 as well.
    heads, lifts = projectivize([3, 0, 2, 1])
    assert heads == [2, 0, 2, 2] and lifts == 2
    assert projectivize([2, 0, 2]) == ([2, 0, 2], 0)
    assert projectivize([2, 3, 1]) is None  # a cycle: not a tree, dropped
    assert projectivize([0, 0, 5]) is None  # head out of range


def wolof_trees(count: int):
    sentences = read_conllu(WOLOF_TRAIN.resolve())
    assert len(sentences) >= count
    return sentences[:count]


def test_actions_and_mask_on_200_wolof_trees():
    """Every tree: projective after lifting, T' = 1 + #terminals + 3·#constituents, a well-formed
    bracketing, and the vectorised mask / depths equal the stack simulation (zero mismatches)."""
    layout = ActionLayout(num_terminals=5000)
    sequences, lifted = [], 0
    for sentence in wolof_trees(200):
        result = projectivize(sentence["head"])
        assert result is not None
        heads, lifts = result
        lifted += lifts > 0
        assert crossing_free(heads)
        # Pieces: a word of k characters gets ceil(k/3) consecutive terminal ids.
        pieces = [[5 + (hash(word[i:i + 3]) % 4000) for i in range(0, len(word), 3)] or [3] for word in sentence["tokens"]]
        actions = tree_actions(pieces, heads, sentence["deprel"], layout)
        constituents = 1 + len({head for head in heads if head > 0})
        terminals = sum(len(p) for p in pieces)
        assert len(actions) == 1 + terminals + 3 * constituents
        types = action_types(torch.tensor(actions), layout.num_terminals, layout.num_labels)
        assert (types == TERMINAL).sum() == terminals and (types == ONT).sum() == constituents
        sequences.append(types)
    assert lifted > 0  # the slice exercises lifting
    batch = torch.nn.utils.rnn.pad_sequence(sequences, batch_first=True, padding_value=PAD)
    mask = tg_attention_mask(batch)
    paper = tg_attention_mask(batch, cnt2_attends_self=False)
    depths = tree_depths(batch)
    relative = tg_relative_positions(batch)
    mismatches = 0
    for row, types in enumerate(sequences):
        expected_mask, expected_depths = algorithm_1(types.tolist())
        n = len(expected_depths)
        mismatches += int((mask[row, :n, :n] != torch.tensor(expected_mask, dtype=torch.bool)).sum())
        mismatches += int((paper[row, :n, :n] != torch.tensor(algorithm_1(types.tolist(), False)[0], dtype=torch.bool)).sum())
        assert paper[row, :n, :n].any(-1).all()  # no empty row: <s> is never popped
        assert depths[row, :n].tolist() == expected_depths
        expected_relative = (torch.tensor(expected_depths)[:, None] - torch.tensor(expected_depths)[None]).clamp(-1, 62)
        assert torch.equal(relative[row, :n, :n], expected_relative)
        assert not mask[row, :n, n:].any()
    assert mismatches == 0


def test_sampled_trees_are_well_formed():
    from models.transformer_grammar import TransformerGrammarLM, lm_config, sample_actions, well_formed

    layout = ActionLayout(num_terminals=40)
    strings = layout.token_strings(["[PAD]", "<s>", "[SEP]", "[UNK]", "[MASK]"] + [f"w{i}" for i in range(5, 40)])
    torch.manual_seed(0)
    config = lm_config("tg", layout.vocab_size, 40, layout.num_labels, hidden_size=16, num_hidden_layers=1,
                       num_attention_heads=2, intermediate_size=32)
    model = TransformerGrammarLM(config)
    samples = sample_actions(model, 8, max_length=24, generator=torch.Generator().manual_seed(1))
    assert len(samples) == 8
    for sample in samples:
        tokens = [strings[i] for i in sample]
        assert well_formed(tokens), " ".join(tokens)
        assert len(sample) <= 24
        types = action_types(torch.tensor(sample), 40, layout.num_labels)
        assert len(sample) == 1 + int((types == TERMINAL).sum()) + 3 * int((types == ONT).sum())
    assert any((action_types(torch.tensor(s), 40, layout.num_labels) == ONT).sum() > 1 for s in samples)
    # The checker rejects what it should.
    assert not well_formed("<s> (ROOT w5 nsubj) nsubj)² ROOT) ROOT)²".split())
    assert not well_formed("<s> (ROOT (obj obj) obj)² ROOT) ROOT)²".split())
    assert not well_formed("<s> (ROOT w5 ROOT) ROOT)² w6".split())


def test_transformer_xl_scores_against_a_loop_over_query_key_pairs():
    """The hook's relative keys and query offset give attention with scores
    ((q_i + u)ᵀk_j + (q_i + v)ᵀr_{R_ij}) / √d (TXL; TG paper §2), checked pair by pair."""
    from models import MicroBertConfig
    from models.attention import AttentionModifier, RelativePositionKeys
    from models.modeling_microbert import MicroBertSelfAttention

    torch.manual_seed(3)
    config = MicroBertConfig(vocab_size=20, hidden_size=12, num_attention_heads=3, intermediate_size=24, num_hidden_layers=1)
    attention = MicroBertSelfAttention(config).eval()
    batch, length, heads, size, positions = 2, 5, 3, 4, 7
    hidden = torch.randn(batch, length, 12)
    u, v = torch.randn(heads, size), torch.randn(heads, size)
    keys, index = torch.randn(positions, heads, size), torch.randint(0, positions, (batch, length, length))
    modifier = AttentionModifier(query_offset=u[None, :, None, :], relative_keys=RelativePositionKeys(index, keys, v))
    context, _ = attention(hidden, modifier=modifier)

    with torch.no_grad():
        q, k, w = (layer(hidden).view(batch, length, heads, size) for layer in (attention.query, attention.key, attention.value))
    expected = torch.zeros(batch, length, heads, size)
    for b, h, i in itertools.product(range(batch), range(heads), range(length)):
        scores = torch.tensor([(float((q[b, i, h] + u[h]) @ k[b, j, h]) + float((q[b, i, h] + v[h]) @ keys[index[b, i, j], h])) / size ** 0.5
                               for j in range(length)])
        expected[b, i, h] = torch.softmax(scores, 0) @ w[b, :, h]
    assert torch.allclose(context, expected.reshape(batch, length, 12), atol=1e-5)


@pytest.mark.parametrize("form", ["transformer_xl", "bias"])
def test_both_relative_forms_train_and_reload(form, tmp_path):
    """TXL terms read R_ij = depth(i) − depth(j) (the TG relative positions); every position parameter
    gets a gradient; a saved model reloads with its form, and a pre-TXL config.json as "bias"."""
    import json

    from safetensors.torch import save_file

    from models.transformer_grammar import TransformerGrammarLM, lm_config, next_action_labels
    from steps.tg.language_model import CONFIG, WEIGHTS, load_lm

    layout = ActionLayout(num_terminals=10)
    s, np_, vp = (layout.open_id(label) for label in ("ROOT", "nsubj", "obj"))
    s_, np_c, vp_c = (layout.close_id(label) for label in ("ROOT", "nsubj", "obj"))
    ids = torch.tensor([[1, s, np_, 5, 6, 7, np_c, layout.stack_close_id(np_c), vp, 8, vp_c, layout.stack_close_id(vp_c), s_,
                         layout.stack_close_id(s_)]])
    settings = dict(kind="tg", vocab_size=layout.vocab_size, num_terminals=10, num_labels=layout.num_labels, relative_form=form)
    small = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
    torch.manual_seed(0)
    model = TransformerGrammarLM(lm_config(**settings, **small))
    if form == "transformer_xl":
        terms = model.transformer_xl_terms(ids)
        assert torch.equal(terms.relative_keys[1].index, tg_relative_positions(action_types(ids, 10, layout.num_labels)) + 1)
        assert terms.relative_keys[0].keys.shape == (64, 2, 8) and not hasattr(model, "relative_bias")
    model(ids, next_action_labels(ids, 10, layout.num_labels)).loss.backward()
    position_parameters = [name for name, _ in model.named_parameters() if name.startswith(("relative", "content", "position"))]
    assert position_parameters and all(dict(model.named_parameters())[n].grad.abs().sum() > 0 for n in position_parameters)

    folder = tmp_path / form
    folder.mkdir()
    save_file({name: tensor.contiguous() for name, tensor in model.state_dict().items()}, str(folder / WEIGHTS))
    saved = dict(settings) if form == "transformer_xl" else {key: settings[key] for key in settings if key != "relative_form"}
    (folder / CONFIG).write_text(json.dumps(saved))
    with pytest.MonkeyPatch.context() as patch:  # load_lm builds the µB default size; build ours
        import steps.tg.language_model as language_model

        patch.setattr(language_model, "lm_config", lambda **given: lm_config(**given, **small))
        reloaded = load_lm(folder)
    assert reloaded.relative_form == form
    model.eval()
    assert torch.equal(reloaded(ids).logits, model(ids).logits)


def test_labels_of_figure_2():
    """Labels: the next action; none at COMPOSE positions (6, 10, 12) nor at the last (13)."""
    from models.transformer_grammar import IGNORE_INDEX, next_action_labels

    layout = ActionLayout(num_terminals=10)
    the, blue, bird, sings = 5, 6, 7, 8
    s, np_, vp = (layout.open_id(label) for label in ("ROOT", "nsubj", "obj"))
    s_, np_c, vp_c = (layout.close_id(label) for label in ("ROOT", "nsubj", "obj"))
    ids = [1, s, np_, the, blue, bird, np_c, layout.stack_close_id(np_c), vp, sings, vp_c,
           layout.stack_close_id(vp_c), s_, layout.stack_close_id(s_)]
    labels = next_action_labels(torch.tensor([ids + [0, 0]]), 10, layout.num_labels)[0].tolist()
    expected = [s, np_, the, blue, bird, np_c, None, vp, sings, vp_c, None, s_, None, None, None, None]
    assert labels == [IGNORE_INDEX if e is None else e for e in expected]


def test_build_train_evaluate_on_a_wolof_slice(tmp_path):
    """The TG steps end to end on 60 Wolof UD trees (WordPiece trained on them), 2 training steps."""
    import math

    from steps.tg.actions import BuildTgActions
    from steps.tg.language_model import EvaluateTgLanguageModel, TrainTgLanguageModel, model_sequences

    sentences = wolof_trees(60)
    trees = {"train": sentences[:50], "dev": sentences[50:]}
    actions = BuildTgActions(trees=trees).run(trees=trees)
    stats = actions["stats"]["train"]
    assert stats["kept"] + stats["dropped_unprojectivizable"] + stats["dropped_too_long"] == 50
    assert stats["lifted_arcs"] >= stats["lifted_sentences"]
    layout = actions["layout"]
    for row in actions["train"]:
        types = action_types(torch.tensor(row["actions"]), layout["num_terminals"], layout["num_labels"])
        assert len(row["actions"]) == 1 + int((types == TERMINAL).sum()) + 3 * int((types == ONT).sum())
    terminals = model_sequences(actions, "dev", "txl_terminals")
    assert all(s[0] == 1 and s[-1] == 2 and all(5 <= i < layout["num_terminals"] or i == 3 for i in s[1:-1]) for s in terminals)
    results = {}
    for kind in ("tg", "txl_trees", "txl_terminals"):
        step = TrainTgLanguageModel(actions=actions, kind=kind)
        step.work_dir_for_run = tmp_path / kind  # run outside a workspace
        step.work_dir_for_run.mkdir()
        model = step.run(actions=actions, kind=kind, max_steps=2, batch_size=8)
        cell = dict(table="tg", row=kind, column="wolof", scale="test")
        results[kind] = EvaluateTgLanguageModel(model=model, actions=actions, **cell).run(model=model, actions=actions, split="dev", **cell)
    for kind, result in results.items():
        assert result["row"] == kind and result["words"] == sum(len(s["tokens"]) for s in sentences[50:])
        assert math.isfinite(result["test"]) and result["test"] > 1


def test_algorithm_1s_cnt2_is_a_tg_setting_keyed_only_when_set(tmp_path):
    """cnt2_attends_self=False trains a TG whose saved model reloads with Algorithm 1's mask; the
    default keeps every recorded TG key; a TXL refuses it (its attention is causal)."""
    from steps.tg.actions import BuildTgActions
    from steps.tg.language_model import TrainTgLanguageModel, load_lm

    sentences = wolof_trees(20)
    trees = {"train": sentences}
    actions = BuildTgActions(trees=trees).run(trees=trees)
    default = TrainTgLanguageModel(actions=actions, kind="tg", max_steps=1)
    assert TrainTgLanguageModel(actions=actions, kind="tg", max_steps=1, cnt2_attends_self=True).unique_id == default.unique_id
    paper = TrainTgLanguageModel(actions=actions, kind="tg", max_steps=1, cnt2_attends_self=False)
    assert paper.unique_id != default.unique_id
    paper.work_dir_for_run = tmp_path / "tg"
    paper.work_dir_for_run.mkdir()
    model = load_lm(paper.run(actions=actions, kind="tg", max_steps=1, batch_size=4, cnt2_attends_self=False))
    assert model.config.tg_cnt2_attends_self is False
    ids = torch.tensor([actions["train"][0]["actions"]])
    layout = actions["layout"]
    types = action_types(ids, layout["num_terminals"], layout["num_labels"])
    from models.attention.base import AttentionInputs

    inputs = AttentionInputs(input_ids=ids, attention_mask=torch.ones_like(ids), heads=None, structure=None, dtype=torch.float32)
    bias = stack_compose_attention(inputs, model.config).score_bias[:, 0]
    assert torch.equal(bias == 0, tg_attention_mask(types, cnt2_attends_self=False))
    assert not torch.equal(bias == 0, tg_attention_mask(types))  # the sentence has a CNT2
    txl = TrainTgLanguageModel(actions=actions, kind="txl_trees", max_steps=1, cnt2_attends_self=False)
    txl.work_dir_for_run = tmp_path / "txl"
    txl.work_dir_for_run.mkdir()
    with pytest.raises(ValueError, match="cnt2_attends_self is a setting of TG's STACK/COMPOSE mask; txl_trees attends causally"):
        txl.run(actions=actions, kind="txl_trees", max_steps=1, cnt2_attends_self=False)
