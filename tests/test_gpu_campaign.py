"""The GPU campaign's driver on CPU: phase time limits, pack/unpack of cache entries, and the
paper-scale files reusing the cpu cell's corpus and corpus parser (experiments/paper)."""
import json
import sys
import time
from pathlib import Path

import pytest

from benchmarks.gpu import campaign
from tools.step_ids import REPO


def test_a_phase_past_its_budget_is_stopped_and_says_call_again():
    # Unstopped, the two sleepers take 600 s; the bound is far above a loaded machine's start-up time.
    sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
    start = time.monotonic()
    assert campaign.run_all([sleeper, sleeper], budget=1) == campaign.OUT_OF_TIME
    assert time.monotonic() - start < 120
    assert campaign.run_all([[sys.executable, "-c", "pass"]], budget=30) == 0
    assert campaign.run_all([[sys.executable, "-c", "raise SystemExit(2)"]], budget=30) == 1


def test_a_phase_with_a_log_folder_keeps_each_commands_output_and_prints_its_end(tmp_path, capsys):
    """What a device call brings back: every command's whole log under $OUT, and its last lines
    (a progress bar's last redraw, not every one) in the printed tail."""
    noisy = [sys.executable, "-c", "import sys; print('start'); sys.stdout.write('10%\\r50%\\r100%\\n'); "
             "print('Timeout (0:10:00)!', file=sys.stderr)"]
    assert campaign.run_all([noisy, [sys.executable, "-c", "print('other')"]], budget=60, log_dir=tmp_path, phase="pretrain") == 0
    first = (tmp_path / "pretrain-0.log").read_bytes().decode()
    assert "10%\r50%\r100%" in first and "Timeout (0:10:00)!" in first
    assert (tmp_path / "pretrain-1.log").read_text() == "other\n"
    printed = capsys.readouterr().out
    assert "last lines of pretrain-0.log:\n  start\n  100%\n  Timeout (0:10:00)!" in printed and "10%" not in printed


