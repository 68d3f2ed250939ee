// The three named scales. An experiment file picks one by name; nothing else changes a scale.
//   smoke — seconds to minutes on a laptop; what tests and CI run.
//   cpu   — one Wolof table cell on a 2-core machine (parser ≤ 15 min of training).
//   paper — the paper's hyperparameters (SPEC §G), meant for a GPU.
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
  },
  cpu: {
    corpus: { max_train_sentences: 20000, max_dev_sentences: 1000 },
    // Measured on Wolof-WTB, 2 cores: ~0.43 s per tagger step, ~0.7 s per parser step.
    parser_budget: {
      tagger_steps: 500, parser_steps: 750, eval_interval: 100,
      tagger_hidden_dim: 200, tagger_batch_size: 50, tagger_biaffine_dim: 50, tagger_composite_biaffine_dim: 20,
      parser_hidden_dim: 200, parser_biaffine_dim: 200, parser_batch_size: 1000,
      char_hidden_dim: 100, word_emb_dim: 75,
    },
    max_length: 128,
  },
  paper: {
    corpus: { max_train_sentences: null, max_dev_sentences: null },
    // Stanza's own defaults for a full-size tagger and parser.
    parser_budget: {
      tagger_steps: 50000, parser_steps: 50000, eval_interval: 100,
      tagger_hidden_dim: 200, tagger_batch_size: 250, tagger_biaffine_dim: 400, tagger_composite_biaffine_dim: 100,
      parser_hidden_dim: 400, parser_biaffine_dim: 400, parser_batch_size: 5000,
      char_hidden_dim: 400, word_emb_dim: 75,
    },
    max_length: 512,
  },
}
