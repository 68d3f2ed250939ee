"""Re-score committed predictions without the step cache.

    python -m steps.evaluate.rescore docs/predictions/<cell>/ [more folders ...]

Every folder under the arguments that holds a fine-tuning ``metrics.json`` is scored again from
its prediction files alone:

Prediction files may be gzipped (``predicted-test.conllu.gz``, as ``tools/export_predictions.py``
commits them); they are scored as the plain file would be.

- UD parsing (``predicted-{dev,test}.conllu``): the paper's LAS and ``las_universal`` (our
  :func:`~steps.evaluate.metrics.attachment_scores`) and the official CoNLL 2018 scorer's LAS
  (``udtools.udeval``), each against the gold treebank file that ``metrics.json`` names under
  ``gold_files``, relative to the data root (``$SIB_DATA_ROOT``). The official figure is what
  ``udeval <gold file> <folder>/predicted-test.conllu`` prints (on the unzipped file). Both files are
  read with ``read_conllu``, so a prediction file that fails the UD validator's levels 1 and 2 is
  refused in one line (file, line, validator test) before anything is scored.
- NER (``predicted-{dev,test}.bio``, ``token gold predicted`` per line): span F1 (seqeval,
  strict BIOUL), as the fine-tuning step computes it.

Each figure is printed beside the one ``metrics.json`` recorded; the exit status is 1 if any
differs (by more than 1e-6), 0 otherwise.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from steps.common.data_root import DataError, DataPath

TOLERANCE = 1e-6

Row = Tuple[str, str, float, Optional[float]]  # (split, figure, recomputed, recorded)


@contextmanager
def prediction_file(folder: Path, name: str) -> Iterator[Optional[Path]]:
    """``folder/name``, or its ``.gz`` unzipped to a temporary file, or None if neither exists."""
    plain, packed = folder / name, folder / f"{name}.gz"
    if plain.exists() or not packed.exists():
        yield plain if plain.exists() else None
        return
    with tempfile.TemporaryDirectory() as scratch:
        unpacked = Path(scratch) / name
        with gzip.open(packed, "rb") as source, open(unpacked, "wb") as target:
            shutil.copyfileobj(source, target)
        yield unpacked


def rescore_parser(folder: Path, metrics: Dict) -> List[Row]:
    from steps.data.readers import read_conllu
    from steps.evaluate.metrics import attachment_scores, official_scores

    rows: List[Row] = []
    for split, official_key in (("dev", "udeval_dev"), ("test", "udeval")):
        with prediction_file(folder, f"predicted-{split}.conllu") as predicted_file:
            if predicted_file is None:
                continue
            name = metrics.get("gold_files", {}).get(split)
            if name is None:
                raise DataError(f"{folder / 'metrics.json'}: no gold_files.{split} (written before FinetuneUdParser 003)")
            gold_file = DataPath(name).resolve()
            scores = attachment_scores(read_conllu(gold_file), read_conllu(predicted_file))
            recorded = metrics.get(split, {})
            for figure in ("las", "las_universal", "uas"):
                rows.append((split, figure, scores[figure], recorded.get(figure)))
            official = official_scores(gold_file, predicted_file)
            rows.append((split, "udeval LAS", official["LAS"], metrics.get(official_key, {}).get("LAS")))
    return rows


def rescore_ner(folder: Path, metrics: Dict) -> List[Row]:
    from steps.evaluate.metrics import span_scores
    from steps.finetune.ner import read_predictions

    rows: List[Row] = []
    for split in ("dev", "test"):
        with prediction_file(folder, f"predicted-{split}.bio") as predicted_file:
            if predicted_file is not None:
                scores = span_scores(*read_predictions(predicted_file))
                rows.append((split, "span f1", scores["f1"], metrics.get(split, {}).get("f1")))
    return rows


RESCORERS = {"ud_parsing": rescore_parser, "ner": rescore_ner}


def result_folders(paths: List[Path]) -> Iterator[Path]:
    for path in paths:
        if not path.exists():
            raise DataError(f"{path}: no such file or directory")
        for metrics_file in sorted([path / "metrics.json"] if (path / "metrics.json").exists() else path.rglob("metrics.json")):
            yield metrics_file.parent


def rescore(folder: Path) -> Tuple[str, List[Row]]:
    metrics = json.loads((folder / "metrics.json").read_text())
    task = metrics.get("task")
    if task not in RESCORERS:
        return str(task), []
    return task, RESCORERS[task](folder, metrics)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="prediction folders (searched for metrics.json)")
    args = parser.parse_args(argv)
    mismatches = 0
    for folder in result_folders(args.folders):
        task, rows = rescore(folder)
        if not rows:
            print(f"{folder}: {task}: no prediction files this tool scores")
            continue
        for split, figure, value, recorded in rows:
            agrees = recorded is not None and abs(value - recorded) <= TOLERANCE
            mismatches += not agrees
            print(f"{folder}\t{task}\t{split}\t{figure}\t{value:.4f}\trecorded {'—' if recorded is None else f'{recorded:.4f}'}"
                  f"{'' if agrees else '  MISMATCH'}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
