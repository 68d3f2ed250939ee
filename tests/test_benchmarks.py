"""benchmarks/time_experiment.py: per-step times from Tango's log, and a log file that keeps a
progress bar's last state rather than every redraw."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load_time_experiment():
    spec = importlib.util.spec_from_file_location("time_experiment", REPO / "benchmarks" / "time_experiment.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_last_redraw_keeps_what_the_terminal_shows():
    time_experiment = load_time_experiment()
    bar = b"\rparsing:   0%|  | 0/4\rparsing:  50%|# | 2/4\rparsing: 100%|##| 4/4\r"
    assert time_experiment.last_redraw(bar) == "parsing: 100%|##| 4/4"
    assert time_experiment.last_redraw(b"plain line") == "plain line"
    assert time_experiment.last_redraw(b"\r  \r") == ""
    assert time_experiment.last_redraw("µB-M ✓".encode()) == "µB-M ✓"


def test_parse_log_times_ran_steps_and_marks_cached_ones():
    time_experiment = load_time_experiment()
    lines = [
        (0.5, '[11/22/26 23:20:33] INFO     ✓ Found output for step "corpus" in cache...\n'),
        (1.0, '[11/22/26 23:20:34] INFO     ● Starting step "tokenizer"...\n'),
        (3.5, "tokenizer: 100%|##| 4/4\n"),
        (4.0, '[11/22/26 23:20:37] INFO     ✓ Finished step "tokenizer"\n'),
        (4.0, '[11/22/26 23:20:37] INFO     ✓ Found output for step "tokenizer" in cache (needed by "x")...\n'),
    ]
    steps = time_experiment.parse_log(lines)
    assert steps == {"corpus": {"status": "cached"}, "tokenizer": {"status": "ran", "seconds": 3.0}}


def test_logged_lines_name_no_machine_paths(tmp_path):
    time_experiment = load_time_experiment()
    workspace, repo = tmp_path / "ws", tmp_path / "repo"
    line = (f"WARNING /opt/py/lib/python3.11/site-packages/tango/step_info.py:30 exported to {workspace}/cache/Pretrain-002-x "
            f"from {repo}/experiments/wolof_m.jsonnet")
    assert time_experiment.without_machine_paths(line, workspace, repo) == (
        "WARNING site-packages/tango/step_info.py:30 exported to <workspace>/cache/Pretrain-002-x from experiments/wolof_m.jsonnet")


def test_language_campaign_files_are_committed_as_generated():
    """experiments/seeds/ holds every cell of the five-language campaign, as the campaign writes it, and
    each calls the builder with 3 seeds (or is a 5-seed file): the tables read exactly these."""
    from benchmarks import languages_campaign as campaign

    for language in campaign.LANGUAGES:
        for name in campaign.cells(language):
            path = campaign.cell_file(language, name, write=False)
            assert path.exists(), path
            text = path.read_text(encoding="utf-8")
            if path.name.endswith("_3seeds.jsonnet"):
                assert text == campaign.cell_text(language, name), f"{path.name}: rerun benchmarks/languages_campaign.py --dry-run"
            assert "seeds=[42, 43, 44" in text and f'("{language}"' in text
    assert 'corpus="leakfree"' in campaign.cell_file("coptic", "m_leakfree", write=False).read_text()
    # Table 2's other conditions, where a file has been written for one: as generated too.
    more = [(language, name) for language in campaign.LANGUAGES for name in campaign.MORE_CELLS
            if (campaign.FOLDER / f"{language}_{name}_3seeds.jsonnet").exists()]
    assert ("wolof", "mxpt") in more
    for language, name in more:
        assert campaign.cell_file(language, name, write=False).read_text(encoding="utf-8") == campaign.cell_text(language, name)


def test_campaign_counts_only_completed_cache_entries(tmp_path):
    """A stopped run leaves a step's folder without its result: the campaign record must count that step
    as added by the run that completes it, not as already there."""
    from tango import Step
    from tango.step_caches import LocalStepCache

    from benchmarks.languages_campaign import cached_entries

    class Double(Step):
        def run(self, x: int) -> int:  # type: ignore[override]
            return 2 * x

    assert cached_entries(tmp_path) == set()
    cache = LocalStepCache(tmp_path / "cache")
    done, stopped = Double(x=1), Double(x=2)
    cache[done] = 2
    (cache.step_dir(stopped) / "work").mkdir(parents=True)  # what a run stopped mid-step leaves
    assert cached_entries(tmp_path) == {done.unique_id}
    cache[stopped] = 4
    assert cached_entries(tmp_path) == {done.unique_id, stopped.unique_id}


def test_pretrain_step_benchmark_runs_every_gpu_lever_on_every_condition(tmp_path, capsys):
    """The GPU lever rows (bf16 autocast × fused AdamW) run through the same code on CPU, for every
    condition family: a dtype clash under autocast fails here, not in a GPU job."""
    import json

    from benchmarks.bench_pretrain_step import main

    conditions = ["M", "MXPT-SLA", "MS-G", "M-A13", "H", "C5"]
    out = tmp_path / "bench.json"
    main(["--steps", "1", "--warmup", "0", "--batch-size", "4", "--length", "24", "--vocab-size", "300", "--threads", "1",
          "--conditions", *conditions, "--precision", "fp32", "bf16", "--optimizer", "default", "fused", "--count-ops",
          "--json", str(out)])
    record = json.loads(out.read_text())
    counts = record["op_counts"]
    assert counts["µB-MXPT-SLA [fp32, fused]"]["ops"] > counts["µB-M [fp32, fused]"]["ops"] > 100
    assert counts["µB-MXPT-SLA [fp32, fused]"]["host_reads"] > counts["µB-M [fp32, fused]"]["host_reads"]
    for condition in conditions:
        for suffix in ("", " [fp32, fused]", " [bf16, default]", " [bf16, fused]"):
            assert record["median_seconds"][f"µB-{condition}{suffix}"] > 0, condition + suffix
    assert record["device"] == "cpu" and record["precision"] == ["fp32", "bf16"]
    assert "µB-MXPT-SLA [bf16, fused]" in capsys.readouterr().out
    # The report's section shows every lever row, and says how to record the GPU one until it is.
    from reporting import report

    section = report.benchmark_section(out)
    assert "| µB-MXPT-SLA [bf16, fused] |" in section and "Batch 4×24" in section
    missing = report.benchmark_section(tmp_path / "absent.json", report.GPU_BENCHMARK_COMMAND)
    assert "not recorded" in missing and "bench_pretrain_step.py --device cuda" in missing


def test_pretrain_step_benchmark_compiles_the_encoder_as_pretraining_does(tmp_path, monkeypatch):
    """The compile lever's rows (torch.compile of the encoder, `compile_module`) through the same
    code on CPU, with the aot_eager backend (no code generation): a trace failure of the MXPT-SLA
    encoder shows here, not in a GPU job. The eager rows keep their names; a compiled row's first
    step (its compile) is recorded, and --fresh-compile and --scalar-cpu-kernels set Inductor up as
    they say. A .jsonl record is appended, with its command."""
    import json

    import torch._dynamo
    import torch._functorch.config
    import torch._inductor.config

    # What the flags change, put back after the test (the process goes on to other tests).
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    for config, name in ((torch._inductor.config, "fx_graph_cache"), (torch._functorch.config, "enable_autograd_cache"),
                         (torch._inductor.config.cpp, "simdlen")):
        monkeypatch.setattr(config, name, getattr(config, name))

    from benchmarks.bench_pretrain_step import lever_variants, main

    assert [suffix for suffix, *_ in lever_variants(["fp32", "bf16"], ["default"], ["none", "reduce-overhead"])] == [
        "", " [fp32, default, compile reduce-overhead]", " [bf16, default]", " [bf16, default, compile reduce-overhead]"]
    out = tmp_path / "bench.jsonl"
    out.write_text('{"earlier": "record"}\n')
    torch._dynamo.reset()
    arguments = ["--steps", "1", "--warmup", "1", "--batch-size", "4", "--length", "24", "--vocab-size", "300", "--threads", "1",
                 "--conditions", "M", "MXPT-SLA", "--compile", "none", "reduce-overhead", "--compile-backend", "aot_eager",
                 "--parse-in-loader", "--compile-objectives", "--fresh-compile", "--scalar-cpu-kernels", "--json", str(out)]
    main(arguments)
    earlier, record = (json.loads(line) for line in out.read_text().splitlines())
    assert earlier == {"earlier": "record"} and record["command"] == "python benchmarks/bench_pretrain_step.py " + " ".join(arguments)
    assert record["fresh_compile"] and record["scalar_cpu_kernels"]
    assert torch._inductor.config.cpp.simdlen == 0 and not torch._inductor.config.fx_graph_cache
    assert not torch._functorch.config.enable_autograd_cache
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] != str(tmp_path / "inductor")
    assert set(record["first_step_seconds"]) == set(record["median_seconds"])
    assert all(seconds > 0 for seconds in record["first_step_seconds"].values())
    for condition in ("M", "MXPT-SLA"):
        for suffix in ("", " [fp32, default, compile reduce-overhead]"):
            assert record["median_seconds"][f"µB-{condition}{suffix}"] > 0, condition + suffix
    # The compiled encoder also takes the loader's boolean SLA mask; µB-M reads no parse, so has no such row.
    assert record["median_seconds"]["µB-MXPT-SLA [fp32, default, compile reduce-overhead] (parse in loader)"] > 0
    assert not any(name.startswith("µB-M ") and "parse" in name for name in record["median_seconds"])
    assert record["compile"] == ["none", "reduce-overhead"] and record["compile_backend"] == "aot_eager"
    assert record["compile_objectives"] is True


def test_loader_benchmark_times_each_transport_on_real_rows(tmp_path):
    """benchmarks/bench_pretrain_loader.py on the Wolof treebank: the loop's old transport (every
    tensor handed over) and the new (the parse's inputs built in the worker, one packed buffer)."""
    import json

    from benchmarks.bench_pretrain_loader import main

    out = tmp_path / "loader.json"
    main(["--batch-size", "32", "--batches", "2", "--workers", "1", "--conditions", "M", "MXPT-SLA", "--vocab-size", "500",
          "--json", str(out)])
    rows = {(r["condition"], r["parse_inputs_in_loader"], r["packed"]): r for r in json.loads(out.read_text())["results"]}
    assert set(rows) == {("M", False, False), ("M", False, True), ("MXPT-SLA", False, False), ("MXPT-SLA", True, False),
                         ("MXPT-SLA", True, True)}
    assert rows[("MXPT-SLA", True, False)]["tensors_per_batch"] == 20 and rows[("M", False, False)]["tensors_per_batch"] == 9
    # The old transport's copy to a GPU, field by field, here to the meta device.
    import torch

    from benchmarks.bench_pretrain_loader import tensors_to
    from models.trees import TreeSamples

    samples = TreeSamples(*(torch.zeros(3, dtype=torch.long) for _ in range(2)), *(torch.zeros(3, 4, dtype=torch.bool) for _ in range(3)))
    moved = tensors_to({"input_ids": torch.ones(2, 5, dtype=torch.long), "tree_samples": samples}, torch.device("meta"))
    assert moved["input_ids"].device.type == "meta" and isinstance(moved["tree_samples"], TreeSamples)
    assert all(getattr(moved["tree_samples"], name).device.type == "meta" for name in vars(samples))
    for row in rows.values():
        assert row["collate_ms"] > 0 and row["receive_ms"] > 0 and row["unpickle_ms"] > 0 and row["batches_timed"] == 8
        assert (row["prepare_ms"] > 0) == row["parse_inputs_in_loader"] and (row["pack_ms"] > 0) == row["packed"]


def test_tg_generation_check_tells_a_grammatical_model_from_a_uniform_one():
    """benchmarks/tg_campaign.py's generation check: an unconstrained draw (`draw_actions`) from a model that puts all its mass on the
    actions the grammar allows is a well-formed tree with zero forbidden mass; a uniform model's
    draws put most of their mass on forbidden actions.  Terminals rendered as "w" by `shape`, so a
    WordPiece "(" cannot pass for an open bracket."""
    import torch

    from models.transformer_grammar import LmOutput, TransformerGrammarLM, allowed_next_actions, draw_actions, lm_config, well_formed
    from steps.tg.actions import ActionLayout

    spec = importlib.util.spec_from_file_location("tg_campaign", REPO / "benchmarks" / "tg_campaign.py")
    tg_campaign = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tg_campaign)
    layout = ActionLayout(num_terminals=12)
    vocabulary = layout.token_strings(["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "(", ")"] + [f"w{i}" for i in range(7, 12)])
    config = lm_config("tg", layout.vocab_size, 12, layout.num_labels, hidden_size=8, num_hidden_layers=1,
                       num_attention_heads=2, intermediate_size=16)

    class Grammatical(TransformerGrammarLM):
        def forward(self, input_ids, labels=None):
            allowed = allowed_next_actions(input_ids[0].tolist(), self.config, 40)
            logits = torch.zeros(1, input_ids.shape[1], self.config.vocab_size)
            logits[0, -1] = torch.where(allowed, 0.0, float("-inf"))
            return LmOutput(logits, None, None)

    class Uniform(TransformerGrammarLM):
        def forward(self, input_ids, labels=None):
            return LmOutput(torch.zeros(1, input_ids.shape[1], self.config.vocab_size), None, None)

    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        draw, mass = draw_actions(Grammatical(config), 40, generator, constrained=False)
        assert tg_campaign.mean_forbidden_mass(mass) == 0.0 and well_formed(tg_campaign.shape(draw, vocabulary, config)), draw
    draws = [draw_actions(Uniform(config), 40, generator, constrained=False) for _ in range(5)]
    assert all(0.5 < tg_campaign.mean_forbidden_mass(mass) <= 1.0 for _, mass in draws)
    assert not any(well_formed(tg_campaign.shape(draw, vocabulary, config)) for draw, _ in draws)
    # "(" and ")" terminals are words, not brackets.
    assert tg_campaign.shape([1, 12, 5, 6, 12 + layout.num_labels, 12 + 2 * layout.num_labels], vocabulary, config) == \
        ["w", "(ROOT", "w", "w", "ROOT)", "ROOT)²"]


def test_records_measured_elsewhere_are_appended_with_a_note_and_otherwise_as_written(tmp_path):
    import json

    from benchmarks import records

    source, target = tmp_path / "out.jsonl", tmp_path / "docs" / "gpu_pace.jsonl"
    source.write_text(json.dumps({"condition": "M", "steps_per_second": 153.8}) + "\n\n" + json.dumps({"condition": "X"}) + "\n")
    target.parent.mkdir()
    target.write_text(json.dumps({"condition": "M", "note": "older"}) + "\n")
    assert records.main([str(source), str(target), "--note", "after e7075c3"]) == 0
    assert [json.loads(line) for line in target.read_text().splitlines()] == [
        {"condition": "M", "note": "older"},
        {"condition": "M", "steps_per_second": 153.8, "note": "after e7075c3"},
        {"condition": "X", "note": "after e7075c3"}]


def test_box_probe_runs_its_fixed_workload_at_two_threads_and_restores_the_setting(monkeypatch):
    """The probe is the best of its repeats of `passes` training passes (after one warm-up pass), at
    the fixed thread count whatever the caller had; the caller's setting comes back."""
    import torch

    from benchmarks import box_speed

    seen = []
    real_pass = box_speed._one_pass

    def counted(*args):
        seen.append(torch.get_num_threads())
        real_pass(*args)

    monkeypatch.setattr(box_speed, "_one_pass", counted)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        record = box_speed.probe(repeats=2, passes=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert seen == [box_speed.THREADS] * (1 + 2 * 1)
    assert record["box_seconds"] > 0 and record["threads"] == box_speed.THREADS
    assert (record["passes"], record["repeats"]) == (1, 2)


def test_wall_time_table_shows_each_records_box_probe(tmp_path, monkeypatch):
    """engineering.md's wall-time rows carry the probe of the box that ran them, and "—" for a record
    from before the probe."""
    import json

    from reporting import report

    steps = {"corpus": {"status": "ran", "seconds": 60.0}}
    base = {"command": "tango run x.jsonnet", "returncode": 0, "wall_minutes": 1.5, "steps": steps, "date": "2026-12-02"}
    with_probe, without = tmp_path / "with.json", tmp_path / "without.json"
    with_probe.write_text(json.dumps({**base, "box": {"box_seconds": 4.1, "threads": 2}}))
    without.write_text(json.dumps(base))
    monkeypatch.setattr(report, "SMOKE_COLD_JSON", with_probe)
    monkeypatch.setattr(report, "MAIN_COMMAND_JSON", without)
    monkeypatch.setattr(report, "SECOND_CONDITION_JSON", tmp_path / "absent.json")
    rows = [line for line in report.timing_section().splitlines() if line.startswith("| ")][1:]
    assert [row.strip("| ").split(" | ")[-1] for row in rows] == ["4.10", "—"]
