"""`train_tg_lm` as short jobs: kill and SIGINT resume bit for bit, the dev curve, the stop rules,
a budget taken from another run, and cache keys that the new arguments leave alone at their
defaults. Real steps on 60 Wolof UD trees (50 train, 10 dev), a few steps each, on CPU."""
from __future__ import annotations

import json
import signal

import pytest
import torch

from steps.common.checkpoints import SimulatedCrash
from steps.tg.language_model import (
    CHECKPOINT_NAME, CRASH_AFTER_STEP_ENV, EvaluateTgLanguageModel, TrainTgLanguageModel, stop_reason,
)
from test_transformer_grammar import wolof_trees

TIMINGS = {"seconds", "seconds_per_step", "validation_seconds", "resumed_from"}


@pytest.fixture(scope="module")
def actions():
    from steps.tg.actions import BuildTgActions

    sentences = wolof_trees(60)
    trees = {"train": sentences[:50], "dev": sentences[50:]}
    return BuildTgActions(trees=trees).run(trees=trees)


def train(actions, work_dir, kind="txl_terminals", **settings):
    """One run in ``work_dir`` (created if need be; a second run there resumes): its result directory."""
    settings = {"max_steps": 9, "batch_size": 8, "device": "cpu", **settings}
    step = TrainTgLanguageModel(actions=actions, kind=kind, **settings)
    step.work_dir_for_run = work_dir
    work_dir.mkdir(parents=True, exist_ok=True)
    return step.run(actions=actions, kind=kind, **settings)


def metrics(result):
    return json.loads((result / "metrics.json").read_text())


def untimed(record):
    return {k: v for k, v in record.items() if k not in TIMINGS}


def weights(result):
    return (result / "model.safetensors").read_bytes()


def test_a_killed_run_resumes_and_ends_bit_for_bit_where_the_uninterrupted_one_ends(actions, tmp_path, monkeypatch):
    """50 rows in batches of 8 are 7 batches a pass: killed after step 8, the run resumes from its
    step-6 checkpoint with one batch of pass 1 pending, and must draw pass 2 at step 8 as before."""
    settings = dict(kind="tg", checkpoint_every=3, validate_every=4)
    reference = train(actions, tmp_path / "uninterrupted", **settings)
    monkeypatch.setenv(CRASH_AFTER_STEP_ENV, "8")
    with pytest.raises(SimulatedCrash, match="stopping after step 8"):
        train(actions, tmp_path / "killed", **settings)
    saved = torch.load(tmp_path / "killed" / CHECKPOINT_NAME, weights_only=True)
    assert saved["state"]["step"] == 6 and saved["state"]["epoch"] == 1 and len(saved["state"]["pending"]) == 1
    monkeypatch.delenv(CRASH_AFTER_STEP_ENV)
    resumed = train(actions, tmp_path / "killed", **settings)
    assert metrics(resumed)["resumed_from"] == [6] and metrics(reference)["resumed_from"] == []
    assert untimed(metrics(resumed)) == untimed(metrics(reference))
    assert metrics(reference)["epochs"] == 2 and [p["step"] for p in metrics(reference)["dev_history"]] == [4, 8, 9]
    assert weights(resumed) == weights(reference)


def test_sigint_stops_at_the_step_boundary_with_a_checkpoint_and_the_resumed_run_is_the_uninterrupted_one(
        actions, tmp_path, monkeypatch):
    """SIGINT during step 3's forward (a job's time running out): step 3 finishes, a checkpoint is
    written there although none is due, the run stops; run again, it ends on the uninterrupted weights."""
    from models.transformer_grammar import TransformerGrammarLM

    settings = dict(max_steps=5, checkpoint_every=100)
    reference = train(actions, tmp_path / "uninterrupted", **settings)
    forward, calls = TransformerGrammarLM.forward, []

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            signal.raise_signal(signal.SIGINT)
        return forward(self, *args, **kwargs)

    handler = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(TransformerGrammarLM, "forward", interrupted)
    with pytest.raises(KeyboardInterrupt, match="stopped after step 3"):
        train(actions, tmp_path / "interrupted", **settings)
    assert signal.getsignal(signal.SIGINT) is handler
    assert torch.load(tmp_path / "interrupted" / CHECKPOINT_NAME, weights_only=True)["state"]["step"] == 3
    monkeypatch.setattr(TransformerGrammarLM, "forward", forward)
    resumed = train(actions, tmp_path / "interrupted", **settings)
    assert metrics(resumed)["resumed_from"] == [3]
    assert untimed(metrics(resumed)) == untimed(metrics(reference)) and weights(resumed) == weights(reference)


