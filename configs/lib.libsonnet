// The one builder every experiment file calls:  (import "../configs/lib.libsonnet").experiment(...)
//
// It returns a Tango config whose steps form one table cell's DAG. Step configs depend only on
// what matters for them (language, scale, parser backend), so every condition of a language at a
// scale shares the same cached corpus, parser, parse and vocabulary.
local scales = import "scales.libsonnet";

local languages = import "languages.libsonnet";  // treebank, WikiAnn code, … per language

// A file under the data root ($SIB_DATA_ROOT, default ./data); absolute paths and URLs work too.
local data(path) = { path: path };

local ud(language, split) =
  data(language + "/ud/" + languages[language].treebank + "-ud-" + split + ".conllu");

local ref(name) = { type: "ref", ref: name };

local wikiann(language, split) =
  data(language + "/wikiann/wikiann-" + languages[language].wikiann + "_" + split + ".bio");

// PrOnto (paper Tables 4, 7-9): task → table cell id. Its data is not in the shared copy except a
// Spanish sample; an experiment passes `pronto_data` (a folder holding <task>_{train,dev,test}.tsv).
local pronto_tables = {
  nonpronominal_mention: "table4:nonpronominal_mention",
  same_sense: "table4:same_sense",
  proper_noun_subject: "table7",
  sentence_mood: "table8",
  same_arg_count: "table9",
};

