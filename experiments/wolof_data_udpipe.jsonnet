// Wolof data pipeline at cpu scale with UDPipe 1 as the corpus parser (the classical baseline).
// Compare its `corpus_parser` scores with experiments/wolof_data.jsonnet (Stanza).
(import "../configs/lib.libsonnet").data_experiment("wolof", "cpu", "udpipe")
