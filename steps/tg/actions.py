"""Dependency trees → Transformer-Grammar action sequences (SPEC §J "On UD trees"; TG paper §2).

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

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from models.attention.transformer_grammar import CNT1, CNT2, ONT, PAD, SOS, TERMINAL, action_types  # noqa: F401

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


def _dominates(heads: Sequence[int], ancestor: int, word: int) -> bool:
    """Whether ``ancestor`` (1-based; 0 = the artificial root) dominates ``word``."""
    steps = 0
    while word != 0 and steps <= len(heads):
        if word == ancestor:
            return True
        word = heads[word - 1]
        steps += 1
    return ancestor == 0 and word == 0


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
    """Dependents (1-based) whose arc to their head spans a word the head does not dominate."""
    arcs = []
    for dependent, head in enumerate(heads, 1):
        low, high = sorted((head, dependent))
        if head == 0:
            low = 0
        if any(not _dominates(heads, head, between) for between in range(low + 1, high)):
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
