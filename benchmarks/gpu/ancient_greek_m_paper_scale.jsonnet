// Ancient Greek µB-M at the paper's scale, 5 seeds (paper_scale.libsonnet). On a GPU machine:
//   python benchmarks/gpu/campaign.py --language ancient_greek --help
(import "paper_scale.libsonnet").cell("ancient_greek", "M")
