"""Corpus parsers trained inside the DAG.

No pretrained parser can be downloaded here, so the corpus parser is trained from the
language's UD train split (dev for model selection) and scored on the test split with its own
predicted tags. Two backends:

- ``stanza`` (default, as in the paper): Stanza's POS tagger and biaffine dependency parser,
  trained with their own CLIs in-process, on the GPU when there is one (``device``), from word
  vectors trained on the corpus.
- ``udpipe``: UDPipe 1 (``ufal.udpipe``), the classical baseline.

Each is a registered :class:`CorpusParserBackend` (configs name it: ``backend: "stanza"``);
:class:`CorpusParser` loads a trained directory with its backend and parses pretokenized
sentences in batches.

Kill and resume: training runs in phases (Stanza: the tagger, then the parser; UDPipe: one
phase), each recorded in a :class:`~steps.common.checkpoints.PhaseLog` once its model is on disk.
A resumed run skips recorded phases and redoes the interrupted one from its start. Mid-phase
resume is not offered: Stanza's tagger cannot resume, and Stanza's parser can continue from its
own checkpoint but restores neither its data order nor its RNG streams, so the result would
differ from an uninterrupted run; UDPipe trains in one library call. Redoing the phase keeps the
result bit-identical on CPU (Stanza reseeds at the start of each phase) and costs at most one
phase of training.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

from tango.common import FromParams, Registrable

from steps.common.checkpoints import PhaseLog, SimulatedCrash
from steps.data.readers import Sentence, read_conllu, write_conllu
from steps.evaluate.metrics import attachment_scores

logger = logging.getLogger(__name__)

# Test hook: raise `SimulatedCrash` right after the named training phase is recorded ("tagger",
# "parser" or "udpipe"), as if the process had been killed there.
CRASH_AFTER_PHASE_ENV = "SIB_CORPUS_PARSER_CRASH_AFTER_PHASE"


def _phase_done(phases: Optional[PhaseLog], phase: str, info: Dict[str, Any]) -> None:
    if phases is not None:
        phases.record(phase, info)
    if os.environ.get(CRASH_AFTER_PHASE_ENV) == phase:
        raise SimulatedCrash(f"{CRASH_AFTER_PHASE_ENV}={phase}: stopping after the {phase} phase")


PARSER_TRAINING_TAGS = ("gold", "tagger_dev_confusion")
PARSER_OPTIMIZERS = ("adam", "adamw", None)
TAGGER_TAGS = ("all", "upos")


@dataclass
class ParserBudget(FromParams):
    """How much training the corpus parser gets; set per scale in ``configs/scales.libsonnet``.

    Step counts are optimizer steps of Stanza's trainers (``max_steps``); dims shrink the models
    so that training fits a CPU budget. UDPipe ignores all but ``udpipe_iterations``.
    """

    tagger_steps: int = 1000
    parser_steps: int = 800
    eval_interval: int = 100
    tagger_hidden_dim: int = 200
    tagger_batch_size: int = 50  # sentences per tagger batch
    # Stanza's tagger spends most of a CPU step in its biaffine tag scorers; small ones cost
    # little accuracy and make a step ~8x faster (measured on Wolof-WTB, 2 cores).
    tagger_biaffine_dim: int = 50
    tagger_composite_biaffine_dim: int = 20
    # What the tagger learns: "all" (UPOS, XPOS and features, as Stanza does) or "upos". Nothing
    # downstream needs silver XPOS or features at cpu scale (X trains on gold rows only; the
    # parser embeds UPOS only), and a UPOS-only tagger spends ~30% less time per step (no XPOS or
    # feature classifiers to run) and selects its model on UPOS alone.
    tagger_tags: str = "all"
    parser_hidden_dim: int = 200
    parser_biaffine_dim: int = 200
    parser_layers: int = 3  # BiLSTM layers (Stanza's default 3)
    parser_batch_size: int = 1000  # words per parser batch
    # Which predicted tag columns the parser embeds. Stanza trains its parser on gold tags; our
    # small tagger's XPOS and features are much noisier than its UPOS, and a parser that leans on
    # them loses far more at test time (own predicted tags) than it gains on dev (gold tags).
    parser_uses_xpos: bool = False
    parser_uses_feats: bool = False
    char_hidden_dim: int = 100
    word_emb_dim: int = 75
    # Stanza trains its parser on gold tags and lemmas, but at parse time it sees the tagger's
    # tags and identity lemmas. "tagger_dev_confusion" trains the parser on what it will see:
    # lemma = form, and train UPOS resampled from the tagger's confusion on dev (P(predicted |
    # gold)); dev for model selection carries the tagger's own predicted tags. "gold" is Stanza's
    # default. Measured on Wolof-WTB (same tagger): see docs/RESULTS.md.
    parser_training_tags: str = "tagger_dev_confusion"
    # Stanza's parser starts with Adadelta (lr 2.0) and switches to Adam only after 10k steps —
    # sensible for its 50k-step budget, far too slow for a few hundred steps. "adam" is Dozat &
    # Manning's setting (lr 3e-3, β2 0.95) from the first step; None keeps Stanza's schedule.
    # Measured on Wolof-WTB, 600 parser steps on the same tagger: Adam test LAS 71.3, Adadelta 68.0.
    parser_optimizer: Optional[str] = "adam"
    parser_lr: float = 3e-3
    parser_beta2: float = 0.95
    udpipe_iterations: int = 10
    seed: int = 1234

    def __post_init__(self):
        # Checked when the config is read, not after minutes of tagger training.
        if self.parser_optimizer not in PARSER_OPTIMIZERS:
            raise ValueError(f"parser_optimizer must be one of {PARSER_OPTIMIZERS}, got {self.parser_optimizer!r}")
        if self.parser_training_tags not in PARSER_TRAINING_TAGS:
            raise ValueError(f"parser_training_tags must be one of {PARSER_TRAINING_TAGS}, got {self.parser_training_tags!r}")
        if self.tagger_tags not in TAGGER_TAGS:
            raise ValueError(f"tagger_tags must be one of {TAGGER_TAGS}, got {self.tagger_tags!r}")
        if self.tagger_tags == "upos" and (self.parser_uses_xpos or self.parser_uses_feats):
            raise ValueError("tagger_tags='upos' predicts no XPOS or features, so the parser cannot embed them "
                             "(set parser_uses_xpos and parser_uses_feats to false)")


class CorpusParserBackend(Registrable):
    """One parser toolkit: how it trains from CoNLL-U files, loads its models and parses.

    Registered by the name configs use (``backend: "stanza"``); the step passes that string, so a
    new backend is a new class here and no cache key changes."""

    uses_word_vectors = False  # whether train() takes the corpus word vectors

    def train(self, directory: Path, language, train: Path, dev: Path, budget: ParserBudget,
              word_vectors: Optional[Path], phases: Optional[PhaseLog] = None, device: str = "cpu") -> Dict[str, float]:
        """Train into ``directory`` from normalised CoNLL-U files on ``device`` ("cpu" or "cuda");
        return timings. With ``phases``, skip the phases it records as done (their models are in
        ``directory``) and record each phase as it finishes."""
        raise NotImplementedError

    def load(self, directory: Path, info: Dict[str, Any], device: str = "cpu") -> Any:
        """The loaded models of a trained parser directory, on ``device``."""
        raise NotImplementedError

    def parse(self, models: Any, batch: Sequence[Sequence[str]]) -> List[Sentence]:
        """Tag and parse one batch of pretokenized sentences."""
        raise NotImplementedError


@CorpusParserBackend.register("stanza")
class StanzaBackend(CorpusParserBackend):
    """Stanza's POS tagger and biaffine parser (the paper's choice), trained in-process."""

    uses_word_vectors = True

    def train(self, directory, language, train, dev, budget, word_vectors, phases=None, device="cpu"):
        timings = train_stanza(directory, language.stanza_code, language.treebank, train, dev, budget,
                               word_vectors=word_vectors, phases=phases, device=device)
        shutil.rmtree(directory / "scratch", ignore_errors=True)
        return timings

    def load(self, directory, info, device="cpu"):
        import stanza

        vectors = str(directory / info["word_vectors"]) if info.get("word_vectors") else None
        # Stanza insists on a resources.json in its model dir even when every model path is
        # given explicitly; an empty one is enough and keeps it from trying to download.
        resources = directory / "stanza_resources"
        resources.mkdir(exist_ok=True)
        (resources / "resources.json").write_text("{}")
        return stanza.Pipeline(
            lang=info["stanza_code"],
            dir=str(resources),
            processors="tokenize,pos,lemma,depparse",
            download_method=None,
            tokenize_pretokenized=True,
            lemma_use_identity=True,
            # Pretokenized input and identity lemmas load no model, but Stanza drops a
            # processor from the pipeline unless it has some model path.
            tokenize_model_path=str(directory / "unused-tokenizer.pt"),
            lemma_model_path=str(directory / "unused-lemmatizer.pt"),
            allow_unknown_language=True,
            pos_model_path=str(directory / "tagger.pt"),
            depparse_model_path=str(directory / "parser.pt"),
            pos_pretrain_path=vectors,
            depparse_pretrain_path=vectors,
            use_gpu=device != "cpu",
            device=device,
            logging_level="WARN",
            pos_batch_size=5000,
            depparse_batch_size=5000,
        )

    def parse(self, models, batch):
        doc = models([list(tokens) for tokens in batch])
        parsed = []
        for tokens, sentence in zip(batch, doc.sentences):
            words = sentence.words
            if len(words) != len(tokens):
                raise ValueError(f"parser returned {len(words)} words for {len(tokens)} tokens: {' '.join(tokens)[:80]}")
            parsed.append(
                {
                    "tokens": list(tokens),
                    "upos": [w.upos or "_" for w in words],
                    "xpos": [w.xpos or "_" for w in words],
                    "head": [int(w.head) for w in words],
                    "deprel": [w.deprel or "dep" for w in words],
                }
            )
        return parsed


@CorpusParserBackend.register("udpipe")
class UDPipeBackend(CorpusParserBackend):
    """UDPipe 1 (``ufal.udpipe``), the classical baseline; ignores word vectors and runs on the CPU."""

    def train(self, directory, language, train, dev, budget, word_vectors, phases=None, device="cpu"):
        if phases is not None and "udpipe" in phases and (directory / "udpipe.model").exists():
            logger.info("UDPipe model already trained (resumed run)")
            return dict(phases.get("udpipe"))
        timings = train_udpipe(directory, train, dev, budget)
        _phase_done(phases, "udpipe", timings)
        return timings

    def load(self, directory, info, device="cpu"):
        from ufal.udpipe import Model

        model = Model.load(str(directory / "udpipe.model"))
        if model is None:
            raise RuntimeError(f"{directory / 'udpipe.model'}: cannot load UDPipe model")
        return model

    def parse(self, models, batch):
        from ufal.udpipe import Sentence as UDSentence

        parsed = []
        for tokens in batch:
            sentence = UDSentence()
            for token in tokens:
                sentence.addWord(token)
            models.tag(sentence, models.DEFAULT)
            models.parse(sentence, models.DEFAULT)
            words = list(sentence.words)[1:]  # words[0] is the technical root
            parsed.append({
                "tokens": list(tokens),
                "upos": [w.upostag or "_" for w in words],
                "xpos": [w.xpostag or "_" for w in words],
                "head": [w.head for w in words],
                "deprel": [w.deprel or "dep" for w in words],
            })
        return parsed


def parser_backend(name: str) -> CorpusParserBackend:
    """The registered backend called ``name``; a DataError listing the known ones otherwise."""
    if name not in CorpusParserBackend.list_available():
        from steps.common.data_root import DataError

        raise DataError(f"unknown parser backend {name!r}; known: {', '.join(CorpusParserBackend.list_available())}")
    return CorpusParserBackend.by_name(name)()


class CorpusParser:
    """A trained tagger + parser in a directory; parses pretokenized sentences on ``device``
    ("cpu" or "cuda"; backends without a GPU path ignore it)."""

    def __init__(self, directory: Path, device: str = "cpu"):
        self.directory = Path(directory)
        self.device = str(device)
        self.info = json.loads((self.directory / "parser.json").read_text())
        self.backend = self.info["backend"]
        self._backend = parser_backend(self.backend)
        self._models = None

    @property
    def metrics(self) -> Dict[str, float]:
        return self.info["metrics"]

    def parse(self, batch: Sequence[Sequence[str]]) -> List[Sentence]:
        """Tag and parse one batch of pretokenized sentences."""
        if self._models is None:
            self._models = self._backend.load(self.directory, self.info, self.device)
        return self._backend.parse(self._models, batch)

    def parse_all(self, sentences: Sequence[Sequence[str]], batch_size: int = 256) -> Iterator[List[Sentence]]:
        for start in range(0, len(sentences), batch_size):
            yield self.parse(sentences[start : start + batch_size])


def _blank_tags(sentences: Sequence[Sentence]) -> List[Sentence]:
    return [{"tokens": s["tokens"]} for s in sentences]




def _words(sentence):
    return [token for token in sentence if isinstance(token["id"], int)]


def tag_confusion(gold_sentences, predicted_sentences) -> Dict[str, Dict[str, int]]:
    """Counts of predicted UPOS per gold UPOS over aligned conllu TokenLists."""
    confusion: Dict[str, Dict[str, int]] = {}
    for gold, predicted in zip(gold_sentences, predicted_sentences):
        for g, p in zip(_words(gold), _words(predicted)):
            row = confusion.setdefault(g["upos"], {})
            row[p["upos"]] = row.get(p["upos"], 0) + 1
    return confusion


def resample_upos(sentences, confusion: Dict[str, Dict[str, int]], seed: int) -> int:
    """In place: replace each word's UPOS by a draw from P(predicted | gold) and its lemma by its
    form. Returns how many UPOS changed. Gold tags never seen on dev are kept."""
    import random

    rng = random.Random(seed)
    tables = {gold: (list(row), list(row.values())) for gold, row in confusion.items()}
    changed = 0
    for sentence in sentences:
        for word in _words(sentence):
            word["lemma"] = word["form"]
            if word["upos"] in tables:
                tags, weights = tables[word["upos"]]
                new = rng.choices(tags, weights)[0]
                changed += new != word["upos"]
                word["upos"] = new
    return changed


def _identity_lemmas(sentences):
    for sentence in sentences:
        for word in _words(sentence):
            word["lemma"] = word["form"]
    return sentences


def blank_columns(source: Path, target: Path, columns: Sequence[str]) -> Path:
    """A copy of a CoNLL-U file with the given columns set to "_" (e.g. to train a UPOS-only tagger)."""
    import conllu

    sentences = conllu.parse(source.read_text(encoding="utf-8"))
    for sentence in sentences:
        for word in sentence:
            for column in columns:
                word[column] = None
    return _write_tokenlists(sentences, target)


def _write_tokenlists(sentences, path: Path) -> Path:
    path.write_text("".join(sentence.serialize() for sentence in sentences), encoding="utf-8")
    return path


def prepare_parser_training_files(
    train: Path, dev: Path, predicted_dev: Path, scratch: Path, seed: int
) -> Dict[str, Any]:
    """Parser train/dev files that look like parse time (see ParserBudget.parser_training_tags)."""
    import conllu

    def parse(path: Path):
        return conllu.parse(path.read_text(encoding="utf-8"))

    gold_dev, tagged_dev = parse(dev), parse(predicted_dev)
    confusion = tag_confusion(gold_dev, tagged_dev)
    correct = sum(row.get(gold, 0) for gold, row in confusion.items())
    total = sum(sum(row.values()) for row in confusion.values())
    train_sentences = parse(train)
    changed = resample_upos(train_sentences, confusion, seed)
    train_words = sum(len(_words(s)) for s in train_sentences)
    logger.info("parser training tags: dev UPOS accuracy %.2f; resampled %d of %d train UPOS", 100 * correct / max(total, 1), changed, train_words)
    return {
        "train": _write_tokenlists(train_sentences, scratch / "parser_train.conllu"),
        "dev": _write_tokenlists(_identity_lemmas(tagged_dev), scratch / "parser_dev.conllu"),
        "tagger_dev_upos_accuracy": 100 * correct / max(total, 1),
        "train_upos_resampled": changed / max(train_words, 1),
    }


def parser_optimizer_args(budget: ParserBudget) -> List[str]:
    """Stanza parser CLI flags for ``budget.parser_optimizer`` (none: Stanza's own schedule)."""
    if budget.parser_optimizer is None:
        return []
    return ["--optim", budget.parser_optimizer, "--lr", str(budget.parser_lr), "--beta2", str(budget.parser_beta2),
            "--no_second_optim"]


def train_stanza(
    directory: Path, stanza_code: str, shorthand: str, train: Path, dev: Path, budget: ParserBudget,
    word_vectors: Optional[Path] = None, phases: Optional[PhaseLog] = None, device: str = "cpu",
) -> Dict[str, float]:
    """Train Stanza's tagger, then its parser (on gold tags, as Stanza does); return seconds spent.

    With ``phases``, a phase recorded as done is skipped (its timings come from the record) and an
    unrecorded one starts afresh: its model and Stanza's own parser checkpoint are deleted first,
    since Stanza's parser would otherwise continue from that checkpoint with another data order."""
    from stanza.models import parser as stanza_parser
    from stanza.models import tagger as stanza_tagger

    # Pretrained word vectors (steps/word_vectors.py) when given, as Stanza is meant to run.
    vectors = ["--wordvec_pretrain_file", str(word_vectors)] if word_vectors else ["--no_pretrain"]
    common = ["--lang", stanza_code, "--shorthand", shorthand, *vectors, "--device", str(device),
              "--save_dir", str(directory), "--seed", str(budget.seed),
              "--eval_interval", str(budget.eval_interval), "--fix_eval_interval"]
    scratch = directory / "scratch"
    scratch.mkdir(exist_ok=True)

    def model_args(name: str, steps: int, hidden_dim: int, biaffine_dim: int, batch_size: int, train=train, dev=dev):
        # What the tagger and parser CLIs share: data, output, budget and model size.
        return ["--mode", "train", "--train_file", str(train), "--eval_file", str(dev),
                "--output_file", str(scratch / f"{name}_dev.conllu"), "--save_name", f"{name}.pt",
                "--max_steps", str(steps), "--hidden_dim", str(hidden_dim),
                "--char_hidden_dim", str(budget.char_hidden_dim), "--word_emb_dim", str(budget.word_emb_dim),
                "--deep_biaff_hidden_dim", str(biaffine_dim), "--batch_size", str(batch_size)]

    timings: Dict[str, float] = {}
    start = time.perf_counter()
    tagger_train, tagger_dev = train, dev
    if budget.tagger_tags == "upos":
        tagger_train = blank_columns(train, scratch / "tagger_train.conllu", ("xpos", "feats"))
        tagger_dev = blank_columns(dev, scratch / "tagger_gold_dev.conllu", ("xpos", "feats"))
    if phases is not None and "tagger" in phases and (directory / "tagger.pt").exists():
        logger.info("Stanza tagger already trained (resumed run): skipping to the parser")
        timings.update(phases.get("tagger"))
    else:
        (directory / "tagger.pt").unlink(missing_ok=True)
        stanza_tagger.main(common + model_args("tagger", budget.tagger_steps, budget.tagger_hidden_dim,
                                               budget.tagger_biaffine_dim, budget.tagger_batch_size,
                                               train=tagger_train, dev=tagger_dev)
                           + ["--composite_deep_biaff_hidden_dim", str(budget.tagger_composite_biaffine_dim)])
        timings["tagger_seconds"] = time.perf_counter() - start
        _phase_done(phases, "tagger", timings)
    if phases is not None and "parser" in phases and (directory / "parser.pt").exists():
        logger.info("Stanza parser already trained (resumed run)")
        timings.update(phases.get("parser"))
        return timings
    for stale in ("parser.pt", "parser_checkpoint.pt"):
        (directory / stale).unlink(missing_ok=True)
    start = time.perf_counter()
    parser_train, parser_dev = train, dev
    if budget.parser_training_tags == "tagger_dev_confusion":
        tagged_dev = scratch / "tagger_dev.conllu"
        stanza_tagger.main(["--mode", "predict", "--lang", stanza_code, "--shorthand", shorthand, *vectors,
                            "--device", str(device), "--save_dir", str(directory), "--save_name", "tagger.pt",
                            "--eval_file", str(tagger_dev), "--output_file", str(tagged_dev)])
        files = prepare_parser_training_files(train, dev, tagged_dev, scratch, budget.seed)
        parser_train, parser_dev = files["train"], files["dev"]
        timings["tagger_dev_upos_accuracy"] = files["tagger_dev_upos_accuracy"]
        timings["train_upos_resampled"] = files["train_upos_resampled"]
    # --fix_eval_interval is a tagger-only flag; the parser always evaluates every eval_interval.
    parser_common = [a for a in common if a != "--fix_eval_interval"]
    stanza_parser.main(parser_common + model_args("parser", budget.parser_steps, budget.parser_hidden_dim,
                                                  budget.parser_biaffine_dim, budget.parser_batch_size,
                                                  train=parser_train, dev=parser_dev)
                       + ["--num_layers", str(budget.parser_layers)]
                       + ([] if budget.parser_uses_xpos else ["--no_xpos"])
                       + ([] if budget.parser_uses_feats else ["--no_ufeats"])
                       + parser_optimizer_args(budget))
    timings["parser_seconds"] = time.perf_counter() - start
    _phase_done(phases, "parser", {key: value for key, value in timings.items() if key != "tagger_seconds"})
    return timings


def train_udpipe(directory: Path, train: Path, dev: Path, budget: ParserBudget) -> Dict[str, float]:
    from ufal.udpipe import InputFormat, Model, ProcessingError, Sentence as UDSentence, Sentences, Trainer

    def load(path: Path):
        reader = InputFormat.newConlluInputFormat()
        reader.setText(path.read_text(encoding="utf-8"))
        sentences, error = Sentences(), ProcessingError()
        sentence = UDSentence()
        while reader.nextSentence(sentence, error):
            sentences.append(sentence)
            sentence = UDSentence()
        if error.occurred():
            raise ValueError(f"{path}: {error.message}")
        return sentences

    start = time.perf_counter()
    error = ProcessingError()
    parser_options = f"iterations={budget.udpipe_iterations}"
    model_bytes = Trainer.train(
        "morphodita_parsito", load(train), load(dev), "none", Trainer.DEFAULT, parser_options, error
    )
    if error.occurred():
        raise RuntimeError(f"UDPipe training failed: {error.message}")
    (directory / "udpipe.model").write_bytes(model_bytes.encode("latin-1") if isinstance(model_bytes, str) else model_bytes)
    if Model.load(str(directory / "udpipe.model")) is None:
        raise RuntimeError("UDPipe produced a model it cannot load")
    return {"tagger_seconds": 0.0, "parser_seconds": time.perf_counter() - start}


def evaluate_parser(parser: CorpusParser, gold: Sequence[Sentence], prediction_file: Optional[Path] = None) -> Dict[str, float]:
    """Parse the gold sentences' tokens from scratch (own predicted tags) and score them.

    Here ``las`` compares universal relations (subtypes stripped), punctuation excluded: the
    figure every cached ``train_corpus_parser`` result (``parser.json``) already holds. Keeping it
    keeps those results, and so every step keyed on them, valid. The corpus parser only supplies
    silver trees; no paper table reports its LAS, so the paper's metric is not needed here."""
    predicted: List[Sentence] = []
    for batch in parser.parse_all([s["tokens"] for s in gold]):
        predicted.extend(batch)
    if prediction_file is not None:
        write_conllu(predicted, prediction_file)
    scores = attachment_scores(gold, predicted)
    return {"upos_accuracy": scores["upos_accuracy"], "uas": scores["uas"], "las": scores["las_universal"],
            "scored_words": scores["scored_words"]}


__all__ = [
    "CRASH_AFTER_PHASE_ENV", "CorpusParser", "CorpusParserBackend", "ParserBudget", "StanzaBackend", "UDPipeBackend", "parser_backend", "evaluate_parser", "read_conllu",
    "train_stanza", "train_udpipe",
]
