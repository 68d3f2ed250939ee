"""The EWT subject–verb agreement probe (steps/tg/agreement.py): pairs from a real EWT slice and a
hand-written treebank, and the evaluation on tiny random models and on rigged scorers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from models.transformer_grammar import LM_KINDS, TransformerGrammarLM, lm_config
from steps.common.data_root import DataPath
from steps.data.readers import read_conllu
from steps.data.vocab import wordpiece_from_vocabulary
from steps.tg import agreement
from steps.tg.actions import ActionLayout, BuildTgActions, sentence_actions
from steps.tg.agreement import (
    AGREEING_RELATIONS,
    BuildAgreementPairs,
    EvaluateTgAgreement,
    pair_sentences,
    pair_sequences,
    swapped_form,
    third_singular,
)
from steps.tg.language_model import model_sequences

EWT_DEV = DataPath("english/ud/en_ewt-ud-dev.conllu")
SLICE = 300


@pytest.fixture(scope="module")
def ewt_slice(tmp_path_factory) -> Path:
    """The first 300 sentences of the EWT dev file, as a file."""
    blocks = EWT_DEV.resolve().read_text(encoding="utf-8").split("\n\n")[:SLICE]
    path = tmp_path_factory.mktemp("ewt") / "slice.conllu"
    path.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ewt_sentences(ewt_slice):
    sentences = read_conllu(ewt_slice, morphology=True)
    assert len(sentences) == SLICE
    return sentences


@pytest.fixture(scope="module")
def ewt_pairs(ewt_slice):
    return BuildAgreementPairs(treebank=DataPath(str(ewt_slice))).run(treebank=DataPath(str(ewt_slice)))


def test_every_pair_differs_only_in_the_agreeing_verb(ewt_sentences, ewt_pairs):
    """(a) Each pair changes exactly one word, the verb that heads an nsubj or an aux/cop of that
    head; the tree and every other word are the treebank's; the swap is its own inverse."""
    pairs, stats = ewt_pairs["pairs"], ewt_pairs["stats"]
    assert stats["pairs"] == len(pairs) > 100 and stats["intervening"] > 0 and stats["attractor"] > 0
    by_id = {sentence["sent_id"]: sentence for sentence in ewt_sentences}
    assert len(by_id) == SLICE
    # Every nsubj arc of the slice is a pair or a counted skip.
    arcs = sum(relation.split(":")[0] == "nsubj" for s in ewt_sentences for relation in s["deprel"])
    assert stats["nsubj_arcs"] == arcs == len(pairs) + sum(stats["skipped"].values())
    for pair in pairs:
        original = by_id[pair["sent_id"]]
        good, bad = pair_sentences(pair)
        assert good["tokens"] == original["tokens"] and len(bad["tokens"]) == len(good["tokens"])
        assert good["head"] == bad["head"] == original["head"] and good["deprel"] == bad["deprel"] == original["deprel"]
        differing = [i for i, (a, b) in enumerate(zip(good["tokens"], bad["tokens"])) if a != b]
        verb, subject = pair["verb"], pair["subject"]
        assert differing == [verb]
        assert original["deprel"][subject] in ("nsubj", "nsubj:pass") and subject < verb
        head = original["head"][subject]
        assert verb + 1 == head or (original["deprel"][verb] in AGREEING_RELATIONS and original["head"][verb] == head)
        assert original["xpos"][verb] in ("VBZ", "VBP", "VBD")
        assert original["feats"][subject]["Number"] == pair["number"] in ("Sing", "Plur")
        other = {"Sing": "Plur", "Plur": "Sing"}[pair["number"]]
        assert swapped_form(pair["forms"][1], original["lemma"][verb], other) == (pair["forms"][0], None)
        assert pair["intervening"] == verb - subject - 1 and 0 <= pair["attractors"] <= pair["intervening"]


