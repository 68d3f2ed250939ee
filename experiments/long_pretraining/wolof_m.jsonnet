// Is the Wolof µB-M's small lead over random-init (cpu scale: +1.2 test LAS) a matter of
// pretraining compute? The cpu cell with 27x the pretraining rows (long_pretraining.libsonnet).
//   SIB_DATA_ROOT=../shared/data tango run experiments/long_pretraining/wolof_m.jsonnet -j 10
// Measured on one H100 (docs/RESULTS.md, row M-long): pretraining 4.1 min at ~450k tokens/s, dev
// MLM loss 4.83 (cpu µB-M: 5.99; lowest 4.80 at step 8000, the rest overfits the 11k rows);
// test LAS 70.75 ± 0.45 and NER F1 86.30 ± 0.89 over seeds 42-46, against random-init's
// 67.65 ± 0.89 and 84.51 ± 1.38 on the 2-core CPU (experiments/seeds). The random-init files
// fine-tuned on the same GPU gave 67.23 ± 0.71 and 83.34 ± 2.04 (not cached here: same cache keys
// as the CPU runs).
(import "long_pretraining.libsonnet")("M")
