"""Dependency trees → Transformer-Grammar action sequences (Sartran et al., §2).

    parse_corpus / load_treebank_trees ──► build_tg_actions ──► train_tg_lm ──► evaluate_tg_lm

A dependency tree becomes a phrase-structure bracketing:

1. Projectivize by lifting: while an arc is non-projective, re-attach its dependent to its head's
   head (shortest arc first).  A tree whose heads do not form a tree (or that still is not
   projective after n² lifts) is counted and dropped.
2. Every word with dependents becomes a constituent labelled with its relation,
   "(rel left-deps w right-deps rel)", in surface order; leaf words are bare terminals; the
   WordPiece pieces of a word are consecutive terminals.
3. "(ROOT … ROOT)" wraps the sentence.

Relations are reduced to their universal part ("nmod:poss" → "nmod"): a closed set of 37 labels,
so dev/test trees never carry an unseen nonterminal.

The action sequence a' of the TG paper (Figure 2) starts with ``<s>`` and duplicates every closing
nonterminal into CNT1 (COMPOSE) and CNT2 (STACK), so T' = 1 + #terminals + 3·#constituents.

**Ids.** One vocabulary serves all three models.  Ids 0..V−1 are the WordPiece vocabulary ([PAD] = 0
is padding, [CLS] is ``<s>``, [SEP] ends a terminals-only sentence); then L opening labels "(rel",
L closing labels "rel)" used for CNT1 (and as the *prediction* of a closing action), and L more
"rel)²" for CNT2.  The CNT2 copy has its own id (the reference gives it the CNT1 id and a separate
type), so the type of every position is a function of its id alone: `action_types` and the TG
attention variant read it from ``input_ids`` through the (V, L) layout stored in the model config.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tango import Step
from tango.format import DillFormat

from models.attention.transformer_grammar import CNT1, CNT2, ONT, PAD, SOS, TERMINAL, action_types  # noqa: F401
from steps.common.data_root import DataError, DataPath
from steps.data.readers import Sentence, read_conllu
from steps.data.vocab import encode_words, load_tokenizer, train_wordpiece, vocabulary_size

logger = logging.getLogger(__name__)

ROOT_LABEL = "ROOT"
# Universal dependency relations (UD v2), in a fixed order so that label ids never depend on data.
UNIVERSAL_RELATIONS = (
    "acl", "advcl", "advmod", "amod", "appos", "aux", "case", "cc", "ccomp", "clf", "compound", "conj",
    "cop", "csubj", "dep", "det", "discourse", "dislocated", "expl", "fixed", "flat", "goeswith", "iobj",
    "list", "mark", "nmod", "nsubj", "nummod", "obj", "obl", "orphan", "parataxis", "punct", "reparandum",
    "root", "vocative", "xcomp",
)
NONTERMINAL_LABELS = (ROOT_LABEL,) + UNIVERSAL_RELATIONS

def nonterminal_label(deprel: str) -> str:
    """The constituent label of a relation: its universal part, "dep" if unknown."""
    base = deprel.split(":", 1)[0]
    return base if base in UNIVERSAL_RELATIONS else "dep"


@dataclass(frozen=True)
class ActionLayout:
    """Where the nonterminal ids start (V, the WordPiece vocabulary size) and how many labels (L)."""

    num_terminals: int
    num_labels: int = len(NONTERMINAL_LABELS)
    pad_id: int = 0
    sos_id: int = 1  # [CLS]
    eos_id: int = 2  # [SEP]

    @property
    def vocab_size(self) -> int:
        return self.num_terminals + 3 * self.num_labels

    def open_id(self, label: str) -> int:
        return self.num_terminals + NONTERMINAL_LABELS.index(label)

    def close_id(self, label: str) -> int:
        return self.num_terminals + self.num_labels + NONTERMINAL_LABELS.index(label)

    def stack_close_id(self, close_id: int) -> int:
        """The CNT2 id of a CNT1 id."""
        return close_id + self.num_labels

    def token_strings(self, terminal_strings: Sequence[str]) -> List[str]:
        return (list(terminal_strings) + [f"({label}" for label in NONTERMINAL_LABELS]
                + [f"{label})" for label in NONTERMINAL_LABELS] + [f"{label})²" for label in NONTERMINAL_LABELS])


# ---------------------------------------------------------------------------------------------
# Trees
# ---------------------------------------------------------------------------------------------


def is_tree(heads: Sequence[int]) -> bool:
    """Heads in 0..n, every word reaches 0 without a cycle."""
    n = len(heads)
    if any(not 0 <= head <= n for head in heads):
        return False
    for word in range(1, n + 1):
        seen = 0
        while word != 0:
            word = heads[word - 1]
            seen += 1
            if seen > n:
                return False
    return True


def non_projective_arcs(heads: Sequence[int]) -> List[int]:
    """Dependents (1-based) whose arc to their head spans a word the head does not dominate
    (``heads`` must be a tree; the artificial root 0 dominates everything)."""
    ancestors: List[set] = []
    for word in range(1, len(heads) + 1):
        chain, current = set(), word
        while current != 0:
            chain.add(current)
            current = heads[current - 1]
        ancestors.append(chain)  # the word itself and its ancestors, 0 excluded
    arcs = []
    for dependent, head in enumerate(heads, 1):
        if head == 0:
            continue
        low, high = sorted((head, dependent))
        if any(head not in ancestors[between - 1] for between in range(low + 1, high)):
            arcs.append(dependent)
    return arcs


def projectivize(heads: Sequence[int]) -> Optional[Tuple[List[int], int]]:
    """(projective heads, number of lifts), lifting the shortest non-projective arc to the head's
    head until none is left; None if ``heads`` is not a tree or lifting does not finish."""
    heads = list(heads)
    if not is_tree(heads):
        return None
    lifts = 0
    for _ in range(len(heads) ** 2 + 1):
        arcs = non_projective_arcs(heads)
        if not arcs:
            return heads, lifts
        dependent = min(arcs, key=lambda d: (abs(heads[d - 1] - d), d))
        heads[dependent - 1] = heads[heads[dependent - 1] - 1]
        lifts += 1
    return None


def tree_actions(pieces: Sequence[Sequence[int]], heads: Sequence[int], deprels: Sequence[str], layout: ActionLayout) -> List[int]:
    """The action sequence a' (with ``<s>`` and duplicated closing nonterminals) of a *projective*
    dependency tree whose word w has the terminal ids ``pieces[w-1]``."""
    children: List[List[int]] = [[] for _ in range(len(heads) + 1)]
    for dependent, head in enumerate(heads, 1):
        children[head].append(dependent)
    actions = [layout.sos_id, layout.open_id(ROOT_LABEL)]

    def close(label: str) -> None:
        cnt1 = layout.close_id(label)
        actions.extend((cnt1, layout.stack_close_id(cnt1)))

    # Iterative DFS (deep parses would hit Python's recursion limit) over pending items: ("word", w)
    # to expand, ("pieces", w) to emit w's terminals, ("close", label) to close a constituent.
    pending: List[Tuple[str, object]] = [("close", ROOT_LABEL)] + [("word", w) for w in reversed(children[0])]
    while pending:
        kind, item = pending.pop()
        if kind == "close":
            close(item)  # type: ignore[arg-type]
        elif kind == "pieces" or not children[item]:  # type: ignore[index]
            actions.extend(pieces[item - 1])  # type: ignore[operator]
        else:
            word = item
            label = nonterminal_label(deprels[word - 1])  # type: ignore[operator]
            actions.append(layout.open_id(label))
            # Pushed in reverse of the order they are emitted: left dependents, the word, right ones.
            pending.append(("close", label))
            pending.extend(("word", d) for d in reversed(children[word]) if d > word)  # type: ignore[index,operator]
            pending.append(("pieces", word))
            pending.extend(("word", d) for d in reversed(children[word]) if d < word)  # type: ignore[index,operator]
    return actions


# ---------------------------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------------------------


def sentence_actions(sentence: Sentence, tokenizer, layout: ActionLayout) -> Optional[Tuple[List[int], int]]:
    """(action ids, lifted arcs) of one sentence, or None if its tree cannot be projectivized."""
    projective = projectivize(sentence["head"])
    if projective is None:
        return None
    heads, lifts = projective
    pieces = encode_words(tokenizer, sentence["tokens"])
    return tree_actions(pieces, heads, sentence["deprel"], layout), lifts


def actions_of_split(sentences: Sequence[Sentence], tokenizer, layout: ActionLayout, max_length: int, name: str):
    """Rows {"actions": ids, "words": n} of a split, and its counts (dropped, lifted, lengths)."""
    rows: List[Dict[str, Any]] = []
    unprojectivizable = too_long = lifted_sentences = lifted_arcs = 0
    for sentence in sentences:
        if len(sentence.get("head", ())) != len(sentence["tokens"]):
            raise DataError(f"{name}: a sentence has {len(sentence['tokens'])} tokens but {len(sentence.get('head', ()))} heads")
        result = sentence_actions(sentence, tokenizer, layout)
        if result is None:
            unprojectivizable += 1
            continue
        actions, lifts = result
        if len(actions) > max_length:
            too_long += 1
            continue
        lifted_sentences += lifts > 0
        lifted_arcs += lifts
        rows.append({"actions": actions, "words": len(sentence["tokens"])})
    lengths = sorted(len(row["actions"]) for row in rows)
    stats = {
        "sentences": len(sentences),
        "kept": len(rows),
        "dropped_unprojectivizable": unprojectivizable,
        "dropped_too_long": too_long,
        "lifted_sentences": lifted_sentences,
        "lifted_arcs": lifted_arcs,
        "words": sum(row["words"] for row in rows),
        "mean_length": sum(lengths) / max(len(lengths), 1),
        "median_length": lengths[len(lengths) // 2] if lengths else 0,
        "max_length": lengths[-1] if lengths else 0,
    }
    logger.info(
        "%s: %d sentences → %d action sequences; dropped %d unprojectivizable, %d longer than %d actions; "
        "%d sentences needed %d lifted arcs", name, len(sentences), len(rows), unprojectivizable, too_long,
        max_length, lifted_sentences, lifted_arcs,
    )
    return rows, stats


@Step.register("load_treebank_trees")
class LoadTreebankTrees(Step):
    """Gold trees of a UD treebank as parsed-corpus-shaped splits: ``{"train", "dev", "test"}`` of
    sentences as in :mod:`steps.data.readers` (the second language of the TG comparison: EWT)."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DillFormat("gz")

    def run(self, train: DataPath, dev: DataPath, test: DataPath) -> Dict[str, Any]:  # type: ignore[override]
        return {name: read_conllu(path.resolve()) for name, path in (("train", train), ("dev", dev), ("test", test))}


