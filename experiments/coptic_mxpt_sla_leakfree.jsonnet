// Coptic, condition MXPT-SLA, cpu scale, on the leak-free corpus (coptic/corpus_no_ud_devtest: the
// reference corpus less the 41 documents holding the UD dev/test text); its cells are column
// "coptic_leakfree", beside experiments/coptic_mxpt_sla.jsonnet's on the reference corpus.
(import "../configs/lib.libsonnet").experiment("coptic", "MXPT-SLA", "cpu", corpus="leakfree")
