"""Model inputs: subword tokenization and word trees expanded to subword trees (as the reference does).

One instance (a dict of lists; the collator turns a batch of them into tensors):

==================  ==========  =====================================================================
field               length      meaning
==================  ==========  =====================================================================
input_ids           n + 2       [CLS] subwords [SEP]
token_spans         W + 2       inclusive subword span of each word; (0, 0) for [CLS], (n+1, n+1)
                                for [SEP]
head                n           subword-level head *position* (1..n) of positions 1..n; 0 = root.
                                Non-first pieces point at their word's first piece.
deprel              n           subword-level relation; non-first pieces get "subword"
orig_head           W           word-level heads (1-based, 0 = root), as parsed / annotated
orig_deprel         W           word-level relations
xpos                W           word-level XPOS strings
upos                W           word-level UPOS strings, only with ``keep_upos`` (syntax-guided
                                attention, condition suffix -G, embeds them)
tree_is_gold        1           1 for treebank rows (gold trees and tags), 0 for parsed corpus rows
==================  ==========  =====================================================================

MLM-only instances (:func:`make_mlm_instances`, for text nobody parsed) carry only input_ids,
token_spans and tree_is_gold; the collator gives them no heads and no tags.

``attention_mask`` and ``token_type_ids`` are made by the collator (all ones / zeros before
padding), so they are not stored.
"""
from __future__ import annotations

import itertools
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tango import Step
from tango.format import DillFormat

from steps.common.data_root import DataError, DataPath
from steps.data.readers import Sentence, check_tree, read_conllu
from steps.data.vocab import encode_words, load_tokenizer

logger = logging.getLogger(__name__)

SUBWORD_RELATION = "subword"

Instance = Dict[str, list]


def expand_tree(word_spans: Sequence[Tuple[int, int]], heads: Sequence[int], deprels: Sequence[str]):
    """Word tree → subword tree.

    ``word_spans`` are the inclusive subword positions of the words (positions start at 1; [CLS]
    is 0). The first piece of word w takes w's relation and points at the first piece of w's head
    (0 if w is the root); every other piece points at the first piece of its own word.
    Returns (head, deprel), each of length n = last position.
    """
    n = word_spans[-1][1]
    head = [0] * n
    deprel = [SUBWORD_RELATION] * n
    for (first, last), word_head, relation in zip(word_spans, heads, deprels):
        head[first - 1] = 0 if word_head == 0 else word_spans[word_head - 1][0]
        deprel[first - 1] = relation
        for piece in range(first + 1, last + 1):
            head[piece - 1] = first
    return head, deprel


def _subword_layout(tokenizer, words: Sequence[str], max_length: int):
    """(input_ids, word spans, token_spans with [CLS]/[SEP] entries) of one sentence, or None if
    its subwords exceed ``max_length - 2``."""
    pieces = encode_words(tokenizer, words)
    if sum(len(p) for p in pieces) > max_length - 2:
        return None
    spans: List[Tuple[int, int]] = []
    position = 1
    for word_pieces in pieces:
        spans.append((position, position + len(word_pieces) - 1))
        position += len(word_pieces)
    input_ids = [tokenizer.cls_token_id] + list(itertools.chain.from_iterable(pieces)) + [tokenizer.sep_token_id]
    return input_ids, spans, [(0, 0)] + spans + [(position, position)]


def make_instance(tokenizer, sentence: Sentence, gold: bool, max_length: int, where: str, keep_upos: bool = False) -> Optional[Instance]:
    """Tokenize one parsed sentence into an instance, or None if its subwords exceed
    ``max_length - 2`` (the caller counts these; the reference discards truncated trees)."""
    layout = _subword_layout(tokenizer, sentence["tokens"], max_length)
    if layout is None:
        return None
    input_ids, spans, token_spans = layout
    check_tree(sentence["head"], where)
    head, deprel = expand_tree(spans, sentence["head"], sentence["deprel"])
    instance = {
        "input_ids": input_ids,
        "token_spans": token_spans,
        "head": head,
        "deprel": deprel,
        "orig_head": list(sentence["head"]),
        "orig_deprel": list(sentence["deprel"]),
        "xpos": list(sentence["xpos"]),
        "tree_is_gold": [1 if gold else 0],
    }
    if keep_upos:
        instance["upos"] = list(sentence["upos"])
    return instance


def make_mlm_instances(tokenizer, sentences: Sequence[Sequence[str]], max_length: int, name: str) -> List[Instance]:
    """Instances of unparsed sentences (lists of words) for MLM-only pretraining: input_ids,
    token_spans and tree_is_gold 0, no tree and no tags. Sentences longer than ``max_length - 2``
    subwords are dropped and counted, as in :func:`make_instances`."""
    instances = []
    for words in sentences:
        layout = _subword_layout(tokenizer, words, max_length)
        if layout is not None:
            input_ids, _, token_spans = layout
            instances.append({"input_ids": input_ids, "token_spans": token_spans, "tree_is_gold": [0]})
    dropped = len(sentences) - len(instances)
    if dropped:
        logger.info("%s: dropped %d of %d sentences longer than %d subwords", name, dropped, len(sentences), max_length - 2)
    return instances


