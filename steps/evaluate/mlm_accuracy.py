"""MLM accuracy (Edman et al. §3.1, Tables 2, 4, 5): one token masked at a time.

Every subword of the first ``max_sentences`` sentences of a treebank file (the language's UD dev
split) is masked in turn, the rest of the sentence left as it is, and the pretrained model's
argmax over the non-special vocabulary is compared with the original token.  Reported in percent:

* ``accuracy`` over every masked token;
* ``bin1`` … ``bin5``: accuracy over the tokens whose training frequency puts them in each fifth of
  the vocabulary (bin 1 = the rarest 20 % of non-special types, counted on the pretraining rows);
* ``word_completion``: over tokens that continue a word (WordPiece "##" pieces, the paper's
  "after a BPE continuation piece"), how often the guess is a continuation piece that, in place of
  the original, makes the whole word a word type of the training rows.

A C<c> model sees each target in its c-token window (the input it was trained on); others see the
whole sentence. An encoder whose attention reads a parse (SLA) is given each sentence's tree from
``corpus_parser``, the parser whose parse it was pretrained on (as fine-tuning gives it); the tree
of the unmasked sentence, as in pretraining.  Given ``trigram_model`` (and ``tokenizer``) instead of ``pretrained``, the
prediction is the trigram LM's (the paper's SLM row): the best-scoring candidate, each scored by the
three trigrams that contain the position (`models.ngram.TrigramModel.candidate_log_scores`).  The result folder holds metrics.json in the fine-tuning steps' shape
(``primary_metric`` + ``test``), so `score_cell` (with ``metric``) files it into table cells.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from tango import Step

from steps.common.data_root import DataError, DataPath
from steps.common.formats import DirectoryFormat
from steps.common.runtime import resolve_device, torch_threads

MLM_METRICS = ("accuracy", "bin1", "bin2", "bin3", "bin4", "bin5", "word_completion")


def frequency_bins(train_rows: Sequence[Dict[str, Any]], vocab_size: int, special_ids: Sequence[int], bins: int = 5) -> np.ndarray:
    """(V,) bin number 1..bins of every id (0 for special ids): non-special ids sorted by training
    count (ties by id), cut into `bins` equal-size groups, 1 = rarest."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    for row in train_rows:
        np.add.at(counts, np.asarray(row["input_ids"], dtype=np.int64), 1)
    ids = np.array([i for i in range(vocab_size) if i not in set(special_ids)])
    order = ids[np.lexsort((ids, counts[ids]))]
    bin_of = np.zeros(vocab_size, dtype=np.int64)
    for number, chunk in enumerate(np.array_split(order, bins), 1):
        bin_of[chunk] = number
    return bin_of


def word_spans(ids: Sequence[int], continues: np.ndarray) -> List[Tuple[int, int]]:
    """(start, end) of each word of a [CLS] … [SEP] row: a piece and the "##" pieces after it."""
    spans, start = [], None
    for position in range(1, len(ids) - 1):
        if not continues[ids[position]] or start is None:
            if start is not None:
                spans.append((start, position))
            start = position
    if start is not None:
        spans.append((start, len(ids) - 1))
    return spans


def training_words(train_rows: Sequence[Dict[str, Any]], continues: np.ndarray) -> set:
    return {tuple(row["input_ids"][s:e]) for row in train_rows for s, e in word_spans(row["input_ids"], continues)}


