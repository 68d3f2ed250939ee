// A language at the paper's scale, for one GPU allocation (issue 14; all five languages: issue 17). Over a cpu cell it changes:
//   corpus       the whole 34k-sentence train split (no 10k cap); the same config as the cpu cell's
//                `vectors_corpus`, so it is one cached entry; the corpus parser stays the cpu one
//   pretraining  SPEC §G: 62,500 steps × 256 rows, lr 3e-3, 10k warmup, 512 subwords, checkpoint
//                every 5k steps (and where a stopped command's SIGINT finds it: no step is lost)
//   fine-tuning  `regime`: "paper" (SPEC §H: 3×400 BiLSTM, 300 epochs of 200 batches, patience 50)
//                or "paper_tenth" (ours, an intermediate stand-in: the paper's head and rates, 30
//                epochs, patience 10), "cpu" (the cpu scale's own) or "cpu_x2" (ours: the cpu regime
//                twice as long, 40 epochs, patience 20), "paper_tenth_reference" (paper_tenth with
//                AllenNLP's embedder mix and dropout); by default each task's `chosen` regime.
//                One CPU thread per fine-tune, so `tango run -j` fills a machine
//   levers       GPU speed levers of pretrain_microbert from levers.json, which `campaign.py levers` writes
//                from the lever benchmark ({}: none; e.g. { precision: "bf16", fused_optimizer: true });
//                compile_objectives only for conditions with a P or T loss; no compile for `eager_conditions`
// Score cells are scale "gpu-<their task's regime>", so tables keep them apart from the cpu and paper files.
local lib = import "../../configs/lib.libsonnet";

local paper_ud = {
  epochs: 300, batches_per_epoch: 200, patience: 50, lr: 1e-3, encoder_lr: 5e-5, betas: [0.9, 0.999],
  lstm_hidden: 400, lstm_layers: 3, dropout: 0.3, input_dropout: 0.3,
};
local regimes = {
  paper: { ud: paper_ud, ner: { epochs: 300, patience: 50, encoder_lr: 1e-5 }, threads: 1 },
  paper_tenth: { ud: paper_ud + { epochs: 30, patience: 10 }, ner: { epochs: 30, patience: 10, encoder_lr: 1e-5 }, threads: 1 },
  cpu: { ud: {}, ner: {}, threads: null },  // the cpu scale's own fine-tuning (the decomposition's first column)
  // Fine-tuning length alone: dev LAS still rises at the cpu regime's 20th epoch.
  cpu_x2: { ud: { epochs: 40, patience: 20 }, ner: { epochs: 40, patience: 20 }, threads: null },
  // paper_tenth with AllenNLP's head where ours differs: the embedder's mix without the embedding
  // layer, and (parser) variational dropout; a step argument, keyed only when set.
  paper_tenth_reference: self.paper_tenth + { step: { reference_head: true } },
};

// Each task's regime with the best dev figure for the paper-scale µB-M among those measured (issue 14
// item 1's rule; docs/decomposition gives each cell's dev figure). Re-choose when the paper regime is in.
local chosen = { ud: "paper_tenth", ner: "cpu_x2" };
local per_task(regime) = if regime == null then chosen else { ud: regime, ner: regime };

// The fine-tuning regime alone, on any cell's steps (threads: where it runs, not in the cache key).
local threads(regime) = if regimes[regime].threads == null then {} else { num_threads: regimes[regime].threads };
local step_arguments(regime) = std.get(regimes[regime], "step", {});
local finetuning(step, by_task, thread_override={}) =
  if step.type == "finetune_ud_parser" then
    step + { config+: regimes[by_task.ud].ud } + step_arguments(by_task.ud) + threads(by_task.ud) + thread_override
  else if step.type == "finetune_ner" then
    step + { config+: regimes[by_task.ner].ner } + step_arguments(by_task.ner) + threads(by_task.ner) + thread_override
  else step;

// M's fastest combination in the lever benchmark, written by `campaign.py levers`; they re-key pretraining.
local default_levers = import "levers.json";
// Conditions that pretrain eager whatever levers.json says: MXPT-SLA's compile outlasted a whole
// device call (H100, stop 38), and a run spread over lendings would pay it in every one.
local eager_conditions = ["MXPT-SLA"];
local compile_levers = ["compile_encoder", "compile_objectives"];
// compile_objectives compiles the P and T losses: set only where a condition has one, so M's key stays.
local levers_for(condition, levers) = {
  [name]: levers[name]
  for name in std.objectFields(levers)
  if (name != "compile_objectives" || lib.contrastive(condition))
     && !(std.member(eager_conditions, condition) && std.member(compile_levers, name))
};

// Uncapped, `corpus` is the same step as `vectors_corpus`: Tango merges the two into one step object
// under one name, and `tango run -s` then finds the other name's dependants unsatisfied. One name
// for it (word vectors read `corpus`) keeps every step ID and lets a campaign phase run a sub-graph.
local one_corpus(steps) = {
  [name]: if name == "word_vectors" && std.objectHas(steps, "vectors_corpus") then steps[name] + { corpus: { type: "ref", ref: "corpus" } } else steps[name]
  for name in std.objectFields(steps)
  if name != "vectors_corpus"
};

local overlay(cell, by_task, loader_workers, levers) = {
  steps: one_corpus(std.mapWithKey(
    function(name, step)
      if step.type == "load_corpus" then step + { max_train_sentences: null, max_dev_sentences: null }
      else if step.type == "build_pretraining_data" then step + { max_length: 512 }
      else if step.type == "pretrain_microbert" then step + {
        // 256-row batches without accumulation: the paper's rows per step in one launch each.
        training+: lib.scales.paper.pretrain.training + { lr: 3e-3, batch_size: 256, grad_accumulation: 1, checkpoint_every: 5000 },
        loader_workers: loader_workers,
        sync_every: 50,  // read losses back every 50 steps, not after each (not in the cache key)
        stall_seconds: 120,  // tracebacks once no step has finished for 2 min, within one device call (not keyed either)
      } + levers
      else if step.type == "score_cell" then step + { scale: "gpu-" + (if step.table == "table2" then by_task.ud else by_task.ner) }
      else finetuning(step, by_task, { num_threads: 1 }),
    cell.steps
  )),
};

{
  regimes: std.objectFields(regimes),
  chosen: chosen,
  // condition: a paper condition ("M", "MXPT-SLA", …) or "random-init". Any of the paper's five
  // languages (issue 17): the same overlay on its cpu cell (NER where it has WikiAnn). regime: one
  // for both tasks, or null for each task's chosen one.
  cell(language, condition, seeds=[42, 43, 44, 45, 46], regime=null, loader_workers=10, levers=default_levers)::
    assert regime == null || std.objectHas(regimes, regime) : "unknown regime " + regime + "; known: " + std.join(", ", std.objectFields(regimes));
    overlay(
      if condition == "random-init" then lib.random_init_experiment(language, "cpu", seeds=seeds)
      else lib.experiment(language, condition, "cpu", seeds=seeds),
      per_task(regime), loader_workers, levers_for(condition, levers)
    ),
  // Any cell (e.g. a cpu one) fine-tuned under `regime`, everything upstream unchanged.
  with_regime(cell, regime)::
    assert std.objectHas(regimes, regime) : "unknown regime " + regime;
    { steps: std.mapWithKey(function(name, step) finetuning(step, per_task(regime)), cell.steps) },
  wolof(condition, seeds=[42, 43, 44, 45, 46], regime=null, loader_workers=10, levers=default_levers)::
    $.cell("wolof", condition, seeds, regime, loader_workers, levers),
}
