// The one table of per-language facts. The builder (lib.libsonnet) reads `treebank` and
// `wikiann`; Python reads the whole table through reporting/languages.py (report and table
// titles, Table 1 token counts, tools/make_experiments.py), and tests/test_languages.py holds
// steps/data/languages.py (which steps import) to the same treebank, WikiAnn, Stanza and corpus facts.
//   treebank            UD file prefix under <language>/ud/
//   wikiann             WikiAnn file code, where the language has NER data (paper Table 3)
//   stanza_code         Stanza's language code
//   corpus_format       how load_corpus reads <language>/corpus
//   title, short_title  names in prose and in table headers
//   paper_train_tokens  paper Table 1, unlabeled train tokens; only the paper's five languages have
//                       it, and tools/make_experiments.py writes experiment files for exactly those
//   data_notes          what the shared data copy lacks, copied into each generated experiment file
{
  wolof: {
    treebank: "wo_wtb", wikiann: "wo", stanza_code: "wo", corpus_format: "wikipedia_html",
    title: "Wolof", short_title: "Wolof", paper_train_tokens: 517237,
  },
  coptic: {
    treebank: "cop_scriptorium", stanza_code: "cop", corpus_format: "plain_text",
    title: "Coptic", short_title: "Coptic", paper_train_tokens: 970642,
    data_notes: [
      "DATA: the unlabeled Coptic corpus here is microbert2's dev.txt only (21,389 tokens); the",
      "paper's train.txt (~970k tokens) is unavailable, so the corpus split is of that file alone.",
    ],
  },
  maltese: {
    treebank: "mt_mudt", wikiann: "mt", stanza_code: "mt", corpus_format: "wikipedia_html",
    title: "Maltese", short_title: "Maltese", paper_train_tokens: 2113223,
  },
  uyghur: {
    treebank: "ug_udt", wikiann: "ug", stanza_code: "ug", corpus_format: "wikipedia_html",
    title: "Uyghur", short_title: "Uyghur", paper_train_tokens: 2401445,
  },
  ancient_greek: {
    treebank: "grc_proiel", stanza_code: "grc", corpus_format: "plain_text_gz",
    title: "Ancient Greek", short_title: "An. Gk.", paper_train_tokens: 9058227,
    data_notes: [
      "DATA: UD_Ancient_Greek-PROIEL train is missing (dev and test only), so train_corpus_parser",
      "and build_pretraining_data stop with a DataError on grc_proiel-ud-train.conllu until it is",
      "added under ancient_greek/ud/. The corpus holds 714 of the 820 Diorisis works.",
    ],
  },
  english: {
    treebank: "en_ewt", stanza_code: "en", corpus_format: "plain_text",
    title: "English", short_title: "English",
  },
}