{
  scales: scales,

  // The labels of a training step's W&B run (steps/common/tracking.py): named
  // <language>-<condition>-<scale>-<task>-s<seed>, grouped by <language>-<condition>-<scale>.
  // Not in any cache key (`wandb` is in each training step's SKIP_ID_ARGUMENTS); SIB_WANDB=off or
  // `wandb: false` turns tracking off.
  wandb_labels(language, condition, scale):: { language: language, condition: condition, scale: scale },
  data: data,
  ud: ud,

  // Steps shared by all conditions of (language, scale): parse corpus → build vocab → inputs.
  //
  // `corpus`: null for <language>/corpus, or the name of one of the language's `corpus_variants`
  // (languages.libsonnet; e.g. Coptic's "leakfree"). `reference_reader`: read as the reference's
  // CoNLL-U reader did: a lacuna "[ ]" one word, only the first 200 tokens of a longer sentence
  // (Coptic's Table 1 count, 970,642).
  data_steps(language, scale, parser_backend="stanza", corpus=null, reference_reader=false)::
    assert std.objectHas(languages, language) : "unknown language " + language + "; known: " + std.join(", ", std.objectFields(languages));
    assert std.objectHas(scales, scale) : "unknown scale " + scale + "; known: " + std.join(", ", std.objectFields(scales));
    local variants = std.get(languages[language], "corpus_variants", {});
    assert corpus == null || std.objectHas(variants, corpus) : "unknown corpus " + corpus + " for " + language + "; known: " + std.join(", ", std.objectFields(variants));
    local s = scales[scale];
    local folder = if corpus == null then "corpus" else variants[corpus];
    local load_corpus(caps) = { type: "load_corpus", language: language, corpus: data(language + "/" + folder) } + caps
      + (if std.get(languages[language], "corpus_split_punctuation", true) then {} else { split_punctuation: false })
      + (if reference_reader then { max_sentence_tokens: 200, join_lacunae: true } else {});
    local own_vectors_corpus = parser_backend == "stanza" && s.word_vectors_corpus != s.corpus;
    {
      corpus: load_corpus(s.corpus),
    } + (if parser_backend == "stanza" then {
      // Stanza's tagger and parser start from word vectors trained on the corpus
      // (steps/word_vectors.py). The vectors may read more of it than pretraining does (their
      // own cap, `word_vectors_corpus`): they are cheap, and every extra word form they cover is
      // one the tagger and parser need not learn from the small treebank.
      word_vectors: {
        type: "train_word_vectors",
        corpus: ref(if own_vectors_corpus then "vectors_corpus" else "corpus"),
      } + s.word_vectors,
    } else {}) + (if own_vectors_corpus then { vectors_corpus: load_corpus(s.word_vectors_corpus) } else {}) + {
      corpus_parser: {
        type: "train_corpus_parser",
        language: language,
        train: ud(language, "train"),
        dev: ud(language, "dev"),
        test: ud(language, "test"),
        backend: parser_backend,
        budget: s.parser_budget,
        [if parser_backend == "stanza" then "word_vectors"]: ref("word_vectors"),
      },
      parsed_corpus: {
        type: "parse_corpus",
        corpus: ref("corpus"),
        parser: ref("corpus_parser"),
      },
      tokenizer: {
        type: "train_tokenizer",
        corpus: ref("corpus"),
      },
      pretraining_data: {
        type: "build_pretraining_data",
        parsed_corpus: ref("parsed_corpus"),
        tokenizer: ref("tokenizer"),
        treebank_train: ud(language, "train"),
        treebank_dev: ud(language, "dev"),
        max_length: s.max_length,
      },
    },

  // Fine-tuning and scoring of one encoder: for each task the language has data for, one
  // fine-tuning step and one score_cell per seed, and one aggregate_cell (mean ± sd) per table
  // cell — the node `python -m reporting.tables` reads. `encoder` is a ref to a pretrain_microbert /
  // random_init_encoder step or an HF model name; `row` names the table row. An encoder whose
  // attention needs a parse (`encoder_needs_parse`, e.g. SLA) is given the corpus parser's parse of
  // every sentence (sla_parse "parse", as the reference does; the argument names are historic).
  // `pretrained`: false for the random-init control, whose PrOnto fine-tuning keeps the scale's
  // plain `finetune.pronto` settings; pretrained encoders add `finetune.pronto_pretrained` on top.
  // `column`: the table column (default the language; e.g. "coptic_leakfree" for a corpus variant).
  //
  // `syntax_gat`: per task ({ud: {...}, ner: {...}}, gat_* settings) adds syntax-guided attention to
  // the encoder at fine-tuning (the "+G" rows; Ahmad et al., 2021), on the corpus parser's trees and tags.
  //
  // `structural_probe`: the encoder itself has syntax-guided attention (-G), so it fine-tunes a
  // structural probe, as does every encoder given `syntax_gat`. NER adds the probe's term to its
  // summed CRF loss per word (probe_weighting "per_word": Ahmad et al.'s α is set against a per-token
  // task loss); the UD parser's loss is a mean over words already.
  //
  // `regime`: at a scale with fine-tuning regimes (paper), one regime for both tasks instead of each
  // task's `chosen` one; the score cells are then scale "gpu-<the task's regime>".
  evaluation_steps(language, scale, encoder, row, seeds, encoder_needs_parse=false, pronto_data=null, pronto_missing_train=[], pretrained=true,
                   column=language, syntax_gat=null, regime=null, structural_probe=false)::
    local s = scales[scale];
    local by_task = $.regimes_by_task(scale, regime);
    local regime_task = { ud_parser: "ud", ner: "ner" };  // tasks the regimes cover; others keep the scale
    local label(task) = if by_task == null || !std.objectHas(regime_task, task) then scale else "gpu-" + by_task[regime_task[task]];
    local tuned(step) = if by_task == null then step else $.regime_step(step, by_task, s.finetune_threads);
    local language_ud = std.get(std.get(languages[language], "ud_finetune", {}), std.get(s, "finetune_language_scale", scale), {});
    local parse_everything = encoder_needs_parse || syntax_gat != null;
    local sla_of(task) =
      assert syntax_gat == null || std.objectHas(syntax_gat, task) : "syntax_gat (gat_finetune) has no settings for task " + task;
      (if parse_everything then { sla_parse: "parse", corpus_parser: ref("corpus_parser") } else { sla_parse: "global" })
      + (if syntax_gat == null then {} else { syntax_gat: syntax_gat[task] })
      + (if task == "ner" && (structural_probe || (syntax_gat != null && std.get(syntax_gat.ner, "gat_probe_weight", null) != 0)) then { probe_weighting: "per_word" } else {});
    local cells(task, table, finetune) =
      {
        [task + "_s" + seed]: tuned(finetune { config+: { seed: seed } })
        for seed in seeds
      } + {
        [task + "_score_s" + seed]: {
          type: "score_cell",
          finetuned: ref(task + "_s" + seed),
          table: table,
          row: row,
          column: column,
          scale: label(task),
          seed: seed,
        }
        for seed in seeds
      } + {
        [task + "_cell"]: {
          type: "aggregate_cell",
          scores: [ref(task + "_score_s" + seed) for seed in seeds],
        },
      };
    // What a task entry (`tasks` below) gets.
    local context = {
      language: language, scale: scale, encoder: encoder, row: row, seeds: seeds, column: column,
      pronto_data: pronto_data, pronto_missing_train: pronto_missing_train, pretrained: pretrained,
      language_ud: language_ud,  // the language's own UD fine-tuning settings at this scale
      // The encoder, the parse it is given (`syntax_gat` key `gat_key`) and the W&B labels.
      encoder_fields(gat_key):: { encoder: encoder } + sla_of(gat_key) + { wandb: $.wandb_labels(language, row, scale) },
      // One fine-tuning step per seed (`finetune` with config.seed set), its score_cell, and the aggregate_cell.
      cells(task, table, finetune):: cells(task, table, finetune),
    };
    std.foldl(function(steps, task) steps + $.tasks[task](context), std.objectFieldsAll($.tasks), {}),

  // The downstream tasks evaluation_steps builds, one entry each: a function of the context above
  // returning the task's steps for one encoder ({} where the language has no data for it). A new
  // task is its step class plus one entry here (docs/extending.md; tests/test_toy_task.py adds one
  // from outside: `lib + { tasks+:: { toy(c):: ... } }`).
  tasks:: {
    ud_parser(c):: c.cells("ud_parser", "table2", {
      type: "finetune_ud_parser",
      train: ud(c.language, "train"),
      dev: ud(c.language, "dev"),
      test: ud(c.language, "test"),
      config: scales[c.scale].finetune.ud + c.language_ud,
    } + c.encoder_fields("ud")),
    ner(c):: if !std.objectHas(languages[c.language], "wikiann") then {} else c.cells("ner", "table3", {
      type: "finetune_ner",
      train: wikiann(c.language, "train"),
      dev: wikiann(c.language, "dev"),
      test: wikiann(c.language, "test"),
      config: scales[c.scale].finetune.ner,
    } + c.encoder_fields("ner")),
    pronto(c):: if c.pronto_data == null then {} else
      $.pronto_steps(c.language, c.scale, c.encoder, c.row, c.seeds, c.pronto_data, c.pronto_missing_train, c.pretrained),
  },

  // A cell with some of its downstream tasks alone (`tasks`: names of `tasks` above, e.g. ["ner"]):
  // the other tasks' fine-tunes, scores and cells left out, everything upstream kept. For a regime
  // that changes one task only, whose other task would repeat another file's steps under a new label.
  only_tasks(cell, tasks)::
    local known = std.objectFieldsAll($.tasks);
    assert std.length(tasks) > 0 && std.all([std.member(known, t) for t in tasks]) : "only_tasks: some of " + std.join(", ", known);
    local left_out(name) = std.any([std.startsWith(name, t + "_") for t in known if !std.member(tasks, t)]);
    cell + { steps: { [name]: cell.steps[name] for name in std.objectFields(cell.steps) if !left_out(name) } },

  // {ud: regime, ner: regime} of a scale with fine-tuning regimes (scales.libsonnet `regimes`): each
  // task's `chosen` one, or `regime` for both; null at a scale without regimes.
  regimes_by_task(scale, regime=null)::
    local s = scales[scale];
    if !std.objectHas(s, "regimes") then
      assert regime == null : "scale " + scale + " has no fine-tuning regimes (regime " + regime + ")";
      null
    else
      assert regime == null || std.objectHas(s.regimes, regime) : "unknown regime " + regime + "; known: " + std.join(", ", std.objectFields(s.regimes));
      if regime == null then s.chosen else { ud: regime, ner: regime },

  // A fine-tuning step under the paper scale's regimes (`by_task` as regimes_by_task gives): the
  // regime's change to its config, its step arguments, and `threads` (null: the regime's own).
  regime_step(step, by_task, threads=null)::
    local task = { finetune_ud_parser: "ud", finetune_ner: "ner" };
    if !std.objectHas(task, step.type) then step
    else
      local regime = scales.paper.regimes[by_task[task[step.type]]];
      local count = if threads == null then regime.threads else threads;
      step + { config+: regime[task[step.type]] } + std.get(regime, "step", {})
      + (if count == null then {} else { num_threads: count }),

  // Any cell (e.g. a cpu one) fine-tuned under one of the paper scale's regimes, everything upstream
  // unchanged; its score cells keep their labels.
  with_regime(cell, regime):: {
    local by_task = $.regimes_by_task("paper", regime),
    steps: std.mapWithKey(function(name, step) $.regime_step(step, by_task), cell.steps),
  },

  // A scale's pretrain_microbert step arguments besides its data and training (paper: loader workers
  // and the GPU speed levers). `levers`: in place of the scale's own (scales.libsonnet `levers`);
  // compile_objectives only for a condition with a P or T loss (so M's key stays), and no compile
  // for the scale's `eager_conditions`.
  pretrain_arguments(scale, condition, levers=null)::
    local p = scales[scale].pretrain;
    local chosen = if levers == null then std.get(p, "levers", {}) else levers;
    local eager = std.member(std.get(p, "eager_conditions", []), condition);
    std.get(p, "step", {}) + {
      [name]: chosen[name]
      for name in std.objectFields(chosen)
      if (name != "compile_objectives" || $.contrastive(condition))
         && !(eager && std.member(["compile_encoder", "compile_objectives"], name))
    },

  // PrOnto's five tasks for one encoder (Tables 4, 7-9), cells as in evaluation_steps.
  pronto_steps(column, scale, encoder, row, seeds, pronto_data, pronto_missing_train=[], pretrained=true)::
    local s = scales[scale];
    local settings(task) = s.finetune.pronto
      + (if pretrained then s.finetune.pronto_pretrained else {})
      + (if task == "sentence_mood" then s.finetune.pronto_sentence_mood else {});
    std.foldl(function(steps, task) steps + {
      ["pronto_" + task + "_s" + seed]: {
        type: "finetune_pronto",
        encoder: encoder,
        task: task,
        [if std.member(pronto_missing_train, task) then null else "train"]: data(pronto_data + "/" + task + "_train.tsv"),
        dev: data(pronto_data + "/" + task + "_dev.tsv"),
        test: data(pronto_data + "/" + task + "_test.tsv"),
        config: settings(task) + { seed: seed },
        wandb: $.wandb_labels(column, row, scale),
      }
      for seed in seeds
    } + {
      ["pronto_" + task + "_score_s" + seed]: {
        type: "score_cell",
        finetuned: ref("pronto_" + task + "_s" + seed),
        table: pronto_tables[task],
        row: row,
        column: column,
        scale: scale,
        seed: seed,
      }
      for seed in seeds
    } + {
      ["pronto_" + task + "_cell"]: {
        type: "aggregate_cell",
        scores: [ref("pronto_" + task + "_score_s" + seed) for seed in seeds],
      },
    }, std.objectFields(pronto_tables), {}),

  // The real PrOnto sample here is Spanish, a language with no corpus in the shared data. Its
  // texts stand in for one: the train files' texts, minus every text that also occurs in a dev or
  // test file of a task with training data (PrOnto's tasks share verses across their splits),
  // deduplicated, every 20th held out as pretraining dev rows. They give the WordPiece vocabulary
  // of both encoders: `encoder` "random-init" (the control) or "M" (a µBERT pretrained with MLM
  // on those texts, `pronto_pretrain` of the scale on top of its pretraining settings).
  pronto_sample_experiment(scale, pronto_data="pronto_sample_spanish", seeds=[42], encoder="random-init")::
    assert std.member(["random-init", "M"], encoder) : "pronto_sample_experiment: encoder must be random-init or M, not " + encoder;
    local s = scales[scale];
    local pretrained = encoder == "M";
    local with_train = ["nonpronominal_mention", "proper_noun_subject", "sentence_mood"];
    local task_file(task, split) = data(pronto_data + "/" + task + "_" + split + ".tsv");
    {
      steps: {
        texts: {
          type: "pronto_texts",
          files: [task_file(task, "train") for task in with_train],
          tasks: with_train,
          exclude_files: [task_file(task, split) for task in with_train for split in ["dev", "test"]],
          exclude_tasks: [task for task in with_train for split in ["dev", "test"]],
          dedupe: true,
          dev_every: 20,
        },
        tokenizer: { type: "train_tokenizer", corpus: ref("texts") },
      } + (if !pretrained then {
        random_encoder: {
          type: "random_init_encoder",
          tokenizer: ref("tokenizer"),
          model: s.pretrain.model,
          seed: seeds[0],
        },
      } else {
        pretraining_data: {
          type: "build_mlm_pretraining_data",
          corpus: ref("texts"),
          tokenizer: ref("tokenizer"),
          max_length: s.max_length,
        },
        pretrained_model: {
          type: "pretrain_microbert",
          pretraining_data: ref("pretraining_data"),
          tokenizer: ref("tokenizer"),
          condition: "M",
          model: s.pretrain.model,
          training: s.pretrain.training + s.pronto_pretrain + { seed: seeds[0] },
          wandb: $.wandb_labels("spanish", "M", scale),
        } + $.pretrain_arguments(scale, "M"),
      }) + $.pronto_steps("spanish", scale, ref(if pretrained then "pretrained_model" else "random_encoder"),
                          encoder, seeds, pronto_data,  // the row is the encoder's name: "M" or "random-init"
                          pronto_missing_train=["same_sense", "same_arg_count"], pretrained=pretrained),
    },

  // A table column: the language, or "<language>_<variant>" for a corpus variant's cells.
  column(language, corpus=null):: if corpus == null then language else language + "_" + corpus,

  // The paper's Table 2 conditions (Gessler & Schneider, §4.2) and, per condition, its objectives and attention
  // variant: configs/conditions.libsonnet.
  conditions: (import "conditions.libsonnet").names,

  // Syntax-guided attention added at fine-tuning (Ahmad et al.'s own setting, their Appendix B, Table 4): one
  // syntax head (gat_syntax_heads default), δ = 1 and α = 0.5 as the seed's WikiAnn/NER runs; UD
  // parsing is structured prediction like NER and semantic parsing, which the seed also runs at δ = 1.
  gat_finetune: {
    ud: { gat_max_distance: 1, gat_probe_weight: 0.5 },
    ner: { gat_max_distance: 1, gat_probe_weight: 0.5 },
  },

  // The data pipeline alone, shared by every condition (experiments/*_data.jsonnet).
  // Transformer Grammars (Sartran et al., 2022): TG, TXL(trees) and TXL(terminals) on one language's trees,
  // `seeds` each, with held-out per-word perplexity. Languages with a corpus use the corpus parse
  // (train/dev, scored on the corpus dev split) and the shared vocabulary; "english" uses the EWT
  // gold trees (train, scored on test) and a WordPiece vocabulary of their train split.
  // `training` overrides the scale's LM budget (e.g. { max_steps: 2000 }); `table` names the cells' table.
  // Where the scale (or `budget`) gives a stop rule (train_tg_lm's stop_at_perplexity, plateau_validations),
  // TXL (terminals) trains under it and TG and TXL (trees) of the same seed train the steps it took.
  // The three LMs as the TG paper defines them (§2-3), where the defaults are the forms every
  // committed `tg` figure was trained with (docs/decisions.md, "Transformer Grammars"): Algorithm 1's
  // CNT2 (the stack alone), TXL (trees) on the plain linearised tree, the TXLs' i − j unclipped.
  tg_paper_form:: {
    tg: { cnt2_attends_self: false },
    txl_trees: { closing_nonterminals: "single", clip_relative_positions: false },
    txl_terminals: { clip_relative_positions: false },
  },

  // kind_settings: train_tg_lm arguments per kind (e.g. $.tg_paper_form), on top of the scale's.
  tg_experiment(language, scale, seeds=[42, 43, 44], training={}, table="tg", budget={}, kind_settings={})::
    local s = scales[scale];
    local rule = std.get(s.tg, "budget", {}) + budget;
    local budgeted(kind, seed) =
      if rule == {} then {}
      else if kind == "txl_terminals" then rule
      else { budget_from: ref("lm_txl_terminals_s" + seed) };
    local gold = language == "english";
    local trees = if gold then {
      treebank_trees: { type: "load_treebank_trees", train: ud(language, "train"), dev: ud(language, "dev"), test: ud(language, "test") },
    } else {
      [name]: $.data_steps(language, scale)[name]
      for name in std.objectFields($.data_steps(language, scale)) if name != "pretraining_data"
    };
    local kinds = ["tg", "txl_trees", "txl_terminals"];
    {
      steps: trees + {
        tg_actions: {
          type: "build_tg_actions",
          trees: ref(if gold then "treebank_trees" else "parsed_corpus"),
          [if !gold then "tokenizer"]: ref("tokenizer"),
          max_length: s.tg.max_length,
        },
      } + {
        ["lm_" + kind + "_s" + seed]: { type: "train_tg_lm", actions: ref("tg_actions"), kind: kind, seed: seed } + s.tg.training + training
                                      + std.get(kind_settings, kind, {}) + budgeted(kind, seed)
        for kind in kinds for seed in seeds
      } + {
        ["ppl_" + kind + "_s" + seed]: {
          type: "evaluate_tg_lm", model: ref("lm_" + kind + "_s" + seed), actions: ref("tg_actions"),
          table: table, row: kind, column: language, scale: scale, split: if gold then "test" else "dev",
        } + s.tg.evaluation
        for kind in kinds for seed in seeds
      } + {
        // The TG table's cells (python -m reporting.tables): mean ± sd of the seeds' perplexities.
        ["tg_" + kind + "_cell"]: { type: "aggregate_cell", scores: [ref("ppl_" + kind + "_s" + seed) for seed in seeds] }
        for kind in kinds
      } + (if gold then $.tg_agreement_steps(language, scale, seeds, kinds, table + "_agreement") else {}),
    },

  // The subject–verb agreement probe (steps/tg/agreement.py) on the EWT test split, beside the TG
  // table: pairs made once, each LM's accuracy (grammatical scored higher), mean ± sd over seeds.
  // Only new steps: the perplexity steps above keep their IDs.
  tg_agreement_steps(language, scale, seeds, kinds, table="tg_agreement"):: {
    agreement_pairs: { type: "build_agreement_pairs", treebank: ud(language, "test") },
  } + {
    ["agreement_" + kind + "_s" + seed]: {
      type: "evaluate_tg_agreement", model: ref("lm_" + kind + "_s" + seed), actions: ref("tg_actions"),
      pairs: ref("agreement_pairs"), table: table, row: kind, column: language, scale: scale,
      max_length: scales[scale].tg.max_length,
    } + scales[scale].tg.agreement
    for kind in kinds for seed in seeds
  } + {
    ["tg_agreement_" + kind + "_cell"]: { type: "aggregate_cell", scores: [ref("agreement_" + kind + "_s" + seed) for seed in seeds] }
    for kind in kinds
  },

  data_experiment(language, scale, parser_backend="stanza"):: {
    steps: $.data_steps(language, scale, parser_backend),
  },

  // One table cell: the shared data steps plus a µBERT pretrained under `condition`. Only the
  // `pretrained_model` step depends on condition and seed, so all conditions of a language at a
  // scale reuse one cached parse and vocabulary.
  //
  // `seed` seeds pretraining; `seeds` are the fine-tuning seeds of each cell (mean ± sd over them).
  //
  // `corpus`, `reference_reader`: as in data_steps; a corpus variant's cells are column
  // "<language>_<variant>", beside the language's own.
  // `regime` (paper scale): one fine-tuning regime for both tasks; `levers`: in place of the scale's
  // pretraining levers (pretrain_arguments).
  experiment(language, condition, scale, seed=42, parser_backend="stanza", seeds=[seed], pronto_data=null, pronto_missing_train=[], corpus=null, reference_reader=false,
             regime=null, levers=null)::
    local known = $.conditions + $.related_conditions;
    assert std.member(known, condition) : "unknown condition " + condition + "; known: " + std.join(", ", known);
    local s = scales[scale];
    local embeds_upos = (import "conditions.libsonnet").by_name[condition].attention == "syntax_gat";
    {
      // Syntax-guided attention embeds UPOS tags, so its inputs keep them (a step of its own).
      steps: $.data_steps(language, scale, parser_backend, corpus, reference_reader) + (if embeds_upos then { pretraining_data+: { keep_upos: true } } else {}) + {
        pretrained_model: {
          type: "pretrain_microbert",
          pretraining_data: ref("pretraining_data"),
          tokenizer: ref("tokenizer"),
          condition: condition,
          model: s.pretrain.model,
          training: s.pretrain.training + { seed: seed },
          wandb: $.wandb_labels(language, condition, scale),
        } + $.pretrain_arguments(scale, condition, levers) + (if $.soft_labelled(condition) then { soft_label_table: ref("soft_label_table") } else {}),
      } + (if $.soft_labelled(condition) then $.soft_label_steps() else {})
      + $.evaluation_steps(language, scale, ref("pretrained_model"), condition, seeds,
                             encoder_needs_parse=(import "conditions.libsonnet").by_name[condition].encoder_needs_parse, pronto_data=pronto_data,
                             pronto_missing_train=pronto_missing_train, column=$.column(language, corpus), regime=regime,
                             structural_probe=embeds_upos)
      // A paper-scale encoder's MLM accuracy beside its cells (the MLM-accuracy table; not for G, see related_experiment).
      + (if scale == "paper" && regime == null && corpus == null && (import "conditions.libsonnet").by_name[condition].attention != "syntax_gat" then
           $.mlm_steps(language, condition, scale, seed, parse=(import "conditions.libsonnet").by_name[condition].encoder_needs_parse) else {}),
    },

  // "µB-<condition>+G": the encoder pretrained under `condition` (the same cached step as its own
  // experiment's), fine-tuned with syntax-guided attention added (`gat_finetune`).
  finetune_gat_experiment(language, condition, scale, seed=42, seeds=[seed])::
    local base = $.experiment(language, condition, scale, seed, seeds=seeds);
    assert !(import "conditions.libsonnet").by_name[condition].encoder_needs_parse : "+G is added to plain-attention encoders only";
    {
      steps: $.data_steps(language, scale) + { pretrained_model: base.steps.pretrained_model }
        + $.evaluation_steps(language, scale, ref("pretrained_model"), condition + "+G", seeds, syntax_gat=$.gat_finetune),
    },

  // Condition H (Edman et al. NLM-H) trains on the soft labels of a trigram LM of the pretraining
  // rows; that model is one cached step per language and scale, shared with the trigram-LM row.
  soft_labelled(condition):: std.length(std.findSubstr("H", (import "conditions.libsonnet").by_name[condition].objectives)) > 0,
  // A condition with a SynCLM loss (P or T), e.g. for levers that only those losses take.
  contrastive(condition)::
    local objectives = (import "conditions.libsonnet").by_name[condition].objectives;
    std.length(std.findSubstr("P", objectives) + std.findSubstr("T", objectives)) > 0,
  trigram_steps():: {
    trigram_model: { type: "build_trigram_model", pretraining_data: ref("pretraining_data"), tokenizer: ref("tokenizer") },
  },
  // H's labels at every position, scored once so a pretraining step only gathers them.
  soft_label_steps():: $.trigram_steps() + {
    soft_label_table: { type: "precompute_soft_labels", trigram_model: ref("trigram_model"),
                        pretraining_data: ref("pretraining_data"), tokenizer: ref("tokenizer") },
  },

  // The control: a randomly initialised µBERT with the same vocabulary (and architecture as
  // `condition`, default plain M), fine-tuned exactly like the pretrained ones. Only the corpus
  // and tokenizer steps are needed, and they are shared with the pretrained experiments.
  random_init_experiment(language, scale, seed=42, seeds=[seed], condition="M", pronto_data=null, pronto_missing_train=[], corpus=null, reference_reader=false,
                         regime=null)::
    local data = $.data_steps(language, scale, corpus=corpus, reference_reader=reference_reader);
    {
      steps: { corpus: data.corpus, tokenizer: data.tokenizer } + {
        random_encoder: {
          type: "random_init_encoder",
          tokenizer: ref("tokenizer"),
          condition: condition,
          model: scales[scale].pretrain.model,
          seed: seed,
        },
      } + $.evaluation_steps(language, scale, ref("random_encoder"), "random-init" + (if condition == "M" then "" else " " + condition),
                             seeds, pronto_data=pronto_data, pronto_missing_train=pronto_missing_train, pretrained=false,
                             column=$.column(language, corpus), regime=regime),
    },

  // The related-biases table: `condition` (a `related` condition of conditions.libsonnet,
  // or "M", or "random-init") with 3 fine-tuning seeds, its UD LAS and NER F1 filed under tables
  // related:ud / related:ner, and, for pretrained encoders, the MLM accuracy of Edman et al. (one
  // token masked at a time on the first 100 UD dev sentences; overall, 5 frequency bins, word
  // completion) under mlm:<metric>. The pretraining and the seed-42 fine-tuning steps are those of
  // the Table 2/3 cell of the same condition, so they are shared through the cache.
  related_conditions: (import "conditions.libsonnet").related,
  related_experiment(language, condition, scale, seeds=[42, 43, 44])::
    local extra = ["M", "random-init", "trigram-LM", "M+G"];
    assert std.member(extra + $.related_conditions, condition) :
      "unknown related condition " + condition + "; known: " + std.join(", ", extra + $.related_conditions);
    // trigram-LM: the n-gram model alone, only in the MLM-accuracy table (argmax over the vocabulary).
    local base = if condition == "random-init" then $.random_init_experiment(language, scale, seeds=seeds)
                 else if condition == "trigram-LM" then { steps: $.data_steps(language, scale) + $.trigram_steps() }
                 else if condition == "M+G" then $.finetune_gat_experiment(language, "M", scale, seeds=seeds)
                 else $.experiment(language, condition, scale, seeds=seeds);
    local retitle(steps) = {
      [name]: steps[name] + (if steps[name].type == "score_cell" then
        { table: std.get({ table2: "related:ud", table3: "related:ner" }, steps[name].table, "related:" + steps[name].table) } else {})
      for name in std.objectFields(steps)
    };
    local by_name = std.get((import "conditions.libsonnet").by_name, condition, {});
    {
      // No MLM accuracy for syntax-guided attention (G), whose inputs also carry UPOS tags; M+G's
      // encoder is µB-M's.
      steps: retitle(base.steps) + (if condition == "random-init" || condition == "M+G" || std.get(by_name, "attention", null) == "syntax_gat" then {}
                                    else $.mlm_steps(language, condition, scale, seeds[0], trigram=condition == "trigram-LM",
                                                     parse=std.get(by_name, "encoder_needs_parse", false))),
    },

  // Edman et al.'s MLM accuracy of one pretrained encoder (or, `trigram`, of the trigram LM alone):
  // one token masked at a time on the first 100 UD dev sentences; overall, 5 frequency bins and word
  // completion, filed under mlm:<metric>. `parse`: the encoder's attention reads a parse (SLA), given
  // from the corpus parser as in fine-tuning.
  mlm_metrics:: ["accuracy", "bin1", "bin2", "bin3", "bin4", "bin5", "word_completion"],
  mlm_steps(language, condition, scale, seed, trigram=false, parse=false):: {
    mlm_accuracy: {
      type: "mlm_accuracy",
      pretrained: if trigram then null else ref("pretrained_model"),
    } + (if trigram then { trigram_model: ref("trigram_model"), tokenizer: ref("tokenizer") } else {}) + {
      pretraining_data: ref("pretraining_data"),
      condition: condition,
      sentences: ud(language, "dev"),
      max_sentences: 100,
    } + (if parse then { corpus_parser: ref("corpus_parser") } else {}),
  } + {
    ["mlm_" + metric + "_score"]: {
      type: "score_cell",
      finetuned: ref("mlm_accuracy"),
      table: "mlm:" + metric,
      row: condition,
      column: language,
      scale: scale,
      seed: seed,
      metric: metric,
    }
    for metric in $.mlm_metrics
  } + {
    ["mlm_" + metric + "_cell"]: { type: "aggregate_cell", scores: [ref("mlm_" + metric + "_score")] }
    for metric in $.mlm_metrics
  },

  // A cached (or any local) encoder folder, e.g. one `python -m reporting.cache ls` lists, fine-tuned
  // and scored as row `row` instead of pretraining one. `encoder_needs_parse`: true for an encoder
  // whose attention reads a parse (-SLA); the corpus parser's steps are then built to give it one.
  encoder_experiment(language, encoder, row, scale, seeds=[42], encoder_needs_parse=false, pronto_data=null, pronto_missing_train=[])::
    local data = $.data_steps(language, scale);
    {
      steps: (if encoder_needs_parse then {
        [name]: data[name] for name in std.objectFields(data) if std.member(["corpus", "vectors_corpus", "word_vectors", "corpus_parser"], name)
      } else {}) + $.evaluation_steps(language, scale, encoder, row, seeds, encoder_needs_parse=encoder_needs_parse,
                                      pronto_data=pronto_data, pronto_missing_train=pronto_missing_train),
    },

  // Any HF model (name or local path) as the encoder, e.g. the mBERT rows where its weights exist
  // locally. No corpus steps: nothing here is trained on the unlabeled corpus.
  hf_experiment(language, model, row, scale, seeds=[42], pronto_data=null, pronto_missing_train=[]):: {
    steps: $.evaluation_steps(language, scale, model, row, seeds, pronto_data=pronto_data, pronto_missing_train=pronto_missing_train),
  },
}