def test_the_dev_curve_is_evaluate_tg_lms_perplexity_and_leaves_training_unchanged(actions, tmp_path):
    plain = train(actions, tmp_path / "plain", max_steps=7)
    curve = train(actions, tmp_path / "curve", max_steps=7, validate_every=3, max_validation_sequences=6)
    assert weights(curve) == weights(plain)
    assert metrics(curve)["history"] == metrics(plain)["history"] and metrics(plain)["dev_history"] == []
    record = metrics(curve)
    assert [p["step"] for p in record["dev_history"]] == [3, 6, 7]
    assert record["stopped_by"] == metrics(plain)["stopped_by"] == "max_steps" and record["steps"] == 7
    assert all(p["words"] == sum(row["words"] for row in actions["dev"][:6]) for p in record["dev_history"])
    # The last point is what evaluate_tg_lm reports for the saved model, to the bit.
    cell = dict(table="tg", row="txl_terminals", column="wolof", scale="test")
    score = EvaluateTgLanguageModel(model=curve, actions=actions, **cell).run(
        model=curve, actions=actions, split="dev", max_sentences=6, device="cpu", **cell)
    assert score["test"] == record["dev_history"][-1]["perplexity"]


def test_a_perplexity_target_that_every_model_meets_stops_at_the_first_dev_point_and_a_resumed_stop_stays(
        actions, tmp_path, monkeypatch):
    monkeypatch.setenv(CRASH_AFTER_STEP_ENV, "2")  # killed right after the stop's checkpoint
    settings = dict(validate_every=2, stop_at_perplexity=1e9)
    with pytest.raises(SimulatedCrash):
        train(actions, tmp_path / "run", **settings)
    monkeypatch.delenv(CRASH_AFTER_STEP_ENV)
    record = metrics(train(actions, tmp_path / "run", **settings))
    assert record["stopped_by"] == "perplexity" and record["steps"] == 2 and record["resumed_from"] == [2]
    assert [p["step"] for p in record["dev_history"]] == [2] and record["max_steps"] == 9


def test_a_plateau_rule_with_tolerance_one_stops_after_k_plus_one_dev_points(actions, tmp_path):
    record = metrics(train(actions, tmp_path / "run", validate_every=2, plateau_validations=2, plateau_tolerance=1.0))
    assert record["stopped_by"] == "plateau" and record["steps"] == 6
    assert [p["step"] for p in record["dev_history"]] == [2, 4, 6]


def test_stop_reason_against_hand_worked_curves():
    def curve(*values):
        return [{"step": i, "perplexity": v} for i, v in enumerate(values, 1)]

    assert stop_reason([], 500.0, 2, 0.01) is None
    assert stop_reason(curve(900, 500), 500.0, None, 0.01) == "perplexity"
    assert stop_reason(curve(900, 501), 500.0, None, 0.01) is None
    # K = 2: the best before the last two (90) against the best of them; 1 % of 90 is 0.9.
    assert stop_reason(curve(100, 90, 89.5, 89.2), None, 2, 0.01) == "plateau"  # 0.8 < 0.9
    assert stop_reason(curve(100, 90, 89.5, 89.0), None, 2, 0.01) is None  # 1.0
    assert stop_reason(curve(100, 90, 95, 91), None, 2, 0.0) == "plateau"  # worse is no improvement
    assert stop_reason(curve(128, 64, 62), None, 1, 1 / 32) is None  # an improvement of exactly the tolerance (2) is enough
    assert stop_reason(curve(128, 64, 62.5), None, 1, 1 / 32) == "plateau"
    assert stop_reason(curve(100, 90), None, 2, 1.0) is None  # K + 1 points needed
    assert stop_reason(curve(100, 90, 80), None, 2, 1.0) == "plateau"
    assert stop_reason(curve(100, 90, 80), None, None, 1.0) is None  # rules left unset never stop


