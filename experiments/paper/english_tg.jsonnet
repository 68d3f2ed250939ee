// Transformer Grammars on English EWT gold trees: TG, TXL(trees), TXL(terminals), 3 seeds, with the
// subject-verb agreement probe; trained until TXL(terminals)'s dev curve flattens.
(import "../../configs/lib.libsonnet").tg_experiment("english", "paper")
