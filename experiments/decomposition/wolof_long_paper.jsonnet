// Wolof gap decomposition: encoder long, fine-tuning regime paper, 5 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_long_paper.jsonnet
(import "decomposition.libsonnet")("long", "paper")
