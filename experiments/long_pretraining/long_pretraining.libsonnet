// A Wolof cpu cell whose µBERT is pretrained on 20,000 steps of 256 rows (5.1M rows, ~460 epochs
// of the 11k rows) instead of the cpu scale's 3,000 of 64 (192k rows): 27x the rows, near the
// paper's epochs over its larger corpus (the reference sgcl.jsonnet: 62,500 × 256 rows). Everything else is the cpu
// cell's: the same cached corpus, parse, vocabulary and pretraining rows as
// experiments/wolof_<condition>.jsonnet, and the same fine-tuning.
//
// Meant for a GPU: batches are collated by 6 worker processes, and each fine-tune uses one CPU
// thread so that `tango run -j 10` fine-tunes all ten cells at once (on 2 cores, pass
// `-o '{"steps.ud_parser_s42.num_threads": 2, …}'`: threads are not in the cache key). Score cells
// take the row "<condition>-long", so they stay apart from the cpu cells in reports
// (reporting.report "Seed noise"). Seeds as in experiments/seeds.
local lib = import "../../configs/lib.libsonnet";

function(condition, seeds=[42, 43, 44, 45, 46])
  local cell = lib.experiment("wolof", condition, "cpu", seeds=seeds);
  {
    steps: std.mapWithKey(
      function(name, step)
        if name == "pretrained_model" then step + {
          training+: { max_steps: 20000, batch_size: 256, validate_every: 2000, checkpoint_every: 2000, max_validation_rows: null },
          loader_workers: 6,
          sync_every: 50,  // read losses back every 50 steps, not after each (not in the cache key)
        } else if std.member(["finetune_ud_parser", "finetune_ner"], step.type) then step + { num_threads: 1 }
        else if step.type == "score_cell" then step + { row: condition + "-long" }
        else step,
      cell.steps
    ),
  }
