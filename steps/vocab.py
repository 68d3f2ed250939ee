"""WordPiece vocabulary per SPEC §B, saved as a stock ``transformers`` fast tokenizer."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, List, Sequence

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

# Fixed ids: the collator pads with 0 and SPEC §B pins the rest.
SPECIAL_TOKENS = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]


def vocabulary_size(word_types: int) -> int:
    """MicroBERT's size rule: 8000 plus 6000 per 450k word types beyond 15k (SPEC §B)."""
    return 8000 + max(0, int((word_types - 15000) * 6000 / 450000))


def train_wordpiece(sentences: Iterable[Sequence[str]], vocab_size: int):
    """Train a WordPiece tokenizer (NFD + lowercase, accents kept; ``Whitespace`` pre-tokenizer;
    ``##`` continuation prefix) and wrap it as a stock ``transformers`` fast tokenizer.

    It is saved as ``PreTrainedTokenizerFast`` rather than ``BertTokenizer``: transformers 5's
    BertTokenizer rebuilds its own normalizer on load (no NFD), which would turn accented words
    into [UNK]; the generic fast tokenizer reloads tokenizer.json exactly."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS)
    tokenizer.train_from_iterator((" ".join(tokens) for tokens in sentences), trainer=trainer)
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
    to nothing (e.g. a control character) becomes [UNK] so every word keeps a span (SPEC §A.4)."""
    encoded = tokenizer(list(words), add_special_tokens=False)["input_ids"]
    return [ids if ids else [tokenizer.unk_token_id] for ids in encoded]
