// The data pipeline alone (parse corpus → vocab → model inputs) for Wolof at smoke scale.
(import "../../configs/lib.libsonnet").data_experiment("wolof", "smoke")
