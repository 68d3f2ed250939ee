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
  data_steps(language, scale, parser_backend="stanza")::
    assert std.objectHas(languages, language) : "unknown language " + language + "; known: " + std.join(", ", std.objectFields(languages));
    assert std.objectHas(scales, scale) : "unknown scale " + scale + "; known: " + std.join(", ", std.objectFields(scales));
    local s = scales[scale];
    local corpus(caps) = { type: "load_corpus", language: language, corpus: data(language + "/corpus") } + caps;
    local own_vectors_corpus = parser_backend == "stanza" && s.word_vectors_corpus != s.corpus;
    {
      corpus: corpus(s.corpus),
    } + (if parser_backend == "stanza" then {
      // Stanza's tagger and parser start from word vectors trained on the corpus
      // (steps/word_vectors.py). The vectors may read more of it than pretraining does (their
      // own cap, `word_vectors_corpus`): they are cheap, and every extra word form they cover is
      // one the tagger and parser need not learn from the small treebank.
      word_vectors: {
        type: "train_word_vectors",
        corpus: ref(if own_vectors_corpus then "vectors_corpus" else "corpus"),
      } + s.word_vectors,
    } else {}) + (if own_vectors_corpus then { vectors_corpus: corpus(s.word_vectors_corpus) } else {}) + {
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
  evaluation_steps(language, scale, encoder, row, seeds, encoder_needs_parse=false, pronto_data=null, pronto_missing_train=[], pretrained=true)::
    local s = scales[scale];
    local tracking = { wandb: $.wandb_labels(language, row, scale) };
    local sla = if encoder_needs_parse then { sla_parse: "parse", corpus_parser: ref("corpus_parser") } else { sla_parse: "global" };
    local cell(task, table, column, finetune) =
      {
        [task + "_s" + seed]: finetune { config+: { seed: seed } }
        for seed in seeds
      } + {
        [task + "_score_s" + seed]: {
          type: "score_cell",
          finetuned: ref(task + "_s" + seed),
          table: table,
          row: row,
          column: column,
          scale: scale,
          seed: seed,
        }
        for seed in seeds
      } + {
        [task + "_cell"]: {
          type: "aggregate_cell",
          scores: [ref(task + "_score_s" + seed) for seed in seeds],
        },
      };
    cell("ud_parser", "table2", language, {
      type: "finetune_ud_parser",
      encoder: encoder,
      train: ud(language, "train"),
      dev: ud(language, "dev"),
      test: ud(language, "test"),
      config: s.finetune.ud,
    } + sla + tracking)
    + (if std.objectHas(languages[language], "wikiann") then cell("ner", "table3", language, {
      type: "finetune_ner",
      encoder: encoder,
      train: wikiann(language, "train"),
      dev: wikiann(language, "dev"),
      test: wikiann(language, "test"),
      config: s.finetune.ner,
    } + sla + tracking) else {})
    + (if pronto_data == null then {} else $.pronto_steps(language, scale, encoder, row, seeds, pronto_data, pronto_missing_train, pretrained)),

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
        },
      }) + $.pronto_steps("spanish", scale, ref(if pretrained then "pretrained_model" else "random_encoder"),
                          encoder, seeds, pronto_data,  // the row is the encoder's name: "M" or "random-init"
                          pronto_missing_train=["same_sense", "same_arg_count"], pretrained=pretrained),
    },

  // The paper's Table 2 conditions (SPEC §C) and, per condition, its objectives and attention
  // variant: configs/conditions.libsonnet.
  conditions: (import "conditions.libsonnet").names,

  // The data pipeline alone, shared by every condition (experiments/*_data.jsonnet).
  data_experiment(language, scale, parser_backend="stanza"):: {
    steps: $.data_steps(language, scale, parser_backend),
  },

  // One table cell: the shared data steps plus a µBERT pretrained under `condition`. Only the
  // `pretrained_model` step depends on condition and seed, so all conditions of a language at a
  // scale reuse one cached parse and vocabulary.
  //
  // `seed` seeds pretraining; `seeds` are the fine-tuning seeds of each cell (mean ± sd over them).
  experiment(language, condition, scale, seed=42, parser_backend="stanza", seeds=[seed], pronto_data=null, pronto_missing_train=[])::
    assert std.member($.conditions, condition) : "unknown condition " + condition + "; known: " + std.join(", ", $.conditions);
    local s = scales[scale];
    {
      steps: $.data_steps(language, scale, parser_backend) + {
        pretrained_model: {
          type: "pretrain_microbert",
          pretraining_data: ref("pretraining_data"),
          tokenizer: ref("tokenizer"),
          condition: condition,
          model: s.pretrain.model,
          training: s.pretrain.training + { seed: seed },
          wandb: $.wandb_labels(language, condition, scale),
        },
      } + $.evaluation_steps(language, scale, ref("pretrained_model"), condition, seeds,
                             encoder_needs_parse=(import "conditions.libsonnet").by_name[condition].encoder_needs_parse, pronto_data=pronto_data,
                             pronto_missing_train=pronto_missing_train),
    },

  // The control: a randomly initialised µBERT with the same vocabulary (and architecture as
  // `condition`, default plain M), fine-tuned exactly like the pretrained ones. Only the corpus
  // and tokenizer steps are needed, and they are shared with the pretrained experiments.
  random_init_experiment(language, scale, seed=42, seeds=[seed], condition="M", pronto_data=null, pronto_missing_train=[])::
    local data = $.data_steps(language, scale);
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
                             seeds, pronto_data=pronto_data, pronto_missing_train=pronto_missing_train, pretrained=false),
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
