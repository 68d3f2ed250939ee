"""Encoders for fine-tuning: loading what a downstream step (parser, NER, PrOnto) fine-tunes.

An *encoder source* is one of

* a ``pretrain_microbert`` or ``random_init_encoder`` result directory (it holds ``encoder/``;
  those steps, which build encoders, live in `steps.pretrain`),
* a directory with ``config.json`` + tokenizer files (``save_pretrained`` output),
* an HF model name or path such as ``bert-base-multilingual-cased`` (for the mBERT rows, where
  its weights exist locally; nothing is downloaded in tests or CI).

`load_encoder` returns the model and its tokenizer. An encoder whose attention variant needs a
parse (`models.attention_needs_parse`; SLA) needs one at fine-tuning time too; the caller chooses
explicitly:
``sla_parse="parse"`` — pass each sentence's tree from the corpus parser (what the reference does),
or ``"global"`` — run plain global attention. There is no silent fallback.

`encode_words_batch` turns word lists into subword features with word spans (and subword trees
for SLA), and `collate_word_features` pads them into tensors for `models.word_encoder.WordEncoder`.

`add_syntax_gat` gives any BERT-family encoder syntax-guided attention at fine-tuning time (the
setting of Ahmad et al., 2021: "µB-M+G" rows): a fresh GAT whose output enters every layer's first
n_syn heads, trained with the task (and the structural-probe loss) on the corpus parser's trees.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch

from steps.data.inputs import expand_tree
from steps.data.vocab import encode_words, load_tokenizer

logger = logging.getLogger(__name__)

# The names `sla_parse` / `corpus_parser` are historic (SLA was the first variant needing a parse) and
# kept because they are in every fine-tuning cache key; they apply to any variant that needs a parse.
SLA_PARSE_MODES = ("parse", "global")
NO_HEAD = -1  # same padding value as the pretraining collator


def resolve_encoder_dir(source: Union[str, Path]) -> str:
    """The directory (or HF name) that ``from_pretrained`` should load for an encoder source."""
    path = Path(source)
    if (path / "encoder" / "config.json").exists():
        return str(path / "encoder")
    if (path / "config.json").exists():
        return str(path)
    if path.exists():
        raise FileNotFoundError(f"{path}: neither an encoder directory (config.json) nor a step result with encoder/")
    return str(source)  # an HF model name; from_pretrained resolves it (offline: from the local HF cache)


def attention_needs_parse(config) -> bool:
    """Whether an encoder with this (any transformers) config has an attention variant that reads a
    parse (the `models.attention` registry; SLA). Imported lazily, as transformers is heavy."""
    from models.attention import attention_needs_parse as variant_needs_parse

    return variant_needs_parse(config)


def uses_upos(config) -> bool:
    """Whether an encoder with this config embeds UPOS tags (syntax-guided attention with gat_use_upos)."""
    return getattr(config, "syntax_attention", None) == "syntax_gat" and getattr(config, "gat_use_upos", False)


def load_encoder(source: Union[str, Path], sla_parse: str = "parse"):
    """(encoder model, tokenizer) for an encoder source. See the module docstring for ``sla_parse``."""
    import models  # noqa: F401  (registers model_type "microbert" with the Auto classes)
    from transformers import AutoConfig, AutoModel

    if sla_parse not in SLA_PARSE_MODES:
        raise ValueError(f"sla_parse must be one of {SLA_PARSE_MODES}, got {sla_parse!r}")
    directory = resolve_encoder_dir(source)
    config = AutoConfig.from_pretrained(directory)
    if attention_needs_parse(config):
        # "parse": the caller passes trees and the model raises if one is missing.
        config.sla_without_parse = "global" if sla_parse == "global" else "error"
    model = AutoModel.from_pretrained(directory, config=config)
    return model, load_encoder_tokenizer(directory)


def add_syntax_gat(encoder, fields: Dict[str, Any]):
    """The encoder as a `MicroBertModel` with syntax-guided attention (``syntax_attention="syntax_gat"``):
    its own weights copied, the GAT and fusion maps freshly initialised (from torch's global RNG,
    so seed it first). ``fields``: ``gat_*`` settings of `MicroBertConfig` (δ, n_syn, fusion, sizes,
    α = ``gat_probe_weight``, 0 for none). Only plain-attention ``bert``/``microbert`` encoders qualify."""
    from models import MicroBertConfig, MicroBertModel
    from models.attention import attention_variant

    config = encoder.config
    if config.model_type not in ("bert", "microbert") or attention_variant(getattr(config, "syntax_attention", None)) is not None:
        raise ValueError(f"syntax-guided attention can be added to a plain-attention BERT encoder only, not a "
                         f"{config.model_type!r} with attention {getattr(config, 'syntax_attention', None)!r}")
    unknown = {key for key in fields if not key.startswith("gat_")} | (set(fields) - set(MicroBertConfig().to_dict()))
    if unknown:
        raise ValueError(f"syntax_gat settings must be gat_* fields of MicroBertConfig; unknown: {sorted(unknown)}")
    values = {key: value for key, value in config.to_dict().items()
              if key not in ("model_type", "architectures", "transformers_version", "auto_map")}
    values.update(fields, syntax_attention="syntax_gat")
    model = MicroBertModel(MicroBertConfig(**values))
    own = {key: value for key, value in encoder.state_dict().items() if not key.startswith("pooler.")}
    missing, unexpected = model.load_state_dict(own, strict=False)
    missing = [key for key in missing if not key.startswith("attention_variant_module.")]
    if missing or unexpected:
        raise ValueError(f"cannot copy the encoder into a syntax-guided one: missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model


def load_encoder_tokenizer(directory: str):
    """The tokenizer of a `resolve_encoder_dir` result: the saved one of a local directory, else
    the hub model's (from the local HF cache when offline)."""
    if Path(directory).exists():
        return load_tokenizer(Path(directory))
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(directory)


