// Is the Wolof µB-M's small lead over random-init (cpu scale: +1.2 test LAS) a matter of
// pretraining compute? The cpu cell's data steps and fine-tuning, unchanged (so the same cached
// corpus, parse, vocabulary and pretraining rows as experiments/wolof_m.jsonnet), with a µB-M
// pretrained on 20,000 steps of 256 rows (5.1M rows, ~460 epochs of the 11k rows) instead of
// 3,000 of 64 (192k rows): 27x the rows, near the paper's epochs over its larger corpus (SPEC §G:
// 62,500 × 256 rows). Meant for a GPU: batches are collated by 6 worker processes and each
// fine-tune uses one CPU thread, so that `tango run -j 10` fine-tunes all ten cells at once.
// Compare with benchmarks/seeds/wolof_{m,random_init}_5seeds.jsonnet (same seeds).
//   SIB_DATA_ROOT=../shared/data tango run benchmarks/gpu/wolof_m_long_pretraining.jsonnet -j 10
// Measured on one H100 (docs/RESULTS.md, row M-long): pretraining 4.1 min at ~450k tokens/s, dev
// MLM loss 4.83 (cpu µB-M: 5.99; lowest 4.80 at step 8000, the rest overfits the 11k rows);
// test LAS 70.75 ± 0.45 and NER F1 86.30 ± 0.89 over seeds 42-46, against random-init's
// 67.65 ± 0.89 and 84.51 ± 1.38 on the 2-core CPU. The random-init files fine-tuned on the same
// GPU gave 67.23 ± 0.71 and 83.34 ± 2.04 (not cached here: same cache keys as the CPU runs).
local lib = import "../../configs/lib.libsonnet";
local seeds = [42, 43, 44, 45, 46];
local cell = lib.experiment("wolof", "M", "cpu", seeds=seeds);
{
  steps: std.mapWithKey(
    function(name, step)
      if name == "pretrained_model" then step + {
        training+: { max_steps: 20000, batch_size: 256, validate_every: 2000, checkpoint_every: 2000, max_validation_rows: null },
        loader_workers: 6,
      } else if std.member(["finetune_ud_parser", "finetune_ner"], step.type) then step + { num_threads: 1 }
      // Its own row, so its cells stay apart from the cpu µB-M's in reports (steps.report "Seed noise").
      else if step.type == "score_cell" then step + { row: "M-long" }
      else step,
    cell.steps
  ),
}
