"""WordPiece vocabulary as MicroBERT's (Gessler & Zeldes, 2022), saved as a stock ``transformers`` fast tokenizer."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from tango import Step

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from steps.common.formats import DirectoryFormat

# Fixed ids: the collator pads with 0 and the reference pins the rest.
SPECIAL_TOKENS = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
CONTINUATION = "##"


def vocabulary_size(word_types: int) -> int:
    """MicroBERT's size rule: 8000 plus 6000 per 450k word types beyond 15k (Gessler & Zeldes, 2022)."""
    return 8000 + max(0, int((word_types - 15000) * 6000 / 450000))


def train_wordpiece(sentences: Iterable[Sequence[str]], vocab_size: int):
    """Train a WordPiece tokenizer (NFD + lowercase, accents kept; ``Whitespace`` pre-tokenizer;
    ``##`` continuation prefix) and wrap it as a stock ``transformers`` fast tokenizer.

    Deterministic across processes. The `tokenizers` trainer numbers each "##" piece when it
    first meets it in a hash map of words, and breaks ties between equally frequent merges by
    those numbers, so a plain run differs from the next (huggingface/tokenizers#1794, fix proposed
    in #2066). Here every "##" piece the trainer would create (one per character seen inside a
    word) is registered before training, in sorted order, and so gets a fixed number; the
    vocabulary is then rebuilt with only the real special tokens marked special.

    It is saved as ``PreTrainedTokenizerFast`` rather than ``BertTokenizer``: transformers 5's
    BertTokenizer rebuilds its own normalizer on load (no NFD), which would turn accented words
    into [UNK]; the generic fast tokenizer reloads tokenizer.json exactly."""
    texts = [" ".join(tokens) for tokens in sentences]
    trained = _configured(models.WordPiece(unk_token="[UNK]"))
    continuing = sorted({
        CONTINUATION + char
        for text in texts
        for word, _ in trained.pre_tokenizer.pre_tokenize_str(trained.normalizer.normalize_str(text))
        for char in word[1:]
    })
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS + continuing,
                                        continuing_subword_prefix=CONTINUATION)
    trained.train_from_iterator(texts, trainer=trainer)
    return wordpiece_from_vocabulary(trained.get_vocab())


def _configured(model) -> Tokenizer:
    """A `tokenizers` WordPiece pipeline as `train_wordpiece` builds it: NFD + lowercase, whitespace."""
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.decoder = decoders.WordPiece()
    return tokenizer


def wordpiece_from_vocabulary(vocab: Dict[str, int]):
    """The fast tokenizer `train_wordpiece` returns, rebuilt from its vocabulary ({piece: id}): the
    same pieces, normalizer, pre-tokenizer and special tokens, so it encodes words identically
    (e.g. from the "vocabulary" a `build_tg_actions` result keeps instead of a tokenizer folder)."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = _configured(models.WordPiece(vocab=dict(vocab), unk_token="[UNK]", continuing_subword_prefix=CONTINUATION))
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
        cls_token="[CLS]", mask_token="[MASK]",
    )


def load_tokenizer(directory: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(directory))


def encode_words(tokenizer, words: Sequence[str]) -> List[List[int]]:
    """Subword ids of each word, encoded separately without special tokens; a word that encodes
    to nothing (e.g. a control character) becomes [UNK] so every word keeps a span, as in the reference."""
    encoded = tokenizer(list(words), add_special_tokens=False)["input_ids"]
    return [ids if ids else [tokenizer.unk_token_id] for ids in encoded]


@Step.register("train_tokenizer")
class TrainTokenizer(Step):
    """WordPiece vocabulary on the corpus train split; size from the type count unless
    given. Result: a directory loadable with ``AutoTokenizer.from_pretrained``.

    The vocabulary is the same in every process (see `train_wordpiece`). Before VERSION 002 it was
    not: the `tokenizers` trainer's hash-map order made a cold rerun of the Wolof main command
    differ in 12 of 8,080 pieces and in the ids of 2,662, and that alone moved the cell's test LAS
    from 68.55 to 67.29 and its NER F1 from 82.44 to 78.65.
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "002"  # 002: deterministic vocabulary
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
