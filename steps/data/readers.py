"""Readers for the two kinds of input: UD treebanks (via ``conllu``) and unlabeled corpora.

Sentences travel through the DAG as plain dicts (they pickle into the step cache without tying
the cache to a class definition):

    {"tokens": [str], "upos": [str], "xpos": [str], "head": [int], "deprel": [str]}

``head`` is 1-based with 0 = root, as in CoNLL-U. Corpus sentences carry only ``tokens`` until
the parse step adds the rest.
"""
from __future__ import annotations

import html
import logging
import math
import random
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import conllu
from conllu.exceptions import ParseException

from steps.common.data_root import DataError, DataPath, iter_lines
from steps.data.validate import ConlluText, check_conllu, confirmed

logger = logging.getLogger(__name__)

Sentence = Dict[str, list]


# ---------------------------------------------------------------------------------------------
# UD treebanks
# ---------------------------------------------------------------------------------------------


def _sentence_blocks(path: Path):
    """(first line number, block text) for each sentence block of a CoNLL-U file, read as
    :class:`~steps.data.validate.ConlluText` reads it (NFC, so a file saved in NFD reads as the
    clean file does)."""
    return ConlluText(path).blocks()


# conllu's complaint about a field → the UD validator's test for the same fault.
_FIELD_RULES = {"head": "invalid-head", "feats": "invalid-feature", "deps": "invalid-deps"}


def _locate_parse_error(path: Path, start: int, block: str, error: Exception) -> DataError:
    """Find the offending line of a block that ``conllu`` refused, for a one-line error."""
    for offset, line in enumerate(block.splitlines()):
        if line.startswith("#"):
            continue
        try:
            conllu.parse(line + "\n\n")
        except (ParseException, ValueError) as line_error:
            field = re.search(r"field '(\w+)'", str(line_error))
            rule = _FIELD_RULES.get(field.group(1) if field else "", "invalid-word-id" if line[:1].isdigit() else "invalid-line")
            return DataError(f"{path}:{start + offset}: malformed CoNLL-U line ({line_error})", rule=rule)
    return DataError(f"{path}:{start}: malformed CoNLL-U sentence ({error})", rule="invalid-line")


def check_tree(heads: Sequence[int], where: str, lines: Optional[Sequence[int]] = None) -> None:
    """Raise DataError unless ``heads`` (1-based, 0 = root) form a single rooted tree.

    ``where`` names the sentence (e.g. the file); with ``lines`` (each word's line number) the
    error names ``where:line`` of the offending word instead. The error's ``rule`` is the UD
    validator's test for the fault."""
    n = len(heads)

    def at(word: int) -> str:  # 1-based word → its location
        return f"{where}:{lines[word - 1]}" if lines is not None else where

    for i, h in enumerate(heads):
        if not 0 <= h <= n:
            raise DataError(f"{at(i + 1)}: word {i + 1} has head {h} outside 0..{n}", rule="unknown-head")
    roots = [i + 1 for i, h in enumerate(heads) if h == 0]
    if not roots:
        raise DataError(f"{at(1)}: sentence has 0 roots (no word with head 0), expected 1", rule="non-tree")
    if len(roots) > 1:
        raise DataError(f"{at(roots[1])}: sentence has {len(roots)} roots (words {roots[:5]}), expected 1",
                        rule="multiple-roots")
    # Follow heads from every word; a walk longer than n steps has entered a cycle.
    for start in range(1, n + 1):
        node, steps = start, 0
        while node != 0 and steps <= n:
            node, steps = heads[node - 1], steps + 1
        if node != 0:
            cycle, member = [], node
            while member not in cycle:
                cycle.append(member)
                member = heads[member - 1]
            first = min(cycle)
            if len(cycle) == 1:
                raise DataError(f"{at(first)}: word {first} is its own head", rule="head-self-loop")
            raise DataError(f"{at(first)}: dependency cycle through words {sorted(cycle)[:10]}", rule="non-tree")