def test_budget_from_trains_the_steps_the_other_run_trained_with_the_same_schedule(actions, tmp_path):
    stopped = train(actions, tmp_path / "terminals", validate_every=3, stop_at_perplexity=1e9)
    assert metrics(stopped)["steps"] == 3
    record = metrics(train(actions, tmp_path / "tg", kind="tg", budget_from=stopped))
    assert record["steps"] == 3 and record["stopped_by"] == "budget_from" and record["max_steps"] == 9
    with pytest.raises(ValueError, match="max_steps 9, this run 5"):
        train(actions, tmp_path / "other", kind="tg", budget_from=stopped, max_steps=5)


def test_select_best_keeps_the_lowest_dev_points_weights_also_across_a_kill(actions, tmp_path, monkeypatch):
    """With a scripted dev curve 10, 5, 7 at steps 4, 8, 9, select_best's result is the step-8 model:
    bit for bit the weights of a run on the same schedule that stops at step 8 (budget_from), and the
    same again when the run is killed after step 8 and resumes from its step-6 checkpoint."""
    import steps.tg.language_model as language_model

    curve = iter([10.0, 5.0, 7.0] * 2)
    monkeypatch.setattr(language_model, "split_perplexity", lambda *args, **kwargs: {"perplexity": next(curve), "words": 1})
    settings = dict(validate_every=4, checkpoint_every=3, select_best=True)
    selected = train(actions, tmp_path / "selected", **settings)
    record = metrics(selected)
    assert [(p["step"], p["perplexity"]) for p in record["dev_history"]] == [(4, 10.0), (8, 5.0), (9, 7.0)]
    assert record["selected_step"] == 8 and record["steps"] == 9
    (tmp_path / "eight").mkdir()
    (tmp_path / "eight" / "metrics.json").write_text(json.dumps({"max_steps": 9, "steps": 8}))
    assert weights(selected) == weights(train(actions, tmp_path / "step8", budget_from=tmp_path / "eight"))
    assert weights(selected) != weights(train(actions, tmp_path / "last"))  # the step-9 model differs

    curve = iter([10.0, 5.0, 5.0, 7.0])  # the killed run scores steps 4 and 8, its resumption 8 again and 9
    monkeypatch.setenv(CRASH_AFTER_STEP_ENV, "8")
    with pytest.raises(SimulatedCrash):
        train(actions, tmp_path / "killed", **settings)
    monkeypatch.delenv(CRASH_AFTER_STEP_ENV)
    resumed = train(actions, tmp_path / "killed", **settings)
    assert metrics(resumed)["resumed_from"] == [6] and metrics(resumed)["selected_step"] == 8
    assert weights(resumed) == weights(selected)


def test_the_new_arguments_at_their_defaults_keep_the_cache_key(actions):
    base = dict(actions=actions, kind="tg", max_steps=9)
    key = TrainTgLanguageModel(**base).unique_id
    defaults = dict(validate_every=None, max_validation_sequences=None, stop_at_perplexity=None, plateau_validations=None,
                    plateau_tolerance=0.01, budget_from=None, select_best=False)
    assert TrainTgLanguageModel(**base, **defaults, checkpoint_every=7).unique_id == key
    for name, value in dict(validate_every=100, max_validation_sequences=5, stop_at_perplexity=500.0,
                            plateau_validations=3, plateau_tolerance=0.05, select_best=True).items():
        assert TrainTgLanguageModel(**base, **{name: value}).unique_id != key, name


