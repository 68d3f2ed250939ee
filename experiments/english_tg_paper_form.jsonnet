// The English EWT TG comparison with the three LMs as the TG paper defines them (lib.tg_paper_form), cpu scale.
local lib = import "../configs/lib.libsonnet";
lib.tg_experiment("english", "cpu", table="tg_paper_form", kind_settings=lib.tg_paper_form)
