// The data pipeline alone (parse corpus → vocab → model inputs) for Wolof at cpu scale.
(import "../configs/lib.libsonnet").data_experiment("wolof", "cpu")
