// µB-MXPT-SLA beside µB-M-long: the same 27x pretraining rows (long_pretraining.libsonnet), so the
// two differ only in the syntactic objectives and attention.
//   SIB_DATA_ROOT=../shared/data tango run experiments/long_pretraining/wolof_mxpt_sla.jsonnet -j 10
// Not measured yet. On one H100 its pretraining did not reach the first validation (step 2000)
// in 9 minutes, although one step on the same 256-row batches takes 36 ms there (M: 32 ms) and
// on 2 CPU cores it runs at 0.7x M's tokens/s with or without loader workers: the stall is in
// the GPU run of the step's loop, not in the model; the log kept too little to say where.
(import "long_pretraining.libsonnet")("MXPT-SLA")
