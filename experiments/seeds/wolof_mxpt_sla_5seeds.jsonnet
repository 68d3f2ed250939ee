// Seed noise of the Wolof cpu cells: µB-MXPT-SLA (the README main command's cell) fine-tuned with
// five seeds (see wolof_m_5seeds.jsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/seeds/wolof_mxpt_sla_5seeds.jsonnet
(import "../../configs/lib.libsonnet").experiment("wolof", "MXPT-SLA", "cpu", seeds=[42, 43, 44, 45, 46])
