"""What each choice of the in-DAG Stanza corpus parser buys on Wolof-WTB (the goal: beat UDPipe 1).

Outside Tango, so that one tagger can be reused by several parser variants: the functions are the
ones `train_corpus_parser` calls (`steps.parse.backends`), the Stanza CLIs get the same arguments as at
`cpu` scale except the one being varied. Each command appends one JSON record to ``--json``:

    # skip-gram vectors of the first 10k corpus train sentences (the pretraining cap) or of all
    python benchmarks/corpus_parser_ablation.py vectors --out /tmp/abl/v10k --max-sentences 10000
    python benchmarks/corpus_parser_ablation.py vectors --out /tmp/abl/vfull
    # a tagger on each (dev UPOS after every 100 steps goes into the record); --upos-only blanks
    # XPOS and features in its training data (ParserBudget.tagger_tags = "upos")
    python benchmarks/corpus_parser_ablation.py tagger --out /tmp/abl/tfull --vectors /tmp/abl/vfull/vectors.pt --steps 1100
    # parser variants on one tagger; anything after `--` goes to Stanza's parser CLI
    python benchmarks/corpus_parser_ablation.py parser --tagger /tmp/abl/tfull --vectors /tmp/abl/vfull/vectors.pt \\
        --out /tmp/abl/p_adam --steps 600 -- --optim adam --lr 3e-3 --beta2 0.95 --no_second_optim

Test scores are those of `train_corpus_parser`: the parser's own predicted tags, gold PUNCT/SYM
excluded (`steps.parse.backends.evaluate_parser`). Set OMP_NUM_THREADS to run two variants side by side;
the timings in a record are then those of one thread on a shared machine.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from records import append_record  # noqa: E402  (benchmarks/records.py, beside this script)

from steps.common.data_root import DataPath, data_root  # noqa: E402
from steps.data.corpus import corpus_tokens  # noqa: E402
from steps.parse.backends import CorpusParser, blank_columns, evaluate_parser, prepare_parser_training_files  # noqa: E402
from steps.data.readers import read_conllu, read_corpus_documents, split_documents  # noqa: E402

# The cpu-scale sizes of configs/scales.libsonnet.
COMMON_SIZES = ["--char_hidden_dim", "100", "--word_emb_dim", "75"]
TAGGER_SIZES = ["--hidden_dim", "200", "--deep_biaff_hidden_dim", "50", "--batch_size", "50",
                "--composite_deep_biaff_hidden_dim", "20"]
PARSER_SIZES = ["--hidden_dim", "200", "--deep_biaff_hidden_dim", "200", "--batch_size", "1000", "--no_xpos", "--no_ufeats"]


def treebank(split: str) -> Path:
    return data_root() / "wolof" / "ud" / f"wo_wtb-ud-{split}.conllu"


def vectors(args) -> dict:
    from gensim.models import Word2Vec
    from stanza.models.common.pretrain import Pretrain

    documents = read_corpus_documents(DataPath("wolof/corpus"), "wikipedia_html")
    sentences = [s for _, doc in split_documents(documents, seed=1337)["train"] for s in doc][: args.max_sentences]
    sentences = [[piece.lower() for piece in corpus_tokens(s)] for s in sentences]
    start = time.perf_counter()
    model = Word2Vec(sentences, vector_size=100, window=5, min_count=2, sg=1, epochs=10, seed=1234, workers=1)
    text = args.out / "vectors.txt"
    with open(text, "w", encoding="utf-8") as f:
        f.write(f"{len(model.wv.index_to_key)} 100\n")
        for word in model.wv.index_to_key:
            f.write(word + " " + " ".join(f"{x:.5f}" for x in model.wv[word]) + "\n")
    Pretrain(filename=str(args.out / "vectors.pt"), vec_filename=str(text)).load()
    text.unlink()
    return {"sentences": len(sentences), "words": len(model.wv.index_to_key), "seconds": time.perf_counter() - start}


def dev_upos_curve(log_text: str) -> list:
    """Stanza's tagger logs a "UPOS XPOS UFeats AllTags" table after every dev evaluation."""
    return [float(m) for m in re.findall(r"UPOS\tXPOS\tUFeats\tAllTags\n.*?INFO: ([\d.]+)\t", log_text)]


