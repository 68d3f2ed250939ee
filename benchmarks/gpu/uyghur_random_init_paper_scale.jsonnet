// Uyghur random-init at the paper's scale, 5 seeds (paper_scale.libsonnet). On a GPU machine:
//   python benchmarks/gpu/campaign.py --language uyghur --help
(import "paper_scale.libsonnet").cell("uyghur", "random-init")
