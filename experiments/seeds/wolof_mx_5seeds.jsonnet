// Seed noise of the Wolof cpu cells: µB-MX fine-tuned with five seeds, like Wolof's other three
// cells, so its difference from µB-M pairs all five (see wolof_m_5seeds.jsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/seeds/wolof_mx_5seeds.jsonnet
(import "../../configs/lib.libsonnet").experiment("wolof", "MX", "cpu", seeds=[42, 43, 44, 45, 46])