def read_conllu(path: Path, morphology: bool = False) -> List[Sentence]:
    """Read a UD CoNLL-U file: integer-id words only; multiword-token ranges and empty nodes are
    skipped and counted in the log.

    The file must pass the UD validator's levels 1 and 2 (:mod:`steps.data.validate`, which also
    lists what reads as the clean file); otherwise a one-line DataError names the file, the line
    and the validator's test. The reader's own checks run first (they name the offending word's
    line); their error stands where the validator reports the same test.

    ``morphology``: each sentence also carries ``lemma`` ([str]), ``feats`` ([{feature: value}],
    {} for "_") and ``sent_id`` (its ``# sent_id`` comment, or None)."""
    text = ConlluText(path)
    try:
        sentences, skipped_ranges, skipped_empty = _read_blocks(path, text, morphology)
    except DataError as error:
        raise confirmed(error, text) from None
    check_conllu(path, text)  # the validator's other rules; an empty file fails here too
    if skipped_ranges or skipped_empty:
        logger.info(
            "%s: %d sentences; skipped %d multiword-token ranges and %d empty nodes",
            path.name, len(sentences), skipped_ranges, skipped_empty,
        )
    return sentences


def _read_blocks(path: Path, text: ConlluText, morphology: bool) -> Tuple[List[Sentence], int, int]:
    sentences: List[Sentence] = []
    skipped_ranges = skipped_empty = 0
    for start, block in text.blocks():
        # `conllu` silently accepts word lines with missing columns; UD requires all ten.
        token_lines = []  # the line number of each token line, in conllu's token order
        for offset, line in enumerate(block.splitlines()):
            if line and not line.startswith("#"):
                token_lines.append(start + offset)
                if line.count("\t") != 9:
                    spaces = " (columns separated by spaces, not tabs?)" if "\t" not in line and " " in line else ""
                    raise DataError(
                        f"{path}:{start + offset}: malformed CoNLL-U line (expected 10 tab-separated "
                        f"columns, found {line.count(chr(9)) + 1}){spaces}: {line[:60]!r}", rule="number-of-columns"
                    )
        try:
            token_lists = conllu.parse(block)
        except (ParseException, ValueError) as e:
            raise _locate_parse_error(path, start, block, e) from None
        if not token_lists:  # a block of comments only: the validator refuses it (empty-sentence)
            continue
        sentence: Sentence = {"tokens": [], "upos": [], "xpos": [], "head": [], "deprel": []}
        if morphology:
            sentence.update(lemma=[], feats=[], sent_id=token_lists[0].metadata.get("sent_id"))
        word_lines: List[int] = []
        for token, line_number in zip(token_lists[0], token_lines):
            token_id = token["id"]
            where = f"{path}:{line_number}"
            if isinstance(token_id, tuple):
                if len(token_id) == 3 and token_id[1] == "-":
                    skipped_ranges += 1
                else:
                    skipped_empty += 1
                continue
            if not isinstance(token_id, int):
                raise DataError(f"{where}: word id {token_id!r} is not an integer", rule="invalid-word-id")
            if token_id != len(sentence["tokens"]) + 1:
                raise DataError(f"{where}: word ids are not consecutive at id {token_id} (expected {len(sentence['tokens']) + 1})",
                                rule="word-id-sequence")
            head = token["head"]
            if not isinstance(head, int):
                raise DataError(f"{where}: word {token_id} ({token['form']!r}) has no head", rule="invalid-head")
            sentence["tokens"].append(token["form"])
            sentence["upos"].append(token["upos"] or "_")
            sentence["xpos"].append(token["xpos"] or "_")
            sentence["head"].append(head)
            sentence["deprel"].append(token["deprel"] or "_")
            if morphology:
                sentence["lemma"].append(token["lemma"] or "_")
                sentence["feats"].append(dict(token["feats"] or {}))
            word_lines.append(line_number)
        if not sentence["tokens"]:
            continue
        check_tree(sentence["head"], str(path), word_lines)
        sentences.append(sentence)
    return sentences, skipped_ranges, skipped_empty


CONLLU_FIELDS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")


