"""A subject–verb agreement probe for the TG comparison, made from gold English EWT trees.

    UD test file ──► build_agreement_pairs ──► evaluate_tg_agreement ◄── train_tg_lm, build_tg_actions

**Pairs.**  For every ``nsubj`` / ``nsubj:pass`` arc whose subject is a third-person NOUN, PROPN or
PRON with ``Number=Sing`` or ``Plur``, the agreeing word is the leftmost finite one (XPOS VBZ, VBP,
VBD, MD) among the subject's head and the head's ``aux`` / ``aux:pass`` / ``cop`` dependents.  If it
comes after the subject and agrees as annotated (VBZ and was with Sing, VBP and were with Plur), the
ungrammatical twin is the same sentence and the same tree with only that word's form swapped:
is/are, was/were, has/have, does/do, goes/go from a table, other verbs by the regular -s rule from
their lemma.  Anything else is skipped and counted by reason (`SKIP_REASONS`), never guessed:
first/second-person subjects (I/you take VBP in the singular), coordinated and collective/quantity
subjects (either number can be grammatical), "there" constructions, modals, past tense, inverted
order, disagreement in the annotation, contracted or irregular forms outside the table, -s forms
the rule cannot decide.

**Subsets.**  ``intervening``: at least one word between subject and verb; ``attractor``: among
those words a noun or pronoun of the other number ("the keys to the cabinet are"); ``singular`` and
``plural``: by the subject's number.

**Scores.**  Each model scores both sentences its own way, as `evaluate_tg_lm` does: TG and TXL
(trees) the joint log p(x, y) of the words and the gold tree (the same tree on both sides), TXL
(terminals) log p(x).  A pair counts as correct when the grammatical sentence scores strictly
higher; ties count as wrong and are reported.
"""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tango import Step
from tango.format import JsonFormat

from models.transformer_grammar import closing_form
from steps.common.data_root import DataPath
from steps.common.runtime import torch_threads
from steps.data.readers import Sentence, read_conllu
from steps.data.vocab import wordpiece_from_vocabulary
from steps.tg.actions import ActionLayout, sentence_actions
from steps.tg.language_model import load_cell_lm, model_sequences, sentence_nll

logger = logging.getLogger(__name__)

SUBJECT_RELATIONS = ("nsubj", "nsubj:pass")
AGREEING_RELATIONS = ("aux", "aux:pass", "cop")
FINITE_XPOS = ("VBZ", "VBP", "VBD", "MD")
NOMINAL_UPOS = ("NOUN", "PROPN", "PRON")
NUMBER_OF_XPOS = {"VBZ": "Sing", "VBP": "Plur"}
OTHER_NUMBER = {"Sing": "Plur", "Plur": "Sing"}
# Irregular forms: form → (the number it agrees with, the form of the other number).
IRREGULAR_FORMS = {
    "is": ("Sing", "are"), "are": ("Plur", "is"), "was": ("Sing", "were"), "were": ("Plur", "was"),
    "has": ("Sing", "have"), "have": ("Plur", "has"), "does": ("Sing", "do"), "do": ("Plur", "does"),
    "goes": ("Sing", "go"), "go": ("Plur", "goes"),
}
IRREGULAR_LEMMAS = ("be", "have", "do", "go")
# Subjects whose verb may take either number ("the team is/are", "none of them is/are", "a lot of
# people are"): collective and quantity nouns and quantifier pronouns, skipped.
NOTIONAL_NUMBER_LEMMAS = frozenset(
    "all any army audience band board bunch class club committee company council couple crew department either "
    "family firm government group half jury kind lot lots majority management minority more most neither none "
    "number party percent plenty police public remainder rest series some sort staff team total type variety".split()
)
SKIP_REASONS = (
    "nsubj subtype other than nsubj:pass",
    "subject not a noun or pronoun",
    "first- or second-person subject",
    "subject has no Number=Sing|Plur",
    "collective or quantity subject",
    "coordinated subject",
    "expletive (there) construction",
    "no finite verb",
    "modal verb",
    "subject after the verb",
    "past tense (no agreement)",
    "verb disagrees as annotated",
    "verb already paired",
    "irregular form outside the table",
    "form does not match its tag or lemma",
    "-s form the rule cannot decide",
    "mixed-case form",
)


