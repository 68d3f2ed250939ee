"""The DAG's first node: a language's unlabeled corpus as sentences of tokens.

    raw corpus files ──► load_corpus ──► train_word_vectors / parse_corpus / train_tokenizer

Deterministic and cached; its config depends only on (language, scale), so all conditions of a
language share one corpus entry.
"""
from __future__ import annotations

import json
import logging
import unicodedata
from typing import Any, Dict, List, Optional, Sequence

from tango import Step
from tango.format import DillFormat

from steps.common.data_root import DataError, DataPath
from steps.data.languages import get_language
from steps.data.readers import given_splits, read_corpus_documents, split_documents
from steps.data.readers import join_lacunae as rejoin_lacunae  # the run() argument takes the name

logger = logging.getLogger(__name__)


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith("P")


def split_edge_punctuation(token: str) -> List[str]:
    """Split leading and trailing punctuation off a whitespace token ("(Almaañ)," → "(", "Almaañ",
    ")", ","), keeping word-internal punctuation ("xam-xam"). An offline stand-in for the
    reference's Stanza retokenization, which no downloadable model serves here; it makes
    corpus tokens look like UD tokens, which the corpus parser was trained on."""
    start, end = 0, len(token)
    while start < end and _is_punctuation(token[start]):
        start += 1
    while end > start and _is_punctuation(token[end - 1]):
        end -= 1
    return list(token[:start]) + ([token[start:end]] if start < end else []) + list(token[end:])


def corpus_tokens(sentence: Sequence[str]) -> List[str]:
    """A sentence's whitespace tokens as the corpus keeps them: each token's edge punctuation split off."""
    return [piece for token in sentence for piece in split_edge_punctuation(token)]


@Step.register("load_corpus")
class LoadCorpus(Step):
    """Read a language's unlabeled corpus: markup stripped, sentences split, whitespace tokens,
    documents split 90/10 train/dev with MicroBERT's seed, unless the corpus comes pre-split
    (``train.*`` and ``dev.*`` only, as Coptic's): then its own split is used as it is. The scale
    caps how many sentences each split keeps (taken in the shuffled document order, so a cap is a
    prefix of the full split).

    ``max_sentence_tokens``: keep only the first n tokens of a longer sentence, as the reference's
    CoNLL-U reader does for n = 200 (it meant to cut such sentences into chunks of 200 and keeps
    the first chunk only); None (the default) keeps every token. ``join_lacunae``: read a lacuna
    "[ ]" as the one word it was in the CoNLL-U (readers.join_lacunae), before the cut; with both,
    Coptic's train split counts the paper's 970,642 tokens.

    Result: ``{"train": [[token]], "dev": [[token]], "stats": {...}}``; ``stats`` records the
    whitespace-token counts of the full splits (the figures of the paper's Table 1).
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DillFormat("gz")
    # Added after workspaces were keyed: at its default the step keeps its unique ID.
    SKIP_DEFAULT_ARGUMENTS = {"max_sentence_tokens": None, "join_lacunae": False}

    def run(  # type: ignore[override]
        self,
        language: str,
        corpus: DataPath,
        corpus_format: Optional[str] = None,
        split_punctuation: bool = True,
        max_train_sentences: Optional[int] = None,
        max_dev_sentences: Optional[int] = None,
        seed: int = 1337,
        max_sentence_tokens: Optional[int] = None,
        join_lacunae: bool = False,
    ) -> Dict[str, Any]:
        lang = get_language(language)
        documents = read_corpus_documents(corpus, corpus_format or lang.corpus_format)
        splits = given_splits(documents)
        result: Dict[str, Any] = {"stats": {"documents": len(documents), "split": "given" if splits else "documents 90/10"}}
        if splits is None:
            splits = split_documents(documents, seed=seed)
        caps = {"train": max_train_sentences, "dev": max_dev_sentences}
        for split, docs in splits.items():
            sentences = [s for _, doc in docs for s in doc]
            if join_lacunae:
                sentences = [rejoin_lacunae(s) for s in sentences]
            if max_sentence_tokens is not None:
                sentences = [s[:max_sentence_tokens] for s in sentences]
            result["stats"][f"{split}_whitespace_tokens"] = sum(len(s) for s in sentences)
            result["stats"][f"{split}_sentences"] = len(sentences)
            if caps[split] is not None:
                sentences = sentences[: caps[split]]
            if split_punctuation:
                sentences = [corpus_tokens(s) for s in sentences]
            if not sentences:
                raise DataError(f"{corpus.resolve()}: the {split} split is empty")
            result[split] = sentences
            result["stats"][f"{split}_sentences_kept"] = len(sentences)
            result["stats"][f"{split}_tokens_kept"] = sum(len(s) for s in sentences)
        self.logger.info("corpus %s: %s", language, json.dumps(result["stats"]))
        return result