def test_bad_stop_settings_are_refused_in_one_line(actions, tmp_path):
    with pytest.raises(ValueError, match="need validate_every"):
        train(actions, tmp_path / "a", stop_at_perplexity=500.0)
    with pytest.raises(ValueError, match="must be positive"):
        train(actions, tmp_path / "b", checkpoint_every=0)
    with pytest.raises(ValueError, match="set both or neither"):
        train(actions, tmp_path / "c", validate_every=2, plateau_tolerance=0.1)
    with pytest.raises(ValueError, match="select_best needs validate_every"):
        train(actions, tmp_path / "d", select_best=True)
    assert not list(tmp_path.rglob(CHECKPOINT_NAME))


def test_a_stopped_run_is_listed_unfinished_with_its_dev_curve_until_it_resumes(actions, tmp_path, monkeypatch):
    """`python -m reporting.cache unfinished` on a TG LM stopped after step 4 of 9: how far, its
    kind and seed, the best and last dev perplexity its checkpoint holds; nothing once it has resumed."""
    from tango.workspaces import LocalWorkspace

    from reporting import cache

    settings = dict(actions=actions, kind="txl_terminals", seed=7, max_steps=9, batch_size=8, validate_every=2, checkpoint_every=2,
                    device="cpu")
    # What an experiment file's entry says (`tango run` records it): kind, seed, max_steps, not the defaults.
    written = {"type": "train_tg_lm", "actions": {"ref": "tg_actions"}, "kind": "txl_terminals", "seed": 7, "max_steps": 9}
    workspace = LocalWorkspace(tmp_path / "ws")
    monkeypatch.setenv(CRASH_AFTER_STEP_ENV, "4")
    with pytest.raises(Exception, match="stopping after step 4"):
        TrainTgLanguageModel(**settings, step_config=written).result(workspace)
    monkeypatch.delenv(CRASH_AFTER_STEP_ENV)
    [entry] = cache.unfinished_entries(workspace.dir)
    saved = torch.load(workspace.step_dir(TrainTgLanguageModel(**settings)) / "work" / CHECKPOINT_NAME, weights_only=True)
    curve = {point["step"]: point["perplexity"] for point in saved["state"]["dev_history"]}
    assert sorted(curve) == [2, 4] and entry.step_class == "TrainTgLanguageModel" and entry.state == "stopped"
    assert (entry.unit, entry.done, entry.total, entry.seed, entry.condition) == ("step", 4, 9, 7, "txl_terminals")
    best_at = min(curve, key=curve.get)
    assert (entry.metric, entry.best, entry.best_at, entry.last) == ("dev_perplexity", curve[best_at], best_at, curve[4])
    assert "step 4/9" in cache.format_unfinished([entry]) and "best dev perplexity" in cache.format_unfinished([entry])
    assert metrics(TrainTgLanguageModel(**settings).result(workspace))["resumed_from"] == [4]
    assert cache.unfinished_entries(workspace.dir) == []