HAND_WRITTEN = """\
# sent_id = s1
# text = The keys to the cabinet are on the table , but John and Mary can not find them .
1	The	the	DET	DT	Definite=Def|PronType=Art	2	det	_	_
2	keys	key	NOUN	NNS	Number=Plur	9	nsubj	_	_
3	to	to	ADP	IN	_	5	case	_	_
4	the	the	DET	DT	Definite=Def|PronType=Art	5	det	_	_
5	cabinet	cabinet	NOUN	NN	Number=Sing	2	nmod	_	_
6	are	be	AUX	VBP	Mood=Ind|Tense=Pres|VerbForm=Fin	9	cop	_	_
7	on	on	ADP	IN	_	9	case	_	_
8	the	the	DET	DT	Definite=Def|PronType=Art	9	det	_	_
9	table	table	NOUN	NN	Number=Sing	0	root	_	_
10	,	,	PUNCT	,	_	17	punct	_	_
11	but	but	CCONJ	CC	_	17	cc	_	_
12	John	John	PROPN	NNP	Number=Sing	17	nsubj	_	_
13	and	and	CCONJ	CC	_	14	cc	_	_
14	Mary	Mary	PROPN	NNP	Number=Sing	12	conj	_	_
15	can	can	AUX	MD	VerbForm=Fin	17	aux	_	_
16	not	not	PART	RB	_	17	advmod	_	_
17	find	find	VERB	VB	VerbForm=Inf	9	conj	_	_
18	them	they	PRON	PRP	Case=Acc|Number=Plur|Person=3|PronType=Prs	17	obj	_	_
19	.	.	PUNCT	.	_	9	punct	_	_

# sent_id = s2
# text = I think the dog barks and the cats sleep .
1	I	I	PRON	PRP	Case=Nom|Number=Sing|Person=1|PronType=Prs	2	nsubj	_	_
2	think	think	VERB	VBP	Mood=Ind|Tense=Pres|VerbForm=Fin	0	root	_	_
3	the	the	DET	DT	_	4	det	_	_
4	dog	dog	NOUN	NN	Number=Sing	5	nsubj	_	_
5	barks	bark	VERB	VBZ	Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin	2	ccomp	_	_
6	and	and	CCONJ	CC	_	9	cc	_	_
7	the	the	DET	DT	_	8	det	_	_
8	cats	cat	NOUN	NNS	Number=Plur	9	nsubj	_	_
9	sleep	sleep	VERB	VBP	Mood=Ind|Tense=Pres|VerbForm=Fin	5	conj	_	_
10	.	.	PUNCT	.	_	2	punct	_	_

# sent_id = s3
# text = There are dogs that the boy walked , and it can bark .
1	There	there	PRON	EX	_	2	expl	_	_
2	are	be	VERB	VBP	Mood=Ind|Tense=Pres|VerbForm=Fin	0	root	_	_
3	dogs	dog	NOUN	NNS	Number=Plur	2	nsubj	_	_
4	that	that	PRON	WDT	PronType=Rel	7	obj	_	_
5	the	the	DET	DT	_	6	det	_	_
6	boy	boy	NOUN	NN	Number=Sing	7	nsubj	_	_
7	walked	walk	VERB	VBD	Mood=Ind|Tense=Past|VerbForm=Fin	3	acl:relcl	_	_
8	,	,	PUNCT	,	_	12	punct	_	_
9	and	and	CCONJ	CC	_	12	cc	_	_
10	it	it	PRON	PRP	Case=Nom|Gender=Neut|Number=Sing|Person=3|PronType=Prs	12	nsubj	_	_
11	can	can	AUX	MD	VerbForm=Fin	12	aux	_	_
12	bark	bark	VERB	VB	VerbForm=Inf	2	conj	_	_
13	.	.	PUNCT	.	_	2	punct	_	_

"""


def test_hand_written_pairs_and_skips(tmp_path):
    """(b) Three sentences whose pairs and skips were worked out by hand; the changed word is found
    by comparing every position of the two sentences."""
    path = tmp_path / "hand.conllu"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    result = BuildAgreementPairs(treebank=DataPath(str(path))).run(treebank=DataPath(str(path)))
    found = []
    for pair in result["pairs"]:
        good, bad = pair_sentences(pair)
        [changed] = [i for i in range(len(good["tokens"])) if good["tokens"][i] != bad["tokens"][i]]
        found.append((pair["sent_id"], good["tokens"][pair["subject"]], changed, good["tokens"][changed], bad["tokens"][changed],
                      pair["number"], pair["intervening"], pair["attractors"]))
    assert found == [
        ("s1", "keys", 5, "are", "is", "Plur", 3, 1),  # "cabinet" is the attractor
        ("s2", "dog", 4, "barks", "bark", "Sing", 0, 0),
        ("s2", "cats", 8, "sleep", "sleeps", "Plur", 0, 0),
    ]
    assert result["stats"] == {
        "sentences": 3, "sentences_with_pairs": 2, "nsubj_arcs": 8, "pairs": 3, "intervening": 1, "attractor": 1,
        "skipped": {
            "first- or second-person subject": 1,  # I think
            "coordinated subject": 1,  # John and Mary
            "expletive (there) construction": 1,  # there are dogs
            "modal verb": 1,  # it can bark
            "past tense (no agreement)": 1,  # the boy walked
        },
    }


