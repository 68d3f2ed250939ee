// Wolof gap decomposition: encoder random-init, fine-tuning regime cpu, 5 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_random_init_cpu.jsonnet
(import "decomposition.libsonnet")("random-init", "cpu")
