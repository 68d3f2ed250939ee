// Wolof gap decomposition: encoder paper, fine-tuning regime paper, 5 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_paper_paper.jsonnet
(import "decomposition.libsonnet")("paper", "paper")
