// PrOnto on the real Spanish sample (shared data), cpu scale: a random-init µBERT over a vocabulary of the sample texts.
(import "../configs/lib.libsonnet").pronto_sample_experiment("cpu")
