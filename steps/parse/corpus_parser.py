"""The corpus parser in the DAG: train it on the UD treebank, then parse the unlabeled corpus.

    UD train/dev/test ──► train_corpus_parser ──► parse_corpus ◄── load_corpus
                                                      │
                                                      ▼
                                        build_pretraining_data (trees for P, T, SLA)

Every condition of a language shares one parser and one parse through the cache.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from tango import Step
from tango.common import Tqdm
from tango.format import DillFormat

from steps.common.data_root import DataPath, normalised_copy
from steps.common.formats import DirectoryFormat
from steps.data.languages import get_language
from steps.data.readers import read_conllu
from steps.data.word_vectors import VECTORS_FILE
from steps.parse.backends import CorpusParser, ParserBudget, evaluate_parser, parser_backend


@Step.register("train_corpus_parser")
class TrainCorpusParser(Step):
    """Train the corpus parser (POS tagger + dependency parser) on the UD train split, select on
    dev, and score it on test with its own predicted tags (LAS/UAS exclude gold PUNCT/SYM).

    Result: a directory with the models, ``parser.json`` (backend, metrics, timings) and the
    predicted test CoNLL-U. Load it with :class:`steps.parse.backends.CorpusParser`.
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
        parser_kind = parser_backend(backend)  # checked before minutes of training
        # Read (and so validate) the treebank before spending minutes on training.
        splits = {name: (path.resolve(), read_conllu(path.resolve())) for name, path in
                  [("train", train), ("dev", dev), ("test", test)]}
        # Stanza and UDPipe read the files themselves: give them a BOM-free, LF, NFC copy (the
        # same bytes for a clean file) so that they see what read_conllu validated.
        normalised = self.work_dir / "normalised"
        normalised.mkdir(parents=True, exist_ok=True)
        train_file, dev_file = (normalised_copy(splits[name][0], normalised / f"{name}.conllu") for name in ("train", "dev"))
        out = self.work_dir / "parser"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        vectors_name = None
        if word_vectors is not None and parser_kind.uses_word_vectors:
            # Copied in, so the parser directory is self-contained for CorpusParser.
            vectors_name = "word_vectors.pt"
            shutil.copy(Path(word_vectors) / VECTORS_FILE, out / vectors_name)
        timings = parser_kind.train(out, lang, train_file, dev_file, budget, out / vectors_name if vectors_name else None)
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
    :mod:`steps.data.readers` (tokens, upos, xpos, head, deprel).
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