@Step.register("mlm_accuracy")
class MlmAccuracy(Step):
    """MLM accuracy of a pretrained µBERT on held-out sentences, one masked token at a time."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = DirectoryFormat()
    SKIP_ID_ARGUMENTS = {"num_threads", "device"}
    # The trigram-LM row reads a trigram model and a tokenizer instead of a pretrained µBERT.
    SKIP_DEFAULT_ARGUMENTS = {"trigram_model": None, "tokenizer": None, "corpus_parser": None}

    def run(  # type: ignore[override]
        self,
        pretrained: Optional[Path],  # None for the trigram-LM row
        pretraining_data: Dict[str, Any],
        condition: str,
        sentences: DataPath,
        max_sentences: int = 100,
        num_threads: Optional[int] = None,
        trigram_model: Optional[Any] = None,
        tokenizer: Optional[Path] = None,
        device: Optional[str] = "auto",
        corpus_parser: Optional[Path] = None,
    ) -> Path:
        """:param device: where the µBERT runs: "auto" (the GPU when there is one), "cpu" or "cuda"
            (the trigram LM always runs on the CPU); recorded in metrics.json.
        :param corpus_parser: a train_corpus_parser result, for encoders whose attention reads a parse."""
        from safetensors.torch import load_file
        from transformers import AutoModel

        import models  # noqa: F401  (registers model_type "microbert")
        from models import parse_condition
        from models.objectives import MicroBertMLMHead, limited_context_windows, objective_sizes
        from steps.data.readers import read_conllu
        from steps.data.vocab import load_tokenizer

        if (pretrained is None) == (trigram_model is None) or (trigram_model is not None) != (tokenizer is not None):
            raise ValueError("mlm_accuracy scores either a pretrained µBERT (pretrained) or a trigram LM (trigram_model and tokenizer)")
        device = resolve_device(device) if trigram_model is None else torch.device("cpu")
        with torch_threads(num_threads), torch.no_grad():
            if trigram_model is not None:
                tokenizer, context = load_tokenizer(Path(tokenizer)), None
                vocab_size = trigram_model.vocab_size
            else:
                pretrained = Path(pretrained)
                head_file = pretrained / "mlm_head.safetensors"
                if not head_file.exists():
                    raise DataError(f"{head_file}: missing; this pretraining result predates the exported MLM head (re-run pretrain_microbert)")
                context = objective_sizes(parse_condition(condition).objectives).get("C")
                tokenizer = load_tokenizer(pretrained / "encoder")
                encoder = AutoModel.from_pretrained(pretrained / "encoder").to(device).eval()
                head = MicroBertMLMHead(encoder.config)
                head.load_state_dict(load_file(str(head_file)))
                head.to(device).eval()
                embeddings = encoder.get_input_embeddings().weight
                vocab_size = embeddings.shape[0]
            special = sorted(set(tokenizer.all_special_ids))
            continues = np.zeros(vocab_size, dtype=bool)
            for token, index in tokenizer.get_vocab().items():
                continues[index] = token.startswith("##")
            bin_of = frequency_bins(pretraining_data["train"], vocab_size, special)
            words = training_words(pretraining_data["train"], continues)

            scored = read_conllu(sentences.resolve())[:max_sentences]
            rows = [tokenizer(s["tokens"], is_split_into_words=True)["input_ids"] for s in scored]
            trees = self._trees(encoder.config, tokenizer, scored, rows, corpus_parser) if trigram_model is None else None
            gold, guess, completes = [], [], []
            for number, ids in enumerate(rows):
                original = torch.tensor([ids], device=device)
                positions = torch.arange(1, len(ids) - 1, device=device)
                corrupted = original.repeat(len(positions), 1)
                corrupted[torch.arange(len(positions)), positions] = tokenizer.mask_token_id
                if trigram_model is not None:  # the n-gram model alone: its best candidate
                    targets = torch.stack([torch.zeros_like(positions), positions], 1)
                    logits = trigram_model.candidate_log_scores(*trigram_model.position_contexts(original, torch.tensor([len(ids)]), targets))
                elif context is not None:  # C<c>: each target in its window, as in pretraining
                    targets = torch.stack([torch.zeros_like(positions), positions], 1)
                    windows = limited_context_windows(original, corrupted[:1].clone().fill_(tokenizer.mask_token_id), torch.ones_like(original), targets, context)
                    hidden = encoder(input_ids=windows, attention_mask=torch.ones_like(windows)).last_hidden_state[:, context // 2]
                else:
                    tree = {} if trees is None else {"heads": trees[number].to(device).expand(len(positions), -1)}
                    hidden = encoder(input_ids=corrupted, attention_mask=torch.ones_like(corrupted), **tree).last_hidden_state
                    hidden = hidden[torch.arange(len(positions)), positions]
                if trigram_model is None:
                    logits = head(hidden, embeddings)
                logits[:, special] = float("-inf")
                predicted = logits.argmax(-1).tolist()
                gold += ids[1:-1]
                guess += predicted
                for (start, end) in word_spans(ids, continues):
                    for position in range(start + 1, end):
                        word = list(ids[start:end])
                        word[position - start] = predicted[position - 1]
                        completes.append(bool(continues[word[position - start]]) and tuple(word) in words)
        gold_array, guess_array = np.array(gold), np.array(guess)
        correct = gold_array == guess_array
        percent = lambda values: float(100.0 * np.mean(values)) if len(values) else None  # noqa: E731
        scores = {"accuracy": percent(correct), "word_completion": percent(completes),
                  **{f"bin{b}": percent(correct[bin_of[gold_array] == b]) for b in range(1, 6)}}
        counts = {"tokens": int(len(gold)), "continuations": len(completes), "sentences": len(rows),
                  **{f"bin{b}_tokens": int((bin_of[gold_array] == b).sum()) for b in range(1, 6)}}
        out = self.work_dir / "result"
        out.mkdir(parents=True, exist_ok=True)
        metrics = {"task": "mlm_accuracy", "primary_metric": "accuracy", "condition": condition,
                   "evaluated_on": f"first {max_sentences} sentences of {sentences.resolve().name}", "test": scores, "counts": counts,
                   "device": str(device)}
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
        return out

    @staticmethod
    def _trees(config, tokenizer, scored, rows, corpus_parser: Optional[Path]) -> Optional[List[torch.Tensor]]:
        """(1, T) subword heads of each scored sentence from the corpus parser's tree, for an encoder
        whose attention reads a parse; None for the others."""
        from steps.finetune.encoders import attention_needs_parse, collate_word_features, encode_words_batch, parser_trees

        if not attention_needs_parse(config):
            return None
        if corpus_parser is None:
            raise ValueError(f"condition's attention ({config.syntax_attention}) reads a parse: give mlm_accuracy a corpus_parser")
        from steps.parse.backends import CorpusParser

        words = [s["tokens"] for s in scored]
        heads, _ = parser_trees(CorpusParser(Path(corpus_parser)), words)
        features = encode_words_batch(tokenizer, words, config.max_position_embeddings, heads, name="mlm_accuracy")
        for number, (feature, ids) in enumerate(zip(features, rows)):
            if feature["input_ids"] != ids:  # both tokenize the same words; a difference would misplace the tree
                raise ValueError(f"mlm_accuracy: sentence {number + 1} tokenizes differently word by word")
        return [collate_word_features([feature])["heads"] for feature in features]
