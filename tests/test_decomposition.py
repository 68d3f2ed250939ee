"""The Wolof gap decomposition (reporting.decomposition): the grid from the cache, each factor as a
paired difference a hand computation gives, the effort fine-tuning used, and the record kept (†)."""
from __future__ import annotations

import dataclasses
import json

import pytest
from tango.workspaces import LocalWorkspace

from reporting import decomposition
from test_tables import _run


def _graph(path):
    """The step graph of an experiment file (a path from the repository root)."""
    from tango.common import Params
    from tango.step_graph import StepGraph

    import steps  # noqa: F401
    from reporting.graphs import REPO

    return StepGraph.from_params(Params.from_file(REPO / path).pop("steps"))


def _written_steps(path):
    """An experiment file's steps as written (plain dicts, before Tango builds them)."""
    from tango.common import Params

    from reporting.graphs import REPO

    return Params.from_file(REPO / path).as_dict()["steps"]


def _cell_file(path, encoder, regime, runs):
    """A decomposition cell's steps, named as lib.libsonnet names them: runs = [(seed, LAS, steps, best epoch)]."""
    steps = {}
    for seed, las, used, best in runs:
        steps[f"ud_parser_s{seed}"] = {"type": "fake_ud_finetune", "las": las, "seed": seed, "steps": used, "best_epoch": best}
        steps[f"ud_parser_score_s{seed}"] = {"type": "score_cell", "finetuned": {"type": "ref", "ref": f"ud_parser_s{seed}"},
                                             "table": "decomposition:ud", "row": encoder, "column": "wolof", "scale": regime, "seed": seed}
    steps["cell"] = {"type": "aggregate_cell", "scores": [{"type": "ref", "ref": f"ud_parser_score_s{s}"} for s, *_ in runs]}
    path.write_text(json.dumps({"steps": steps}))
    return path