def sentence_token_list(sentence: Sentence) -> conllu.TokenList:
    """A sentence dict as a ``conllu`` TokenList of its words (absent columns become "_")."""
    words = []
    for i, form in enumerate(sentence["tokens"]):
        values = (i + 1, form, "_", sentence["upos"][i] if "upos" in sentence else "_",
                  sentence["xpos"][i] if "xpos" in sentence else "_", "_",
                  sentence["head"][i] if "head" in sentence else "_",
                  sentence["deprel"][i] if "deprel" in sentence else "_", "_", "_")
        words.append(conllu.Token(zip(CONLLU_FIELDS, values)))
    return conllu.TokenList(words)


def write_conllu(sentences: Sequence[Sentence], path: Path) -> None:
    """Write sentences as CoNLL-U: integer-id words only, no comments (see
    :func:`write_predicted_conllu` for output that keeps a gold file's other lines)."""
    with open(path, "w", encoding="utf-8") as f:
        for sentence in sentences:
            f.write(sentence_token_list(sentence).serialize())


def write_predicted_conllu(gold_file: Path, predicted: Sequence[Sentence], path: Path) -> None:
    """Write ``gold_file`` with each word's HEAD and DEPREL replaced by ``predicted``'s (one
    sentence per gold sentence that :func:`read_conllu` yields, in order).

    Comments, multiword-token ranges, empty nodes and every other column are the gold file's, so
    the official CoNLL 2018 scorer compares the output against the unmodified treebank file. The
    other columns are gold copies (the parser's inputs), not predictions."""
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        for start, block in _sentence_blocks(gold_file):
            token_lists = conllu.parse(block)
            words = [token for token_list in token_lists for token in token_list if isinstance(token["id"], int)]
            if not words:  # read_conllu yields no sentence for it: copy it as it is
                f.write(block)
                continue
            if count >= len(predicted):
                raise DataError(f"{gold_file}:{start}: more sentences than the {len(predicted)} predicted")
            sentence = predicted[count]
            if [word["form"] for word in words] != list(sentence["tokens"]):
                raise DataError(f"{gold_file}:{start}: predicted sentence {count + 1} has other words than gold")
            for word, head, deprel in zip(words, sentence["head"], sentence["deprel"]):
                word["head"], word["deprel"] = head, deprel
            f.write("".join(token_list.serialize() for token_list in token_lists))
            count += 1
    if count != len(predicted):
        raise DataError(f"{gold_file}: {count} sentences but {len(predicted)} predicted")


# ---------------------------------------------------------------------------------------------
# Unlabeled corpora
# ---------------------------------------------------------------------------------------------

# Wikipedia dumps rendered by wiki-thresher: block elements become line breaks, inline markup
# (<ref>, <hi>, <list>, <item>, ...) is deleted, keeping its text.
_BLOCK_TAG = re.compile(r"</?(?:p|figure|caption|text)\b[^>]*>", re.IGNORECASE)
_ANY_TAG = re.compile(r"<[^>]+>")

# MicroBERT's sentence splitter (a variant of spaCy's sentencizer): a line break always ends a
# sentence; after a full stop, the sentence ends at the first following character that is not
# punctuation. So "3.5" splits too, as in the reference, which is what makes the token counts
# match the paper's Table 1.
FULL_STOPS = "!.?։؟۔܀܁܂߹।॥၊။።፧፨᙮᜵᜶᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？｡。"


def _punctuation_class() -> str:
    import sys
    import unicodedata

    chars = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith("P")}
    chars.update(FULL_STOPS)
    return "".join(re.escape(c) for c in sorted(chars))


_SENTENCE_END = None


def split_sentences(text: str) -> List[List[str]]:
    """Sentences (lists of whitespace tokens) of a text, per MicroBERT's punctuation splitter."""
    global _SENTENCE_END
    if _SENTENCE_END is None:
        punct = _punctuation_class()
        stops = "".join(re.escape(c) for c in FULL_STOPS)
        _SENTENCE_END = re.compile(f"([{stops}][{punct}]*)(?=[^{punct}\\n])")
    sentences = []
    for line in _SENTENCE_END.sub("\\1\\n", text).split("\n"):
        tokens = line.split()
        if tokens:
            sentences.append(tokens)
    return sentences