def third_singular(lemma: str) -> Optional[str]:
    """The regular third-person singular of a verb lemma, or None where spelling is not decidable
    by rule (a final single -s/-z: "buses"/"busses"; a final -o: "echoes"/"radios"; non-letters)."""
    if len(lemma) < 2 or not lemma.isalpha() or not lemma.islower():
        return None
    if lemma.endswith(("ss", "zz", "sh", "ch", "x")):
        return lemma + "es"
    if lemma.endswith(("s", "z", "o")):
        return None
    if lemma.endswith("y"):
        return lemma + "s" if lemma[-2] in "aeiou" else lemma[:-1] + "ies"
    return lemma + "s"


def _with_case_of(form: str, lowered: str) -> Optional[str]:
    if form == form.lower():
        return lowered
    if form == form.upper() and len(form) > 1:
        return lowered.upper()
    if form == form[0].upper() + form[1:].lower():
        return lowered[0].upper() + lowered[1:]
    return None


def swapped_form(form: str, lemma: str, number: str) -> Tuple[Optional[str], Optional[str]]:
    """(the form of the other number, None) for a verb form that agrees with ``number``, or
    (None, skip reason)."""
    lowered, lemma = form.lower(), lemma.lower()
    if lowered in IRREGULAR_FORMS:
        agrees_with, other = IRREGULAR_FORMS[lowered]
        if agrees_with != number:
            return None, "form does not match its tag or lemma"
    elif lemma in IRREGULAR_LEMMAS:
        return None, "irregular form outside the table"
    else:
        singular = third_singular(lemma)
        if singular is None:
            return None, "-s form the rule cannot decide"
        if (lowered, number) not in ((singular, "Sing"), (lemma, "Plur")):
            return None, "form does not match its tag or lemma"
        other = lemma if number == "Sing" else singular
    cased = _with_case_of(form, other)
    return (cased, None) if cased is not None else (None, "mixed-case form")


def _agreeing_word(sentence: Sentence, subject: int, dependents: Dict[int, List[int]]) -> Tuple[Optional[int], Optional[str]]:
    """(0-based index of the word that agrees with ``subject``, None) or (None, skip reason)."""
    head = sentence["head"][subject] - 1
    candidates = [head] + [d for d in dependents[head] if sentence["deprel"][d] in AGREEING_RELATIONS]
    finite = sorted(word for word in candidates if sentence["xpos"][word] in FINITE_XPOS)
    if not finite:
        return None, "no finite verb"
    verb = finite[0]
    if sentence["xpos"][verb] == "MD":
        return None, "modal verb"
    if verb < subject:
        return None, "subject after the verb"
    if sentence["xpos"][verb] == "VBD" and sentence["tokens"][verb].lower() not in ("was", "were"):
        return None, "past tense (no agreement)"
    return verb, None


def _verb_number(sentence: Sentence, verb: int) -> str:
    if sentence["xpos"][verb] == "VBD":
        return IRREGULAR_FORMS[sentence["tokens"][verb].lower()][0]
    return NUMBER_OF_XPOS[sentence["xpos"][verb]]


def sentence_pairs(sentence: Sentence, skipped: Counter) -> List[Dict[str, Any]]:
    """The agreement pairs of one sentence read with ``read_conllu(..., morphology=True)``; every
    nsubj arc that gives none adds one to ``skipped[reason]``."""
    dependents: Dict[int, List[int]] = {i: [] for i in range(-1, len(sentence["tokens"]))}
    for word, head in enumerate(sentence["head"]):
        dependents[head - 1].append(word)
    pairs: List[Dict[str, Any]] = []
    used = set()
    for subject, relation in enumerate(sentence["deprel"]):
        if relation.split(":")[0] != "nsubj":
            continue
        feats = sentence["feats"][subject]
        number = feats.get("Number")
        head = sentence["head"][subject] - 1
        reason, verb = None, None
        if relation not in SUBJECT_RELATIONS:
            reason = "nsubj subtype other than nsubj:pass"  # nsubj:outer
        elif sentence["upos"][subject] not in NOMINAL_UPOS:
            reason = "subject not a noun or pronoun"
        elif feats.get("Person", "3") != "3":
            reason = "first- or second-person subject"
        elif number not in OTHER_NUMBER:
            reason = "subject has no Number=Sing|Plur"
        elif sentence["lemma"][subject].lower() in NOTIONAL_NUMBER_LEMMAS:
            reason = "collective or quantity subject"
        elif any(sentence["deprel"][d].split(":")[0] == "conj" for d in dependents[subject]):
            reason = "coordinated subject"
        elif head < 0:  # an nsubj at the root (not UD, but not for us to guess)
            reason = "no finite verb"
        elif any(sentence["deprel"][d] == "expl" for d in dependents[head]):
            reason = "expletive (there) construction"
        else:
            verb, reason = _agreeing_word(sentence, subject, dependents)
        if reason is None and _verb_number(sentence, verb) != number:
            reason = "verb disagrees as annotated"
        if reason is None and verb in used:
            reason = "verb already paired"
        if reason is None:
            other, reason = swapped_form(sentence["tokens"][verb], sentence["lemma"][verb], number)
        if reason is not None:
            skipped[reason] += 1
            continue
        used.add(verb)
        between = range(subject + 1, verb)
        pairs.append({
            "sent_id": sentence.get("sent_id"),
            "tokens": list(sentence["tokens"]), "head": list(sentence["head"]), "deprel": list(sentence["deprel"]),
            "subject": subject, "verb": verb, "number": number,
            "forms": [sentence["tokens"][verb], other],
            "intervening": len(between),
            "attractors": sum(sentence["upos"][w] in NOMINAL_UPOS and sentence["feats"][w].get("Number") == OTHER_NUMBER[number]
                              for w in between),
        })
    return pairs


