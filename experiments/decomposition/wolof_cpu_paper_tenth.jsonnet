// Wolof gap decomposition: encoder cpu, fine-tuning regime paper_tenth, 3 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_cpu_paper_tenth.jsonnet
(import "decomposition.libsonnet")("cpu", "paper_tenth", seeds=[42, 43, 44])