def _special_ids(tokenizer) -> Tuple[int, int]:
    first = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    last = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    if first is None or last is None:
        raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no [CLS]/[SEP] (or BOS/EOS) tokens")
    return first, last


def parser_trees(parser, sentences: Sequence[Sequence[str]], with_upos: bool = False):
    """(heads, UPOS tags or None) of each word list as a corpus parser (`steps.parse.backends.CorpusParser`)
    parses it, in order: the trees an encoder whose attention reads a parse is given."""
    parsed = [tree for batch in parser.parse_all(sentences) for tree in batch]
    return [tree["head"] for tree in parsed], ([tree["upos"] for tree in parsed] if with_upos else None)


def encode_words_batch(
    tokenizer,
    sentences: Sequence[Sequence[str]],
    max_length: int,
    heads: Optional[Sequence[Sequence[int]]] = None,
    name: str = "sentences",
    upos: Optional[Sequence[Sequence[str]]] = None,
) -> List[Dict[str, Any]]:
    """Subword features for each sentence: ``input_ids`` ([CLS] … [SEP]), ``word_spans``
    (inclusive subword positions per word) and, given word-level ``heads``, the subword tree
    ``subword_heads`` (positions 1..n, expanded as the reference does) that SLA encoders need; given word-level
    ``upos`` tags, ``upos_ids`` per subword (syntax-guided attention).

    Every word keeps a span, because downstream labels are per word. A sentence whose subwords do
    not fit ``max_length`` keeps only each word's first piece (counted in the log); one that still
    does not fit is an error naming it.
    """
    first_id, last_id = _special_ids(tokenizer)
    features, shortened = [], 0
    for number, words in enumerate(sentences):
        pieces = encode_words(tokenizer, words)
        if sum(map(len, pieces)) + 2 > max_length:
            pieces = [p[:1] for p in pieces]
            shortened += 1
            if len(pieces) + 2 > max_length:
                raise ValueError(
                    f"{name}: sentence {number + 1} has {len(words)} words, more than max_length {max_length} - 2"
                )
        spans, ids = [], [first_id]
        for word_pieces in pieces:
            spans.append((len(ids), len(ids) + len(word_pieces) - 1))
            ids.extend(word_pieces)
        ids.append(last_id)
        feature: Dict[str, Any] = {"input_ids": ids, "word_spans": spans}
        if heads is not None:
            feature["subword_heads"], _ = expand_tree(spans, heads[number], ["_"] * len(spans))
        if upos is not None:
            from models.attention.syntax_gat import subword_upos_ids

            feature["upos_ids"] = subword_upos_ids(upos[number], spans)
        features.append(feature)
    if shortened:
        logger.info("%s: %d of %d sentences too long for %d subwords kept only first pieces", name, shortened, len(sentences), max_length)
    return features


def collate_word_features(features: Sequence[Dict[str, Any]], pad_id: int = 0, multiple: int = 1) -> Dict[str, torch.Tensor]:
    """Pad a batch of `encode_words_batch` features: input_ids/attention_mask (B, T),
    word_spans (B, W, 2), word_mask (B, W), and heads (B, T) when trees are present
    ([CLS], [SEP] and padding get NO_HEAD, as in pretraining), and upos_ids (B, T) when tags are
    present (0 at [CLS], [SEP] and padding). ``multiple``: T and W are rounded up to a multiple
    of it, so that batches come in a few shapes (CUDA graphs replay fixed shapes)."""
    if multiple < 1:
        raise ValueError(f"multiple must be positive, got {multiple}")
    batch_size = len(features)
    length = -(-max(len(f["input_ids"]) for f in features) // multiple) * multiple
    words = -(-max(len(f["word_spans"]) for f in features) // multiple) * multiple
    input_ids = torch.full((batch_size, length), pad_id, dtype=torch.long)
    attention_mask = torch.zeros(batch_size, length, dtype=torch.long)
    word_spans = torch.zeros(batch_size, words, 2, dtype=torch.long)
    word_mask = torch.zeros(batch_size, words, dtype=torch.bool)
    has_trees = all("subword_heads" in f for f in features)
    heads = torch.full((batch_size, length), NO_HEAD, dtype=torch.long) if has_trees else None
    upos_ids = torch.zeros(batch_size, length, dtype=torch.long) if all("upos_ids" in f for f in features) else None
    for b, feature in enumerate(features):
        ids = feature["input_ids"]
        input_ids[b, : len(ids)] = torch.tensor(ids)
        attention_mask[b, : len(ids)] = 1
        spans = feature["word_spans"]
        word_spans[b, : len(spans)] = torch.tensor(spans)
        word_mask[b, : len(spans)] = True
        if heads is not None:
            heads[b, 1 : len(ids) - 1] = torch.tensor(feature["subword_heads"])
        if upos_ids is not None:
            upos_ids[b, 1 : len(ids) - 1] = torch.tensor(feature["upos_ids"])
    batch = {"input_ids": input_ids, "attention_mask": attention_mask, "word_spans": word_spans, "word_mask": word_mask}
    if heads is not None:
        batch["heads"] = heads
    if upos_ids is not None:
        batch["upos_ids"] = upos_ids
    return batch


__all__ = [
    "NO_HEAD", "SLA_PARSE_MODES", "add_syntax_gat", "attention_needs_parse", "collate_word_features", "encode_words_batch",
    "load_encoder", "load_encoder_tokenizer", "resolve_encoder_dir", "uses_upos",
]
