// experiments/paper/wolof_tg.jsonnet with the three LMs as the TG paper defines them (lib.tg_paper_form):
// the same stop rule (TXL (terminals) to a dev per-word perplexity of 500, or a flat dev curve) and budget.
local lib = import "../../configs/lib.libsonnet";
lib.tg_experiment("wolof", "paper", budget={ stop_at_perplexity: 500 }, table="tg_paper_form", kind_settings=lib.tg_paper_form)
