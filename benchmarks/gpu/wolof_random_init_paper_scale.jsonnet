// Wolof random-init at the paper's scale, 5 seeds, UD + NER (paper_scale.libsonnet). On a GPU machine:
//   python benchmarks/gpu/campaign.py --help
(import "paper_scale.libsonnet").wolof("random-init")
