"""The GPU campaign's driver on CPU: phase time limits, pack/unpack of cache entries, and the
paper-scale files reusing the cpu cell's corpus and corpus parser (benchmarks/gpu)."""
import json
import sys
import time
from pathlib import Path

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
    parts = campaign.pack(tmp_path / "gpu", tmp_path / "out", since)
    assert len(parts) >= 1 and all(p.stat().st_size <= campaign.PART_BYTES for p in parts)
    campaign.unpack(tmp_path / "out", tmp_path / "here")
    unpacked = sorted(p.name for p in (tmp_path / "here" / "cache").iterdir())
    assert unpacked == ["Pretrain-002-b", "Score-001-c"]
    assert (tmp_path / "here" / "cache" / "Pretrain-002-b" / "data.bin").read_bytes() == (cache / "Pretrain-002-b" / "data.bin").read_bytes()


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
        assert len(scores) == 10 and all(graph[n].kwargs["scale"] == "gpu-paper_tenth" for n in scores)


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
            tasks = {name.split("_score_s")[0] for name in graph if "_score_s" in name}
            assert tasks == ({"ud_parser", "ner"} if language in ("wolof", "maltese", "uyghur") else {"ud_parser"})
    assert campaign.phase_commands("pretrain", campaign.language_files("coptic"), 4)[0][-3] == "benchmarks/gpu/coptic_m_paper_scale.jsonnet"


def test_speed_levers_reach_only_the_paper_scale_pretraining_and_re_key_it(tmp_path):
    """paper_scale.libsonnet's `levers` (the one switch for bf16 / fused AdamW / torch.compile once
    the GPU benchmark has measured them) land in pretrain_microbert's arguments, change its ID and
    everything downstream, and leave the data steps alone; the committed files set none."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401

    def graph(levers):
        file = tmp_path / f"cell_{len(levers)}.jsonnet"
        file.write_text(f'(import "{REPO}/benchmarks/gpu/paper_scale.libsonnet").wolof("M", seeds=[42], levers={json.dumps(levers)})\n')
        return StepGraph.from_params(Params.from_file(file).pop("steps"))

    levers = {"precision": "bf16", "fused_optimizer": True, "compile_encoder": {"mode": "reduce-overhead"}}
    plain, fast = graph({}), graph(levers)
    committed = StepGraph.from_params(Params.from_file(REPO / campaign.FILES[0]).pop("steps"))
    assert plain["pretrained_model"].unique_id == committed["pretrained_model"].unique_id
    assert {k: fast["pretrained_model"].kwargs[k] for k in levers} == levers
    assert fast["pretrained_model"].unique_id != plain["pretrained_model"].unique_id
    assert fast["ud_parser_s42"].unique_id != plain["ud_parser_s42"].unique_id
    assert fast["pretraining_data"].unique_id == plain["pretraining_data"].unique_id
