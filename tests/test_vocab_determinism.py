"""The WordPiece vocabulary is the same in every process.

The `tokenizers` trainer alone numbers "##" pieces in hash-map order (huggingface/tokenizers#1794),
so two processes with different hash seeds gave different vocabularies on these very sentences;
`train_wordpiece` must not."""
import json
import os
import subprocess
import sys
from pathlib import Path

from steps.common.data_root import data_root

REPO = Path(__file__).resolve().parent.parent

TRAIN_IN_A_FRESH_PROCESS = """
import json, sys
import conllu
from steps.data.vocab import train_wordpiece
with open(sys.argv[1], encoding="utf-8") as handle:
    sentences = [[token["form"] for token in sentence] for sentence in conllu.parse_incr(handle)][:400]
tokenizer = train_wordpiece(sentences, 1500)
print(json.dumps(sorted(tokenizer.get_vocab().items())))
"""


def vocabulary_in_fresh_process(treebank: Path, hash_seed: int) -> list:
    env = dict(os.environ, PYTHONHASHSEED=str(hash_seed), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", TRAIN_IN_A_FRESH_PROCESS, str(treebank)], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_wordpiece_vocabulary_is_the_same_in_every_process():
    treebank = data_root() / "wolof/ud/wo_wtb-ud-train.conllu"
    vocabularies = [vocabulary_in_fresh_process(treebank, seed) for seed in (1, 2)]
    assert len(vocabularies[0]) == 1500
    ids = dict(vocabularies[0])
    assert [ids[t] for t in ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]")] == [0, 1, 2, 3, 4]
    assert vocabularies[1] == vocabularies[0]
