// Where Wolof µB-M's missing LAS go: one encoder × one fine-tuning regime per
// file, so each factor's effect is a paired difference (same fine-tuning seeds) between two files.
//   encoder  random-init  no pretraining (the cpu cell's vocabulary)
//            cpu          experiments/wolof_m.jsonnet's µBERT: 3,000 steps × 64 rows of a 10k-sentence corpus
//            cpu_relpos   the cpu µBERT with the reference's positions (relative_key_query, no
//                         absolute embeddings) instead of stock BERT's absolute ones; a 2-core cell
//            long         the same rows, 20,000 steps × 256 (../long_pretraining/long_pretraining.libsonnet)
//            paper        the whole 34k-sentence corpus, 62,500 steps × 256 (the paper scale, experiments/paper)
//   regime   (configs/scales.libsonnet, the paper scale's `regimes`)
//            cpu          the cpu scale's: 2×200 BiLSTM, 20 epochs of the train split, raised rates
//            cpu_x2       ours: the cpu regime twice as long (40 epochs, patience 20); 3 seeds, 2-core cells
//            paper_tenth  ours, a stand-in: the paper's head and rates, 30 epochs of 200 batches, patience 10
//            paper        the reference parser_eval.jsonnet: 3×400 BiLSTM, up to 300 epochs of 200 batches, patience 50
//            paper_tenth_reference  paper_tenth with AllenNLP's head where ours differs: the embedder's
//                         scalar mix without the embedding layer, and (parser) variational dropout
//            paper_ner_decay  paper with the reference's NER weight decay (AllenNLP adamw's 0.01);
//                         UD is the paper regime's own, so its files hold the NER cell alone
// Each fine-tuning step is the cache entry of the file it comes from (experiments/seeds, experiments/paper,
// experiments/long_pretraining): only
// the score cells are new, relabelled table "decomposition:ud" / ":ner", row <encoder>, scale <regime>
// (reporting.report "Where the Wolof gap is").
local lib = import "../../configs/lib.libsonnet";
local long = import "../long_pretraining/long_pretraining.libsonnet";

local encoders = ["random-init", "cpu", "cpu_relpos", "long", "paper"];
// What cpu_relpos changes in the cpu µBERT (a model field, so only its pretraining and what follows re-key).
local relative_positions(cell) = { steps: std.mapWithKey(
  function(name, step) if step.type == "pretrain_microbert" then step + { model+: { position_embedding_type: "relative_key_query" } } else step,
  cell.steps
) };

// `tasks`: the grid tasks the file holds (lib.only_tasks); a regime that changes one task alone leaves
// the other out, which would only repeat the steps of the regime it departs from under a new label.
function(encoder, regime, seeds=[42, 43, 44, 45, 46], tasks=["ud_parser", "ner"])
  assert std.member(encoders, encoder) : "unknown encoder " + encoder + "; known: " + std.join(", ", encoders);
  local cell = lib.only_tasks(
    if encoder == "paper" then lib.experiment("wolof", "M", "paper", seeds=seeds, regime=regime)
    else lib.with_regime(
      if encoder == "random-init" then lib.random_init_experiment("wolof", "cpu", seeds=seeds)
      else if encoder == "cpu" then lib.experiment("wolof", "M", "cpu", seeds=seeds)
      else if encoder == "cpu_relpos" then relative_positions(lib.experiment("wolof", "M", "cpu", seeds=seeds))
      else long("M", seeds),
      regime
    ), tasks);
  {
    steps: std.mapWithKey(
      function(name, step)
        if step.type == "score_cell" then step + { table: if step.table == "table2" then "decomposition:ud" else "decomposition:ner", row: encoder, scale: regime }
        else step,
      cell.steps
    ),
  }
