// Wolof, condition MX, paper scale, UD fine-tuned under the `paper` regime (configs/scales.libsonnet:
// the reference parser_eval.jsonnet's, up to 300 epochs of 200 batches, patience 50) instead of the
// scale's chosen `paper_tenth`: µB-MX's UD row of the paper's question under the regime the paper
// used, beside µB-M's and µB-MXPT-SLA's in this folder. Score cells: "gpu-paper".
//   SIB_DATA_ROOT=../shared/data tango run experiments/paper/paper_regime/wolof_mx.jsonnet -s ud_parser_cell
(import "../../../configs/lib.libsonnet").experiment("wolof", "MX", "paper", seeds=[42, 43, 44, 45, 46], regime="paper")