def test_the_report_draws_each_cached_lms_dev_curve_a_line_per_kind_and_seed(actions, tmp_path):
    """reporting.curves.tg_curve_series: a cached LM with a dev curve becomes a line "<kind> s<seed>" of
    its file's (scale, language) figure, drawn on a log scale with the lines in its sidecar; one
    without a curve (no validate_every) draws nothing."""
    from reporting.curves import draw_series, tg_curve_series
    from reporting.graphs import FileGraph
    from steps.common.releases import METADATA_FILE

    def graph_of(steps):
        return FileGraph("experiments/smoke/wolof_tg.jsonnet", steps, [{"table": "tg", "scale": "smoke", "row": "tg", "column": "wolof"}])

    cache, steps = tmp_path / "ws" / "cache", {}
    for name, kind, seed, settings in (("curved", "tg", 42, {"validate_every": 4}), ("flat", "txl_terminals", 43, {}),
                                       ("single", "txl_trees", 42, {"validate_every": 4, "closing_nonterminals": "single"})):
        entry = cache / f"TrainTgLanguageModel-002-{name}"
        result = train(actions, entry / "work", kind=kind, seed=seed, **settings)
        (entry / "result").mkdir()
        for file in result.iterdir():
            (entry / "result" / file.name).write_bytes(file.read_bytes())
        (entry / METADATA_FILE).write_text("{}")
        steps[f"lm_{kind}_s{seed}"] = ["TrainTgLanguageModel", entry.name]
    # An LM in another form than the default gets the paper-form files' figure.
    single = [(point["step"], point["perplexity"]) for point in metrics(cache / "TrainTgLanguageModel-002-single" / "result")["dev_history"]]
    assert tg_curve_series(tmp_path / "ws", [graph_of(steps)])[("smoke", "wolof", "tg_paper_form_dev_perplexity")] == {"txl_trees s42": single}
    del steps["lm_txl_trees_s42"]
    graph = graph_of(steps)
    series = tg_curve_series(tmp_path / "ws", [graph])
    expected = [(point["step"], point["perplexity"]) for point in metrics(cache / "TrainTgLanguageModel-002-curved" / "result")["dev_history"]]
    assert dict(series) == {("smoke", "wolof", "tg_dev_perplexity"): {"tg s42": expected}} and [s for s, _ in expected] == [4, 8, 9]
    [figure] = draw_series(series, tmp_path / "curves")
    assert figure == tmp_path / "curves" / "smoke" / "wolof_tg_dev_perplexity.png" and figure.stat().st_size > 0
    assert json.loads(figure.with_suffix(".json").read_text())["lines"] == {"tg s42": [list(p) for p in expected]}

    # The report's budget table: the curved LM's steps, what ended it (its own 9-step limit), the step
    # whose weights it kept (its last: no select_best) and that dev point; the LM without a curve is not
    # listed. A committed row (from before checkpoint selection: no "kept step") stays for an LM this
    # cache lacks and reads as its last step; the cache's row replaces the record's for the same LM.
    from reporting.report import NOTHING, TG_BUDGETS, tg_budget_section

    words = metrics(cache / "TrainTgLanguageModel-002-curved" / "result")["dev_history"][-1]["words"]
    ours = f"| smoke | Wolof | default | 42 | TG | 9 | step limit | 9 | {expected[-1][1]:.2f} | {words:,} | cpu |"
    recorded = (f"# Results\n\n## {TG_BUDGETS}\n\n| scale | language | seed | model | steps | stopped by | last dev point (ppl) "
                "| dev words | device |\n|---|---|---|---|---|---|---|---|---|\n"
                "| paper | Wolof | 43 | TXL (terminals) | 2,000 | dev perplexity rule | 371.42 | 23,463 | cpu |\n"
                "| smoke | Wolof | 42 | TG | 5 | step limit | 1.00 | 1 | cpu |\n")
    rows = [line for line in tg_budget_section(tmp_path / "ws", [graph], recorded).splitlines() if line.startswith("| ")][1:]
    assert rows == ["| paper | Wolof | default | 43 | TXL (terminals) | 2,000 | dev perplexity rule | 2,000 | 371.42 | 23,463 | cpu |", ours]
    # The paper-form LM has its own row, its form named.
    rows = [line for line in tg_budget_section(tmp_path / "ws", [graph_of({**steps, "lm_txl_trees_s42": [
        "TrainTgLanguageModel", "TrainTgLanguageModel-002-single"]})]).splitlines() if line.startswith("| ")][1:]
    assert rows[0] == ours and rows[1].startswith('| smoke | Wolof | closing_nonterminals: "single" | 42 | TXL (trees) | 9 |')
    assert tg_budget_section(tmp_path / "empty", [graph]) == NOTHING
    # An LM no experiment file builds any more (a re-keyed config's) is neither drawn nor listed.
    assert tg_curve_series(tmp_path / "ws", []) == {} and tg_budget_section(tmp_path / "ws", []) == NOTHING
