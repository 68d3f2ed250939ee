"""The first half of the DAG: parse corpus → build vocab → model inputs.

    load_corpus ──► parse_corpus ──► build_pretraining_data ◄── train_tokenizer ◄── load_corpus
                        ▲                     ▲
    train_corpus_parser ┘          UD train/dev (gold rows, 1:8)

Every step is deterministic and cached; identical sub-configs hash alike, so all conditions of
a language share one parsed corpus and one vocabulary.
"""
from __future__ import annotations

import json
import logging
import shutil
import time
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

from tango import Step
from tango.common import Tqdm
from tango.format import DillFormat, JsonFormat

from .data_root import DataError, DataPath
from .formats import DirectoryFormat
from .inputs import make_instances, make_mlm_instances, mix_in_treebank
from .languages import get_language
from .parsing import CorpusParser, ParserBudget, evaluate_parser, train_stanza, train_udpipe
from .readers import read_conllu, read_corpus_documents, split_documents
from .vocab import load_tokenizer, train_wordpiece, vocabulary_size
from .word_vectors import VECTORS_FILE

logger = logging.getLogger(__name__)


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith("P")


def split_edge_punctuation(token: str) -> List[str]:
    """Split leading and trailing punctuation off a whitespace token ("(Almaañ)," → "(", "Almaañ",
    ")", ","), keeping word-internal punctuation ("xam-xam"). An offline stand-in for the
    reference's Stanza retokenization (SPEC §A.2), which no downloadable model serves here; it makes
    corpus tokens look like UD tokens, which the corpus parser was trained on."""
    start, end = 0, len(token)
    while start < end and _is_punctuation(token[start]):
        start += 1
    while end > start and _is_punctuation(token[end - 1]):
        end -= 1
    return list(token[:start]) + ([token[start:end]] if start < end else []) + list(token[end:])


@Step.register("load_corpus")
class LoadCorpus(Step):
    """Read a language's unlabeled corpus: markup stripped, sentences split, whitespace tokens,
    documents split 90/10 train/dev with MicroBERT's seed. The scale caps how many sentences each
    split keeps (taken in the shuffled document order, so a cap is a prefix of the full split).

    Result: ``{"train": [[token]], "dev": [[token]], "stats": {...}}``; ``stats`` records the
    whitespace-token counts of the full splits (the figures of the paper's Table 1).
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DillFormat("gz")

    def run(  # type: ignore[override]
        self,
        language: str,
        corpus: DataPath,
        corpus_format: Optional[str] = None,
        split_punctuation: bool = True,
        max_train_sentences: Optional[int] = None,
        max_dev_sentences: Optional[int] = None,
        seed: int = 1337,
    ) -> Dict[str, Any]:
        lang = get_language(language)
        documents = read_corpus_documents(corpus, corpus_format or lang.corpus_format)
        splits = split_documents(documents, seed=seed)
        caps = {"train": max_train_sentences, "dev": max_dev_sentences}
        result: Dict[str, Any] = {"stats": {"documents": len(documents)}}
        for split, docs in splits.items():
            sentences = [s for _, doc in docs for s in doc]
            result["stats"][f"{split}_whitespace_tokens"] = sum(len(s) for s in sentences)
            result["stats"][f"{split}_sentences"] = len(sentences)
            if caps[split] is not None:
                sentences = sentences[: caps[split]]
            if split_punctuation:
                sentences = [[piece for token in s for piece in split_edge_punctuation(token)] for s in sentences]
            if not sentences:
                raise DataError(f"{corpus.resolve()}: the {split} split is empty")
            result[split] = sentences
            result["stats"][f"{split}_sentences_kept"] = len(sentences)
            result["stats"][f"{split}_tokens_kept"] = sum(len(s) for s in sentences)
        self.logger.info("corpus %s: %s", language, json.dumps(result["stats"]))
        return result


@Step.register("train_corpus_parser")
class TrainCorpusParser(Step):
    """Train the corpus parser (POS tagger + dependency parser) on the UD train split, select on
    dev, and score it on test with its own predicted tags (LAS/UAS exclude gold PUNCT/SYM).

    Result: a directory with the models, ``parser.json`` (backend, metrics, timings) and the
    predicted test CoNLL-U. Load it with :class:`steps.parsing.CorpusParser`.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "003"  # 003: the parser trains with Adam from its first step (ParserBudget.parser_optimizer)
    FORMAT = DirectoryFormat()

    def run(  # type: ignore[override]
        self,
        language: str,
        train: DataPath,
        dev: DataPath,
        test: DataPath,
        backend: str = "stanza",
        budget: ParserBudget = ParserBudget(),
        word_vectors: Optional[Path] = None,
    ) -> Path:
        lang = get_language(language)
        if backend not in ("stanza", "udpipe"):
            raise DataError(f"unknown parser backend {backend!r}; known: stanza, udpipe")
        # Read (and so validate) the treebank before spending minutes on training.
        splits = {name: (path.resolve(), read_conllu(path.resolve())) for name, path in
                  [("train", train), ("dev", dev), ("test", test)]}
        out = self.work_dir / "parser"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        vectors_name = None
        if word_vectors is not None and backend == "stanza":
            # Copied in, so the parser directory is self-contained for CorpusParser.
            vectors_name = "word_vectors.pt"
            shutil.copy(Path(word_vectors) / VECTORS_FILE, out / vectors_name)
        if backend == "stanza":
            timings = train_stanza(out, lang.stanza_code, lang.treebank, splits["train"][0], splits["dev"][0], budget,
                                   word_vectors=out / vectors_name if vectors_name else None)
            shutil.rmtree(out / "scratch", ignore_errors=True)
        else:
            timings = train_udpipe(out, splits["train"][0], splits["dev"][0], budget)
        info = {"backend": backend, "language": language, "stanza_code": lang.stanza_code, "word_vectors": vectors_name,
                "budget": vars(budget), "timings": timings, "metrics": {}}
        (out / "parser.json").write_text(json.dumps(info, indent=2))
        parser = CorpusParser(out)
        start = time.perf_counter()
        for split in ("dev", "test"):
            scores = evaluate_parser(parser, splits[split][1], out / f"predicted-{split}.conllu")
            info["metrics"].update({f"{split}_{key}": value for key, value in scores.items()})
        info["timings"]["evaluation_seconds"] = time.perf_counter() - start
        info["timings"]["training_minutes"] = (timings["tagger_seconds"] + timings["parser_seconds"]) / 60
        (out / "parser.json").write_text(json.dumps(info, indent=2))
        self.logger.info("corpus parser %s/%s: %s", language, backend, json.dumps(info["metrics"]))
        return out


