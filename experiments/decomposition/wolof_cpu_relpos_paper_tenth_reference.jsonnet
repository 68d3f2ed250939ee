// Wolof gap decomposition: encoder cpu_relpos, fine-tuning regime paper_tenth_reference, 3 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_cpu_relpos_paper_tenth_reference.jsonnet
(import "decomposition.libsonnet")("cpu_relpos", "paper_tenth_reference", seeds=[42, 43, 44])
