// PrOnto on the real Spanish sample (shared data), smoke scale: µB-M pretrained with MLM on the sample's texts
// that occur in no dev or test file, over the same vocabulary as the random-init row.
(import "../../configs/lib.libsonnet").pronto_sample_experiment("smoke", encoder="M")