@Step.register("parse_corpus")
class ParseCorpus(Step):
    """Tag and parse the corpus sentences with the trained corpus parser (pretokenized, batched).

    Result: ``{"train": [sentence], "dev": [sentence], "stats": {...}}`` with sentences as in
    :mod:`steps.readers` (tokens, upos, xpos, head, deprel).
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DillFormat("gz")

    def run(self, corpus: Dict[str, Any], parser: Path, batch_size: int = 256) -> Dict[str, Any]:  # type: ignore[override]
        corpus_parser = CorpusParser(parser)
        result: Dict[str, Any] = {"stats": {}}
        for split in ("train", "dev"):
            sentences = corpus[split]
            parsed: List[Dict[str, list]] = []
            start = time.perf_counter()
            batches = corpus_parser.parse_all(sentences, batch_size)
            progress = Tqdm.tqdm(batches, desc=f"parsing {split}", total=-(-len(sentences) // batch_size))
            for batch in progress:
                parsed.extend(batch)
            seconds = time.perf_counter() - start
            result[split] = parsed
            result["stats"][f"{split}_sentences_per_second"] = len(sentences) / max(seconds, 1e-9)
            result["stats"][f"{split}_tokens_per_second"] = sum(len(s) for s in sentences) / max(seconds, 1e-9)
            self.logger.info("parsed %d %s sentences in %.1f s (%.1f sentences/s)", len(sentences), split, seconds, len(sentences) / max(seconds, 1e-9))
        result["stats"]["parser"] = corpus_parser.info["backend"]
        return result


@Step.register("train_tokenizer")
class TrainTokenizer(Step):
    """WordPiece vocabulary on the corpus train split (SPEC §B); size from the type count unless
    given. Result: a directory loadable with ``AutoTokenizer.from_pretrained``.

    Caveat: the `tokenizers` WordPiece trainer is not deterministic across processes: it numbers
    "##" pieces in hash-map order and breaks ties between equally frequent merges by those numbers
    (huggingface/tokenizers#1794, fix proposed in #2066). Two trainings on the Spanish PrOnto texts
    gave vocabularies differing in 6 of 8000 pieces. The step stays DETERMINISTIC for Tango, which
    would otherwise never reuse its cache entry; everything downstream reads the cached vocabulary,
    so results reproduce from a workspace, and a fresh one can differ slightly in its vocabulary.
    On Wolof, a cold rerun of the main command (µB-MXPT-SLA) gave a vocabulary differing in 12 of
    8,080 pieces and in the ids of 2,662, while the corpus, word vectors and corpus parser came out
    identical. The encoder pretrained on it scored test LAS 67.29 instead of 68.55 (fine-tuning
    seeds of the cached cell: 67.34-69.10) and NER F1 78.65 instead of 82.44 (seeds: 82.44-85.38),
    so a cell's figure also carries this vocabulary-and-pretraining noise.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DirectoryFormat()

    def run(self, corpus: Dict[str, Any], vocab_size: Optional[int] = None) -> Path:  # type: ignore[override]
        sentences = corpus["train"]
        types = len({token for sentence in sentences for token in sentence})
        size = vocab_size or vocabulary_size(types)
        tokenizer = train_wordpiece(sentences, size)
        out = self.work_dir / "tokenizer"
        shutil.rmtree(out, ignore_errors=True)
        tokenizer.save_pretrained(str(out))
        self.logger.info("tokenizer: %d word types → vocabulary %d (asked %d)", types, len(tokenizer), size)
        return out


@Step.register("build_pretraining_data")
class BuildPretrainingData(Step):
    """Model inputs for pretraining: parsed corpus rows plus gold treebank rows mixed in at 1:ratio
    (train: cycled to floor(N/ratio) rows; dev: appended once), tokenized with the vocabulary and
    with trees expanded to subwords. See :mod:`steps.inputs` for the instance schema.

    Result: ``{"train": [instance], "dev": [instance], "xpos_labels": [str], "stats": {...}}``.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DillFormat("gz")

    def run(  # type: ignore[override]
        self,
        parsed_corpus: Dict[str, Any],
        tokenizer: Path,
        treebank_train: DataPath,
        treebank_dev: DataPath,
        max_length: int = 128,
        treebank_ratio: int = 8,
    ) -> Dict[str, Any]:
        subword_tokenizer = load_tokenizer(tokenizer)
        gold = {"train": read_conllu(treebank_train.resolve()), "dev": read_conllu(treebank_dev.resolve())}
        result: Dict[str, Any] = {"stats": {}}
        for split in ("train", "dev"):
            corpus_rows = make_instances(subword_tokenizer, parsed_corpus[split], False, max_length, f"parsed corpus ({split})")
            gold_rows = make_instances(subword_tokenizer, gold[split], True, max_length, str(treebank_train.resolve() if split == "train" else treebank_dev.resolve()))
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
