// Seed noise of the Wolof cpu cells: µB-MXPT-SLA (the README main command's cell) fine-tuned with
// three seeds (see wolof_m_3seeds.jsonnet).
//   SIB_DATA_ROOT=../shared/data tango run benchmarks/seeds/wolof_mxpt_sla_3seeds.jsonnet
(import "../../configs/lib.libsonnet").experiment("wolof", "MXPT-SLA", "cpu", seeds=[42, 43, 44])
