// Wolof gap decomposition: encoder cpu, fine-tuning regime paper, 5 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_cpu_paper.jsonnet
(import "decomposition.libsonnet")("cpu", "paper")
