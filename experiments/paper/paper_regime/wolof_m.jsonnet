// Wolof, condition M, paper scale, UD fine-tuned under the `paper` regime (configs/scales.libsonnet:
// the reference parser_eval.jsonnet's, up to 300 epochs of 200 batches, patience 50) instead of the
// scale's chosen `paper_tenth`: does Table 2's 5-seed regime change the answer? Score cells: "gpu-paper".
// Seeds 44-46 here; seeds 42-43 of the same fine-tuning are experiments/decomposition/wolof_paper_paper.jsonnet's
// (from the encoder's first pretraining), which RESULTS reads beside them.
//   SIB_DATA_ROOT=../shared/data tango run experiments/paper/paper_regime/wolof_m.jsonnet -s ud_parser_cell
(import "../../../configs/lib.libsonnet").experiment("wolof", "M", "paper", seeds=[44, 45, 46], regime="paper")
