// Transformer Grammars on English EWT gold trees: TG, TXL(trees), TXL(terminals), 3 seeds, cpu scale.
(import "../configs/lib.libsonnet").tg_experiment("english", "cpu")
