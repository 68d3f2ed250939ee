// Wolof gap decomposition: encoder random-init, fine-tuning regime cpu_x2, 3 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_random_init_cpu_x2.jsonnet
(import "decomposition.libsonnet")("random-init", "cpu_x2", seeds=[42, 43, 44])
