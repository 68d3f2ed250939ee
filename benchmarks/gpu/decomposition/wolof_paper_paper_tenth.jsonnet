// Wolof gap decomposition: encoder paper, fine-tuning regime paper_tenth, 5 seeds (../decomposition.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run benchmarks/gpu/decomposition/wolof_paper_paper_tenth.jsonnet
(import "../decomposition.libsonnet")("paper", "paper_tenth")
