// Wolof gap decomposition: encoder cpu, fine-tuning regime cpu, 5 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_cpu_cpu.jsonnet
(import "decomposition.libsonnet")("cpu", "cpu")
