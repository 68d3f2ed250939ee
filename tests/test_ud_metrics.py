"""The UD scores (AllenNLP's AttachmentScores) and the CoNLL-U writers, against independent reference loops on real
Wolof sentences; re-scoring NER predictions without the cache."""
from __future__ import annotations

import json
import random

import pytest

from steps.data.readers import read_conllu, write_conllu, write_predicted_conllu
from steps.evaluate import rescore
from steps.evaluate.metrics import attachment_scores, official_scores

WOLOF_DEV = "wolof/ud/wo_wtb-ud-dev.conllu"


def perturbed(sentences, seed=0):
    """Copies with some heads moved, some subtypes dropped or swapped and some labels replaced;
    still trees (only leaves move, and never to the root or themselves)."""
    rng = random.Random(seed)
    out = []
    for s in sentences:
        heads, deprels = list(s["head"]), list(s["deprel"])
        leaves = set(range(1, len(heads) + 1)) - set(heads)
        for i, relation in enumerate(deprels):
            roll = rng.random()
            if roll < 0.1 and i + 1 in leaves and heads[i] != 0 and len(heads) > 2:
                heads[i] = rng.choice([j for j in range(1, len(heads) + 1) if j not in (i + 1, heads[i])])
                leaves.discard(heads[i])  # it has a dependent now, so moving it could close a cycle
            elif roll < 0.4 and ":" in relation:
                deprels[i] = relation.split(":")[0] if rng.random() < 0.5 else relation.split(":")[0] + ":other"
            elif roll < 0.5:
                deprels[i] = "dep"
        out.append(dict(s, head=heads, deprel=deprels))
    return out


def reference_scores(gold, predicted):
    """AllenNLP-style attachment counts, one word at a time (written apart from the code under test)."""
    total = heads_right = full_right = universal_right = 0
    for g, p in zip(gold, predicted):
        for upos, gold_head, gold_rel, head, rel in zip(g["upos"], g["head"], g["deprel"], p["head"], p["deprel"]):
            if upos == "PUNCT" or upos == "SYM":
                continue
            total += 1
            if gold_head != head:
                continue
            heads_right += 1
            if gold_rel == rel:
                full_right += 1
            if gold_rel.partition(":")[0] == rel.partition(":")[0]:
                universal_right += 1
    return {"uas": 100 * heads_right / total, "las": 100 * full_right / total,
            "las_universal": 100 * universal_right / total, "scored_words": total}


def test_paper_las_counts_subtypes_and_skips_gold_punctuation(data_root):
    gold = read_conllu(data_root / WOLOF_DEV)
    subtyped = sum(":" in r for s in gold for r in s["deprel"])
    assert subtyped > 500  # acl:relcl, obj:appl, compound:prt, ...
    predicted = perturbed(gold)
    ours, reference = attachment_scores(gold, predicted), reference_scores(gold, predicted)
    for name, value in reference.items():
        assert ours[name] == pytest.approx(value), name
    assert ours["las_universal"] - ours["las"] > 1  # the subtype changes are seen by one metric only
    assert attachment_scores(gold, gold)["las"] == 100.0


def hand_written_conllu(sentences):
    """The writer this project used before `conllu`'s serializer (the reference for write_conllu)."""
    lines = []
    for s in sentences:
        for i, token in enumerate(s["tokens"]):
            lines.append("\t".join([str(i + 1), token, "_", s["upos"][i], s["xpos"][i], "_", str(s["head"][i]), s["deprel"][i], "_", "_"]))
        lines.append("")
    return "\n".join(lines) + "\n"


def test_write_conllu_writes_what_the_hand_written_writer_did(data_root, tmp_path):
    sentences = read_conllu(data_root / WOLOF_DEV)
    write_conllu(sentences, tmp_path / "out.conllu")
    assert (tmp_path / "out.conllu").read_text(encoding="utf-8") == hand_written_conllu(sentences)
    assert read_conllu(tmp_path / "out.conllu") == sentences


def test_predicted_conllu_against_the_unmodified_gold_file(data_root, tmp_path):
    gold_file = data_root / WOLOF_DEV
    gold = read_conllu(gold_file)
    write_predicted_conllu(gold_file, gold, tmp_path / "same.conllu")
    assert (tmp_path / "same.conllu").read_bytes() == gold_file.read_bytes()
    assert official_scores(gold_file, tmp_path / "same.conllu")["LAS"] == 100.0

    predicted = perturbed(gold, seed=1)
    write_predicted_conllu(gold_file, predicted, tmp_path / "predicted.conllu")
    assert read_conllu(tmp_path / "predicted.conllu") == predicted
    # The official scorer: every word, punctuation included, subtypes stripped.
    pairs = [(g, p) for gs, ps in zip(gold, predicted) for g, p in zip(zip(gs["head"], gs["deprel"]), zip(ps["head"], ps["deprel"]))]
    expected = 100 * sum(g[0] == p[0] and g[1].split(":")[0] == p[1].split(":")[0] for g, p in pairs) / len(pairs)
    official = official_scores(gold_file, tmp_path / "predicted.conllu")
    assert official["LAS"] == pytest.approx(expected) and official["Words"] == 100.0

    with pytest.raises(ValueError, match=r"wo_wtb-ud-dev.conllu:\d+: more sentences than the 3 predicted"):
        write_predicted_conllu(gold_file, predicted[:3], tmp_path / "short.conllu")
    with pytest.raises(ValueError, match=rf"wo_wtb-ud-dev.conllu: {len(gold)} sentences but {len(gold) + 1} predicted"):
        write_predicted_conllu(gold_file, predicted + predicted[:1], tmp_path / "long.conllu")
    wrong_words = [dict(predicted[0], tokens=["x"] * len(predicted[0]["tokens"]))] + predicted[1:]
    with pytest.raises(ValueError, match=r"wo_wtb-ud-dev.conllu:1: predicted sentence 1 has other words than gold"):
        write_predicted_conllu(gold_file, wrong_words, tmp_path / "wrong.conllu")


def test_rescore_gives_ner_span_f1_from_the_bio_file(tmp_path, capsys):
    # Two sentences; gold has three entities, the prediction finds one exactly, one with a wrong
    # boundary, misses one and invents one: P = 1/3, R = 1/3, F1 = 1/3 (strict spans).
    rows = [
        [("Dakar", "U-LOC", "U-LOC"), ("ak", "O", "O"), ("Ndar", "U-LOC", "O")],
        [("Abdoulaye", "B-PER", "U-PER"), ("Wade", "L-PER", "O"), ("dem", "O", "U-ORG")],
    ]
    (tmp_path / "predicted-test.bio").write_text("\n\n".join("\n".join(" ".join(r) for r in s) for s in rows) + "\n\n")
    (tmp_path / "metrics.json").write_text(json.dumps({"task": "ner", "primary_metric": "f1", "test": {"f1": 100 / 3}}))
    assert rescore.main([str(tmp_path)]) == 0
    assert "ner\ttest\tspan f1\t33.3333\trecorded 33.3333\n" in capsys.readouterr().out
