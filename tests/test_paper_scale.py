"""The paper-scale cells (experiments/paper): the whole corpus on the cpu cell's corpus parser, each task
under its chosen fine-tuning regime, the speed levers, and cache entries brought from another machine."""
import json
import sys
from pathlib import Path

import pytest

from reporting.languages import paper_languages
from tools.step_ids import REPO

LEVERS_FILE = REPO / "configs" / "levers.json"
COMPILE_LEVERS = ("compile_encoder", "compile_objectives")


def language_files(language: str):
    """A language's paper-scale µB-M, µB-MXPT-SLA and random-init files."""
    return [f"experiments/paper/{language}_{name}.jsonnet" for name in ("m", "mxpt_sla", "random_init")]


FILES = language_files("wolof")


def test_paper_scale_files_reuse_the_cpu_corpus_parser_and_take_the_whole_corpus():
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401

    recorded = json.loads((REPO / "tests" / "data" / "step_ids.json").read_text())["experiments/wolof_m.jsonnet"]
    for file in FILES:
        graph = StepGraph.from_params(Params.from_file(REPO / file).pop("steps"))
        assert graph["corpus"].unique_id == recorded["vectors_corpus"]  # uncapped: the cpu cell's vectors corpus
        if "random_init" not in file:
            assert graph["corpus_parser"].unique_id == recorded["corpus_parser"]
            assert graph["pretrained_model"].kwargs["training"].max_steps == 62500
        scores = [name for name in graph if "_score_s" in name]
        assert len(scores) == 10
        # Each task under the regime dev chose for it (the paper scale's `chosen`), one thread per fine-tune.
        assert {graph[n].kwargs["scale"] for n in scores if n.startswith("ud_")} == {"gpu-paper_tenth"}
        assert {graph[n].kwargs["scale"] for n in scores if n.startswith("ner_")} == {"gpu-paper"}
        assert all(graph[f"{task}_s{seed}"].kwargs["num_threads"] == 1 for task in ("ud_parser", "ner") for seed in range(42, 47))


def test_the_paper_scale_m_cell_is_the_decomposition_cells_dev_chose():
    """µB-M's paper-scale fine-tuning steps are the decomposition's paper-encoder cells under each
    task's chosen regime, step for step: the seeds run there are this file's, already cached."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401

    def ids(file):
        graph = StepGraph.from_params(Params.from_file(REPO / file).pop("steps"))
        return {name: step.unique_id for name, step in graph.items()}

    paper_scale = ids("experiments/paper/wolof_m.jsonnet")
    chosen = {"ud_parser": "paper_tenth", "ner": "paper"}
    for task, regime in chosen.items():
        cell = ids(f"experiments/decomposition/wolof_paper_{regime}.jsonnet")
        tuned = [name for name in cell if name.startswith(f"{task}_s") and "_score_" not in name]
        assert tuned and all(paper_scale[name] == cell[name] for name in tuned), (task, regime)


@pytest.mark.parametrize("condition", ["m", "mx", "mxpt_sla"])
def test_the_ner_decay_files_are_the_paper_scale_ner_with_the_references_weight_decay(condition):
    """experiments/paper/ner_decay: the paper-scale cell's NER under the paper regime, weight decay
    0.01 its one change, nothing of UD (lib.only_tasks), on the same encoder; µB-M's fine-tunes are the
    decomposition's paper_ner_decay cell, step for step."""
    import copy

    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401

    def written_and_graph(file):  # the steps as written, and Tango's graph of them, from one evaluation
        written = Params.from_file(REPO / file).as_dict()["steps"]
        return written, StepGraph.from_params(Params(copy.deepcopy(written)))

    paper_steps, paper = written_and_graph(f"experiments/paper/wolof_{condition}.jsonnet")
    decayed_steps, decayed = written_and_graph(f"experiments/paper/ner_decay/wolof_{condition}.jsonnet")
    assert not [name for name in decayed if name.startswith(("ud_parser", "mlm"))]
    assert decayed["pretrained_model"].unique_id == paper["pretrained_model"].unique_id
    for seed in range(42, 47):
        ours, base = decayed[f"ner_s{seed}"], paper[f"ner_s{seed}"]
        changed = {k for k, v in vars(ours.kwargs["config"]).items() if vars(base.kwargs["config"])[k] != v}
        assert changed == {"weight_decay"} and (ours.kwargs["config"].weight_decay, base.kwargs["config"].weight_decay) == (0.01, 0.0)
        assert (decayed[f"ner_score_s{seed}"].kwargs["scale"], paper[f"ner_score_s{seed}"].kwargs["scale"]) == ("gpu-paper_ner_decay", "gpu-paper")
        # Everything but the decay, step for step as written: encoder, parse, data, threads.
        written, written_base = decayed_steps[f"ner_s{seed}"], paper_steps[f"ner_s{seed}"]
        assert written["config"].pop("weight_decay") == 0.01 and written == written_base
    if condition == "m":
        _, grid = written_and_graph("experiments/decomposition/wolof_paper_paper_ner_decay.jsonnet")
        assert all(grid[f"ner_s{seed}"].unique_id == decayed[f"ner_s{seed}"].unique_id for seed in range(42, 47))


