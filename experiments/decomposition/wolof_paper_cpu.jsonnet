// Wolof gap decomposition: encoder paper, fine-tuning regime cpu, 5 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_paper_cpu.jsonnet
(import "decomposition.libsonnet")("paper", "cpu")
