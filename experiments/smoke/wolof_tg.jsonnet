// Transformer Grammars on the Wolof corpus parse: TG, TXL(trees), TXL(terminals), 3 seeds, smoke scale.
(import "../../configs/lib.libsonnet").tg_experiment("wolof", "smoke")
