// Coptic, condition M, smoke scale, on the leak-free corpus (see ../coptic_m_leakfree.jsonnet).
(import "../../configs/lib.libsonnet").experiment("coptic", "M", "smoke", corpus="leakfree")
