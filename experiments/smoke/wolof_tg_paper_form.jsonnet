// The Wolof TG comparison with the three LMs as the TG paper defines them (lib.tg_paper_form), smoke scale.
local lib = import "../../configs/lib.libsonnet";
lib.tg_experiment("wolof", "smoke", table="tg_paper_form", kind_settings=lib.tg_paper_form)