def test_decomposition_factors_and_record(tmp_path, monkeypatch):
    grid = {("random-init", "cpu"): [(1, 60.0, 1500, 18), (2, 61.0, 1500, 20), (3, 62.0, 1500, 19)],
            ("cpu", "cpu"): [(1, 61.0, 1500, 20), (2, 63.0, 1500, 17), (3, 62.0, 1500, 20)],
            ("cpu", "paper_tenth"): [(1, 65.0, 4000, 10), (2, 66.0, 5000, 15), (3, 67.0, 6000, 20)]}
    paths = [_cell_file(tmp_path / f"{e}_{r}.json", e, r, runs) for (e, r), runs in grid.items()]
    workspace = LocalWorkspace(tmp_path / "ws")
    for path in paths:
        _run(path, workspace)
    monkeypatch.setattr(decomposition, "files", lambda: paths)
    monkeypatch.setattr(decomposition, "DOCS", tmp_path / "docs")

    cells, effort = decomposition.decomposition_cells(workspace.dir)
    rows = {(task, what.split(" (")[0], where): (delta, n) for task, what, where, delta, n in decomposition.factor_rows(cells)}
    half = 4.302653 / 3 ** 0.5  # t(0.975, 2) · sd 1 / √3
    assert rows[("UD", "pretraining at all", "regime cpu")] == (f"+1.00 ± {half:.2f}", "3")  # 1, 2, 0
    assert rows[("UD", "the paper's head and rates, 30 epochs", "encoder cpu")] == (f"+4.00 ± {half:.2f}", "3")  # 4, 3, 5
    assert len(rows) == 2  # no other factor has both cells
    five = {"seeds": [1, 2, 3, 4, 5], "test": {"values": [60.0, 61.0, 62.0, 70.0, 70.0]}}
    three = {"seeds": [1, 2, 3], "test": {"values": [61.0, 63.0, 62.0]}}
    shared = decomposition.paired_difference(three, five)  # seeds 1-3 only: 1, 2, 0
    assert (shared.n, shared.text()) == (3, f"+1.00 ± {half:.2f} (3 shared seeds)")
    assert decomposition.paired_difference(three, three).text() == f"+0.00 ± 0.00"  # same seeds: no note
    assert effort[("decomposition:ud", "cpu", "paper_tenth")][:2] == (5000, 15)
    text = decomposition.markdown(cells, effort)
    assert "| cpu | 62.00 ± 1.00<br>dev 63.00<br>1,500 steps (best epoch 19.0) | — | 66.00 ± 1.00<br>dev 67.00<br>5,000 steps (best epoch 15.0) | — |" in text
    assert "†" not in text
    # A cell whose file still has seeds running: its finished seeds under the "—", never in the record's CSV.
    runs = {("decomposition:ud", "paper", "paper"): [{"seed": 42, "primary_metric": "las", "test": {"las": 76.0}, "dev": {"las": 77.0}},
                                                     {"seed": 43, "primary_metric": "las", "test": {"las": 75.0}, "dev": {"las": 76.0}}],
            ("decomposition:ud", "cpu", "cpu"): [{"primary_metric": "las", "test": {"las": 1.0}, "dev": {"las": 1.0}}]}
    so_far = decomposition.seeds_so_far(runs, cells)
    assert list(so_far) == [("decomposition:ud", "paper", "paper")]  # cpu × cpu is a whole cell already
    partial = decomposition.markdown(cells, effort, so_far)
    assert "| paper | — | — | — | — | —<br>2 finished seeds, no aggregate yet: test 75.50, dev 76.50 |" in partial
    assert "75.50" not in decomposition.to_csv(cells, effort)
    # A new machine's empty cache: the committed predictions' seeds stand in (†); cached ones win.
    predictions = tmp_path / "predictions"
    for seed, (test, dev) in {42: (76.19, 76.23), 43: (76.05, 76.01)}.items():
        folder = predictions / "decomposition" / "paper" / "ud" / "paper" / "wolof" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(json.dumps({"seed": seed, "primary_metric": "las", "test": {"las": test}, "dev": {"las": dev}}))
    stray = predictions / "decomposition" / "paper" / "ud" / "paper" / "maltese" / "seed42"
    stray.mkdir(parents=True)
    (stray / "metrics.json").write_text("{}")  # not the grid's language: never read
    no_runs = tmp_path / "runs.csv"  # none yet
    recorded = decomposition.recorded_runs(predictions, no_runs)
    assert list(recorded) == [("decomposition:ud", "paper", "paper")] and len(recorded[("decomposition:ud", "paper", "paper")]) == 2
    fresh = decomposition.seeds_so_far({}, cells, recorded)
    assert "| paper | — | — | — | — | —<br>2 finished seeds, no aggregate yet: test 76.12, dev 76.12 † |" in decomposition.markdown(cells, effort, fresh)
    assert decomposition.seeds_so_far(runs, cells, recorded) == so_far  # this cache ran seeds 42 and 43 itself
    # Seeds finished on two machines: this cache's seed 44 joins the committed 42 and 43 (†), not replaces them.
    seed_44 = {("decomposition:ud", "paper", "paper"): [{"seed": 44, "primary_metric": "las", "test": {"las": 77.0}, "dev": {"las": 76.0}}]}
    mixed = decomposition.seeds_so_far(seed_44, cells, recorded)
    assert mixed[("decomposition:ud", "paper", "paper")] == decomposition.SeedsSoFar([(76.19, 76.23), (76.05, 76.01), (77.0, 76.0)], True)
    assert "—<br>3 finished seeds, no aggregate yet: test 76.41, dev 76.08 † |" in decomposition.markdown(cells, effort, mixed)
    # The paper-scale µB-M file's committed seeds are the same steps: seed 44 joins 42 and 43 on an empty
    # cache too; the grid's own folder wins for a seed both hold.
    for seed, test in {44: 77.0, 42: 1.0}.items():
        folder = predictions / "gpu-paper" / "table2" / "M" / "wolof" / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(json.dumps({"seed": seed, "primary_metric": "las", "test": {"las": test}, "dev": {"las": 76.0}}))
    both = decomposition.recorded_runs(predictions, no_runs)
    assert sorted(run["seed"] for run in both[("decomposition:ud", "paper", "paper")]) == [42, 43, 44]
    assert decomposition.seeds_so_far({}, cells, both) == mixed
    # The long encoder's cpu-regime fine-tunes are experiments/long_pretraining's own steps: its runs.csv rows
    # (predictions not committed) count for the grid's long × cpu cell; other rows do not.
    no_runs.write_text("scale,table,row,column,seed,metric,dev,test\n"
                       "cpu,table2,M-long,wolof,42,las,70.61,70.60\ncpu,table2,M-long,wolof,43,las,71.02,70.72\n"
                       "cpu,table3,M-long,wolof,42,f1,88.73,85.82\ncpu,table2,M,wolof,42,las,68.0,68.0\n"
                       "cpu,table2,M-long,maltese,42,las,1.0,1.0\n")
    with_long = decomposition.recorded_runs(predictions, no_runs)
    assert sorted(run["seed"] for run in with_long[("decomposition:ud", "long", "cpu")]) == [42, 43]
    assert [run["test"] for run in with_long[("decomposition:ner", "long", "cpu")]] == [{"f1": 85.82}]
    assert "| long | —<br>2 finished seeds, no aggregate yet: test 70.66, dev 70.81 † |" in decomposition.markdown(
        cells, effort, decomposition.seeds_so_far({}, cells, with_long))

    decomposition.write(cells, effort, decomposition.DOCS)  # the record, then a fresh cache without these cells
    recorded, recorded_effort = decomposition.decomposition_cells(LocalWorkspace(tmp_path / "fresh").dir)
    assert all(c.recorded for c in recorded if c.result) and len([c for c in recorded if c.result]) == 3
    again = {(task, what.split(" (")[0], where): delta for task, what, where, delta, _ in decomposition.factor_rows(recorded)}
    assert again[("UD", "pretraining at all", "regime cpu")] == f"+1.00 ± {half:.2f} †"
    assert recorded_effort[("decomposition:ud", "cpu", "paper_tenth")] == pytest.approx((5000, 15, True))
    every = decomposition.markdown(recorded, recorded_effort)  # every figure the record's: said once, no †
    assert "62.00 ± 1.00<br>" in every and "†" not in every and "Provenance: every figure is the committed record" in every
    # Only a recorded `paper`-encoder cell brings the note on which pretraining of that encoder it was fine-tuned from.
    assert "first pretraining" not in every and "first pretraining" not in text
    cpu_cell = next(c for c in recorded if c.result and c.row == "cpu" and c.scale == "cpu")
    assert "first pretraining" in decomposition.markdown([*recorded, dataclasses.replace(cpu_cell, row="paper")], recorded_effort)