def agreement_pairs(sentences: Sequence[Sentence]) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """(pairs, counts) of a treebank split read with ``morphology=True``: a pair per usable nsubj
    arc (see the module doc), the skipped arcs by reason."""
    pairs: List[Dict[str, Any]] = []
    skipped: Counter = Counter()
    with_pairs = 0
    for sentence in sentences:
        found = sentence_pairs(sentence, skipped)
        pairs.extend(found)
        with_pairs += bool(found)
    stats = {
        "sentences": len(sentences),
        "sentences_with_pairs": with_pairs,
        "nsubj_arcs": len(pairs) + sum(skipped.values()),
        "pairs": len(pairs),
        "intervening": sum(p["intervening"] > 0 for p in pairs),
        "attractor": sum(p["attractors"] > 0 for p in pairs),
        "skipped": {reason: skipped[reason] for reason in SKIP_REASONS if skipped[reason]},
    }
    return pairs, stats


def pair_sentences(pair: Dict[str, Any]) -> Tuple[Sentence, Sentence]:
    """The grammatical and the ungrammatical sentence of a pair: one tree, the verb's form swapped."""
    tokens = list(pair["tokens"])
    tokens[pair["verb"]] = pair["forms"][1]
    tree = {"head": list(pair["head"]), "deprel": list(pair["deprel"])}
    return dict(tree, tokens=list(pair["tokens"])), dict(tree, tokens=tokens)