def tagger(args) -> dict:
    from stanza.models import tagger as stanza_tagger

    base = ["--lang", "wo", "--shorthand", "wo_wtb", "--wordvec_pretrain_file", str(args.vectors), "--cpu",
            "--save_dir", str(args.out), "--save_name", "tagger.pt"]
    train, dev = treebank("train"), treebank("dev")
    if args.upos_only:  # ParserBudget.tagger_tags = "upos"
        train = blank_columns(train, args.out / "upos_train.conllu", ("xpos", "feats"))
        dev = blank_columns(dev, args.out / "upos_dev.conllu", ("xpos", "feats"))
    log = args.out / "tagger.log"
    handler = _log_to(log)
    start = time.perf_counter()
    stanza_tagger.main(base + ["--mode", "train", "--seed", "1234", "--eval_interval", "100", "--fix_eval_interval",
                               "--train_file", str(train), "--eval_file", str(dev),
                               "--output_file", str(args.out / "tagger_dev.conllu"), "--max_steps", str(args.steps),
                               *COMMON_SIZES, *TAGGER_SIZES, *args.stanza_args])
    seconds = time.perf_counter() - start
    stanza_tagger.main(base + ["--mode", "predict", "--eval_file", str(dev),
                               "--output_file", str(args.out / "tagger_dev.conllu")])
    _unlog(handler)
    return {"steps": args.steps, "upos_only": args.upos_only, "seconds": seconds,
            "dev_upos_every_100_steps": dev_upos_curve(log.read_text())}


def parser(args) -> dict:
    from stanza.models import parser as stanza_parser

    scratch = args.out / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    files = prepare_parser_training_files(treebank("train"), treebank("dev"), args.tagger / "tagger_dev.conllu", scratch, 1234)
    start = time.perf_counter()
    stanza_parser.main(["--lang", "wo", "--shorthand", "wo_wtb", "--wordvec_pretrain_file", str(args.vectors), "--cpu",
                        "--save_dir", str(args.out), "--save_name", "parser.pt", "--seed", "1234", "--eval_interval", "100",
                        "--mode", "train", "--train_file", str(files["train"]), "--eval_file", str(files["dev"]),
                        "--output_file", str(scratch / "parser_dev.conllu"), "--max_steps", str(args.steps),
                        *COMMON_SIZES, *PARSER_SIZES, *args.stanza_args])
    seconds = time.perf_counter() - start
    shutil.copy(args.tagger / "tagger.pt", args.out / "tagger.pt")
    shutil.copy(args.vectors, args.out / "word_vectors.pt")
    (args.out / "parser.json").write_text(json.dumps({"backend": "stanza", "stanza_code": "wo", "word_vectors": "word_vectors.pt"}))
    record = {"steps": args.steps, "parser_seconds": seconds}
    corpus_parser = CorpusParser(args.out)
    for split in ("dev", "test"):
        scores = evaluate_parser(corpus_parser, read_conllu(treebank(split)))
        record.update({f"{split}_{key}": value for key, value in scores.items()})
    return record


def _log_to(path: Path):
    import logging

    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s: %(message)s"))
    logging.getLogger("stanza").addHandler(handler)
    return handler


def _unlog(handler) -> None:
    import logging

    logging.getLogger("stanza").removeHandler(handler)
    handler.close()


def main() -> int:
    argv = sys.argv[1:]
    stanza_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("command", choices=["vectors", "tagger", "parser"])
    cli.add_argument("--out", type=Path, required=True)
    cli.add_argument("--vectors", type=Path)
    cli.add_argument("--tagger", type=Path)
    cli.add_argument("--steps", type=int, default=600)
    cli.add_argument("--max-sentences", type=int)
    cli.add_argument("--upos-only", action="store_true", help="tagger: train on UPOS alone (XPOS and features blanked)")
    cli.add_argument("--json", type=Path, default=REPO / "docs/benchmarks/corpus_parser_ablation.jsonl")
    args = cli.parse_args(argv)
    args.stanza_args = stanza_args
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"vectors": vectors, "tagger": tagger, "parser": parser}[args.command](args)
    record = {"command": args.command, "out": args.out.name, "vectors": args.vectors and args.vectors.parent.name,
              "tagger": args.tagger and args.tagger.name, "max_sentences": args.max_sentences, "stanza_args": stanza_args,
              **record}
    append_record(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
