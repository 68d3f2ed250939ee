"""The figures a fine-tuned model is scored by, computed from gold and predicted annotations alone
(the fine-tuning steps call them, and so does `steps.evaluate.rescore` on committed predictions):

- UD parsing: `attachment_scores` (the paper's LAS, as the reference's, and UAS, ``las_universal``) and
  `official_scores` (the CoNLL 2018 shared-task scorer);
- NER: `span_scores` (seqeval span F1, strict BIOUL).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Sequence

from steps.common.data_root import DataError
from steps.data.readers import Sentence


# Gold UPOS tags excluded from attachment scores, as in the paper's evaluation (AllenNLP's AttachmentScores).
PUNCTUATION_UPOS = frozenset({"PUNCT", "SYM"})


def attachment_scores(gold: Sequence[Sentence], predicted: Sequence[Sentence]) -> Dict[str, float]:
    """UPOS accuracy (all words) and UAS/LAS in percent over the words whose gold UPOS is not
    PUNCT/SYM.

    ``las`` is the paper's metric (AllenNLP's ``AttachmentScores``): the full relation
    label must match, subtypes included ("nmod:poss" ≠ "nmod"). ``las_universal`` compares
    universal relations only (subtypes stripped, as the CoNLL 2018 scorer does, though that
    scorer also counts punctuation: see `official_scores`).
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    words = upos_correct = scored = unlabeled = labeled = labeled_universal = 0
    for number, (g, p) in enumerate(zip(gold, predicted), 1):
        if g["tokens"] != p["tokens"]:
            raise ValueError(f"sentence {number}: predicted tokens differ from gold")
        for i in range(len(g["tokens"])):
            words += 1
            upos_correct += g["upos"][i] == p["upos"][i]
            if g["upos"][i] in PUNCTUATION_UPOS:
                continue
            scored += 1
            if g["head"][i] == p["head"][i]:
                unlabeled += 1
                labeled += g["deprel"][i] == p["deprel"][i]
                labeled_universal += g["deprel"][i].split(":")[0] == p["deprel"][i].split(":")[0]
    return {
        "upos_accuracy": 100.0 * upos_correct / max(words, 1),
        "uas": 100.0 * unlabeled / max(scored, 1),
        "las": 100.0 * labeled / max(scored, 1),
        "las_universal": 100.0 * labeled_universal / max(scored, 1),
        "scored_words": scored,
    }


# What each figure of metrics.json is; the report names them from here.
METRIC_DEFINITIONS = {
    "las": "the paper's LAS (AllenNLP AttachmentScores): head and full relation label "
           "(subtypes included) correct, over words whose gold UPOS is not PUNCT/SYM",
    "las_universal": "as las, but comparing universal relations only (subtypes stripped)",
    "uas": "head correct, over words whose gold UPOS is not PUNCT/SYM",
    "udeval": "official CoNLL 2018 UD scorer (udtools.udeval) on predicted-test.conllu against the "
              "unmodified gold test file: every word, punctuation included, subtypes stripped",
    "udeval_dev": "the same on predicted-dev.conllu against the gold dev file",
}


def official_scores(gold: Path, system: Path) -> Dict[str, Any]:
    """F1 × 100 of the CoNLL 2018 shared-task scorer (``udtools.udeval``) for the attachment
    metrics. It counts punctuation and, on gold tokens, precision = recall = F1."""
    from udtools import udeval

    try:
        evaluation = udeval.evaluate(udeval.load_conllu_file(str(gold)), udeval.load_conllu_file(str(system)))
    except udeval.UDError as e:
        raise DataError(f"{system}: official UD scorer refused it against {gold} ({e})") from None
    scores: Dict[str, Any] = {name: 100.0 * evaluation[name].f1 for name in ("Words", "UAS", "LAS", "CLAS", "MLAS", "BLEX")}
    scores["note"] = "CoNLL 2018 UD scorer (udtools.udeval) on gold words; punctuation included"
    return scores


def span_scores(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], per_type: bool = False) -> Dict[str, Any]:
    """Micro span precision/recall/F1 in percent (seqeval, strict BILOU), optionally per type."""
    from seqeval.metrics import classification_report
    from seqeval.scheme import BILOU

    report = classification_report(list(gold), list(predicted), mode="strict", scheme=BILOU, output_dict=True, zero_division=0)

    def percent(row):
        return {"f1": 100 * float(row["f1-score"]), "precision": 100 * float(row["precision"]),
                "recall": 100 * float(row["recall"]), "support": int(row["support"])}

    micro = report.get("micro avg", {"f1-score": 0.0, "precision": 0.0, "recall": 0.0, "support": 0})
    scores = percent(micro)
    if per_type:
        scores["per_type"] = {name: percent(row) for name, row in report.items() if not name.endswith(" avg")}
    return scores


__all__ = ["METRIC_DEFINITIONS", "PUNCTUATION_UPOS", "attachment_scores", "official_scores", "span_scores"]
