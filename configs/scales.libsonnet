// smoke: tests and CI; cpu: one Wolof cell on 2 cores; paper: the reference's sgcl.jsonnet, for a GPU. Why: docs/decisions.md.

// The paper's UD head and rates, where the paper scale's fine-tuning regimes start.
local paper_ud = {
  epochs: 300, batches_per_epoch: 200, patience: 50, lr: 1e-3, encoder_lr: 5e-5, betas: [0.9, 0.999],
  lstm_hidden: 400, lstm_layers: 3, dropout: 0.3, input_dropout: 0.3,
};

{
  smoke: {
    corpus: { max_train_sentences: 300, max_dev_sentences: 40 },
    word_vectors: { dim: 16, epochs: 1 },
    word_vectors_corpus: self.corpus,
    parser_budget: {
      tagger_steps: 20, parser_steps: 20, eval_interval: 10, tagger_tags: "upos", parser_layers: 2,
      tagger_hidden_dim: 32, tagger_batch_size: 50, tagger_biaffine_dim: 16, tagger_composite_biaffine_dim: 8,
      parser_hidden_dim: 32, parser_biaffine_dim: 32, parser_batch_size: 1000,
      char_hidden_dim: 16, word_emb_dim: 16, parser_optimizer: "adam",
    },
    max_length: 128,
    // Transformer-Grammar LMs (lib.tg_experiment): seconds each. agreement: the EWT probe's pairs scored.
    tg: {
      max_length: 256, training: { max_steps: 20, batch_size: 8 }, evaluation: { max_sentences: 100 },
      agreement: { max_pairs: 100 },
    },
    // Seconds on 2 cores.
    pretrain: {
      model: {},
      training: {
        max_steps: 30, batch_size: 8, grad_accumulation: 1, warmup: 0.1,
        validate_every: 10, max_validation_rows: 64, checkpoint_every: 10,
      },
    },
    // On top of pretrain.training for lib.pronto_sample_experiment.
    pronto_pretrain: {},
    // Tiny heads, a few batches.
    finetune: {
      ud: { epochs: 1, batches_per_epoch: 4, lstm_hidden: 16, lstm_layers: 1, arc_dim: 16, label_dim: 16 },
      ner: { epochs: 1, patience: 1, lstm_hidden: 16, lstm_layers: 1 },
      pronto: { epochs: 1, max_train_rows: 64, max_length: 128 },
      pronto_pretrained: {},
      pronto_sentence_mood: {},
    },
  },
  cpu: {
    // ~3.5 min of parsing at ~47 sentences/s on 2 cores.
    corpus: { max_train_sentences: 10000, max_dev_sentences: 500 },
    // The whole train split: ~35 s, +0.5 dev UPOS.
    word_vectors: { dim: 100, epochs: 10 },
    word_vectors_corpus: { max_train_sentences: null, max_dev_sentences: null },
    // 10-14 min on 2 cores (Wolof: tagger 4-7, parser 6-7); Adam beats UDPipe 1 (71.3 vs 70.15 LAS).
    parser_budget: {
      tagger_steps: 700, parser_steps: 800, eval_interval: 100, tagger_tags: "upos",
      tagger_hidden_dim: 200, tagger_batch_size: 50, tagger_biaffine_dim: 50, tagger_composite_biaffine_dim: 20,
      parser_hidden_dim: 200, parser_biaffine_dim: 100, parser_layers: 2, parser_batch_size: 1000,
      char_hidden_dim: 100, word_emb_dim: 75,
      parser_optimizer: "adam", parser_lr: 3e-3, parser_beta2: 0.95,
    },
    max_length: 128,
    // Transformer-Grammar LMs, one budget for all three kinds: ~1.3 Wolof epochs, ~4 min per LM
    // (two side by side, one thread each).
    tg: { max_length: 256, training: { max_steps: 400, batch_size: 32 }, evaluation: {}, agreement: {} },
    // A CPU-sized reduction of the reference's settings, with the fallback lr 1e-3; ~8 min.
    pretrain: {
      model: {},
      training: {
        max_steps: 3000, batch_size: 64, grad_accumulation: 1, warmup: 0.1, lr: 1e-3,
        validate_every: 500, max_validation_rows: 500, checkpoint_every: 250,
      },
    },
    // 3.7k Spanish texts: ~26 epochs, ~6 min.
    pronto_pretrain: { max_steps: 1500 },
    // Rates above the paper's: a 10-minute encoder barely moves at them.
    finetune: {
      ud: { epochs: 20, lr: 2e-3, encoder_lr: 1e-3, lstm_hidden: 200, lstm_layers: 2, dropout: 0.2, input_dropout: 0.2 },
      ner: { epochs: 20, patience: 20, encoder_lr: 1e-4 },
      // 3e-4: 1e-3 collapses to the majority class; pretrained encoders 1e-4.
      pronto: { lr: 3e-4, epochs: 4, max_train_rows: 2000, max_length: 256 },
      pronto_pretrained: { lr: 1e-4 },
      pronto_sentence_mood: { epochs: 8 },
    },
  },
  // The paper's scale, for a GPU; every paper-scale result of record (docs/decisions.md, "paper").
  paper: {
    // The whole train split (the cpu scale's `word_vectors_corpus` step).
    corpus: { max_train_sentences: null, max_dev_sentences: null },
    word_vectors: $.cpu.word_vectors,
    word_vectors_corpus: self.corpus,
    // The cpu scale's corpus parser (the same cached step).
    parser_budget: $.cpu.parser_budget,
    max_length: 512,
    // Transformer-Grammar LMs, trainable as jobs that resume each other (`checkpoint_every`, not
    // keyed): a dev point every 1,000 steps on 1,000 held-out sentences. `budget` is the stop rule of
    // TXL (terminals), seed by seed; TG and TXL (trees) of the seed then train the steps it took
    // (lib.tg_experiment), so the three kinds share one budget. Each keeps the weights of its lowest dev
    // point (`select_best`, the TG paper's checkpoint selection): English EWT overfits well before a
    // flat curve ends the run. The table's figures use the whole split.
    tg: {
      max_length: 256,
      // A 1,000-step warmup (2 %): the rule may stop a run within a few thousand steps, after it.
      training: { max_steps: 50000, warmup: 0.02, batch_size: 32, validate_every: 1000, max_validation_sequences: 1000,
                  checkpoint_every: 1000, select_best: true },
      budget: { plateau_validations: 3 },
      evaluation: {},
      agreement: {},
    },
    pretrain: {
      model: {},
      // 62,500 steps × 256 rows in one batch each, 10k warmup.
      training: {
        max_steps: 62500, batch_size: 256, grad_accumulation: 1, warmup: 10000, lr: 3e-3,
        validate_every: 10000, max_validation_rows: null, checkpoint_every: 5000,
      },
      // Step arguments outside the cache key.
      step: { loader_workers: 10, sync_every: 50, stall_seconds: 120 },
      // GPU speed levers (keyed), chosen from `benchmarks/bench_pretrain_step.py` rows on a GPU
      // (docs/decisions.md, "GPU"); no compile for `eager_conditions`.
      levers: import "levers.json",
      eager_conditions: ["MXPT-SLA"],
    },
    pronto_pretrain: {},
    // What the regimes change: the cpu scale's UD and NER fine-tuning, with each language's cpu
    // `ud_finetune`. PrOnto has no regime: the steps' defaults, score cells "paper".
    finetune: {
      ud: $.cpu.finetune.ud, ner: $.cpu.finetune.ner,
      pronto: {}, pronto_pretrained: {}, pronto_sentence_mood: {},
    },
    finetune_language_scale: "cpu",
    // One CPU thread per fine-tune, so `tango run -j` fills a machine (not keyed).
    finetune_threads: 1,
    // Named fine-tuning regimes: changes to `finetune`, step arguments, threads (lib.with_regime).
    // A score cell's scale is "gpu-<its task's regime>"; the labels key every paper-scale score and
    // aggregate cell and the committed records (docs/tables/gpu-*), so the names stay.
    regimes: {
      // The paper's own: 3×400 BiLSTM, up to 300 epochs of 200 batches, patience 50.
      paper: { ud: paper_ud, ner: { epochs: 300, patience: 50, encoder_lr: 1e-5 }, threads: 1 },
      // The paper's head and rates for its first 30 epochs, patience 10.
      paper_tenth: { ud: paper_ud + { epochs: 30, patience: 10 }, ner: { epochs: 30, patience: 10, encoder_lr: 1e-5 }, threads: 1 },
      // The cpu scale's own fine-tuning.
      cpu: { ud: {}, ner: {}, threads: null },
      // The cpu regime twice as long: 40 epochs, patience 20.
      cpu_x2: { ud: { epochs: 40, patience: 20 }, ner: { epochs: 40, patience: 20 }, threads: null },
      // paper_tenth with AllenNLP's embedder mix and (parser) variational dropout.
      paper_tenth_reference: self.paper_tenth + { step: { reference_head: true } },
      // The paper's own with the reference's NER optimizer: AllenNLP's `adamw` decays weights by
      // 0.01, the NER step's default 0 (steps/finetune/ner.py); UD already decays by 0.01.
      paper_ner_decay: self.paper + { ner+: { weight_decay: 0.01 } },
    },
    // Each task's regime: the one with the best dev figure for the paper-scale µB-M (docs/decomposition)
    // among those a 5-seed table can afford. NER: the paper's own (6-16 min a seed on one CPU thread).
    // UD: paper_tenth; the `paper` regime (156-283 epochs, ~25-40 min a seed alone on a GPU, 75 min to
    // 4.7 h alone on 2 CPU cores) checks it: experiments/paper/paper_regime (µB-M, µB-MXPT-SLA).
    chosen: { ud: "paper_tenth", ner: "paper" },
  },
}
