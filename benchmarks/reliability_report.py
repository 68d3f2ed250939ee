"""Write docs/RELIABILITY.md from the measured records and the bad-input matrix.

    python -m benchmarks.reliability_report [--run-tests] [--output docs/RELIABILITY.md]

Sources: docs/benchmarks/faults.json (benchmarks/faults.py: kill-and-resume), the cases of
tests/test_bad_input.py (collected by pytest; each case's expectation from its own builder on the
real data slice), the CoNLL-U rule cases of steps/data/conllu_rules.py (the UD validator's and
read_conllu's verdicts, the table ``python -m steps.data.conllu_rules --matrix`` prints), and
docs/benchmarks/concurrency.json if present (its "summary_lines" are copied
verbatim). ``--run-tests`` also runs tests/test_bad_input.py and reports its outcome.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
FAULTS = REPO / "docs" / "benchmarks" / "faults.json"
CONCURRENCY = REPO / "docs" / "benchmarks" / "concurrency.json"
OUTPUT = REPO / "docs" / "RELIABILITY.md"
BAD_INPUT_TESTS = "tests/test_bad_input.py"

# How each long step survives a kill (what the code does; the benchmark measures it).
RESUME = [
    ("train_corpus_parser", "steps/parse/corpus_parser.py", "finished phases (Stanza tagger, parser; UDPipe) recorded in "
     "the work dir are skipped; the interrupted phase restarts from its beginning (Stanza cannot resume its tagger, "
     "and continuing its parser checkpoint restores no data order or RNG). Bit-identical on CPU"),
    ("parse_corpus", "steps/parse/corpus_parser.py", "every parsed batch is an atomically written chunk; a rerun parses "
     "only the missing batches. Bit-identical"),
    ("pretrain_microbert", "steps/pretrain/pretrain.py", "full state (model, optimizer, scheduler, RNG, step) every "
     "`checkpoint_every` steps; batches are a pure function of (seed, index). Bit-identical on CPU"),
    ("finetune_ud_parser / finetune_ner / finetune_pronto", "steps/finetune/loop.py", "full state every "
     "`checkpoint_every` epochs, the batch order in the checkpoint. Bit-identical on CPU"),
    ("other steps", "steps/", "short (seconds at every scale but word vectors); rerun from the start. A kill while Tango "
     "writes a result leaves no `cache-metadata.json`, so the entry is not treated as complete"),
]


def collect_bad_input_tests() -> List[str]:
    """The test items of the bad-input file, as pytest collects them."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", BAD_INPUT_TESTS], cwd=REPO,
                         capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line.startswith(BAD_INPUT_TESTS + "::")]


def case_expectations() -> Dict[str, List[Dict[str, Any]]]:
    """Per file kind, each case's name and what the test expects, from the case builders."""
    sys.path.insert(0, str(REPO))
    from steps.common.data_root import DATA_ROOT_ENV

    data_root = Path(os.environ.get(DATA_ROOT_ENV, REPO.parent / "shared" / "data")).resolve()
    os.environ.setdefault(DATA_ROOT_ENV, str(data_root))
    import tests.test_bad_input as matrix

    def describe(expected) -> Dict[str, Any]:
        if expected == matrix.SAME:
            return {"expects": "accepted, equal to the clean file"}
        where = f"{expected.file or 'file'}:{expected.line}" if expected.line is not None else (expected.file or "file")
        return {"expects": f"rejected: `{where}: …{expected.problem}…`"}

    clean_conllu = matrix.first_blocks((data_root / matrix.UD_DEV).read_text(encoding="utf-8"), matrix.UD_SENTENCES)
    clean_bio = matrix.first_blocks((data_root / matrix.WIKIANN_DEV).read_text(encoding="utf-8"), matrix.BIO_SENTENCES)
    names = sorted(p.name for p in (data_root / matrix.CORPUS).iterdir())[: matrix.CORPUS_FILES]
    cases: Dict[str, List[Dict[str, Any]]] = {"CoNLL-U": [], "BIO": [], "corpus": []}
    for name in sorted(matrix.CONLLU_CASES):
        cases["CoNLL-U"].append({"case": name, **describe(matrix.CONLLU_CASES[name](clean_conllu)[1])})
    for name in sorted(matrix.BIO_CASES):
        cases["BIO"].append({"case": name, **describe(matrix.BIO_CASES[name](clean_bio)[1])})
    with tempfile.TemporaryDirectory() as scratch:
        for number, name in enumerate(sorted(matrix.CORPUS_CASES)):
            folder = Path(scratch) / str(number)
            folder.mkdir()
            cases["corpus"].append({"case": name, **describe(matrix.CORPUS_CASES[name](data_root, names, folder)[2])})
    return cases