@Step.register("build_tg_actions")
class BuildTgActions(Step):
    """Transformer-Grammar action sequences of every tree (Sartran et al., §2.1): projectivized by lifting,
    deprel-labelled constituents, WordPiece terminals, "(ROOT … ROOT)", duplicated closing
    nonterminals.  ``trees`` is a `parse_corpus` result (train/dev) or `load_treebank_trees`
    (train/dev/test); ``tokenizer`` the language's vocabulary, or None to train a WordPiece
    vocabulary on the train split's words here (size as `train_tokenizer`).

    Result: ``{"layout": {...}, "vocabulary": [str], <split>: [{"actions", "words"}], "stats": {split:
    counts incl. dropped_unprojectivizable, dropped_too_long, lifted arcs, lengths}}``.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DillFormat("gz")

    def run(self, trees: Dict[str, Any], tokenizer: Optional[Path] = None, max_length: int = 256) -> Dict[str, Any]:  # type: ignore[override]
        if tokenizer is not None:
            wordpiece = load_tokenizer(Path(tokenizer))
        else:
            train_words = [sentence["tokens"] for sentence in trees["train"]]
            wordpiece = train_wordpiece(train_words, vocabulary_size(len({w for words in train_words for w in words})))
        if (wordpiece.pad_token_id, wordpiece.cls_token_id, wordpiece.sep_token_id) != (0, 1, 2):
            raise DataError(f"{tokenizer}: the action layout needs [PAD] [CLS] [SEP] = ids 0 1 2")
        layout = ActionLayout(num_terminals=len(wordpiece))
        terminals = wordpiece.convert_ids_to_tokens(list(range(len(wordpiece))))
        result: Dict[str, Any] = {"layout": asdict(layout), "vocabulary": layout.token_strings(terminals), "stats": {}}
        for split in ("train", "dev", "test"):
            if split in trees:
                result[split], result["stats"][split] = actions_of_split(trees[split], wordpiece, layout, max_length, split)
        return result
