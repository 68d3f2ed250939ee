"""CoNLL-U validation: every CoNLL-U file the DAG reads passes the UD validator's levels 1 and 2.

:func:`steps.data.readers.read_conllu` reads every CoNLL-U file the steps use (UD treebanks,
parses brought in by path, the predictions that ``steps.evaluate.rescore`` scores again) and calls
:func:`check_conllu` on it, so a file is refused before any step caches a result. The check is
the official UD validator (``udtools``, levels 1 and 2, language-independent ``ud`` tests) run
in-process on the text as the reader reads it:

- **read as the clean file** (the reader's tolerances, each tested to give the clean file's
  sentences): a leading byte-order mark, CRLF or CR line ends, text in another Unicode normal form
  than NFC, runs of empty lines between sentences and a missing empty line at the end of the file.
  The validator sees the file with these undone: one empty line after each sentence, NFC, LF.
- **not checked**: the validator's METADATA tests (``# sent_id``, ``# text`` and its agreement
  with FORM and SpaceAfter, ``# newdoc``/``# newpar``, parallel ids). The DAG reads no comment
  line, its own writer emits none, and the Ancient Greek UD train file (rebuilt from a spaCy copy)
  has no ``# sent_id``.
- **project rules on top** (the validator lets these through): a control character (NUL and the
  other C0/C1 controls except TAB) anywhere in the file, and a file with no sentence at all.

A refusal is one line: ``<file>:<line>: <problem> (level <n>: <validator test id>)``, or
``(project rule: <id>)`` for the two rules above.

    python -m steps.data.conllu_rules FILE.conllu [...]   # read files as the steps do; exit status 1 if any fails
    python -m steps.data.conllu_rules --matrix            # print the rule × verdict table of docs/RELIABILITY.md
"""
from __future__ import annotations

import argparse
import io
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from steps.common.data_root import DataError, file_digest, iter_lines

OFFICIAL_LEVEL = 2
UNCHECKED_TEST_CLASSES = ("METADATA",)

# Rules this package checks itself (the reader's own checks name the validator's test id for the
# same fault, so a message reads the same whichever finds it first). Level per validator test id.
OFFICIAL_RULE_LEVELS = {
    "invalid-utf": 1, "number-of-columns": 1, "invalid-line": 1, "invalid-word-id": 1, "word-id-sequence": 1,
    "invalid-head": 2, "unknown-head": 2, "head-self-loop": 2, "multiple-roots": 2, "non-tree": 2, "invalid-feature": 2, "invalid-deps": 2,
}
PROJECT_RULES = ("control-character", "no-sentences")

# Cc except TAB (LF and CR never reach a line: they end it).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def rule_tag(rule: str) -> str:
    if rule in PROJECT_RULES:
        return f"project rule: {rule}"
    return f"level {OFFICIAL_RULE_LEVELS.get(rule, OFFICIAL_LEVEL)}: {rule}"


def with_rule(error: DataError) -> DataError:
    """``error`` with its rule named at the end of the message."""
    if error.rule is None or str(error).endswith(f": {error.rule})"):
        return error
    return DataError(f"{error} ({rule_tag(error.rule)})", rule=error.rule)


class ConlluText:
    """A CoNLL-U file's lines as the reader reads them (see the module docstring): decoded, NFC, one
    empty line after each sentence; ``origin[i]`` is the file's 1-based line number of ``lines[i]``."""

    def __init__(self, path: Path):
        self.path = path
        self.lines: List[str] = []
        self.origin: List[int] = []
        number = 0
        try:
            for number, line in iter_lines(path, normalize="NFC"):
                control = _CONTROL.search(line)
                if control:
                    raise DataError(f"{path}:{number}: control character U+{ord(control.group()):04X} at column "
                                    f"{control.start() + 1}", rule="control-character")
                if line or (self.lines and self.lines[-1]):  # an empty line only ends a sentence
                    self.lines.append(line)
                    self.origin.append(number)
        except DataError as error:
            raise with_rule(error) from None
        if self.lines and self.lines[-1]:
            self.lines.append("")
            self.origin.append(number + 1)

    def blocks(self):
        """(first line number, block text) for each sentence block (the lines up to an empty one)."""
        start = None
        for index, line in enumerate(self.lines):
            if line.strip() and start is None:
                start = index
            elif not line.strip() and start is not None:
                yield self.origin[start], "\n".join(self.lines[start:index]) + "\n\n"
                start = None

    def line_of(self, index: int) -> int:
        """The file's line number of the validator's 1-based line ``index``."""
        return self.origin[min(max(index, 1), len(self.origin)) - 1] if self.origin else 1


