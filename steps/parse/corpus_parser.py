"""The corpus parser in the DAG: train it on the UD treebank, then parse the unlabeled corpus.

    UD train/dev/test ──► train_corpus_parser ──► parse_corpus ◄── load_corpus
                                                      │
                                                      ▼
                                        build_pretraining_data (trees for P, T, SLA)

Every condition of a language shares one parser and one parse through the cache.

Both steps survive a kill: repeating the same ``tango run`` resumes from what their Tango work
dir (kept for an unfinished step) holds. ``train_corpus_parser`` skips the training phases it
recorded as finished (Stanza: tagger, parser; see :mod:`steps.parse.backends` for why an
interrupted phase restarts from its beginning); ``parse_corpus`` keeps every parsed batch as an
atomically written chunk and parses only the missing ones. On CPU the resumed result equals an
uninterrupted run's (timings aside): tests/test_corpus_parser_resume.py.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch
from tango import Step
from tango.common import Tqdm
from tango.format import DillFormat

from steps.common.checkpoints import PhaseLog, SimulatedCrash, save_atomically
from steps.common.runtime import resolve_device
from steps.common.data_root import DataPath, normalised_copy
from steps.common.formats import DirectoryFormat
from steps.data.languages import get_language
from steps.data.readers import read_conllu
from steps.data.word_vectors import VECTORS_FILE
from steps.parse.backends import CorpusParser, ParserBudget, evaluate_parser, parser_backend

# Test hook: raise `SimulatedCrash` right after parse_corpus has saved its N-th batch (counted over
# train then dev), as if the process had been killed there.
PARSE_CRASH_AFTER_BATCH_ENV = "SIB_PARSE_CRASH_AFTER_BATCH"


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
    # Where it trains changes how fast, not what the step means: recorded in parser.json instead.
    SKIP_ID_ARGUMENTS = {"device"}

    def run(  # type: ignore[override]
        self,
        language: str,
        train: DataPath,
        dev: DataPath,
        test: DataPath,
        backend: str = "stanza",
        budget: ParserBudget = ParserBudget(),
        word_vectors: Optional[Path] = None,
        device: Optional[str] = "auto",
    ) -> Path:
        """:param device: "auto" (the GPU when there is one), "cpu" or "cuda"."""
        lang = get_language(language)
        device = str(resolve_device(device))
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
        # The phases a killed run finished are kept (their models are in `out`); without a
        # record, whatever `out` holds is from an unrecorded phase and is started afresh.
        phases = PhaseLog(self.work_dir / "phases.json")
        if phases.phases:
            self.logger.info("resuming the corpus parser: phases %s already done", ", ".join(phases.phases))
        else:
            shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True, exist_ok=True)
        vectors_name = None
        if word_vectors is not None and parser_kind.uses_word_vectors:
            # Copied in, so the parser directory is self-contained for CorpusParser.
            vectors_name = "word_vectors.pt"
            shutil.copy(Path(word_vectors) / VECTORS_FILE, out / vectors_name)
        timings = parser_kind.train(out, lang, train_file, dev_file, budget, out / vectors_name if vectors_name else None,
                                    phases=phases, device=device)
        info = {"backend": backend, "language": language, "stanza_code": lang.stanza_code, "word_vectors": vectors_name,
                "budget": vars(budget), "timings": timings, "metrics": {}, "device": device}
        (out / "parser.json").write_text(json.dumps(info, indent=2))
        parser = CorpusParser(out, device)
        start = time.perf_counter()
        for split in ("dev", "test"):
            scores = evaluate_parser(parser, splits[split][1], out / f"predicted-{split}.conllu")
            info["metrics"].update({f"{split}_{key}": value for key, value in scores.items()})
        info["timings"]["evaluation_seconds"] = time.perf_counter() - start
        info["timings"]["training_minutes"] = (timings["tagger_seconds"] + timings["parser_seconds"]) / 60
        (out / "parser.json").write_text(json.dumps(info, indent=2))
        self.logger.info("corpus parser %s/%s: %s", language, backend, json.dumps(info["metrics"]))
        # The phase record stays: killed while Tango copies `out` into the cache, a rerun only
        # re-scores the kept models.
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
    SKIP_ID_ARGUMENTS = {"device"}  # recorded in the result's stats

    def run(self, corpus: Dict[str, Any], parser: Path, batch_size: int = 256,  # type: ignore[override]
            device: Optional[str] = "auto") -> Dict[str, Any]:
        """:param device: "auto" (the GPU when there is one), "cpu" or "cuda"."""
        device = str(resolve_device(device))
        corpus_parser = CorpusParser(parser, device)
        result: Dict[str, Any] = {"stats": {"device": device}}
        # One chunk file per parsed batch: a resumed run loads them and parses only the rest. A
        # batch's parse depends on its sentences alone, so the result equals an uninterrupted run's.
        chunks = self.work_dir / "parsed"
        chunks.mkdir(parents=True, exist_ok=True)
        crash_after = int(os.environ[PARSE_CRASH_AFTER_BATCH_ENV]) if os.environ.get(PARSE_CRASH_AFTER_BATCH_ENV) else None
        saved_batches = 0
        for split in ("train", "dev"):
            sentences = corpus[split]
            parsed: List[Dict[str, list]] = []
            start = time.perf_counter()
            starts = range(0, len(sentences), batch_size)
            resumed = 0
            for index in Tqdm.tqdm(starts, desc=f"parsing {split}", total=len(starts)):
                chunk = chunks / f"{split}-{index // batch_size:06d}.pt"
                if chunk.exists():
                    batch = torch.load(chunk, weights_only=True)
                    resumed += 1
                else:
                    batch = corpus_parser.parse(sentences[index : index + batch_size])
                    save_atomically(batch, chunk)
                    saved_batches += 1
                    if crash_after is not None and saved_batches == crash_after:
                        raise SimulatedCrash(f"{PARSE_CRASH_AFTER_BATCH_ENV}={crash_after}: stopping after batch {saved_batches}")
                parsed.extend(batch)
            if resumed:
                self.logger.info("resumed %s: %d of %d batches parsed before", split, resumed, len(starts))
            seconds = time.perf_counter() - start
            result[split] = parsed
            result["stats"][f"{split}_sentences_per_second"] = len(sentences) / max(seconds, 1e-9)
            result["stats"][f"{split}_tokens_per_second"] = sum(len(s) for s in sentences) / max(seconds, 1e-9)
            self.logger.info("parsed %d %s sentences in %.1f s (%.1f sentences/s)", len(sentences), split, seconds, len(sentences) / max(seconds, 1e-9))
        result["stats"]["parser"] = corpus_parser.info["backend"]
        shutil.rmtree(chunks)  # the result holds them all now
        return result
