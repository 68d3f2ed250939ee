// Maltese µB-MXPT-SLA at the paper's scale, 5 seeds (paper_scale.libsonnet). On a GPU machine:
//   python benchmarks/gpu/campaign.py --language maltese --help
(import "paper_scale.libsonnet").cell("maltese", "MXPT-SLA")