def test_pack_and_unpack_round_trip_the_new_cache_entries(tmp_path):
    cache = tmp_path / "gpu" / "cache"
    (cache / "Old-001-a").mkdir(parents=True)
    (cache / "Old-001-a" / "x").write_text("old")
    since = time.time() + 1
    time.sleep(1.1)
    for name, size in (("Pretrain-002-b", 40 * 2**20), ("Score-001-c", 10)):
        (cache / name).mkdir()
        (cache / name / "data.bin").write_bytes(bytes(range(256)) * (size // 256 + 1))
    # A finished entry leaves its last checkpoint behind; a stopped one needs it to resume.
    for name, finished in (("Pretrain-002-done", True), ("Pretrain-002-stopped", False)):
        (cache / name / "work").mkdir(parents=True)
        (cache / name / "work" / "checkpoint.pt").write_bytes(b"state")
        if finished:
            (cache / name / "cache-metadata.json").write_text("{}")
    parts = campaign.pack(tmp_path / "gpu", tmp_path / "out", since)
    assert len(parts) >= 1 and all(p.stat().st_size <= campaign.PART_BYTES for p in parts)
    campaign.unpack(tmp_path / "out", tmp_path / "here")
    unpacked = sorted(p.name for p in (tmp_path / "here" / "cache").iterdir())
    assert unpacked == ["Pretrain-002-b", "Pretrain-002-done", "Pretrain-002-stopped", "Score-001-c"]
    here = tmp_path / "here" / "cache"
    assert not (here / "Pretrain-002-done" / "work").exists() and (here / "Pretrain-002-done" / "cache-metadata.json").is_file()
    assert (here / "Pretrain-002-stopped" / "work" / "checkpoint.pt").read_bytes() == b"state"
    assert (tmp_path / "here" / "cache" / "Pretrain-002-b" / "data.bin").read_bytes() == (cache / "Pretrain-002-b" / "data.bin").read_bytes()


def test_a_stopped_entry_whose_checkpoint_is_too_big_to_bring_back_stays(tmp_path, capsys):
    """A paper-regime parser's checkpoint (~190 MB) would overflow the 8 parts a call brings back:
    that entry stays in the machine's workspace (resumed by the next call there) and the rest come back."""
    cache = tmp_path / "gpu" / "cache"
    for name, size, finished in (("Finetune-003-big", 3000, False), ("Pretrain-002-small", 100, False), ("Score-001-done", 100, True)):
        (cache / name / "work").mkdir(parents=True)
        (cache / name / "work" / "checkpoint.pt").write_bytes(b"x" * size)
        if finished:
            (cache / name / "cache-metadata.json").write_text("{}")
    campaign.pack(tmp_path / "gpu", tmp_path / "out", 0.0, stopped_limit=1000)
    assert "Finetune-003-big stays on this machine" in capsys.readouterr().out
    campaign.unpack(tmp_path / "out", tmp_path / "here")
    assert sorted(p.name for p in (tmp_path / "here" / "cache").iterdir()) == ["Pretrain-002-small", "Score-001-done"]
    assert (cache / "Finetune-003-big" / "work" / "checkpoint.pt").stat().st_size == 3000  # untouched there


def test_paper_scale_files_reuse_the_cpu_corpus_parser_and_take_the_whole_corpus():
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401

    recorded = json.loads((REPO / "tests" / "data" / "step_ids.json").read_text())["experiments/wolof_m.jsonnet"]
    for file in campaign.FILES:
        graph = StepGraph.from_params(Params.from_file(REPO / file).pop("steps"))
        assert graph["corpus"].unique_id == recorded["vectors_corpus"]  # uncapped: the cpu cell's vectors corpus
        if "random_init" not in file:
            assert graph["corpus_parser"].unique_id == recorded["corpus_parser"]
            assert graph["pretrained_model"].kwargs["training"].max_steps == 62500
        scores = [name for name in graph if "_score_s" in name]
        assert len(scores) == 10
        # Each task under the regime dev chose for it (the paper scale's `chosen`), one thread per fine-tune.
        assert {graph[n].kwargs["scale"] for n in scores if n.startswith("ud_")} == {"gpu-paper_tenth"}
        assert {graph[n].kwargs["scale"] for n in scores if n.startswith("ner_")} == {"gpu-cpu_x2"}
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
    chosen = {"ud_parser": "paper_tenth", "ner": "cpu_x2"}
    for task, regime in chosen.items():
        cell = ids(f"experiments/decomposition/wolof_paper_{regime}.jsonnet")
        tuned = [name for name in cell if name.startswith(f"{task}_s") and "_score_" not in name]
        assert tuned and all(paper_scale[name] == cell[name] for name in tuned), (task, regime)


def test_every_language_has_its_paper_scale_files_on_its_own_cpu_data_steps():
    """Issue 17 item 5: the campaign runs any of the paper's five languages with no new code."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401
    from reporting.languages import paper_languages

    assert set(campaign.LANGUAGES) == set(paper_languages())
    for language in campaign.LANGUAGES:
        cpu = StepGraph.from_params(Params.from_file(REPO / f"experiments/{language}_m.jsonnet").pop("steps"))
        for file in campaign.language_files(language):
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
    assert campaign.phase_commands("pretrain", campaign.language_files("coptic"))[0][-2] == "experiments/paper/coptic_m.jsonnet"


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
    committed = StepGraph.from_params(Params.from_file(REPO / campaign.FILES[0]).pop("steps"))
    chosen = json.loads(campaign.LEVERS_FILE.read_text())  # what the lever benchmark chose ({}: none)
    assert graph(chosen)["pretrained_model"].unique_id == committed["pretrained_model"].unique_id
    # compile_objectives (the P and T losses) reaches only conditions that have one: M keeps its key.
    for_m = {k: v for k, v in chosen.items() if k != "compile_objectives"}
    assert {k: committed["pretrained_model"].kwargs[k] for k in for_m} == for_m
    assert committed["pretrained_model"].kwargs.get("compile_objectives") is None
    # MXPT-SLA pretrains eager (its compile outlasted a device call): the other levers, no compile.
    sla = StepGraph.from_params(Params.from_file(REPO / "experiments/paper/wolof_mxpt_sla.jsonnet").pop("steps"))
    eager = {k: v for k, v in chosen.items() if k not in campaign.COMPILE_LEVERS}
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


def test_the_levers_phase_writes_the_fastest_m_row_for_the_pretraining_after_it(tmp_path):
    """`campaign.py levers` on CPU (eager rows only, a tiny batch): the record and the choice come
    back under $OUT, and the choice is the fastest µB-M row's levers, defaults left out."""
    levers_file = tmp_path / "levers.json"
    tiny = ["--batch-size", "4", "--length", "16", "--steps", "2", "--warmup", "1", "--threads", "1"]
    assert campaign.choose_levers(tmp_path / "out", 300, device="cpu", extra=tiny, levers_file=levers_file,
                                  runs=campaign.LEVER_RUNS[:1]) == 0
    record = json.loads((tmp_path / "out" / "gpu_pretrain_step_eager.json").read_text())
    medians = {name: t for name, t in record["median_seconds"].items() if name == "µB-M" or name.startswith("µB-M [")}
    fastest = min(medians, key=medians.get)
    expected = {"µB-M": {}, "µB-M [fp32, fused]": {"fused_optimizer": True}, "µB-M [bf16, default]": {"precision": "bf16"},
                "µB-M [bf16, fused]": {"precision": "bf16", "fused_optimizer": True}}[fastest]
    assert json.loads(levers_file.read_text()) == expected == json.loads((tmp_path / "out" / "levers.json").read_text())
    compiled = {"precision": ["bf16"], "optimizer": ["fused"], "compile": ["reduce-overhead"],
                "median_seconds": {"µB-M [bf16, fused, compile reduce-overhead]": min(medians.values()) / 2}}
    assert campaign.chosen_levers([record, compiled]) == {"precision": "bf16", "fused_optimizer": True,
                                                          "compile_encoder": {"mode": "reduce-overhead"}}


def _toy_steps():
    """Two registered toy steps for a root → middle → leaf chain."""
    from tango import Step

    if "campaign_toy_root" not in Step.list_available():
        @Step.register("campaign_toy_root")
        class Root(Step):
            DETERMINISTIC, CACHEABLE = True, True

            def run(self, value: int) -> int:  # type: ignore[override]
                return value

        @Step.register("campaign_toy_double")
        class Double(Step):
            DETERMINISTIC, CACHEABLE = True, True

            def run(self, value: int) -> int:  # type: ignore[override]
                return 2 * value


def test_run_steps_computes_a_step_from_cached_inputs_without_the_steps_above_them(tmp_path):
    """What the pretraining phase needs on a GPU machine given only the cached pretraining data:
    `tango run -s leaf` would ensure `root` too (there, a corpus parser); run_steps computes `leaf`
    from the cached `middle` and never runs `root`."""
    import shutil

    import pytest
    from tango.common import Params
    from tango.step_graph import StepGraph
    from tango.workspaces import LocalWorkspace

    from tools.run_steps import run_steps

    _toy_steps()
    experiment = tmp_path / "toy.jsonnet"
    experiment.write_text(json.dumps({"steps": {
        "root": {"type": "campaign_toy_root", "value": 3},
        "middle": {"type": "campaign_toy_double", "value": {"type": "ref", "ref": "root"}},
        "leaf": {"type": "campaign_toy_double", "value": {"type": "ref", "ref": "middle"}},
    }}))
    there = LocalWorkspace(tmp_path / "there")
    graph = StepGraph.from_params(Params.from_file(experiment).pop("steps"))
    assert graph["middle"].result(there) == 6
    here = tmp_path / "here"
    (here / "cache").mkdir(parents=True)
    shutil.copytree(there.step_dir(graph["middle"]), here / "cache" / graph["middle"].unique_id)
    assert run_steps(experiment, ["leaf"], here) == 0
    workspace = LocalWorkspace(here)
    assert workspace.step_cache[graph["leaf"]] == 12
    assert graph["root"] not in workspace.step_cache and not (here / "cache" / graph["root"].unique_id).exists()
    with pytest.raises(SystemExit, match="no step named nothing"):
        run_steps(experiment, ["nothing"], here)


def test_a_cache_entry_copied_from_another_machine_counts_as_completed(tmp_path):
    """An entry brought back from a GPU machine has no record in this workspace's step-info
    database; under `tango run -j` the step was failed for it. The workspace adopts it instead."""
    import shutil

    from tango.step_info import StepState
    from tango.workspaces import LocalWorkspace

    _toy_steps()
    from tango import Step

    double = Step.by_name("campaign_toy_double")
    copied, absent = double(value=5), double(value=7)
    there = LocalWorkspace(tmp_path / "there")
    assert copied.result(there) == 10
    here = LocalWorkspace(tmp_path / "here")
    shutil.copytree(there.step_dir(copied), tmp_path / "here" / "cache" / copied.unique_id)
    assert here.step_info(copied).state == StepState.COMPLETED
    assert here.step_info(absent).state == StepState.INCOMPLETE


def test_unpacked_entries_are_put_on_the_workspaces_record(tmp_path):
    """The report lists runs from the step-info database, which knows nothing of an entry copied in:
    `adopt` records the given steps that are cached or stopped (not the others), as `tango run` would."""
    import shutil

    from tango.workspaces import LocalWorkspace

    from reporting.report import completed_steps

    _toy_steps()
    from tango import Step

    double = Step.by_name("campaign_toy_double")
    copied, absent = double(value=5), double(value=7)
    there = LocalWorkspace(tmp_path / "there")
    copied.result(there)
    shutil.copytree(there.step_dir(copied), tmp_path / "here" / "cache" / copied.unique_id)
    here = LocalWorkspace(tmp_path / "here")
    assert completed_steps(here, "Double") == []
    assert campaign.adopt(tmp_path / "here", [copied, absent]) == 1
    assert [info.unique_id for info in completed_steps(here, "Double")] == [copied.unique_id]
    # A stopped run (its folder and checkpoint, no result) goes on record as incomplete, config and all.
    from tango.common import Params

    stopped = Step.from_params(Params({"type": "campaign_toy_double", "value": 9}))  # as an experiment file makes it
    (tmp_path / "here" / "cache" / stopped.unique_id / "work").mkdir(parents=True)
    assert campaign.adopt(tmp_path / "here", [stopped, absent]) == 1
    info = here.step_info(stopped.unique_id)
    assert info.state.value == "incomplete" and info.config["value"] == 9
    assert [info.unique_id for info in completed_steps(here, "Double")] == [copied.unique_id]


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


def test_the_finetune_phase_runs_every_fine_tuning_step_once_then_the_scores():
    tuning, scoring = campaign.finetune_stages(campaign.FILES, jobs=15)
    run_steps = str(REPO / "tools" / "run_steps.py")
    assert all(command[1] == run_steps for command in tuning + scoring)
    assert len(tuning) == 15 and len(scoring) == 3
    names = [(command[2], name) for command in tuning for name in command[3:]]
    assert len(names) == len(set(names)) == 3 * 10  # 3 encoders × 5 seeds × UD and NER, each once
    assert {name.rsplit("_s", 1)[0] for _, name in names} == {"ud_parser", "ner"}
    assert all(set(command[3:]) == {f"{task}_{kind}" for task in ("ud_parser", "ner") for kind in
                                    ["cell"] + [f"score_s{seed}" for seed in range(42, 47)]} for command in scoring)


def test_compile_levers_are_added_and_dropped_without_touching_the_eager_ones(tmp_path, monkeypatch, capsys):
    """allocation.sh's `campaign.py compile-levers --to on|off`: the compile levers come and go, the
    timed eager choice (precision, fused AdamW) stays, and a missing file starts from none."""
    levers_file = tmp_path / "levers.json"
    levers_file.write_text(json.dumps({"precision": "bf16", "fused_optimizer": True}))
    on = campaign.set_compile_levers(True, levers_file)
    assert on == json.loads(levers_file.read_text()) == {
        "precision": "bf16", "fused_optimizer": True,
        "compile_encoder": {"mode": "reduce-overhead"}, "compile_objectives": {}}
    assert campaign.set_compile_levers(False, levers_file) == json.loads(levers_file.read_text()) == {
        "precision": "bf16", "fused_optimizer": True}
    assert campaign.set_compile_levers(True, tmp_path / "none.json") == campaign.COMPILE_LEVERS
    # Through the command line allocation.sh uses, on a stand-in for the file it edits.
    monkeypatch.setattr(campaign, "LEVERS_FILE", levers_file)
    assert campaign.main(["compile-levers", "--to", "on"]) == 0
    assert json.loads(levers_file.read_text())["compile_objectives"] == {}
    assert campaign.main(["compile-levers", "--to", "off"]) == 0
    assert json.loads(levers_file.read_text()) == {"precision": "bf16", "fused_optimizer": True}
    assert "levers now" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        campaign.main(["compile-levers"])