def _require_udtools() -> None:
    """Fail in one line, naming the missing package, where the validator cannot be imported."""
    try:
        import udtools.state  # noqa: F401
    except ImportError as missing:
        absent = (missing.name or "udtools").split(".")[0]
        if absent == "udtools":
            raise ModuleNotFoundError("the official UD validator is not installed: udtools (requirements.txt); "
                                      "pip install -r requirements.txt") from missing
        # udtools is there but one of its own packages is not (a machine given wheels without their dependencies).
        raise ModuleNotFoundError(f"the official UD validator cannot be imported: udtools needs {absent}, which is not "
                                  "installed; pip install -r requirements.txt") from missing


@lru_cache(maxsize=1)
def _validator():
    _require_udtools()
    from udtools import Validator

    # Warnings are not stored (no_warnings); nothing is printed (output=None).
    return Validator(lang="ud", level=OFFICIAL_LEVEL, output=None, args=argparse.Namespace(no_warnings=True))


def _validate(handle, name: str):
    """The validator's State after reading ``handle`` (levels 1-2; warnings not stored)."""
    validator = _validator()  # checks that udtools is installed, once
    from udtools.state import State

    state = State()
    state.current_file_name = name
    validator.validate_file_handle(handle, state)
    return state


def official_errors(lines: List[str], name: str) -> list:
    """The UD validator's errors (``udtools`` Incident objects, in the order found) on ``lines``,
    without the test classes this package does not check."""
    state = _validate(io.StringIO("".join(line + "\n" for line in lines)), name)
    return [e for e in state.error_tracker if e.is_error() and str(e.testclass) not in UNCHECKED_TEST_CLASSES]


def first_error(text: ConlluText, errors: Optional[list] = None) -> Optional[DataError]:
    """The validator's first error on ``text`` (by line) as a one-line DataError, or None."""
    errors = official_errors(text.lines, str(text.path)) if errors is None else errors
    if not errors:
        return None
    error = min(errors, key=lambda e: e.lineno)  # stable: the first found among a line's errors
    message = " ".join(str(error.message).split())
    if len(message) > 200:
        message = message[:197] + "..."
    return DataError(f"{text.path}:{text.line_of(error.lineno)}: {message} (level {error.level}: {error.testid})",
                     rule=error.testid)


def confirmed(error: DataError, text: ConlluText) -> DataError:
    """A reader's own error (more precise about the line), its rule named, if the validator reports
    that rule on the file too; otherwise the validator's first error, or the reader's error where the
    validator finds none (the reader is then the stricter)."""
    errors = official_errors(text.lines, str(text.path))
    if not errors or error.rule in {e.testid for e in errors}:
        return with_rule(error)
    return first_error(text, errors)


# Digests of the files that passed, so that a process reading one treebank in several steps
# validates it once. Only a whole file's pass is recorded.
_PASSED: Set[str] = set()


def check_conllu(path: Path, text: Optional[ConlluText] = None) -> ConlluText:
    """Raise a one-line DataError unless ``path`` passes the UD validator's levels 1 and 2 (as
    the module docstring qualifies); return its text as the reader reads it."""
    digest = file_digest(path)
    text = text if text is not None else ConlluText(path)
    if digest in _PASSED:
        return text
    if not any(line and not line.startswith("#") for line in text.lines):
        raise DataError(f"{path}: no sentences (the file is empty or holds only comments) (project rule: no-sentences)",
                        rule="no-sentences")
    error = first_error(text)
    if error is not None:
        raise error
    _PASSED.add(digest)
    return text


def official_verdict(path: Path) -> Tuple[bool, Dict[str, int]]:
    """The UD validator's own verdict on the file's bytes as they are, every test class included:
    (accepted, {test id: level} of its errors). Undecodable bytes fail its ``invalid-utf`` test."""
    # As the validator opens a file (UTF-8, universal newlines, so that its non-unix-newline test
    # sees CRLF), with undecodable bytes as U+FFFD for its invalid-utf test to find.
    handle = io.TextIOWrapper(io.BytesIO(path.read_bytes()), encoding="utf-8", errors="replace")
    errors = {e.testid: e.level for e in _validate(handle, str(path)).error_tracker if e.is_error()}
    return not errors, errors
