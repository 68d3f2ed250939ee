// The Wolof TG comparison with 5x the cpu LM training steps, one seed: does the ranking hold as the LMs train?
(import "../configs/lib.libsonnet").tg_experiment("wolof", "cpu", seeds=[42], training={ max_steps: 2000 }, table="tg_long")
