// The one table of per-language facts: adding a language is one entry here plus its data. The
// builder (lib.libsonnet) reads `treebank`, `wikiann`, the corpus settings and `ud_finetune`;
// Python reads the whole table through steps/data/languages.py (the steps: treebank, WikiAnn,
// Stanza and corpus facts) and reporting/languages.py (report and table titles, notes, Table 1
// token counts, tools/make_experiments.py), restating none of it.
//   ud_name, ud_license the treebank as Universal Dependencies names it, and its licence (SPDX id;
//                       release model cards cite both)
//   treebank            UD file prefix under <language>/ud/
//   wikiann             WikiAnn file code, where the language has NER data (paper Table 3)
//   stanza_code         Stanza's language code
//   corpus_format       how load_corpus reads <language>/corpus
//   title, short_title  names in prose and in table headers
//   paper_train_tokens  paper Table 1, unlabeled train tokens; only the paper's five languages have
//                       it, and tools/make_experiments.py writes experiment files for exactly those
//   data_notes          what the shared data copy lacks, copied into each generated experiment file
//   table_note          one line printed beside the language's cells in every table (reporting/tables.py)
//   table1_note         Table 1 (reporting/tables.py --table1): why our token count differs from the paper's
//   corpus_variants     other corpus folders under <language>/ an experiment may choose (lib.libsonnet
//                       experiment(..., corpus=...)); the default is always <language>/corpus
//   corpus_split_punctuation  false: load_corpus keeps whitespace tokens as they are (as the reference: no Stanza
//                       retokenization for Coptic, whose corpus is already segmented into UD words)
{
  wolof: {
    ud_name: "UD_Wolof-WTB", ud_license: "cc-by-sa-4.0",
    treebank: "wo_wtb", wikiann: "wo", stanza_code: "wo", corpus_format: "wikipedia_html",
    title: "Wolof", short_title: "Wolof", paper_train_tokens: 517237,
    table1_note: "the reference's 90/10 document split of the same 2,240 articles; our sentence splitter approximates the reference pipeline",
  },
  coptic: {
    ud_name: "UD_Coptic-Scriptorium", ud_license: "cc-by-4.0",
    treebank: "cop_scriptorium", stanza_code: "cop", corpus_format: "plain_text",
    title: "Coptic", short_title: "Coptic", paper_train_tokens: 970642,
    corpus_split_punctuation: false,
    corpus_variants: {
      // The reference corpus less the 41 documents that hold the text of the UD dev/test documents.
      leakfree: "corpus_no_ud_devtest",
    },
    // A variant's table column ("coptic_leakfree"): its header and its note.
    variant_titles: { leakfree: "Coptic leak-free" },
    variant_notes: {
      leakfree: "UD Coptic-Scriptorium r2.11, not the paper's r2.8; pretrained on the reference corpus less the 41 documents that hold the UD dev/test text",
    },
    data_notes: [
      "DATA: the reference corpus (train.txt/dev.txt, pre-split; no retokenization, as in the reference). It holds",
      "the raw text of all UD dev/test documents, as the paper's did; coptic_m_leakfree.jsonnet uses the",
      "variant without them. The UD treebank is r2.11 (55,858 words), not the paper's r2.8 (48,632).",
    ],
    table_note: "UD Coptic-Scriptorium r2.11 (55,858 words), not the paper's r2.8 (48,632); the corpus holds the raw text of the UD dev/test documents, as the paper's did",
    table1_note: "the reference train.txt itself (983,264 whitespace tokens), read as the reference reader did: the 7 lacunae \"[ ]\" one word each, as in the CoNLL-U it was joined from, and only the first 200 tokens of the 32 longer sentences",
  },
  maltese: {
    ud_name: "UD_Maltese-MUDT", ud_license: "cc-by-sa-4.0",
    treebank: "mt_mudt", wikiann: "mt", stanza_code: "mt", corpus_format: "wikipedia_html",
    title: "Maltese", short_title: "Maltese", paper_train_tokens: 2113223,
    table1_note: "the reference's 90/10 document split of the same 6,464 articles; our sentence splitter approximates the reference pipeline",
  },
  uyghur: {
    ud_name: "UD_Uyghur-UDT", ud_license: "cc-by-sa-4.0",
    treebank: "ug_udt", wikiann: "ug", stanza_code: "ug", corpus_format: "wikipedia_html",
    title: "Uyghur", short_title: "Uyghur", paper_train_tokens: 2401445,
    table1_note: "the reference's 90/10 document split of the same 10,508 articles; our sentence splitter approximates the reference pipeline",
  },
  ancient_greek: {
    ud_name: "UD_Ancient_Greek-PROIEL", ud_license: "cc-by-nc-sa-3.0",
    treebank: "grc_proiel", stanza_code: "grc", corpus_format: "plain_text_gz",
    title: "Ancient Greek", short_title: "An. Gk.", paper_train_tokens: 9058227,
    data_notes: [
      "DATA: the UD train split is a verified reconstruction of r2.11 (annotation identical, MISC and",
      "sent_id lost). The corpus holds 714 of the 820 Diorisis works (3.1M of the paper's 9.06M tokens).",
    ],
    table_note: "the corpus lacks 106 of the 820 Diorisis works (the largest): 3.1M of the paper's 9.06M train tokens",
    table1_note: "106 of the 820 Diorisis works (all files over 4 MiB: Homer, Herodotus, Thucydides, most of the Septuagint, …) are absent from the data snapshot",

    // cpu: Wolof's 75 UD batches per epoch (1,188 sentences / 16), so a Greek cell costs a Wolof cell's time.
    ud_finetune: { cpu: { batches_per_epoch: 75 } },
  },
  english: {
    ud_name: "UD_English-EWT", ud_license: "cc-by-sa-4.0",
    treebank: "en_ewt", stanza_code: "en", corpus_format: "plain_text",
    title: "English", short_title: "English",
  },
}