def test_verb_forms():
    assert [third_singular(lemma) for lemma in ("bark", "try", "play", "pass", "watch", "fix", "buzz", "push")] == [
        "barks", "tries", "plays", "passes", "watches", "fixes", "buzzes", "pushes"]
    assert [third_singular(lemma) for lemma in ("bus", "quiz", "echo", "e-mail", "x")] == [None] * 5
    assert swapped_form("Barks", "bark", "Sing") == ("Bark", None)
    assert swapped_form("IS", "be", "Sing") == ("ARE", None)
    assert swapped_form("were", "be", "Plur") == ("was", None)
    assert swapped_form("goes", "go", "Sing") == ("go", None)
    assert swapped_form("tries", "try", "Sing") == ("try", None)
    assert swapped_form("iS", "be", "Sing") == (None, "mixed-case form")
    assert swapped_form("'s", "be", "Sing") == (None, "irregular form outside the table")
    assert swapped_form("am", "be", "Plur") == (None, "irregular form outside the table")
    assert swapped_form("are", "be", "Sing") == (None, "form does not match its tag or lemma")
    assert swapped_form("barked", "bark", "Sing") == (None, "form does not match its tag or lemma")
    assert swapped_form("buses", "bus", "Sing") == (None, "-s form the rule cannot decide")


@pytest.fixture(scope="module")
def ewt_actions(ewt_sentences):
    """`build_tg_actions` on the slice (its WordPiece vocabulary trained on it), nothing dropped for length."""
    trees = {"train": ewt_sentences, "dev": ewt_sentences}
    return BuildTgActions(trees=trees, max_length=100_000).run(trees=trees, max_length=100_000)


@pytest.fixture(scope="module")
def tiny_models(ewt_actions, tmp_path_factory):
    """A randomly initialised, tiny LM of each kind, saved as `train_tg_lm` saves one."""
    layout = ewt_actions["layout"]
    models = {}
    for kind in LM_KINDS:
        settings = {"kind": kind, "vocab_size": len(ewt_actions["vocabulary"]), "num_terminals": layout["num_terminals"],
                    "num_labels": layout["num_labels"], "relative_form": "transformer_xl", "hidden_size": 16, "num_hidden_layers": 1,
                    "num_attention_heads": 2, "intermediate_size": 32}
        torch.manual_seed(0)
        model = TransformerGrammarLM(lm_config(**settings))
        directory = tmp_path_factory.mktemp(kind)
        save_file({name: tensor.contiguous() for name, tensor in model.state_dict().items()}, str(directory / "model.safetensors"))
        (directory / "config.json").write_text(json.dumps(settings))
        (directory / "metrics.json").write_text(json.dumps({"seed": 0, "seconds": 0.0}))
        models[kind] = directory
    return models


def evaluate(model: Path, actions, pairs, kind: str, **extra):
    cell = dict(model=model, actions=actions, pairs=pairs, table="tg_agreement", row=kind, column="english", scale="test",
                max_length=100_000, **extra)
    return EvaluateTgAgreement(**cell).run(**cell)


def test_grammatical_sequences_are_build_tg_actions_rows(ewt_actions, ewt_pairs):
    """The grammatical side is exactly the action sequence `build_tg_actions` made of that sentence
    (the tokenizer rebuilt from the result's vocabulary encodes as the trained one)."""
    kept, good, bad, dropped = pair_sequences(ewt_pairs["pairs"], ewt_actions, "tg", 100_000)
    assert len(kept) == len(ewt_pairs["pairs"]) and dropped == {}
    rows = {tuple(row["actions"]) for row in ewt_actions["dev"]}
    assert all(tuple(sequence) in rows for sequence in good)
    assert all(g != b for g, b in zip(good, bad))