def run_bad_input_tests() -> str:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", BAD_INPUT_TESTS], cwd=REPO,
                         capture_output=True, text=True)
    lines = [line for line in out.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return re.sub(r" in [\d.]+s.*", "", lines[-1].strip("= ")) if lines else f"pytest exit {out.returncode}"


def faults_section(faults: Optional[Dict[str, Any]]) -> List[str]:
    lines = ["## Kill and resume", ""]
    lines += ["| step | where | what a rerun of the same `tango run` does |", "|---|---|---|"]
    lines += [f"| {step} | `{where}` | {what} |" for step, where, what in RESUME]
    lines += ["", "### Measured: `benchmarks/faults.py`", ""]
    if faults is None:
        return lines + ["Not measured yet (no docs/benchmarks/faults.json): `python -m benchmarks.faults`.", ""]
    s = faults["summary"]
    if faults.get("note"):
        lines += [f"**{faults['note']}**", ""]
    lines += [
        f"`{faults['command']}` on `{faults['experiment']}` (seed {faults['seed']}, {faults['date']}, "
        f"{faults['wall_minutes']} min): each step, when it starts, is killed (SIGKILL to the whole `tango run` process "
        f"group) at a uniform moment of the first 60 % of its clean-run duration, at most {faults['kills_per_step']} times per trial "
        f"({faults.get('long_step_kills', faults['kills_per_step'])} for steps longer than "
        f"{faults.get('long_step_seconds', '-')} s); the same `tango run` is repeated until it finishes. Every cache "
        f"entry Tango treats as complete is then compared with the clean run's entry of the same unique ID (JSON and "
        f"pickled results without timings, tensors exactly, other files byte for byte). Clean run: {faults['clean_run']}.",
        "",
        "| figure | value |", "|---|---|",
        f"| kill points | {s['kill_points']} |",
        f"| kill points survived (trial finished, every entry equal to the clean run) | {s['kill_points_survived']} |",
        f"| kill points recovered (the repeated run went on by itself, complete entries equal so far) | "
        f"{s.get('kill_points_recovered', s['kill_points_survived'])} |",
        f"| trials stopped for time before finishing | {s.get('unfinished_trials', 0)} |",
        f"| step kinds killed | {len(s['step_kinds_killed'])}: {', '.join(s['step_kinds_killed'])} |",
        f"| trials (fresh workspaces) equal to the clean run | {s['trials_equal_to_clean']} of {s['trials']} |",
        f"| `tango run` invocations | {s['tango_runs']} |",
        f"| complete cache entries whose result is missing or wrong | {s['complete_entries_wrong_or_missing']} |",
        f"| runs that needed a manual step | {s['runs_needing_a_manual_step']} |",
        f"| runs that failed by themselves (not killed) | {s['runs_failing_by_themselves']} |",
        "",
    ]
    kinds = Counter(kill["kind"] for trial in faults["trials"] for kill in trial["kills"])
    lines += ["| step kind | kill points |", "|---|---|"] + [f"| {kind} | {count} |" for kind, count in sorted(kinds.items())]
    lines.append("")
    for number, trial in enumerate(faults["trials"], 1):
        lines.append(f"Trial {number}: {len(trial['kills'])} kills, {trial['runs']} runs, {trial['entries_compared']} "
                     f"entries compared, differing: {len(trial['differing_entries'])}, missing: "
                     f"{len(trial['missing_entries'])}, extra: {len(trial['extra_entries'])}.")
        for unique_id, problem in trial["differing_entries"].items():
            lines.append(f"- `{unique_id}`: {problem}")
    return lines + [""]


def concurrency_section() -> List[str]:
    lines = ["## Concurrent runs on one workspace", ""]
    if CONCURRENCY.exists():
        return lines + list(json.loads(CONCURRENCY.read_text())["summary_lines"]) + [""]
    return lines + ["Not measured (no docs/benchmarks/concurrency.json).", ""]


def bad_input_section(items: List[str], cases: Dict[str, List[Dict[str, Any]]], outcome: Optional[str]) -> List[str]:
    total = sum(len(v) for v in cases.values())
    accepted = sum(c["expects"].startswith("accepted") for v in cases.values() for c in v)
    lines = ["## Bad input", "",
             f"`{BAD_INPUT_TESTS}` builds every case from real files of the data root (a Wolof-WTB dev slice, a WikiAnn "
             f"dev slice, Wolof corpus documents). pytest collects {len(items)} test items from it; the file-level "
             f"matrix has {total} cases: {accepted} accepted and read equal to the clean file, {total - accepted} "
             f"rejected with one line that starts with the file and line (`file:line: problem`; `file: problem` when "
             f"the file as a whole is at fault). Steps that meet bad input (load_corpus, train_corpus_parser, "
             f"finetune_ner) fail before training and leave no cache entry; a BOM CoNLL-U and a BOM BIO file give the "
             f"clean scores; unknown language, condition or scale in a config and a missing data root fail naming them.",
             ""]
    if outcome:
        lines += [f"Last run of `python -m pytest {BAD_INPUT_TESTS}`: {outcome}.", ""]
    for kind, entries in cases.items():
        lines += [f"| {kind} case | expects |", "|---|---|"] + [f"| {c['case']} | {c['expects']} |" for c in entries] + [""]
    others = [item.split("::", 1)[1] for item in items
              if not re.match(r".*::test_(conllu|bio|corpus)_case\[", item)]
    lines += ["Other tests in the file:", ""] + [f"- `{name}`" for name in others] + [""]
    return lines


def conllu_validation_section() -> List[str]:
    """The rule × verdict table of steps/data/conllu_rules.py (the validator and read_conllu on each file)."""
    sys.path.insert(0, str(REPO))
    from steps.data.conllu_rules import matrix_markdown

    return [
        "## CoNLL-U validation", "",
        "Every CoNLL-U file the DAG reads (UD treebanks, parses given by path, the predictions "
        "`python -m steps.evaluate.rescore` scores again) goes through `read_conllu`, which runs the official UD "
        "validator (udtools 0.2.9, levels 1 and 2, language `ud`) in-process on the file before any step caches a "
        "result (steps/data/validate.py). A file that fails gets one line: "
        "`<file>:<line>: <problem> (level <n>: <validator test>)`. What differs from the validator run on the raw "
        "file: a byte-order mark, CRLF/CR line ends, non-NFC text, runs of empty lines and a missing final empty line "
        "are read as the clean file (the validator then checks the text as read); the METADATA tests (`# sent_id`, "
        "`# text` and its agreement with FORM/SpaceAfter, `# newdoc`/`# newpar`) are not checked, as the DAG reads no "
        "comment line and the rebuilt Ancient Greek train file has no `# sent_id`; control characters and a file "
        "without sentences are refused although the validator lets them through. Level-1 `extra-empty-line` cannot "
        "arise in a file (an empty line always ends a sentence there). `python -m steps.data.conllu_rules FILE ...` reads "
        "files as the steps do and prints each refusal.", "",
        *matrix_markdown().split("\n"), "",
    ]


SECURITY = [
    "## Security basics", "",
    "- A Tango workspace holds pickled results (dill): loading one runs code chosen by whoever wrote it. Open only "
    "workspaces and caches you trust.",
    "- Checkpoints (pretraining, fine-tuning, parse chunks) load with `torch.load(..., weights_only=True)`; exported "
    "encoders are safetensors only (`tests/test_trust.py`).",
    "- Nothing executes code from a data file (no eval/exec/pickle of data files), and nothing fetches from the network "
    "at run time unless a config names a URL or a hub model name (the mBERT rows; `HF_HUB_OFFLINE=1` forbids that): "
    "Stanza loads with `download_method=None`, and parsers, tokenizers and encoders are trained or built locally.",
    "",
]


def main(argv: Optional[List[str]] = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-tests", action="store_true", help=f"also run {BAD_INPUT_TESTS} and report its outcome")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    faults = json.loads(FAULTS.read_text()) if FAULTS.exists() else None
    items = collect_bad_input_tests()
    cases = case_expectations()
    outcome = run_bad_input_tests() if args.run_tests else None
    lines = ["# Reliability", "",
             "Generated by `python -m benchmarks.reliability_report` from docs/benchmarks/faults.json "
             "(`python -m benchmarks.faults`), the cases of tests/test_bad_input.py, the CoNLL-U rule cases of "
             "steps/data/conllu_rules.py and docs/benchmarks/concurrency.json. "
             "Do not edit by hand.", ""]
    if faults is not None:
        s = faults["summary"]
        lines += [f"In short: {s['kill_points_survived']} of {s['kill_points']} kill points survived over "
                  f"{len(s['step_kinds_killed'])} step kinds; {s['complete_entries_wrong_or_missing']} complete cache "
                  f"entries missing or wrong; {s['runs_needing_a_manual_step']} runs needed a manual step"
                  + (f"; {s['unfinished_trials']} trial(s) stopped for time before finishing (their complete entries "
                     f"compared)" if s.get("unfinished_trials") else "") + ".", ""]
    lines += faults_section(faults) + concurrency_section() + bad_input_section(items, cases, outcome) + conllu_validation_section() + SECURITY
    text = "\n".join(lines).rstrip() + "\n"
    args.output.write_text(text)
    print(f"wrote {args.output.relative_to(REPO) if args.output.is_relative_to(REPO) else args.output}")
    return text


if __name__ == "__main__":
    main()
