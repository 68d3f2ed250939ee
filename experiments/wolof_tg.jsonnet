// Transformer Grammars on the Wolof corpus parse: TG, TXL(trees), TXL(terminals), 3 seeds, cpu scale.
(import "../configs/lib.libsonnet").tg_experiment("wolof", "cpu")
