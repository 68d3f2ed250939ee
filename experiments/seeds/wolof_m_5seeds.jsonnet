// Seed noise of the Wolof cpu cells (docs/RESULTS.md "Seed noise"): µB-M fine-tuned with five
// seeds; the paper tables show this cell's result with the most seeds. Seed 42's steps are the
// same cache entries as experiments/wolof_m.jsonnet's.
//   SIB_DATA_ROOT=../shared/data tango run experiments/seeds/wolof_m_5seeds.jsonnet
(import "../../configs/lib.libsonnet").experiment("wolof", "M", "cpu", seeds=[42, 43, 44, 45, 46])
