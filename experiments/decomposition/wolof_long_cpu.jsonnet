// Wolof gap decomposition: encoder long, fine-tuning regime cpu, 5 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_long_cpu.jsonnet
(import "decomposition.libsonnet")("long", "cpu")
