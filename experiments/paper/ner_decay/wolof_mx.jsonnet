// Wolof, condition MX, paper scale, NER alone, fine-tuned under the `paper_ner_decay` regime
// (configs/scales.libsonnet: the paper's own with AllenNLP adamw's weight decay 0.01, the reference's
// NER optimizer) instead of the `paper` regime with none: does the decay change Table 3's answer?
// Score cells: "gpu-paper_ner_decay".
//   SIB_DATA_ROOT=../shared/data tango run experiments/paper/ner_decay/wolof_mx.jsonnet -j 2
local lib = import "../../../configs/lib.libsonnet";
lib.only_tasks(lib.experiment("wolof", "MX", "paper", seeds=[42, 43, 44, 45, 46], regime="paper_ner_decay"), ["ner"])