def read_wikipedia_html(path: Path) -> List[List[str]]:
    """One article: title, headings and paragraphs as lines, split into sentences of tokens."""
    lines = [text for _, text in iter_lines(path)]
    text = _BLOCK_TAG.sub("\n", "\n".join(lines))
    return split_sentences(html.unescape(_ANY_TAG.sub("", text)))


def read_plain_text(path: Path) -> List[List[str]]:
    """One sentence per line (Coptic, Ancient Greek); whitespace tokens."""
    return [line.split() for _, line in iter_lines(path) if line.strip()]


def join_lacunae(sentence: List[str]) -> List[str]:
    """Rejoin each adjacent "[" "]" token pair into the one word "[ ]", a lacuna: Coptic's train.txt
    joins the CoNLL-U words of its source with spaces, so a FORM "[ ]" reads as two tokens there.
    The file holds 7 such pairs; with them rejoined its counts are the CoNLL-U reading's (983,257
    words; 970,642 under the reference's 200-token cut). An "ⲙ[" "]" at one line's end stays two:
    the counts say one of the 8 "[ ]" in the text was two words in the CoNLL-U."""
    out: List[str] = []
    for token in sentence:
        if token == "]" and out and out[-1] == "[":
            out[-1] = "[ ]"
        else:
            out.append(token)
    return out


CORPUS_READERS = {
    "wikipedia_html": (read_wikipedia_html, (".html", ".htm", ".xml")),
    "plain_text": (read_plain_text, (".txt",)),
    "plain_text_gz": (read_plain_text, (".txt.gz", ".gz")),
}


def read_corpus_documents(source: DataPath, corpus_format: str) -> List[Tuple[str, List[List[str]]]]:
    """(document name, sentences) for every document of a corpus, in sorted file order."""
    if corpus_format not in CORPUS_READERS:
        raise DataError(f"unknown corpus format {corpus_format!r}; known: {', '.join(CORPUS_READERS)}")
    reader, suffixes = CORPUS_READERS[corpus_format]
    documents = [(path.name, reader(path)) for path in source.files(suffixes)]
    if not any(sentences for _, sentences in documents):
        raise DataError(f"{source.resolve()}: corpus is empty (no tokens in {len(documents)} files)")
    return documents


def given_splits(
    documents: List[Tuple[str, List[List[str]]]]
) -> Optional[Dict[str, List[Tuple[str, List[List[str]]]]]]:
    """A pre-split corpus's own train/dev split: when its files are exactly one ``train.*`` and one
    ``dev.*`` (Coptic's ``train.txt`` and ``dev.txt``, the reference's split), each is that split;
    otherwise None, and the caller splits documents itself (:func:`split_documents`)."""
    by_stem = {name.split(".", 1)[0]: (name, sentences) for name, sentences in documents}
    if len(documents) != 2 or set(by_stem) != {"train", "dev"}:
        return None
    return {"train": [by_stem["train"]], "dev": [by_stem["dev"]]}


def _natural_key(name: str):
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def split_documents(
    documents: List[Tuple[str, List[List[str]]]], seed: int = 1337, train_fraction: float = 0.9
) -> Dict[str, List[Tuple[str, List[List[str]]]]]:
    """MicroBERT's train/dev split: order documents by name (numbers compared as numbers, so
    ``wo_wikipedia_org__9`` precedes ``__10`` as in the reference), shuffle them with
    ``random.seed(seed)`` and keep the first ceil(train_fraction * n) for training (the reference splits by document).

    A corpus that is a single document (Coptic's one-sentence-per-line file) is split by lines
    instead, with the same rule, so that dev is not empty."""
    documents = sorted(documents, key=lambda d: _natural_key(d[0]))
    if len(documents) == 1:
        name, sentences = documents[0]
        documents = [(f"{name}:{i}", [s]) for i, s in enumerate(sentences)]
    rng = random.Random(seed)
    rng.shuffle(documents)
    cut = math.ceil(train_fraction * len(documents))
    return {"train": documents[:cut], "dev": documents[cut:]}
