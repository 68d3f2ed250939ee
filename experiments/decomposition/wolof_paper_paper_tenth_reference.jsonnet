// Wolof gap decomposition: encoder paper, fine-tuning regime paper_tenth_reference, 3 seeds (a 2-core cell) (decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/decomposition/wolof_paper_paper_tenth_reference.jsonnet -j 2
(import "decomposition.libsonnet")("paper", "paper_tenth_reference", seeds=[42, 43, 44])
