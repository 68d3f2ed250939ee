// The one builder every experiment file calls:  (import "../configs/lib.libsonnet").experiment(...)
//
// It returns a Tango config whose steps form one table cell's DAG. Step configs depend only on
// what matters for them (language, scale, parser backend), so every condition of a language at a
// scale shares the same cached corpus, parser, parse and vocabulary.
local scales = import "scales.libsonnet";

local languages = {
  wolof: { treebank: "wo_wtb" },
  coptic: { treebank: "cop_scriptorium" },
  maltese: { treebank: "mt_mudt" },
  uyghur: { treebank: "ug_udt" },
  ancient_greek: { treebank: "grc_proiel" },
  english: { treebank: "en_ewt" },
};

// A file under the data root ($SIB_DATA_ROOT, default ./data); absolute paths and URLs work too.
local data(path) = { path: path };

local ud(language, split) =
  data(language + "/ud/" + languages[language].treebank + "-ud-" + split + ".conllu");

local ref(name) = { type: "ref", ref: name };

{
  scales: scales,
  data: data,
  ud: ud,

  // Steps shared by all conditions of (language, scale): parse corpus → build vocab → inputs.
  data_steps(language, scale, parser_backend="stanza")::
    assert std.objectHas(languages, language) : "unknown language " + language;
    assert std.objectHas(scales, scale) : "unknown scale " + scale;
    local s = scales[scale];
    {
      corpus: {
        type: "load_corpus",
        language: language,
        corpus: data(language + "/corpus"),
      } + s.corpus,
      corpus_parser: {
        type: "train_corpus_parser",
        language: language,
        train: ud(language, "train"),
        dev: ud(language, "dev"),
        test: ud(language, "test"),
        backend: parser_backend,
        budget: s.parser_budget,
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

  // The paper's Table 2 conditions (SPEC §C): M = MLM, X = XPOS tagging, P/T = SynCLM phrase/tree
  // losses, -SLA = syntax-aware local attention.
  conditions: ["M", "MP", "MT", "MPT", "MPT-SLA", "MX", "MXP", "MXT", "MXPT", "MXPT-SLA"],

  // The data pipeline alone, shared by every condition (experiments/*_data.jsonnet).
  data_experiment(language, scale, parser_backend="stanza"):: {
    steps: $.data_steps(language, scale, parser_backend),
  },

  // One table cell: the shared data steps plus a µBERT pretrained under `condition`. Only the
  // `pretrained_model` step depends on condition and seed, so all conditions of a language at a
  // scale reuse one cached parse and vocabulary.
  experiment(language, condition, scale, seed=42, parser_backend="stanza")::
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
        },
      },
    },
}
