"""Instances (see :mod:`steps.data.inputs`) → the padded tensor batch `MicroBertForPretraining` takes.

==================  ===========  ==================================================================
field               shape        content
==================  ===========  ==================================================================
input_ids           (B, T)       [CLS] subwords [SEP], MLM-corrupted, padded with [PAD] = 0
attention_mask      (B, T)       1 on real positions ([CLS] and [SEP] included), 0 on padding
token_type_ids      (B, T)       all 0
labels              (B, T)       original id at MLM-selected positions, -100 elsewhere
heads               (B, T)       subword head position (0 = ROOT) at positions 1..n; -1 at [CLS],
                                 [SEP] and padding (the convention of :mod:`models.trees`)
token_spans         (B, W+2, 2)  inclusive subword span per word, [CLS]/[SEP] entries included;
                                 padded with (0, 0), as in the reference
word_count          (B,)         W of each row
xpos                (B, W)       XPOS label id per word; -100 on padding, on tags outside the label
                                 set, and on silver rows unless ``xpos_from_silver_rows``
tree_is_gold        (B,)         1 for treebank rows, 0 for parsed-corpus rows
upos_ids            (B, T)       only for instances with ``upos`` (``keep_upos``): the word's UPOS id
                                 (`models.attention.syntax_gat.UPOS_TAGS`) at each of its pieces,
                                 0 at [CLS], [SEP] and padding
soft_label_ids      (N, 100)     only with a ``soft_label_table`` (condition H): the N masked
soft_label_probs    (N, 100)     positions' n-gram soft labels (row-major), gathered from the table
==================  ===========  ==================================================================

T = longest row + 2, W = most words in a row. MLM masking is transformers'
`DataCollatorForLanguageModeling` (15 %, 80/10/10 [MASK]/random/kept; special ids, [UNK]
included, are never selected), drawn from a caller-supplied seed so a run can be replayed batch by
batch; a batch in which nothing was selected is masked again.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import torch
from transformers import DataCollatorForLanguageModeling

from steps.data.inputs import Instance

IGNORE_INDEX = -100
NO_HEAD = -1
# Re-masking an all-unmasked batch: with p = 0.15 per token the chance of needing more than a few
# draws is negligible; the cap only turns a pathological input into an error instead of a hang.
MAX_MASKING_DRAWS = 1000


class PretrainingCollator:
    """Callable collator: ``collator(instances, seed=...)`` → dict of tensors.

    ``seed`` makes the MLM masking of that batch reproducible (the training loop derives one per
    micro-batch). Without a seed the collator's own generator, seeded once from ``seed`` at
    construction, is used and advances from call to call.
    """

    def __init__(
        self,
        tokenizer,
        xpos_labels: Sequence[str],
        xpos_from_silver_rows: bool = False,
        mlm_probability: float = 0.15,
        seed: int = 0,
        soft_label_table=None,
    ):
        if tokenizer.pad_token_id != 0:
            raise ValueError(f"the collator pads with 0, but the tokenizer's [PAD] id is {tokenizer.pad_token_id}")
        self.tokenizer = tokenizer
        self.masker = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=mlm_probability)
        self.xpos_index = {tag: i for i, tag in enumerate(xpos_labels)}
        self.xpos_from_silver_rows = xpos_from_silver_rows
        self.special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
        self.generator = torch.Generator().manual_seed(seed)
        # Condition H: each masked position's soft label, from this `models.ngram.SoftLabelTable`.
        self.soft_label_table = soft_label_table
        if soft_label_table is not None and soft_label_table.vocab_size != len(tokenizer):
            raise ValueError(f"the soft-label table scores {soft_label_table.vocab_size} ids, the tokenizer has {len(tokenizer)}")

    def __call__(self, instances: Sequence[Instance], seed: Optional[int] = None) -> Dict[str, torch.Tensor]:
        if not instances:
            raise ValueError("cannot collate an empty batch")
        batch_size = len(instances)
        length = max(len(row["input_ids"]) for row in instances)
        words = max(len(row["token_spans"]) - 2 for row in instances)

        input_ids = torch.zeros(batch_size, length, dtype=torch.long)
        attention_mask = torch.zeros(batch_size, length, dtype=torch.long)
        heads = torch.full((batch_size, length), NO_HEAD, dtype=torch.long)
        token_spans = torch.zeros(batch_size, words + 2, 2, dtype=torch.long)
        xpos = torch.full((batch_size, words), IGNORE_INDEX, dtype=torch.long)
        word_count = torch.zeros(batch_size, dtype=torch.long)
        tree_is_gold = torch.zeros(batch_size, dtype=torch.long)

        for b, row in enumerate(instances):
            ids = row["input_ids"]
            # MLM-only rows (steps.data.inputs.make_mlm_instances) have no tree and no tags.
            head, tags = row.get("head", []), row.get("xpos")
            if ("head" in row and len(head) != len(ids) - 2) or (tags is not None and len(row["token_spans"]) != len(tags) + 2):
                raise ValueError(
                    f"malformed instance {b}: {len(ids)} input ids, {len(head)} heads, "
                    f"{len(row['token_spans'])} spans, {'no' if tags is None else len(tags)} words"
                )
            input_ids[b, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            attention_mask[b, : len(ids)] = 1
            if head:
                heads[b, 1 : len(head) + 1] = torch.tensor(head, dtype=torch.long)
            token_spans[b, : len(row["token_spans"])] = torch.tensor(row["token_spans"], dtype=torch.long)
            word_count[b] = len(row["token_spans"]) - 2
            gold = bool(row["tree_is_gold"][0])
            tree_is_gold[b] = int(gold)
            if tags is not None and (gold or self.xpos_from_silver_rows):
                ids_of_tags = [self.xpos_index.get(tag, IGNORE_INDEX) for tag in tags]
                xpos[b, : len(ids_of_tags)] = torch.tensor(ids_of_tags, dtype=torch.long)

        corrupted, labels = self._mask(input_ids, seed)
        extra = {"upos_ids": self._upos_ids(instances, length)} if any("upos" in row for row in instances) else {}
        soft = {}
        if self.soft_label_table is not None:
            ids, probs = self.soft_label_table.lookup([row["input_ids"] for row in instances], (labels != IGNORE_INDEX).nonzero())
            soft = {"soft_label_ids": ids, "soft_label_probs": probs}
        return extra | soft | {
            "input_ids": corrupted,
            "attention_mask": attention_mask,
            "token_type_ids": torch.zeros_like(input_ids),
            "labels": labels,
            "heads": heads,
            "token_spans": token_spans,
            "word_count": word_count,
            "xpos": xpos,
            "tree_is_gold": tree_is_gold,
        }

    @staticmethod
    def _upos_ids(instances: Sequence[Instance], length: int) -> torch.Tensor:
        from models.attention.syntax_gat import subword_upos_ids

        upos_ids = torch.zeros(len(instances), length, dtype=torch.long)
        for b, row in enumerate(instances):
            if "upos" not in row:
                raise ValueError(f"instance {b} has no UPOS tags while others in its batch do")
            ids = subword_upos_ids(row["upos"], row["token_spans"][1:-1])
            upos_ids[b, 1 : len(ids) + 1] = torch.tensor(ids, dtype=torch.long)
        return upos_ids

    def _mask(self, input_ids: torch.Tensor, seed: Optional[int]):
        special = torch.isin(input_ids, self.special_ids)
        if bool(special.all()):
            raise ValueError("batch has no maskable token (every position is [PAD], [CLS], [SEP], [UNK] or [MASK])")
        # The HF collator draws from `self.generator` (its `seed` field only seeds on first use), so
        # hand it ours for this batch.
        self.masker.generator = torch.Generator().manual_seed(seed) if seed is not None else self.generator
        try:
            for _ in range(MAX_MASKING_DRAWS):
                corrupted, labels = self.masker.torch_mask_tokens(input_ids.clone(), special_tokens_mask=special)
                if bool((labels != IGNORE_INDEX).any()):
                    return corrupted, labels
        finally:
            self.masker.generator = None
        raise ValueError(f"no token was masked in {MAX_MASKING_DRAWS} draws (mlm_probability too small?)")


def collate_batches(collator: PretrainingCollator, rows: List[Instance], batch_size: int, seed: int):
    """Consecutive batches of ``rows`` with masking seeded by (seed, batch index): the same masks
    every time, which makes repeated dev evaluations comparable."""
    for number, start in enumerate(range(0, len(rows), batch_size)):
        yield collator(rows[start : start + batch_size], seed=seed + number)