def test_every_language_has_its_paper_scale_files_on_its_own_cpu_data_steps():
    """Any of the paper's five languages has its paper-scale cells, on its own data steps, with no new code."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401
    for language in paper_languages():
        cpu = StepGraph.from_params(Params.from_file(REPO / f"experiments/{language}_m.jsonnet").pop("steps"))
        for file in language_files(language):
            assert (REPO / file).exists(), file
            graph = StepGraph.from_params(Params.from_file(REPO / file).pop("steps"))
            assert graph["corpus"].kwargs["language"] == language and graph["corpus"].kwargs["max_train_sentences"] is None
            assert graph["tokenizer"].unique_id != cpu["tokenizer"].unique_id  # the whole corpus's vocabulary
            if "random_init" not in file:
                assert graph["corpus_parser"].unique_id == cpu["corpus_parser"].unique_id
            # Each phase runs a sub-graph (`tango run -s`), which Tango builds only when no step
            # goes by two names (the uncapped corpus once did: `corpus` and `vectors_corpus`).
            assert "vectors_corpus" not in graph
            for target in ("pretraining_data", "pretrained_model", "random_encoder"):
                if target in graph:
                    assert target in graph.sub_graph(target)
            tasks = {name.split("_score_s")[0] for name in graph if "_score_s" in name}
            assert tasks == ({"ud_parser", "ner"} if language in ("wolof", "maltese", "uyghur") else {"ud_parser"})


def test_paper_scale_related_files_pair_with_the_table_2_cells_of_their_language():
    """The related biases at the paper's scale (experiments/paper/related): each condition pretrains
    its own paper-scale encoder, while the µB-M and random-init rows are the Table 2 cells' steps (the
    same pretraining and, for the three seeds they share, the same fine-tunes), so nothing runs twice."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401

    def graph(file):
        return StepGraph.from_params(Params.from_file(REPO / file).pop("steps"))

    table2 = {name: graph(f"experiments/paper/wolof_{name}.jsonnet") for name in ("m", "random_init")}
    for name, cell in table2.items():
        related = graph(f"experiments/paper/related/wolof_{name}.jsonnet")
        tuned = [step for step in related if step.startswith(("ud_parser_s", "ner_s")) and "_score_" not in step]
        assert len(tuned) == 6  # UD and NER, seeds 42-44
        assert all(related[step].unique_id == cell[step].unique_id for step in tuned), name
    pretrainings = {table2["m"]["pretrained_model"].unique_id}
    for file in sorted((REPO / "experiments/paper/related").glob("wolof_*.jsonnet")):
        related = graph(file.relative_to(REPO))
        if "pretrained_model" not in related or file.stem in ("wolof_m", "wolof_m_plus_g"):
            continue
        pretrained = related["pretrained_model"]
        assert pretrained.kwargs["training"].max_steps == 62500 and pretrained.kwargs["training"].batch_size == 256, file.name
        assert pretrained.unique_id not in pretrainings, file.name  # its own encoder, not another row's
        pretrainings.add(pretrained.unique_id)
        assert {related[n].kwargs["scale"] for n in related if n.startswith("ud_parser_score_s")} == {"gpu-paper_tenth"}
    assert len(pretrainings) == 1 + 7 + 2  # µB-M; A5, A9, A13, C5, C9, C13 and H; the two G encoders (M-G, MS-G)