def make_instances(tokenizer, sentences: Sequence[Sentence], gold: bool, max_length: int, name: str, keep_upos: bool = False) -> List[Instance]:
    instances = []
    for number, sentence in enumerate(sentences, 1):
        if len(sentence.get("head", ())) != len(sentence["tokens"]):
            raise DataError(f"{name}: sentence {number} has {len(sentence['tokens'])} tokens but {len(sentence.get('head', ()))} heads")
        instance = make_instance(tokenizer, sentence, gold, max_length, f"{name}: sentence {number}", keep_upos)
        if instance is not None:
            instances.append(instance)
    dropped = len(sentences) - len(instances)
    if dropped:
        logger.info("%s: dropped %d of %d sentences longer than %d subwords", name, dropped, len(sentences), max_length - 2)
    return instances


def mix_in_treebank(corpus_rows: List[Instance], treebank_rows: List[Instance], ratio: int) -> List[Instance]:
    """Append the gold treebank cycled to exactly floor(len(corpus_rows) / ratio) rows (Gessler & Schneider,
    §4.2: the "1 to 8" mix). The reference raises if the treebank is larger than that; we truncate
    instead and log it, since a small `smoke`/`cpu` corpus would otherwise be unusable."""
    target = len(corpus_rows) // ratio
    if not treebank_rows or target == 0:
        return list(corpus_rows)
    if len(treebank_rows) > target:
        logger.info("treebank has %d rows, more than 1/%d of %d corpus rows: using the first %d", len(treebank_rows), ratio, len(corpus_rows), target)
    cycled = list(itertools.islice(itertools.cycle(treebank_rows), target))
    return list(corpus_rows) + cycled


@Step.register("build_pretraining_data")
class BuildPretrainingData(Step):
    """Model inputs for pretraining: parsed corpus rows plus gold treebank rows mixed in at 1:ratio
    (train: cycled to floor(N/ratio) rows; dev: appended once), tokenized with the vocabulary and
    with trees expanded to subwords. See :mod:`steps.data.inputs` for the instance schema.

    Result: ``{"train": [instance], "dev": [instance], "xpos_labels": [str], "stats": {...}}``.
    ``keep_upos`` also keeps each word's UPOS tag (for syntax-guided attention, -G); off, the
    default, it is out of the cache key, so the steps made before it existed keep their IDs.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DillFormat("gz")
    SKIP_DEFAULT_ARGUMENTS = {"keep_upos": False}

    def run(  # type: ignore[override]
        self,
        parsed_corpus: Dict[str, Any],
        tokenizer: Path,
        treebank_train: DataPath,
        treebank_dev: DataPath,
        max_length: int = 128,
        treebank_ratio: int = 8,
        keep_upos: bool = False,
    ) -> Dict[str, Any]:
        subword_tokenizer = load_tokenizer(tokenizer)
        gold = {"train": read_conllu(treebank_train.resolve()), "dev": read_conllu(treebank_dev.resolve())}
        result: Dict[str, Any] = {"stats": {}}
        for split in ("train", "dev"):
            corpus_rows = make_instances(subword_tokenizer, parsed_corpus[split], False, max_length, f"parsed corpus ({split})", keep_upos)
            gold_rows = make_instances(subword_tokenizer, gold[split], True, max_length,
                                       str(treebank_train.resolve() if split == "train" else treebank_dev.resolve()), keep_upos)
            if split == "train":
                rows = mix_in_treebank(corpus_rows, gold_rows, treebank_ratio)
            else:
                rows = corpus_rows + gold_rows
            if not rows:
                raise DataError(f"no {split} instances left after tokenization (max_length={max_length})")
            result[split] = rows
            result["stats"][f"{split}_rows"] = len(rows)
            result["stats"][f"{split}_gold_rows"] = sum(r["tree_is_gold"][0] for r in rows)
            result["stats"][f"{split}_subwords"] = sum(len(r["input_ids"]) - 2 for r in rows)
        # XPOS labels from gold rows only: X is trained on gold treebank tags (paper §4.2).
        xpos_counts = Counter(tag for r in result["train"] if r["tree_is_gold"][0] for tag in r["xpos"])
        result["xpos_labels"] = sorted(xpos_counts)
        self.logger.info("pretraining data: %s", json.dumps(result["stats"]))
        return result


@Step.register("build_mlm_pretraining_data")
class BuildMlmPretrainingData(Step):
    """Model inputs for MLM-only pretraining (condition M) from text nobody parsed: a corpus-shaped
    ``{"train": [[word]], "dev": [[word]]}`` (``load_corpus`` or ``pronto_texts``) tokenized with
    the vocabulary. No trees, no tags and no treebank mix, so ``pretrain_microbert`` refuses any
    condition but M on it (``"trees": False``).

    Result: like ``build_pretraining_data``'s, with ``xpos_labels`` empty.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DillFormat("gz")

    def run(self, corpus: Dict[str, Any], tokenizer: Path, max_length: int = 128) -> Dict[str, Any]:  # type: ignore[override]
        subword_tokenizer = load_tokenizer(tokenizer)
        result: Dict[str, Any] = {"stats": {}, "xpos_labels": [], "trees": False}
        for split in ("train", "dev"):
            rows = make_mlm_instances(subword_tokenizer, corpus.get(split) or [], max_length, f"MLM text ({split})")
            if not rows:
                raise DataError(f"build_mlm_pretraining_data: no {split} text left after tokenization "
                                f"({len(corpus.get(split) or [])} {split} sentences, max_length={max_length})")
            result[split] = rows
            result["stats"][f"{split}_rows"] = len(rows)
            result["stats"][f"{split}_subwords"] = sum(len(r["input_ids"]) - 2 for r in rows)
        self.logger.info("MLM pretraining data: %s", json.dumps(result["stats"]))
        return result
