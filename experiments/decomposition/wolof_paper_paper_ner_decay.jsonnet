// Wolof gap decomposition: encoder paper, fine-tuning regime paper_ner_decay (NER only), 5 seeds: the
// reference's NER weight decay against the `paper` regime's NER cell, paired by seed (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_paper_paper_ner_decay.jsonnet -j 2
(import "decomposition.libsonnet")("paper", "paper_ner_decay", tasks=["ner"])
