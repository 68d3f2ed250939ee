// Seed noise of the Wolof cpu cells: the random-init control fine-tuned with three seeds (see
// wolof_m_3seeds.jsonnet).
//   SIB_DATA_ROOT=../shared/data tango run benchmarks/seeds/wolof_random_init_3seeds.jsonnet
(import "../../configs/lib.libsonnet").random_init_experiment("wolof", "cpu", seeds=[42, 43, 44])
