"""The related-biases campaign: the cpu-scale cells of the related-biases table (and its MLM-accuracy table), one
`experiments/related/<language>_<condition>.jsonnet` at a time, with wall times and cache reuse
recorded. Not run by the tests.

    python benchmarks/related_campaign.py --dry-run                        # the files, nothing run
    nohup python benchmarks/related_campaign.py --mlm-only &               # pretraining + MLM accuracy (97 min cold, 2 cores)
    nohup python benchmarks/related_campaign.py --conditions m_a13 c5 &    # whole cells: + UD/NER, 3 seeds
    # pretraining already cached: two fine-tunings at once, one thread each (~1.5x faster on 2 cores)
    OMP_NUM_THREADS=1 nohup python benchmarks/related_campaign.py -j 2 --conditions c5 m_plus_g &
    # one task's cells only (here NER: the encoders and the corpus parser they need, no UD fine-tuning)
    OMP_NUM_THREADS=1 nohup python benchmarks/related_campaign.py -j 2 --conditions m_g ms_g m_plus_g --steps ner_cell &

`--mlm-only` runs only the MLM-accuracy cells (`-s mlm_<metric>_cell`) and what they need: the
pretrained encoder (or the trigram LM); no fine-tuning. Conditions whose encoder reads a parse
(M-G, MS-G) and the fine-tuning-only rows (M+G, random-init) have no MLM cells and are skipped
there. Run one campaign at a time: two torch processes on 2 cores run ~10× slower.
Record: docs/benchmarks/related_campaign.jsonl (same fields as languages_campaign.jsonl, plus the
step names when a subset ran).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from languages_campaign import LANGUAGES, REPO, campaign_parser, run_and_record  # noqa: E402

FOLDER = REPO / "experiments" / "related"
# file suffix, in the order a campaign runs them (cheap MLM rows first, fine-tuning-only rows last)
CONDITIONS = ("m", "trigram_lm", "c5", "c9", "c13", "m_a5", "m_a9", "m_a13", "h", "m_g", "ms_g", "m_plus_g", "random_init")
NO_MLM = {"m_g", "ms_g", "m_plus_g", "random_init"}
MLM_METRICS = ("accuracy", "bin1", "bin2", "bin3", "bin4", "bin5", "word_completion")
RECORD = REPO / "docs" / "benchmarks" / "related_campaign.jsonl"


def main(argv=None) -> int:
    parser = campaign_parser(__doc__.splitlines()[0], 1, LANGUAGES)
    parser.set_defaults(languages=["wolof"])
    parser.add_argument("--conditions", nargs="+", choices=CONDITIONS, help="file suffixes (default: all)")
    parser.add_argument("--mlm-only", action="store_true", help="only the MLM-accuracy cells and their dependencies")
    parser.add_argument("--steps", nargs="+", default=[], help="only these steps of each file and their dependencies (e.g. ner_cell)")
    parser.add_argument("--dry-run", action="store_true", help="list the files; run nothing")
    args = parser.parse_args(argv)
    conditions = [c for c in CONDITIONS if (not args.conditions or c in args.conditions)
                  and not (args.mlm_only and c in NO_MLM)]
    files = [FOLDER / f"{language}_{condition}.jsonnet" for language in args.languages for condition in conditions]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        parser.error("no such experiment file: " + ", ".join(missing) + " (tools/make_experiments.py writes them)")
    if args.dry_run:
        print("\n".join(str(f.relative_to(REPO)) for f in files))
        return 0
    if args.mlm_only and args.steps:
        parser.error("--mlm-only names its own steps; give --steps or --mlm-only")
    steps = [f"mlm_{metric}_cell" for metric in MLM_METRICS] if args.mlm_only else args.steps
    records = run_and_record(files, args.jobs, args.workspace, args.note, RECORD, step_names=steps)
    return max((r["returncode"] for r in records), default=0)


if __name__ == "__main__":
    sys.exit(main())
