"""The TG campaign: the cpu-scale TG table (TG, TXL (trees), TXL (terminals), 3 seeds each, Wolof and
English), one `experiments/<language>_tg.jsonnet` at a time, with wall times and cache reuse
recorded; then the generation check on each trained TG. Not run by the tests.

    nohup python benchmarks/tg_campaign.py &                          # both files, then the samples
    # two LMs at once, one thread each (the LMs are independent steps): 17-19 min a file on 2 cores
    OMP_NUM_THREADS=1 nohup python benchmarks/tg_campaign.py -j 2 --languages wolof &
    python benchmarks/tg_campaign.py --samples-only                   # only the generation check (~1 min)
    # one seed with 5x the LM training steps, beside the cpu table (table tg_long): ~29 min
    OMP_NUM_THREADS=1 nohup python benchmarks/tg_campaign.py -j 2 --files experiments/wolof_tg_long.jsonnet &

Record: docs/benchmarks/tg_campaign.jsonl (the fields of languages_campaign.jsonl).

The generation check (docs/tg_samples.md): from each language's cached TG models, `--samples`
sentences are drawn twice (`models.transformer_grammar.draw_actions`). Constrained, every draw is
a well-formed tree by construction, and the file shows a few as bracketings. Unconstrained (plain
ancestral sampling), well-formedness is the model's own doing: the file gives the share of draws
that are well-formed, and the mean probability per step that the model puts on actions the grammar
forbids there.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from languages_campaign import REPO, campaign_parser, run_and_record  # noqa: E402

sys.path.insert(0, str(REPO))  # models, steps, reporting

LANGUAGES = ("wolof", "english")
RECORD = REPO / "docs" / "benchmarks" / "tg_campaign.jsonl"
SAMPLES = REPO / "docs" / "tg_samples.md"


def tg_models(graph, workspace: Path) -> Dict[str, Path]:
    """{step name: cached result dir} of the trained TG LMs (kind tg) in ``graph``, seeds in order."""
    from reporting.graphs import cached_result

    found = {}
    for name, (_, unique_id) in sorted(graph.steps.items()):
        result = cached_result(workspace, unique_id) if name.startswith("lm_tg_s") else None
        if result is not None:
            found[name] = Path(result)
    return found


def mean_forbidden_mass(per_step: List[float]) -> float:
    """A draw's mean probability per step on forbidden actions (`draw_actions`' second value)."""
    return sum(per_step) / max(1, len(per_step))


def shape(sequence: List[int], vocabulary: List[str], config) -> List[str]:
    """The draw as `well_formed` reads it: nonterminal strings kept, every terminal (a WordPiece
    may itself be "(" or ")") as "w"."""
    return [vocabulary[i] if i >= config.tg_num_terminals else "w" for i in sequence]


def generation_check(workspace: Path, languages: List[str], count: int, shown: int, max_length: int) -> str:
    import torch

    from models.transformer_grammar import draw_actions, duplicated_closings, sample_actions, well_formed
    from reporting.graphs import build_graph, cached_result
    from steps.tg.language_model import bracketing, load_lm

    lines = ["# Generation from the trained Transformer Grammars", "",
             f"Written by `python benchmarks/tg_campaign.py --samples-only --samples {count}` from the cpu-scale TG "
             "models in the cache. Constrained draws follow the action grammar by construction; unconstrained "
             "draws show how much of it each model has learned: the share of draws that are well-formed "
             f"trees within {max_length} actions, and the mean probability per step that the model puts on an "
             "action the grammar forbids there.", ""]
    for language in languages:
        graph = build_graph(REPO / "experiments" / f"{language}_tg.jsonnet")
        if graph.error:
            raise SystemExit(f"experiments/{language}_tg.jsonnet: {graph.error}")
        models = tg_models(graph, workspace)
        lines += [f"## {language.capitalize()}", ""]
        if not models:
            lines += ["No trained TG in this cache yet.", ""]
            continue
        actions = cached_result(workspace, graph.steps["tg_actions"][1])
        vocabulary = actions["vocabulary"]
        lines += ["| model | constrained draws well-formed | unconstrained draws well-formed | mean forbidden mass per step |",
                  "|---|---|---|---|"]
        examples = []
        for name, directory in models.items():
            model = load_lm(directory)
            generator = torch.Generator().manual_seed(0)
            constrained = sample_actions(model, count, max_length, generator)
            duplicated = duplicated_closings(model.config)
            constrained_ok = sum(well_formed(shape(s, vocabulary, model.config), duplicated) for s in constrained)
            draws = [draw_actions(model, max_length, generator, constrained=False) for _ in range(count)]
            free_ok = sum(well_formed(shape(s, vocabulary, model.config), duplicated) for s, _ in draws)
            mass = sum(mean_forbidden_mass(m) for _, m in draws) / len(draws)
            lines.append(f"| {name} | {constrained_ok}/{count} | {free_ok}/{count} | {mass:.3f} |")
            if not examples:
                examples = [bracketing(s, vocabulary) for s in constrained[:shown]]
                example_model = name
        lines += ["", f"Constrained draws from `{example_model}` (CNT2 copies and `<s>` left out):", ""]
        lines += [f"- `{text}`" for text in examples] + [""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = campaign_parser(__doc__.splitlines()[0], 1, LANGUAGES)
    parser.add_argument("--samples", type=int, default=50, help="draws per TG model in the generation check")
    parser.add_argument("--shown", type=int, default=5, help="constrained draws printed per language")
    parser.add_argument("--max-length", type=int, default=96, help="actions per draw at most")
    parser.add_argument("--samples-only", action="store_true", help="skip training; only the generation check")
    parser.add_argument("--files", nargs="+", type=Path,
                        help="run these experiment files instead of experiments/<language>_tg.jsonnet "
                             "(e.g. experiments/wolof_tg_long.jsonnet)")
    args = parser.parse_args(argv)
    returncode = 0
    if not args.samples_only:
        files = args.files or [REPO / "experiments" / f"{language}_tg.jsonnet" for language in args.languages]
        records = run_and_record(files, args.jobs, args.workspace, args.note, RECORD)
        returncode = max((r["returncode"] for r in records), default=0)
    if args.files:
        return returncode  # the generation check reads the cpu files' TGs (--samples-only)
    SAMPLES.write_text(generation_check(args.workspace, args.languages, args.samples, args.shown, args.max_length) + "\n")
    print(f"campaign: wrote {SAMPLES.relative_to(REPO)}", flush=True)
    return returncode


if __name__ == "__main__":
    sys.exit(main())
