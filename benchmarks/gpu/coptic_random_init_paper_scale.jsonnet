// Coptic random-init at the paper's scale, 5 seeds (paper_scale.libsonnet). On a GPU machine:
//   python benchmarks/gpu/campaign.py --language coptic --help
(import "paper_scale.libsonnet").cell("coptic", "random-init")
