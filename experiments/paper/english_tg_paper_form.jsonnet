// experiments/paper/english_tg.jsonnet with the three LMs as the TG paper defines them (lib.tg_paper_form).
local lib = import "../../configs/lib.libsonnet";
lib.tg_experiment("english", "paper", table="tg_paper_form", kind_settings=lib.tg_paper_form)