def test_tiny_random_models_of_each_kind(tiny_models, ewt_actions, ewt_pairs):
    """(c) Every kind scores every extracted pair; accuracy in [0, 1]; the subsets are the pairs'."""
    stats = ewt_pairs["stats"]
    for kind, model in tiny_models.items():
        result = evaluate(model, ewt_actions, ewt_pairs, kind)
        assert result["pairs"] == stats["pairs"] and result["dropped"] == {}, kind
        assert 0.0 <= result["accuracy"] <= 1.0 and result["test"] == 100.0 * result["accuracy"]
        assert result["correct"] + result["ties"] <= result["pairs"]
        assert result["subsets"]["intervening"]["pairs"] == stats["intervening"]
        assert result["subsets"]["attractor"]["pairs"] == stats["attractor"]
        by_number = result["subsets"]["singular"], result["subsets"]["plural"]
        assert sum(s["pairs"] for s in by_number) == result["pairs"] and sum(s["correct"] for s in by_number) == result["correct"]
        assert result["row"] == kind and result["seed"] == 0 and result["metric"] == "accuracy"
        assert result["score"] == ("log p(x)" if kind == "txl_terminals" else "joint log p(x, y) with the gold tree")
    smoke = evaluate(tiny_models["tg"], ewt_actions, ewt_pairs, "tg", max_pairs=10)
    assert smoke["pairs"] == 10


def test_accuracy_under_rigged_scorers(tiny_models, ewt_actions, ewt_pairs, monkeypatch):
    """(d) With the LM's scorer replaced by rules that know the answer, accuracy is what the rule
    dictates: 1.0 when grammatical sentences always score higher, 0.0 when never or when tied, and
    the attractor share when only attractor pairs are right."""
    pairs = ewt_pairs["pairs"]
    layout = ActionLayout(**ewt_actions["layout"])
    tokenizer = wordpiece_from_vocabulary({p: i for i, p in enumerate(ewt_actions["vocabulary"][: layout.num_terminals])})
    # Model sequence → (grammatical?, the pair of an ungrammatical one); two pairs of one sentence
    # share its grammatical sequence, but each changes its own verb.
    side = {}
    for pair in pairs:
        for grammatical, sentence in zip((True, False), pair_sentences(pair)):
            actions, _ = sentence_actions(sentence, tokenizer, layout)
            [sequence] = model_sequences({"layout": ewt_actions["layout"], "x": [{"actions": actions}]}, "x", "tg")
            side[tuple(sequence)] = (True, None) if grammatical else (False, pair)
    assert len([key for key, (grammatical, _) in side.items() if not grammatical]) == len(pairs)

    def rig(rule):
        monkeypatch.setattr(agreement, "sentence_nll", lambda model, sequences, batch_size=64: [rule(*side[tuple(s)]) for s in sequences])
        return evaluate(tiny_models["tg"], ewt_actions, ewt_pairs, "tg")

    n, attractors, intervening = len(pairs), ewt_pairs["stats"]["attractor"], ewt_pairs["stats"]["intervening"]
    right = rig(lambda grammatical, pair: 0.0 if grammatical else 3.0)
    assert (right["accuracy"], right["correct"], right["ties"]) == (1.0, n, 0)
    assert right["subsets"]["intervening"]["accuracy"] == right["subsets"]["attractor"]["accuracy"] == 1.0
    wrong = rig(lambda grammatical, pair: 3.0 if grammatical else 0.0)
    assert (wrong["accuracy"], wrong["ties"]) == (0.0, 0)
    tied = rig(lambda grammatical, pair: 1.0)
    assert (tied["accuracy"], tied["ties"]) == (0.0, n)
    only_attractors = rig(lambda grammatical, pair: 1.0 if grammatical else (3.0 if pair["attractors"] > 0 else 0.0))
    assert only_attractors["accuracy"] == attractors / n
    assert only_attractors["subsets"]["attractor"]["accuracy"] == 1.0
    assert only_attractors["subsets"]["intervening"]["accuracy"] == attractors / intervening
