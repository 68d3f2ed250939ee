// PrOnto on the real Spanish sample (shared data), paper scale: a random-init µBERT over a vocabulary of the sample texts.
(import "../../configs/lib.libsonnet").pronto_sample_experiment("paper")