def test_dev_curves_average_each_cells_seeds_and_the_figure_is_drawn_from_the_cache(tmp_path, monkeypatch):
    """The mean dev LAS at each step over the seeds that reached it (a seed stopped early by patience
    leaves the later means to the others), one line per cell, drawn from cached fine-tunings."""
    history = lambda *las: [{"epoch": e, "step": 100 * e, "las": v} for e, v in enumerate(las)]  # noqa: E731
    runs = {("decomposition:ud", "cpu", "cpu"): [{"history": history(1.0, 50.0, 60.0)}, {"history": history(3.0, 54.0)}],
            ("decomposition:ud", "random-init", "cpu"): [{"history": history(0.0, 40.0)}]}
    curves = decomposition.dev_curves(runs)
    assert curves["decomposition:ud"][("cpu", "cpu")] == [(0, 2.0, 2), (100, 52.0, 2), (200, 60.0, 1)]
    assert curves["decomposition:ud"][("random-init", "cpu")] == [(0, 0.0, 1), (100, 40.0, 1)]
    assert decomposition.draw_dev_curves({}, tmp_path / "none.png") is None and not (tmp_path / "none.png").exists()

    path = tmp_path / "cell.json"
    steps = {}
    for seed, las in ((1, (1.0, 50.0, 60.0)), (2, (3.0, 54.0))):
        steps[f"ud_parser_s{seed}"] = {"type": "fake_ud_finetune", "las": 60.0, "seed": seed, "history": history(*las)}
        steps[f"ud_parser_score_s{seed}"] = {"type": "score_cell", "finetuned": {"type": "ref", "ref": f"ud_parser_s{seed}"},
                                             "table": "decomposition:ud", "row": "cpu", "column": "wolof", "scale": "cpu_x2", "seed": seed}
    steps["cell"] = {"type": "aggregate_cell", "scores": [{"type": "ref", "ref": f"ud_parser_score_s{s}"} for s in (1, 2)]}
    path.write_text(json.dumps({"steps": steps}))
    workspace = LocalWorkspace(tmp_path / "ws")
    _run(path, workspace)
    monkeypatch.setattr(decomposition, "files", lambda: [path])
    runs = decomposition.finetune_runs(workspace.dir)
    figure = decomposition.draw_dev_curves(runs, tmp_path / "curves" / "decomposition.png")
    assert figure is not None and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cached = decomposition.dev_curves(runs)
    assert cached == {"decomposition:ud": {("cpu", "cpu_x2"): [(0, 2.0, 2), (100, 52.0, 2), (200, 60.0, 1)]}}


