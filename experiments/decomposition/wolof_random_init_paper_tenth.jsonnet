// Wolof gap decomposition: encoder random-init, fine-tuning regime paper_tenth, 3 seeds (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_random_init_paper_tenth.jsonnet
(import "decomposition.libsonnet")("random-init", "paper_tenth", seeds=[42, 43, 44])