def test_only_the_encoders_with_a_structural_probe_weigh_it_per_word_in_ner():
    """M+G, M-G and MS-G fine-tune a structural probe: NER sets its term against the summed CRF loss
    per word (Ahmad et al.'s α is against a per-token loss); no other fine-tuning step names a
    weighting, so their keys stay as they were."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401

    for file in sorted((REPO / "experiments/paper/related").glob("wolof_*.jsonnet")) + [REPO / "experiments/related/wolof_ms_g.jsonnet"]:
        related = StepGraph.from_params(Params.from_file(file).pop("steps"))
        probed = file.stem in ("wolof_m_plus_g", "wolof_m_g", "wolof_ms_g")
        for name, step in related.items():
            if name.startswith(("ud_parser_s", "ner_s")) and "_score_" not in name:
                expected = "per_word" if probed and name.startswith("ner_s") else None
                assert step.kwargs.get("probe_weighting") == expected, (file.name, name)


def test_paper_scale_tg_files_give_the_three_kinds_the_budget_txl_terminals_found():
    """experiments/paper/*_tg.jsonnet: each seed's TXL (terminals) trains under the stop rule (Wolof: dev
    per-word perplexity 500, or a flat curve; English: a flat curve), with a dev curve and checkpoints
    for short jobs; TG and TXL (trees) of that seed train the steps it took (budget_from), under the
    same schedule. The cpu-scale TG files keep no rule (their keys are the recorded ones)."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401

    for language, target in (("wolof", 500), ("english", None)):
        graph = StepGraph.from_params(Params.from_file(REPO / f"experiments/paper/{language}_tg.jsonnet").pop("steps"))
        for seed in (42, 43, 44):
            finder = graph[f"lm_txl_terminals_s{seed}"]
            assert finder.kwargs["stop_at_perplexity"] == target and finder.kwargs["plateau_validations"] == 3
            assert finder.kwargs["validate_every"] and finder.kwargs["checkpoint_every"]
            for kind in ("tg", "txl_trees"):
                budgeted = graph[f"lm_{kind}_s{seed}"]
                assert budgeted.kwargs["budget_from"] is finder and budgeted.kwargs["max_steps"] == finder.kwargs["max_steps"]
                assert budgeted.kwargs.get("stop_at_perplexity") is None and budgeted.kwargs.get("plateau_validations") is None
    cpu = StepGraph.from_params(Params.from_file(REPO / "experiments/wolof_tg.jsonnet").pop("steps"))
    rules = ("budget_from", "stop_at_perplexity", "plateau_validations", "validate_every")
    assert all(cpu[name].kwargs[rule] is None for name in cpu if name.startswith("lm_") for rule in rules)


def test_speed_levers_reach_only_the_paper_scale_pretraining_and_re_key_it(tmp_path):
    """The paper scale's `levers` (the one switch for bf16 / fused AdamW / torch.compile once
    the GPU benchmark has measured them) land in pretrain_microbert's arguments, change its ID and
    everything downstream, and leave the data steps alone; the committed files set levers.json's."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401

    def graph(levers):
        file = tmp_path / f"cell_{len(levers)}.jsonnet"
        file.write_text(f'(import "{REPO}/configs/lib.libsonnet").experiment("wolof", "M", "paper", seeds=[42], levers={json.dumps(levers)})\n')
        return StepGraph.from_params(Params.from_file(file).pop("steps"))

    levers = {"precision": "bf16", "fused_optimizer": True, "compile_encoder": {"mode": "reduce-overhead"}}
    plain, fast = graph({}), graph(levers)
    committed = StepGraph.from_params(Params.from_file(REPO / FILES[0]).pop("steps"))
    chosen = json.loads(LEVERS_FILE.read_text())  # what the lever benchmark chose ({}: none)
    assert graph(chosen)["pretrained_model"].unique_id == committed["pretrained_model"].unique_id
    # compile_objectives (the P and T losses) reaches only conditions that have one: M keeps its key.
    for_m = {k: v for k, v in chosen.items() if k != "compile_objectives"}
    assert {k: committed["pretrained_model"].kwargs[k] for k in for_m} == for_m
    assert committed["pretrained_model"].kwargs.get("compile_objectives") is None
    # MXPT-SLA pretrains eager (its compile outlasted a GPU job's time limit): the other levers, no compile.
    sla = StepGraph.from_params(Params.from_file(REPO / "experiments/paper/wolof_mxpt_sla.jsonnet").pop("steps"))
    eager = {k: v for k, v in chosen.items() if k not in COMPILE_LEVERS}
    assert eager and {k: sla["pretrained_model"].kwargs.get(k) for k in chosen} == {**dict.fromkeys(chosen), **eager}
    # Only it: MXPT (P and T, no SLA) keeps every chosen lever, compile_objectives included.
    mxpt_file = tmp_path / "mxpt.jsonnet"
    mxpt_file.write_text(f'(import "{REPO}/configs/lib.libsonnet").experiment("wolof", "MXPT", "paper", seeds=[42], levers={json.dumps(chosen)})\n')
    mxpt = StepGraph.from_params(Params.from_file(mxpt_file).pop("steps"))
    assert {k: mxpt["pretrained_model"].kwargs.get(k) for k in chosen} == chosen
    assert {k: fast["pretrained_model"].kwargs[k] for k in levers} == levers
    assert fast["pretrained_model"].unique_id != plain["pretrained_model"].unique_id
    assert fast["ud_parser_s42"].unique_id != plain["ud_parser_s42"].unique_id
    assert fast["pretraining_data"].unique_id == plain["pretraining_data"].unique_id


def _toy_steps():
    """Two registered toy steps for a root → middle → leaf chain."""
    from tango import Step

    if "toy_root" not in Step.list_available():
        @Step.register("toy_root")
        class Root(Step):
            DETERMINISTIC, CACHEABLE = True, True

            def run(self, value: int) -> int:  # type: ignore[override]
                return value

        @Step.register("toy_double")
        class Double(Step):
            DETERMINISTIC, CACHEABLE = True, True

            def run(self, value: int) -> int:  # type: ignore[override]
                return 2 * value


def test_a_cache_entry_copied_from_another_machine_counts_as_completed(tmp_path):
    """An entry brought back from a GPU machine has no record in this workspace's step-info
    database; under `tango run -j` the step was failed for it. The workspace adopts it instead."""
    import shutil

    from tango.step_info import StepState
    from tango.workspaces import LocalWorkspace

    _toy_steps()
    from tango import Step

    double = Step.by_name("toy_double")
    copied, absent = double(value=5), double(value=7)
    there = LocalWorkspace(tmp_path / "there")
    assert copied.result(there) == 10
    here = LocalWorkspace(tmp_path / "here")
    shutil.copytree(there.step_dir(copied), tmp_path / "here" / "cache" / copied.unique_id)
    assert here.step_info(copied).state == StepState.COMPLETED
    assert here.step_info(absent).state == StepState.INCOMPLETE


def test_a_run_stopped_here_and_finished_elsewhere_counts_as_completed(tmp_path):
    """A short job stopped here leaves a "failed" record; the step then finished on another machine
    and its entry was unpacked here. The complete entry wins over the record (`tango run -j` failed
    the step for it)."""
    import shutil

    from tango.step_info import StepState
    from tango.workspaces import LocalWorkspace

    _toy_steps()
    from tango import Step

    double = Step.by_name("toy_double")
    step, other = double(value=6), double(value=8)
    here = LocalWorkspace(tmp_path / "here")
    for stopped in (step, other):
        here.step_starting(stopped)
        here.step_failed(stopped, KeyboardInterrupt("stopped after step 3, checkpoint written"))
    assert here.step_info(step).state == StepState.FAILED
    there = LocalWorkspace(tmp_path / "there")
    assert step.result(there) == 12
    shutil.rmtree(tmp_path / "here" / "cache" / step.unique_id)
    shutil.copytree(there.step_dir(step), tmp_path / "here" / "cache" / step.unique_id)
    assert here.step_info(step).state == StepState.COMPLETED
    assert here.step_info(step).error is None
    assert here.step_info(other).state == StepState.FAILED  # nothing finished it: the record stands


def test_tango_reads_an_experiment_file_without_cached_path(tmp_path, monkeypatch):
    """The GPU image lacks cached-path's cloud clients; the compat shim's stand-in reads local files."""
    import pytest
    from tango.common import Params

    from steps.common import compat

    monkeypatch.setitem(sys.modules, "cached_path", None)  # as if its import failed
    compat._cached_path_or_local_stand_in()
    stand_in = sys.modules["cached_path"]
    assert stand_in is not None and stand_in.cached_path(tmp_path) == tmp_path
    file = tmp_path / "x.jsonnet"
    file.write_text('{"steps": {}}')
    assert Params.from_file(file).as_dict() == {"steps": {}}
    with pytest.raises(FileNotFoundError, match="only local files"):
        stand_in.cached_path("https://example.org/x.jsonnet")

