// The three named scales. An experiment file picks one by name; nothing else changes a scale.
//   smoke — seconds to minutes on a laptop; what tests and CI run.
//   cpu   — one Wolof table cell on a 2-core machine (parser ≤ 15 min of training).
//   paper — the paper's hyperparameters (SPEC §G), meant for a GPU.
// Each scale's `pretrain` block feeds the pretrain_microbert step: `model` overrides the µB
// config (none: every scale keeps the µB size, SPEC §G), `training` is a PretrainingConfig
// (steps/pretrain.py); the experiment's seed is added by the builder.
{
  smoke: {
    corpus: { max_train_sentences: 300, max_dev_sentences: 40 },
    parser_budget: {
      tagger_steps: 20, parser_steps: 20, eval_interval: 10,
      tagger_hidden_dim: 32, tagger_batch_size: 50, tagger_biaffine_dim: 16, tagger_composite_biaffine_dim: 8,
      parser_hidden_dim: 32, parser_biaffine_dim: 32, parser_batch_size: 1000,
      char_hidden_dim: 16, word_emb_dim: 16,
    },
    max_length: 128,
    // ~30 s on 2 cores: enough to exercise validation, checkpointing and export.
    pretrain: {
      model: {},
      training: {
        max_steps: 30, batch_size: 8, grad_accumulation: 1, warmup: 0.1,
        validate_every: 10, max_validation_rows: 64, checkpoint_every: 10,
      },
    },
    // Fine-tuning configs (steps/finetune_parser.py, finetune_ner.py, pronto.py); filled in below.
    finetune: { ud: {}, ner: {}, pronto: {}, pronto_sentence_mood: {} },
  },
  cpu: {
    // The corpus parse runs at ~33 sentences/s on 2 cores (docs/RESULTS.md), so 10.5k sentences
    // take ~5 min of the 45-minute budget for one whole Wolof cell (README main command).
    corpus: { max_train_sentences: 10000, max_dev_sentences: 500 },
    // Measured on Wolof-WTB, 2 idle cores: ~0.42 s per tagger step, ~0.67 s per parser step, so
    // 1100+600 is ~14.5 min. The tagger gets the larger share: predicted UPOS is what limits LAS
    // (600+750: UPOS 88.3, LAS 62.1; 1100+600: UPOS 91.3, LAS 64.4 — see docs/RESULTS.md).
    parser_budget: {
      tagger_steps: 1100, parser_steps: 600, eval_interval: 100,
      tagger_hidden_dim: 200, tagger_batch_size: 50, tagger_biaffine_dim: 50, tagger_composite_biaffine_dim: 20,
      parser_hidden_dim: 200, parser_biaffine_dim: 200, parser_batch_size: 1000,
      char_hidden_dim: 100, word_emb_dim: 75,
    },
    max_length: 128,
    // SPEC §G "CPU-feasible reduction": batch 32, no accumulation, 10 % warmup, cosine.
    // Measured on 2 idle cores, batch 32 of Wolof rows (~22 subwords): 0.11 s/step for M,
    // 0.14-0.19 s/step for MXPT / the SLA conditions, so 3000 steps take ~6-10 min.
    pretrain: {
      model: {},
      training: {
        max_steps: 3000, batch_size: 32, grad_accumulation: 1, warmup: 0.1,
        validate_every: 500, max_validation_rows: 500, checkpoint_every: 250,
      },
    },
    // Fine-tuning configs (steps/finetune_parser.py, finetune_ner.py, pronto.py); filled in below.
    finetune: { ud: {}, ner: {}, pronto: {}, pronto_sentence_mood: {} },
  },
  paper: {
    corpus: { max_train_sentences: null, max_dev_sentences: null },
    // Stanza's own defaults for a full-size tagger and parser.
    parser_budget: {
      tagger_steps: 50000, parser_steps: 50000, eval_interval: 100,
      tagger_hidden_dim: 200, tagger_batch_size: 250, tagger_biaffine_dim: 400, tagger_composite_biaffine_dim: 100,
      parser_hidden_dim: 400, parser_biaffine_dim: 400, parser_batch_size: 5000,
      char_hidden_dim: 400, word_emb_dim: 75, parser_uses_xpos: true, parser_uses_feats: true,
    },
    max_length: 512,
    // SPEC §G: 32 × 8 = 256 rows per step, 62,500 steps, 10k warmup, validate and checkpoint
    // every 10k steps on the whole dev set.
    pretrain: {
      model: {},
      training: {
        max_steps: 62500, batch_size: 32, grad_accumulation: 8, warmup: 10000,
        validate_every: 10000, max_validation_rows: null, checkpoint_every: 10000,
      },
    },
    // Fine-tuning configs (steps/finetune_parser.py, finetune_ner.py, pronto.py); filled in below.
    finetune: { ud: {}, ner: {}, pronto: {}, pronto_sentence_mood: {} },
  },
}
