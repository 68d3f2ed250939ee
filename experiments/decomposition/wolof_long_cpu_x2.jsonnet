// Wolof gap decomposition: encoder long, fine-tuning regime cpu_x2, 3 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_long_cpu_x2.jsonnet
(import "decomposition.libsonnet")("long", "cpu_x2", seeds=[42, 43, 44])