# Made once and shared by every model's evaluation; the pairs and skip counts stay inspectable in the cache.
@Step.register("build_agreement_pairs")
class BuildAgreementPairs(Step):
    """Subject–verb agreement minimal pairs of an English UD file (module doc).

    Result: ``{"source": file name, "pairs": [{"sent_id", "tokens", "head", "deprel", "subject",
    "verb", "number", "forms": [grammatical, ungrammatical], "intervening", "attractors"}], "stats":
    {"nsubj_arcs", "pairs", "intervening", "attractor", "skipped": {reason: count}, …}}``."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = JsonFormat()

    def run(self, treebank: DataPath) -> Dict[str, Any]:  # type: ignore[override]
        path = treebank.resolve()
        pairs, stats = agreement_pairs(read_conllu(path, morphology=True))
        self.logger.info("%s: %d agreement pairs from %d nsubj arcs (%d with an intervening word, %d with an "
                         "attractor); skipped %s", path.name, stats["pairs"], stats["nsubj_arcs"],
                         stats["intervening"], stats["attractor"], stats["skipped"])
        return {"source": path.name, "pairs": pairs, "stats": stats}


def pair_sequences(pairs: Sequence[Dict[str, Any]], actions: Dict[str, Any], kind: str, max_length: int,
                   closing_nonterminals: str = "duplicated"):
    """(kept pairs, grammatical id sequences, ungrammatical ones, skipped counts) for ``kind``: the
    pair's two sentences through `sentence_actions` with the WordPiece vocabulary of ``actions``
    (`build_tg_actions`), then `model_sequences` (``closing_nonterminals``: TXL (trees)' form).  Pairs are dropped (counted) where the tree cannot
    be projectivized, either action sequence is longer than ``max_length``, or both sentences
    tokenize to the same ids; these depend on the tree and words only, so every kind keeps the
    same pairs."""
    layout = ActionLayout(**actions["layout"])
    tokenizer = wordpiece_from_vocabulary({piece: i for i, piece in enumerate(actions["vocabulary"][: layout.num_terminals])})
    kept, rows = [], {"good": [], "bad": []}
    skipped = Counter()
    for pair in pairs:
        results = [sentence_actions(sentence, tokenizer, layout) for sentence in pair_sentences(pair)]
        if any(result is None for result in results):
            skipped["unprojectivizable"] += 1
        elif any(len(actions_) > max_length for actions_, _ in results):
            skipped["too_long"] += 1
        elif results[0][0] == results[1][0]:
            skipped["same_after_tokenization"] += 1
        else:
            kept.append(pair)
            rows["good"].append({"actions": results[0][0]})
            rows["bad"].append({"actions": results[1][0]})
    sequences = {side: model_sequences({"layout": actions["layout"], side: rows[side]}, side, kind, closing_nonterminals)
                 for side in rows}
    return kept, sequences["good"], sequences["bad"], dict(skipped)


def agreement_accuracy(pairs: Sequence[Dict[str, Any]], good_scores: Sequence[float], bad_scores: Sequence[float]) -> Dict[str, Any]:
    """Accuracy (grammatical scores strictly higher) over all pairs and subsets, with counts.  The
    singular and plural subsets show a preference for one form whatever the subject: summed log
    probabilities favour the form with fewer or likelier pieces ("bark" over "bark ##s")."""

    def summary(chosen: List[int]) -> Dict[str, Any]:
        correct = sum(good_scores[i] > bad_scores[i] for i in chosen)
        return {"pairs": len(chosen), "correct": correct, "ties": sum(good_scores[i] == bad_scores[i] for i in chosen),
                "accuracy": correct / len(chosen) if chosen else None}

    everything = list(range(len(pairs)))
    return dict(summary(everything), subsets={
        "intervening": summary([i for i in everything if pairs[i]["intervening"] > 0]),
        "attractor": summary([i for i in everything if pairs[i]["attractors"] > 0]),
        "singular": summary([i for i in everything if pairs[i]["number"] == "Sing"]),
        "plural": summary([i for i in everything if pairs[i]["number"] == "Plur"]),
    })


# Beside perplexity, a syntactic test (the TG paper's §3.3 question, on our treebank): does the model prefer agreement?
@Step.register("evaluate_tg_agreement")
class EvaluateTgAgreement(Step):
    """Agreement accuracy of a `train_tg_lm` model on `build_agreement_pairs` (module doc), as one
    seed's score in the `score_cell` layout (table, row = the model's kind, column = ``language``,
    "test" = the accuracy in %, as the other accuracy tables), with the counts, the subsets (as
    fractions) and the dropped pairs."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = JsonFormat()
    SKIP_ID_ARGUMENTS = {"num_threads", "device"}

    def run(  # type: ignore[override]
        self, model: Path, actions: Dict[str, Any], pairs: Dict[str, Any], table: str, row: str, column: str, scale: str,
        max_length: int = 256, max_pairs: Optional[int] = None, num_threads: Optional[int] = None, device: Optional[str] = "auto",
    ) -> Dict[str, Any]:
        """:param max_length: drop pairs whose action sequences are longer (the training data's limit).
        :param max_pairs: score only the first N pairs (smoke scale); None = all."""
        lm, training = load_cell_lm(model, row, "evaluate_tg_agreement", device)
        kind = lm.config.tg_kind
        kept, good, bad, dropped = pair_sequences(pairs["pairs"][:max_pairs], actions, kind, max_length, closing_form(lm.config))
        with torch_threads(num_threads):
            good_scores = [-nll for nll in sentence_nll(lm, good)]
            bad_scores = [-nll for nll in sentence_nll(lm, bad)]
        result = agreement_accuracy(kept, good_scores, bad_scores)
        self.logger.info("%s %s agreement: %s of %d pairs (intervening %s, attractor %s)", column, kind, result["accuracy"],
                         result["pairs"], result["subsets"]["intervening"]["accuracy"], result["subsets"]["attractor"]["accuracy"])
        return dict(
            result, table=table, row=kind, column=column, scale=scale, seed=training["seed"], task="agreement",
            metric="accuracy", test=100.0 * result["accuracy"], dev=None, source=pairs["source"], dropped=dropped,
            score="log p(x)" if kind == "txl_terminals" else "joint log p(x, y) with the gold tree",
            train_seconds=training["seconds"], device=str(next(lm.parameters()).device),
        )
