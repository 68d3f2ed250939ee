// Transformer Grammars on the paper-scale Wolof corpus parse: TG, TXL(trees), TXL(terminals), 3 seeds,
// trained until TXL(terminals) reaches a dev per-word perplexity of 500 or its dev curve flattens.
(import "../../configs/lib.libsonnet").tg_experiment("wolof", "paper", budget={ stop_at_perplexity: 500 })