def test_decomposition_files_cover_the_grid():
    names = {p.name for p in decomposition.files()}
    assert names == set(decomposition.grid_files())
    # Every encoder under each full regime, the narrow ones only where they are run.
    assert len(names) == len(decomposition.ENCODERS) * (len(decomposition.REGIMES) - 1) + 1
    assert "wolof_paper_paper_ner_decay.jsonnet" in names and "wolof_cpu_paper_ner_decay.jsonnet" not in names


def test_the_cpu_regime_cells_are_the_seed_files_fine_tunings_and_cpu_x2_changes_only_the_length():
    """A cpu-regime cell runs nothing but its score cells on top of experiments/seeds' fine-tunings;
    cpu_x2 shares everything upstream of fine-tuning and changes epochs and patience alone, for
    UD and NER (one factor at a time)."""
    seeds = _graph("experiments/seeds/wolof_m_5seeds.jsonnet")
    cpu = _graph("experiments/decomposition/wolof_cpu_cpu.jsonnet")
    longer = _graph("experiments/decomposition/wolof_cpu_cpu_x2.jsonnet")
    for name in seeds:
        if "_score_s" not in name and not name.endswith("_cell"):
            assert cpu[name].unique_id == seeds[name].unique_id, name
    for task in ("ud_parser", "ner"):
        base, longer_run = cpu[f"{task}_s42"], longer[f"{task}_s42"]
        assert longer_run.unique_id != base.unique_id
        assert longer_run.kwargs["encoder"].unique_id == base.kwargs["encoder"].unique_id
        changed = {k for k, v in vars(longer_run.kwargs["config"]).items() if vars(base.kwargs["config"])[k] != v}
        assert changed == {"epochs", "patience"} - ({"patience"} if base.kwargs["config"].patience == 20 else set())
        assert longer_run.kwargs["config"].epochs == 2 * base.kwargs["config"].epochs
    assert sorted(n for n in longer if "_score_s" in n) == [f"{t}_score_s{s}" for t in ("ner", "ud_parser") for s in (42, 43, 44)]
    assert {longer[n].kwargs["scale"] for n in longer if "_score_s" in n} == {"cpu_x2"}


def test_cpu_relpos_changes_only_the_pretrained_positions():
    """One factor: the cpu_relpos cell shares every step upstream of pretraining with the cpu cell,
    pretrains with the same settings but the reference's relative_key_query positions, and fine-tunes
    and scores the same way."""
    cpu = _graph("experiments/decomposition/wolof_cpu_cpu.jsonnet")
    relpos = _graph("experiments/decomposition/wolof_cpu_relpos_cpu.jsonnet")
    assert set(cpu) == set(relpos)
    for name in ("corpus", "corpus_parser", "parsed_corpus", "tokenizer", "pretraining_data"):
        assert relpos[name].unique_id == cpu[name].unique_id, name
    base, changed = cpu["pretrained_model"].kwargs, relpos["pretrained_model"].kwargs
    assert relpos["pretrained_model"].unique_id != cpu["pretrained_model"].unique_id
    assert base["model"] == {} and changed["model"] == {"position_embedding_type": "relative_key_query"}
    same = lambda a, b: a.unique_id == b.unique_id if hasattr(a, "unique_id") else (vars(a) == vars(b) if hasattr(a, "__dict__") else a == b)  # noqa: E731
    assert set(base) == set(changed) and all(same(base[k], changed[k]) for k in base if k != "model")
    for task in ("ud_parser", "ner"):
        assert vars(relpos[f"{task}_s42"].kwargs["config"]) == vars(cpu[f"{task}_s42"].kwargs["config"])
        assert relpos[f"{task}_s42"].kwargs["encoder"].unique_id == relpos["pretrained_model"].unique_id
    assert {relpos[n].kwargs["row"] for n in relpos if "_score_s" in n} == {"cpu_relpos"}


