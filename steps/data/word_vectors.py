"""Word vectors for the corpus parser, trained in the DAG on the unlabeled corpus.

Stanza's tagger and parser are built to start from pretrained word vectors, and none can be
downloaded here; `--no_pretrain` leaves them to learn every word form from the small treebank.
Skip-gram vectors (gensim's word2vec) trained on the language's own unlabeled corpus give them
what the treebank lacks: embeddings for the many test words never seen in training.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict

from tango import Step

from steps.common.data_root import DataError
from steps.common.formats import DirectoryFormat

VECTORS_FILE = "vectors.pt"


@Step.register("train_word_vectors")
class TrainWordVectors(Step):
    """Skip-gram vectors of the lowercased corpus train split (Stanza looks words up lowercased),
    saved as a Stanza ``Pretrain`` file (``vectors.pt``) for ``train_corpus_parser``."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DirectoryFormat()

    def run(  # type: ignore[override]
        self, corpus: Dict[str, Any], dim: int = 100, window: int = 5, min_count: int = 2, epochs: int = 10, seed: int = 1234
    ) -> Path:
        from gensim.models import Word2Vec
        from stanza.models.common.pretrain import Pretrain

        sentences = [[word.lower() for word in sentence] for sentence in corpus["train"]]
        if not sentences:
            raise DataError("train_word_vectors: the corpus has no train sentences")
        start = time.perf_counter()
        # One worker: gensim is only reproducible single-threaded, and the step is DETERMINISTIC.
        model = Word2Vec(sentences, vector_size=dim, window=window, min_count=min_count, sg=1, epochs=epochs, seed=seed, workers=1)
        out = self.work_dir / "vectors"
        out.mkdir(parents=True, exist_ok=True)
        text_file = self.work_dir / "vectors.txt"
        with open(text_file, "w", encoding="utf-8") as f:
            f.write(f"{len(model.wv.index_to_key)} {dim}\n")
            for word in model.wv.index_to_key:
                f.write(word + " " + " ".join(f"{x:.5f}" for x in model.wv[word]) + "\n")
        Pretrain(filename=str(out / VECTORS_FILE), vec_filename=str(text_file)).load()  # converts and saves
        text_file.unlink()
        self.logger.info("word vectors: %d words × %d from %d sentences in %.1f s",
                         len(model.wv.index_to_key), dim, len(sentences), time.perf_counter() - start)
        return out
