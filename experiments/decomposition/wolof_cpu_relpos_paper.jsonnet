// Wolof gap decomposition: encoder cpu_relpos, fine-tuning regime paper, 5 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_cpu_relpos_paper.jsonnet
(import "decomposition.libsonnet")("cpu_relpos", "paper")