def test_the_committed_dev_curve_figure_keeps_its_cells_when_a_partial_cache_redraws_it(tmp_path, monkeypatch):
    """As the training curves: the record's cells are redrawn from the sidecar beside this cache's
    (the cache wins on a cell both have); a committed figure without a sidecar is left as it is."""
    import json

    from reporting import decomposition

    figure = tmp_path / "wolof_decomposition_dev_curves.png"
    first = {"decomposition:ud": {("cpu", "cpu"): [(0, 1.0, 5)], ("random-init", "cpu"): [(0, 2.0, 5)]}}
    monkeypatch.setattr(decomposition, "dev_curves", lambda runs: {t: dict(c) for t, c in first.items()})
    assert decomposition.draw_dev_curves({}, figure, keep_recorded=True) == figure
    second = {"decomposition:ud": {("cpu", "cpu"): [(0, 3.0, 2)], ("cpu_relpos", "cpu"): [(0, 4.0, 5)]}}
    monkeypatch.setattr(decomposition, "dev_curves", lambda runs: {t: dict(c) for t, c in second.items()})
    decomposition.draw_dev_curves({}, figure, keep_recorded=True)
    cells = json.loads(figure.with_suffix(".json").read_text())["lines"]
    assert cells == {"decomposition:ud|cpu|cpu": [[0, 3.0, 2]], "decomposition:ud|cpu_relpos|cpu": [[0, 4.0, 5]],
                     "decomposition:ud|random-init|cpu": [[0, 2.0, 5]]}
    figure.with_suffix(".json").unlink()
    before = figure.read_bytes()
    assert decomposition.draw_dev_curves({}, figure, keep_recorded=True) is None and figure.read_bytes() == before


def test_the_reference_head_regime_changes_only_the_head():
    """paper_tenth_reference is paper_tenth with reference_head set on each fine-tune, nothing else."""
    ours = _written_steps("experiments/decomposition/wolof_paper_paper_tenth.jsonnet")
    reference = _written_steps("experiments/decomposition/wolof_paper_paper_tenth_reference.jsonnet")
    assert set(ours) == set(reference)
    for name, step in reference.items():
        if step["type"] in ("finetune_ud_parser", "finetune_ner"):
            assert step.pop("reference_head") is True and "reference_head" not in ours[name]
        elif step["type"] == "score_cell":
            assert (step.pop("scale"), ours[name].pop("scale")) == ("paper_tenth_reference", "paper_tenth")
        assert step == ours[name], name


def test_the_ner_decay_regime_changes_only_the_ner_weight_decay():
    """paper_ner_decay is the paper regime with NER weight decay 0.01 on each NER fine-tune, nothing
    else, and its file holds no UD step (its UD would be the paper regime's own steps)."""
    ours = _written_steps("experiments/decomposition/wolof_paper_paper.jsonnet")
    decayed = _written_steps("experiments/decomposition/wolof_paper_paper_ner_decay.jsonnet")
    assert set(decayed) == {name for name in ours if not name.startswith("ud_parser")}
    assert sum(step["type"] == "finetune_ner" for step in decayed.values()) == 5
    for name, step in decayed.items():
        if step["type"] == "finetune_ner":
            assert step["config"].pop("weight_decay") == 0.01 and "weight_decay" not in ours[name]["config"]
        elif step["type"] == "score_cell":
            assert (step.pop("scale"), ours[name].pop("scale")) == ("paper_ner_decay", "paper")
        assert step == ours[name], name
    assert decomposition.regimes_of("decomposition:ud")[-1] == "paper" and "paper_ner_decay" in decomposition.regimes_of("decomposition:ner")
