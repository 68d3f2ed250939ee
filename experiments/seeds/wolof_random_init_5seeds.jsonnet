// Seed noise of the Wolof cpu cells: the random-init control fine-tuned with five seeds (see
// wolof_m_5seeds.jsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/seeds/wolof_random_init_5seeds.jsonnet
(import "../../configs/lib.libsonnet").random_init_experiment("wolof", "cpu", seeds=[42, 43, 44, 45, 46])
