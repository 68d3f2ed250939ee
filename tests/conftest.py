"""Shared test setup: tests read real data from ../shared/data through the data root."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO.parent / "shared" / "data").resolve()
os.environ.setdefault("SIB_DATA_ROOT", str(SHARED_DATA))
DATA_ROOT = Path(os.environ["SIB_DATA_ROOT"]).resolve()
if not (DATA_ROOT / "wolof" / "ud").is_dir():
    raise pytest.UsageError(f"test data not found under {DATA_ROOT}: set SIB_DATA_ROOT (e.g. ../shared/data)")


@pytest.fixture(scope="session")
def data_root() -> Path:
    return DATA_ROOT


@pytest.fixture(scope="session")
def wolof_dev_sentences():
    from steps.data.readers import read_conllu

    return read_conllu(DATA_ROOT / "wolof" / "ud" / "wo_wtb-ud-dev.conllu")


@pytest.fixture(scope="session")
def small_wolof_tokenizer(wolof_dev_sentences):
    """A real WordPiece vocabulary small enough that many words split into several pieces."""
    from steps.data.vocab import train_wordpiece

    return train_wordpiece([s["tokens"] for s in wolof_dev_sentences], vocab_size=400)
