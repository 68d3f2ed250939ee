"""Score and aggregate cells, then rebuild the tables from a partly filled cache.

A stand-in fine-tuning step (registered here) writes a metrics.json with a chosen LAS, so the
test exercises the real score_cell / aggregate_cell steps, the real Tango cache lookups of
`reporting.tables`, and the paper values, in seconds.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from tango import Step
from tango.common import Params
from tango.step_graph import StepGraph
from tango.workspaces import LocalWorkspace

import steps  # noqa: F401
from reporting import tables
from reporting.cells import Cell, collect_cells, merge_record, record_cells
from reporting.graphs import REPO


def _experiment(path: Path, row: str, column: str, seeds_and_las) -> Path:
    steps_config = {}
    for seed, las in seeds_and_las:
        steps_config[f"ft_s{seed}"] = {"type": "fake_ud_finetune", "las": las, "seed": seed}
        steps_config[f"score_s{seed}"] = {
            "type": "score_cell", "finetuned": {"type": "ref", "ref": f"ft_s{seed}"},
            "table": "table2", "row": row, "column": column, "scale": "cpu", "seed": seed,
        }
    steps_config["cell"] = {"type": "aggregate_cell", "scores": [{"type": "ref", "ref": f"score_s{s}"} for s, _ in seeds_and_las]}
    path.write_text(json.dumps({"steps": steps_config}))
    return path


def _run(path: Path, workspace: LocalWorkspace):
    graph = StepGraph.from_params(Params.from_file(path).pop("steps"))
    return graph["cell"].result(workspace)


def test_tables_from_partly_filled_cache(tmp_path):
    workspace = LocalWorkspace(tmp_path / "ws")
    computed = _experiment(tmp_path / "wolof_m.json", "M", "wolof", [(1, 70.0), (2, 72.0)])
    pending = _experiment(tmp_path / "wolof_mx.json", "MX", "wolof", [(1, 75.0)])
    random_init = _experiment(tmp_path / "wolof_rand.json", "random-init", "wolof", [(1, 60.0), (2, 63.0)])
    other_seed = _experiment(tmp_path / "wolof_mp.json", "MP", "wolof", [(3, 74.0)])
    aggregate = _run(computed, workspace)
    assert aggregate["n"] == 2 and aggregate["seeds"] == [1, 2]
    assert aggregate["test"]["mean"] == pytest.approx(71.0)
    assert aggregate["test"]["sd"] == pytest.approx(2 ** 0.5)
    assert aggregate["dev"]["mean"] == pytest.approx(72.0)
    _run(random_init, workspace)
    _run(other_seed, workspace)

    cells, problems = collect_cells([computed, pending, random_init, other_seed], workspace.dir)
    assert not problems
    by_row = {c.row: c for c in cells}
    assert by_row["M"].result is not None and by_row["MX"].result is None  # MX was never run

    out = tmp_path / "tables"
    written = tables.write_tables(cells, out)
    markdown = (out / "cpu" / "table2.md").read_text()
    m_line = next(line for line in markdown.splitlines() if line.startswith("| µB-M |"))
    # ours beside the paper's 77.71 for Wolof; Coptic not computed → "—" beside 88.47
    assert "| 71.00 ± 1.41 | 77.71 |" in m_line and "| — | 88.47 |" in m_line
    mx_line = next(line for line in markdown.splitlines() if line.startswith("| µB-MX |"))
    assert "| — | 77.74 |" in mx_line
    assert any(line.startswith("| random-init | 61.50 ± 2.12 | — |") for line in markdown.splitlines())
    # Paired by seed: differences −10, −9 → −9.5 ± t(0.975, 1) · 0.7071 / √2 = 6.35; MP's seed 3
    # has no partner in M's seeds 1, 2.
    delta_lines = markdown.split("paired by seed:")[1].splitlines()
    assert any(line.startswith("| random-init | -9.50 ± 6.35 |") for line in delta_lines)
    assert any(line.startswith("| µB-MP | unpaired seeds (3 vs 1 2) |") for line in delta_lines)

    rows = list(csv.DictReader((out / "cpu" / "table2.csv").open()))
    m_wolof = next(r for r in rows if r["row"] == "M" and r["column"] == "wolof")
    assert float(m_wolof["ours_mean"]) == pytest.approx(aggregate["test"]["mean"])
    assert m_wolof["seeds"] == "1 2" and m_wolof["paper"] == "77.71" and m_wolof["test_values"] == "70.0000 72.0000"
    random_wolof = next(r for r in rows if r["row"] == "random-init" and r["column"] == "wolof")
    assert (random_wolof["delta"], random_wolof["delta_from"], random_wolof["delta_ci95"], random_wolof["delta_seeds"]) == ("-9.5000", "M", "6.3531", "2")
    assert "\\begin{tabular}" in (out / "cpu" / "table2.tex").read_text()
    assert (out / "cpu" / "table2_delta.png") in written["cpu"]  # random-init − M is plottable
    assert not (out / "cpu" / "table3.md").exists()  # no figure in it: not written
    (out / "cpu" / "table2.md").write_text("an older state's table")  # a table that lost its figures goes
    tables.write_tables([c for c in cells if c.table != "table2"], out, scales=["cpu"])
    assert not (out / "cpu" / "table2.md").exists() and not (out / "cpu" / "table2_delta.png").exists()


def test_corpus_variant_against_its_language(tmp_path):
    """A corpus variant's column (Coptic leak-free) gets its own header and note, and its difference
    from the same row on the language's own corpus, paired by seed: −1, −2, 0 → −1.00 ± t(0.975, 2) · 1 / √3."""
    workspace = LocalWorkspace(tmp_path / "ws")
    files = [_experiment(tmp_path / "coptic_m.json", "M", "coptic", [(1, 80.0), (2, 82.0), (3, 81.0)]),
             _experiment(tmp_path / "coptic_m_leakfree.json", "M", "coptic_leakfree", [(1, 79.0), (2, 80.0), (3, 81.0)])]
    for file in files:
        _run(file, workspace)
    cells, _ = collect_cells(files, workspace.dir)
    tables.write_tables(cells, tmp_path / "tables")
    markdown = (tmp_path / "tables" / "cpu" / "table2.md").read_text()
    assert "| Coptic leak-free‡ ours | paper |" in markdown and "Coptic leak-free: UD Coptic-Scriptorium r2.11" in markdown
    assert "less the 41 documents" in markdown
    variant_lines = markdown.split("paired by seed:")[-1].splitlines()
    assert f"| µB-M | Coptic leak-free − Coptic | -1.00 ± {4.302652729911275 / 3 ** 0.5:.2f}" in "\n".join(variant_lines)


def test_a_cell_shows_its_result_with_the_most_seeds(tmp_path):
    """experiments/ builds a cell with one seed, experiments/seeds/ the same cell with three: the
    table's is the 3-seed result in either file order, and a one-seed cache cell does not replace a
    3-seed cell of record (a tie goes to the cache)."""
    workspace = LocalWorkspace(tmp_path / "ws")
    one = _experiment(tmp_path / "maltese_m.json", "M", "maltese", [(42, 80.0)])
    three = _experiment(tmp_path / "maltese_m_3seeds.json", "M", "maltese", [(42, 80.0), (43, 81.0), (44, 82.0)])
    for file in (one, three):
        _run(file, workspace)
    for order in ([one, three], [three, one]):
        (cell,), _ = collect_cells(order, workspace.dir)
        assert cell.result["n"] == 3 and cell.mean == pytest.approx(81.0)
    (single,), _ = collect_cells([one], workspace.dir)
    (recorded,), _ = collect_cells([three], workspace.dir)
    recorded.recorded = True
    assert merge_record([single], [recorded]) == [recorded]
    (again,), _ = collect_cells([three], workspace.dir)
    assert merge_record([again], [recorded]) == [again]


def test_aggregate_refuses_mixed_cells():
    from steps.evaluate.scoring import AggregateCell

    one = {"table": "table2", "row": "M", "column": "wolof", "scale": "cpu", "task": "ud_parsing", "metric": "las",
           "seed": 1, "test": 70.0, "dev": 71.0}
    with pytest.raises(ValueError, match="different cells"):
        AggregateCell().run([one, dict(one, row="MX", seed=2)])
    with pytest.raises(ValueError, match="repeated seeds"):
        AggregateCell().run([one, dict(one)])


def test_every_experiment_file_builds_a_step_graph():
    """Each experiment file evaluates with the builder and names only registered step types
    (a scale block missing a field fails here, not twenty minutes into a run)."""
    files = sorted(REPO.joinpath("experiments").rglob("*.jsonnet"))
    assert len(files) > 100
    registered = set(Step.list_available())
    for path in files:
        config = Params.from_file(path).as_dict(quiet=True)
        for name, step in config["steps"].items():
            assert step["type"] in registered, f"{path.name}: step {name} has unknown type {step['type']}"


def test_pronto_fine_tuning_rate_follows_the_encoder_kind():
    """At cpu scale a pretrained encoder fine-tunes PrOnto at `pronto_pretrained`'s rate and the
    random-init control at the plain `pronto` rate; task-specific settings still apply to both."""
    def pronto_configs(name):
        steps = Params.from_file(REPO / "experiments" / name).as_dict(quiet=True)["steps"]
        return {step["task"]: step["config"] for step in steps.values() if step["type"] == "finetune_pronto"}

    pretrained, control = pronto_configs("spanish_pronto_sample_m.jsonnet"), pronto_configs("spanish_pronto_sample.jsonnet")
    assert len(pretrained) == len(control) == 5
    assert {config["lr"] for config in pretrained.values()} == {1e-4}
    assert {config["lr"] for config in control.values()} == {3e-4}
    assert pretrained["sentence_mood"]["epochs"] == control["sentence_mood"]["epochs"] == 8


def test_agreement_table_shows_its_cells_beside_the_tg_papers_finding(tmp_path):
    """The TG agreement probe's cells (evaluate_tg_agreement → aggregate_cell) make their own table,
    English only, with the TG paper's SG figures beside it; an uncached row stays "—"."""
    from steps.evaluate.scoring import AggregateCell

    def cell(row, accuracies):
        scores = [dict(table="tg_agreement", row=row, column="english", scale="cpu", task="agreement", metric="accuracy",
                       seed=42 + i, test=value, dev=None) for i, value in enumerate(accuracies)]
        return Cell("tg_agreement", "cpu", row, "english", result=AggregateCell().run(scores=scores))

    cells = [cell("tg", [60.0, 62.0, 64.0]), cell("txl_trees", [58.0, 58.0, 61.0]), Cell("tg_agreement", "cpu", "txl_terminals", "english")]
    tables.write_tables(cells, tmp_path, scales=["cpu"])
    markdown = (tmp_path / "cpu" / "tg_agreement.md").read_text()
    table = markdown.split("Difference from")[0]
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    assert "62.00 ± 2.00" in rows["TG"] and "59.00 ± 1.73" in rows["TXL (trees)"] and "—" in rows["TXL (terminals)"]
    assert "Wolof" not in markdown and "TG 82.5 ± 1.6 > TXL (trees) 80.2 ± 1.6" in markdown
    assert "Here, best first: English TG 62.00 > TXL (trees) 59.00." in markdown  # accuracy: higher first
    perplexities = [Cell("tg", "cpu", row, "wolof", result=AggregateCell().run(scores=[
        dict(table="tg", row=row, column="wolof", scale="cpu", task="language_modelling", metric="perplexity",
             seed=42, test=value, dev=None)])) for row, value in (("tg", 20.0), ("txl_terminals", 10.0))]
    tables.write_tables(perplexities, tmp_path, scales=["cpu"])
    assert "Here, best first: Wolof TXL (terminals) 10.00 < TG 20.00." in (tmp_path / "cpu" / "tg.md").read_text()

    # RESULTS.md: the TG tables leave the paper tables' summary for their own section, finding included.
    paper_cell = Cell("table2", "cpu", "M", "wolof", result=AggregateCell().run(scores=[
        dict(table="table2", row="M", column="wolof", scale="cpu", task="ud", metric="las", seed=42, test=68.0, dev=67.0)]))
    paper_summary = tables.markdown_summary(cells + [paper_cell])
    tg_summary = tables.markdown_summary(cells + [paper_cell], tables=sorted(tables.LOCAL_TABLES))
    assert "Table 2" in paper_summary and "Transformer Grammars" not in paper_summary
    assert "Table 2" not in tg_summary and "62.00 ± 2.00" in tg_summary and "TG 82.5 ± 1.6" in tg_summary


def test_tg_tables_set_tg_against_txl_trees_paired_by_seed(tmp_path):
    """The TG paper's comparison under the TG tables: TG − TXL (trees) by seed, with the 95 % t-interval
    computed here by hand; TXL (terminals) (p(x), not a bound on p(x, y)) gets no difference."""
    import math
    import statistics

    from steps.evaluate.scoring import AggregateCell

    values = {"tg": [60.0, 62.0, 64.0], "txl_trees": [58.0, 58.0, 61.0], "txl_terminals": [50.0, 51.0, 52.0]}
    cells = [Cell("tg_agreement", "cpu", row, "english", result=AggregateCell().run(scores=[
        dict(table="tg_agreement", row=row, column="english", scale="cpu", task="agreement", metric="accuracy",
             seed=42 + i, test=value, dev=None) for i, value in enumerate(accuracies)])) for row, accuracies in values.items()]
    tables.write_tables(cells, tmp_path, scales=["cpu"])
    differences = [a - b for a, b in zip(values["tg"], values["txl_trees"])]
    half_width = 4.302653 * statistics.stdev(differences) / math.sqrt(len(differences))  # t(0.975, 2)
    markdown = (tmp_path / "cpu" / "tg_agreement.md").read_text()
    lines = markdown.split("Difference from TXL (trees)")[1].splitlines()
    assert f"| TG | {statistics.fmean(differences):+.2f} ± {half_width:.2f} |" in lines
    assert not any(line.startswith("| TXL (terminals)") for line in lines)
    rows = {r["row"]: r for r in csv.DictReader((tmp_path / "cpu" / "tg_agreement.csv").open())}
    assert (rows["tg"]["delta"], rows["tg"]["delta_from"], rows["tg"]["delta_seeds"]) == ("3.0000", "txl_trees", "3")
    assert float(rows["tg"]["delta_ci95"]) == pytest.approx(half_width, abs=1e-4)
    assert rows["txl_terminals"]["delta"] == rows["txl_trees"]["delta"] == ""
    # Read against the TG paper's SG score difference (TG 82.5 − TXL (trees) 80.2: TG better).
    assert ("TG − TXL (trees) against the TG paper's +2.3 (SyntaxGym SG score, TG better): English +3.00 ± 2.48: "
            "TG better, its interval excludes 0: the paper's direction.") in markdown


def test_related_table_shows_languages_with_results_and_each_finding_once():
    """The related-biases table is Wolof-only while no other language has a cell, and each seed
    paper's finding is written once under the table, naming its rows, not repeated per row."""
    def cell(table, row, language, value=None):
        result = None if value is None else {"seeds": [42, 43], "n": 2, "test": {"mean": value, "sd": 1.0, "values": [value - 1, value + 1]}}
        return Cell(table, "cpu", row, language, result)

    empty = [cell("related:ud", row, language) for row in ("M", "M-A5", "M-A9", "C5") for language in ("wolof", "maltese")]
    text = tables.related_markdown(empty, "cpu", title="Related")
    assert "Maltese" not in text and "| model (mean ± sd over seeds) | Wolof UD LAS | Wolof NER F1 | Wolof MLM acc. |" in text
    assert "not in this cache" in text
    assert text.count("NLM-A:") == 1 and "- µB-M-A5, µB-M-A9: Edman et al." in text
    filled = empty + [cell("related:ud", "M", "maltese", 80.0), cell("related:ud", "M-A5", "maltese", 81.0)]
    text = tables.related_markdown(filled, "cpu", title="Related")
    assert "Wolof" not in text and "| µB-M-A5 | 81.00 ± 1.00 | — | — |" in text
    assert "| µB-M-A5 | Maltese UD LAS | +1.00 " in text and "not in this cache" not in text


def test_mlm_accuracy_table_says_what_its_bins_are_and_has_no_intervals(tmp_path):
    """One pretraining per row gives no seed spread: mlm_accuracy.md carries the note on bins and no
    Δ section; related.md keeps its Δ lines."""
    def cell(table, row, value):
        return Cell(table, "cpu", row, "wolof", {"seeds": [42], "n": 1, "test": {"mean": value, "sd": 0.0, "values": [value]}})

    cells = [cell(table, row, value) for table, _ in tables.MLM_COLUMNS for row, value in (("M", 8.0), ("C5", 18.0))]
    tables.write_related_tables(cells, tmp_path)
    mlm = (tmp_path / "cpu" / "mlm_accuracy.md").read_text()
    assert "| µB-C5 | 18.00 |" in mlm and tables.MLM_NOTE in mlm and "Difference from µB-M" not in mlm
    related = (tmp_path / "cpu" / "related.md").read_text()
    assert "| µB-C5 | Wolof MLM acc. | +10.00 (1 seed, no interval) |" in related and tables.MLM_NOTE not in related


def test_the_paper_tables_encoders_join_the_mlm_table_once_scored_and_never_the_related_table(tmp_path):
    """A Table 2 condition's MLM cells (µB-MX, µB-MXPT-SLA) are rows of the MLM-accuracy table once they
    have a figure; the related-biases table keeps its own rows (µB-M, the related conditions, the trigram LM)."""
    def cell(table, row, value, scale="paper"):
        return Cell(table, scale, row, "wolof", None if value is None else
                    {"seeds": [42], "n": 1, "test": {"mean": value, "sd": 0.0, "values": [value]}})

    # The related files' UD and NER cells carry their fine-tuning regime's scale, their MLM cells "paper".
    cells = [cell("related:ud", "M", 74.0, "gpu-paper_tenth"), cell("mlm:accuracy", "M", None),
             cell("related:ud", "C5", 73.0, "gpu-paper_tenth"),
             cell("mlm:accuracy", "C5", None), cell("mlm:accuracy", "trigram-LM", 67.9),
             cell("mlm:accuracy", "MX", None), cell("mlm:accuracy", "MXPT-SLA", 40.0),
             cell("table2", "MX", None, "gpu-paper_tenth"), cell("table2", "MXPT-SLA", 76.0, "gpu-paper_tenth"),
             cell("table2", "M", 75.0, "gpu-paper_tenth")]
    def rows(text):
        return [line.split(" | ")[0].lstrip("| ") for line in text.splitlines()
                if line.startswith(("| µB", "| trigram")) and line.count("|") > 4]  # the table's rows, not its Δ lines

    shown = tables.related_view(cells)
    assert rows(tables.related_markdown(shown, "paper")) == ["µB-M", "µB-C5", "trigram-LM"]
    assert rows(tables.related_markdown(shown, "paper", tables.MLM_COLUMNS)) == ["µB-M", "µB-C5", "µB-MXPT-SLA", "trigram-LM"]
    # The report shows the paper scale's related cells as one table, whatever scale label their regime gives them.
    summary = tables.related_summary(cells)
    assert "Related biases: UD LAS, NER F1, MLM accuracy (%) — paper scale" in summary
    assert "— gpu-paper_tenth scale" not in summary and "by training-frequency bin — paper scale" in summary


def test_the_paper_scale_related_table_is_one_table_of_each_tasks_chosen_regime(tmp_path):
    """UD cells fine-tuned under the paper scale's chosen UD regime, NER cells under its chosen NER
    regime and the MLM cells ("paper") make one paper-scale table whose note names the regimes; a cell
    of another regime keeps a table of its own; the CSV records each cell under its own scale, so
    record_cells reads back the cells the cache had."""
    regimes = tables.chosen_regimes()
    assert regimes == {"ud": "paper_tenth", "ner": "paper"}  # configs/scales.libsonnet `paper.chosen`
    def cell(table, scale, value, row="M"):
        return Cell(table, scale, row, "wolof", {"seeds": [42, 43], "n": 2, "test": {"mean": value, "sd": 1.0, "values": [value - 1, value + 1]}})

    cells = [cell("related:ud", "gpu-paper_tenth", 75.0), cell("related:ner", "gpu-paper", 83.0), cell("mlm:accuracy", "paper", 42.9),
             cell("related:ud", "gpu-paper_tenth", 76.0, "C5"), cell("related:ud", "gpu-paper", 76.1)]  # the last: not a chosen regime
    tables.write_related_tables(cells, tmp_path)
    related = (tmp_path / "paper" / "related.md").read_text()
    assert "| µB-M | 75.00 ± 1.00 | 83.00 ± 1.00 | 42.90 ± 1.00 |" in related
    assert "UD LAS fine-tuned under the `paper_tenth` regime, NER F1 under `paper`" in related
    assert "| µB-C5 | Wolof UD LAS | +1.00 " in related
    assert "| µB-M | 76.10 ± 1.00 | — | — |" in (tmp_path / "gpu-paper" / "related.md").read_text()
    assert not (tmp_path / "gpu-paper_tenth").exists() and not (tmp_path / "gpu-paper" / "mlm_accuracy.md").exists()
    back = {(c.table, c.scale, c.row): c.mean for c in record_cells(tmp_path)}
    assert back == {(c.table, c.scale, c.row): c.mean for c in cells}


def test_related_tables_keep_their_record_when_a_later_cache_lacks_them(tmp_path):
    """related.csv / mlm_accuracy.csv are read back by record_cells like the paper tables' CSVs, so a
    regeneration from a cache without those cells keeps the record's values (marked †), per seed."""
    def cell(table, row, values, dev=None):
        result = {"seeds": [42, 43, 44][:len(values)], "n": len(values),
                  "test": {"mean": sum(values) / len(values), "sd": 0.5 if len(values) > 1 else 0.0, "values": values}}
        if dev:
            result["dev"] = {"mean": sum(dev) / len(dev), "sd": 0.1, "values": dev}
        return Cell(table, "cpu", row, "wolof", result)

    cached = [cell("related:ud", "M", [68.0, 68.5, 69.0], dev=[70.0, 70.5, 71.0]),
              cell("related:ud", "M-A5", [69.0, 70.0, 70.5]),
              cell("mlm:accuracy", "C5", [18.25]), cell("mlm:bin1", "C5", [3.5]), cell("mlm:accuracy", "M", [8.0])]
    record_dir = tmp_path / "record"
    tables.write_related_tables(cached, record_dir)
    assert {p.name for p in (record_dir / "cpu").iterdir()} == {"related.md", "related.csv", "mlm_accuracy.md", "mlm_accuracy.csv"}

    record = record_cells(record_dir)
    by_key = {(c.table, c.row): c for c in record}
    assert by_key[("related:ud", "M")].result["test"]["values"] == [68.0, 68.5, 69.0]
    assert by_key[("related:ud", "M")].result["dev"]["values"] == [70.0, 70.5, 71.0]
    assert by_key[("mlm:bin1", "C5")].result["test"]["mean"] == 3.5 and by_key[("mlm:bin1", "C5")].recorded

    # A later cache knows the same cells but has none of their results, and one new row.
    later = [Cell(c.table, "cpu", c.row, "wolof") for c in cached] + [cell("mlm:accuracy", "H", [9.0])]
    out = tmp_path / "again"
    tables.write_related_tables(merge_record(later, record), out)
    related = (out / "cpu" / "related.md").read_text()
    assert "| µB-M-A5 | 69.83 ± 0.50 † |" in related and "† not in the cache that wrote this table" in related
    assert "| µB-M-A5 | Wolof UD LAS | +1.33 ± " in related  # paired over the recorded per-seed values (1, 1.5, 1.5)
    mlm = (out / "cpu" / "mlm_accuracy.md").read_text()
    assert "| µB-C5 | 18.25 † | 3.50 † |" in mlm and "| µB-H | 9.00 |" in mlm
    assert "Here, Wolof all, best first: µB-C5 18.25 > µB-H 9.00 > µB-M 8.00." in mlm
    assert "- trigram-LM: Edman et al.: with 10k sentences a trigram LM beats" in tables.related_markdown(
        [cell("mlm:accuracy", "trigram-LM", [30.0])], "cpu", tables.MLM_COLUMNS)
    # Without the record the same cache shows nothing for them: the record is what kept them.
    tables.write_related_tables(later, tmp_path / "bare")
    assert "| µB-M-A5 | — |" in (tmp_path / "bare" / "cpu" / "related.md").read_text()
    # RESULTS.md's section: both tables of a scale with a result, nothing for a cache without one.
    summary = tables.related_summary(merge_record(later, record))
    assert summary.count("### Related biases") == 1 and summary.count("### MLM accuracy") == 1
    assert tables.related_summary([Cell(c.table, "cpu", c.row, "wolof") for c in cached]) == ""


def test_the_paper_scale_files_make_their_own_tables_and_the_grid_does_not():
    """experiments/paper/*.jsonnet are table files (scale gpu-<regime>); the decomposition
    grid and the long-pretraining cells are not (they have their own table and the seed-noise rows)."""
    from reporting import tables

    names = {path.relative_to(tables.REPO).as_posix() for path in tables.table_files()}
    assert {"experiments/paper/wolof_m.jsonnet", "experiments/paper/wolof_random_init.jsonnet",
            "experiments/paper/wolof_mxpt_sla.jsonnet", "experiments/wolof_m.jsonnet", "experiments/seeds/wolof_m_5seeds.jsonnet"} <= names
    assert not any(name.startswith("experiments/decomposition/") or "long_pretraining" in name for name in names)


def test_a_table_whose_figures_share_their_provenance_says_it_once():
    """Every figure of a table from the record: one provenance line, no † on each cell; from the
    cache: a line saying so; a mix: the record's cells marked † with the legend. The header says
    what "±" is (sd of a cell, 95 % CI of a difference)."""
    paper = json.loads(tables.PAPER_TABLES.read_text())

    def cell(row, values, recorded):
        return tables.Cell("table2", "cpu", row, "wolof", {"seeds": [42, 43, 44], "n": 3, "test": {
            "mean": sum(values) / 3, "sd": 0.5, "values": values}}, recorded=recorded)

    def markdown(cells):
        return tables.to_markdown("T", *tables.build_table("table2", "cpu", cells, paper))

    recorded = markdown([cell("M", [68.0, 68.5, 69.0], True), cell("MX", [69.0, 69.5, 70.5], True)])
    assert "| µB-M | 68.50 ± 0.50 |" in recorded and "†" not in recorded
    assert "Provenance: every figure is the committed record" in recorded
    assert "| model (mean ± sd over seeds) |" in recorded and "| model (Δ ± 95% CI) |" in recorded
    cached = markdown([cell("M", [68.0, 68.5, 69.0], False), cell("MX", [69.0, 69.5, 70.5], False)])
    assert "Provenance: every figure is from the cache that wrote this." in cached and "†" not in cached
    mixed = markdown([cell("M", [68.0, 68.5, 69.0], True), cell("MX", [69.0, 69.5, 70.5], False)])
    assert "| µB-M | 68.50 ± 0.50 † |" in mixed and tables.RECORD_KEPT_NOTE in mixed and "Provenance" not in mixed


def test_cpu_tables_carry_the_caveat_with_the_figure_that_shows_it(tmp_path):
    """Each cpu table file says its models are undertrained, with its own kind's figure: the TG tables
    TXL (terminals)'s perplexity here and at the paper-scale budget, the others µB-M's MLM accuracy
    against the trigram LM's; the paper-scale files carry no caveat."""
    from steps.evaluate.scoring import AggregateCell

    def cell(table, scale, row, column, value):
        return Cell(table, scale, row, column, result=AggregateCell().run(scores=[dict(
            table=table, row=row, column=column, scale=scale, task="t", metric="m", seed=42, test=value, dev=None)]))

    cells = [cell("tg", "cpu", "txl_terminals", "wolof", 2910.0), cell("tg", "paper", "txl_terminals", "wolof", 498.5),
             cell("table2", "cpu", "M", "wolof", 68.0), cell("table2", "paper", "M", "wolof", 75.0),
             cell("mlm:accuracy", "cpu", "M", "wolof", 8.8), cell("mlm:accuracy", "cpu", "trigram-LM", "wolof", 30.6)]
    tables.write_tables(cells, tmp_path, scales=["cpu", "paper"])
    tables.write_related_tables(cells, tmp_path, scales=["cpu"])

    def second_paragraph(path):
        return (tmp_path / path).read_text().split("\n\n")[1]

    assert second_paragraph("cpu/tg.md").startswith("_cpu scale: undertrained")
    assert "2910.00 here, 498.50 at the paper-scale budget" in second_paragraph("cpu/tg.md")
    for path in ("cpu/table2.md", "cpu/mlm_accuracy.md"):
        assert "µB-M guesses 8.80 % of masked Wolof dev tokens, a trigram LM 30.60 %" in second_paragraph(path)
    assert "undertrained" not in (tmp_path / "paper" / "table2.md").read_text()
    assert "undertrained" not in (tmp_path / "paper" / "tg.md").read_text()
    # Without the paper-scale TG cell there is no figure to cite: the caveat says so in words.
    assert tables.undertrained_note(cells[:1], "tg") == (
        "_cpu scale: undertrained demonstrations (a few hundred steps), not the TG paper's models._")


def test_results_headline_reads_the_paper_scale_tg_contrast(tmp_path):
    """RESULTS' headline carries the paper-scale TG − TXL (trees) reading of the TG tables (here TG
    lower by 10 on each of 3 seeds: an interval of width 0 that excludes 0), and nothing without cells."""
    import json as json_module

    from reporting import report
    from steps.evaluate.scoring import AggregateCell

    def cell(row, values):
        return Cell("tg", "paper", row, "wolof", result=AggregateCell().run(scores=[dict(
            table="tg", row=row, column="wolof", scale="paper", task="language_modelling", metric="perplexity",
            seed=42 + i, test=value, dev=None) for i, value in enumerate(values)]))

    paper = json_module.loads(tables.PAPER_TABLES.read_text())
    assert report.tg_headline([], paper) == []
    (headline,) = report.tg_headline([cell("tg", [90.0, 95.0, 100.0]), cell("txl_trees", [100.0, 105.0, 110.0])], paper)
    assert headline.startswith("**Transformer Grammars at the paper-scale budget** (Δ ± 95% CI")
    assert "Held-out perplexity: TG − TXL (trees) against the TG paper's +0.6" in headline
    assert "Wolof -10.00 ± 0.00: TG better, its interval excludes 0: against the paper's direction" in headline
    assert "agreement" not in headline


def _m_and_mx_cells(tmp_path, language: str, m_las, mx_las):
    """The cached cells of one language's µB-M and µB-MX, seeds 1 and 2, for the Δ-plot tests."""
    workspace = LocalWorkspace(tmp_path / "ws")
    files = [_experiment(tmp_path / f"{language}_m.json", "M", language, list(zip((1, 2), m_las))),
             _experiment(tmp_path / f"{language}_mx.json", "MX", language, list(zip((1, 2), mx_las)))]
    for path in files:
        _run(path, workspace)
    cells, problems = collect_cells(files, workspace.dir)
    assert not problems
    return cells


def _spy_axes(monkeypatch, name: str) -> list:
    """Record each call of matplotlib's ``Axes.<name>`` as (args, kwargs, result); it still draws."""
    from matplotlib.axes import Axes

    calls, original = [], getattr(Axes, name)

    def spy(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls.append((args, kwargs, result))
        return result

    monkeypatch.setattr(Axes, name, spy)
    return calls


def test_delta_plot_leaves_out_languages_without_a_difference(tmp_path, monkeypatch):
    """A language no condition has a Δ for yet is no empty group on the axis: with only Coptic's µB-M and µB-MX run,
    Table 2's plot has one group, Coptic, whose bar stands at the first tick."""
    import matplotlib
    matplotlib.use("Agg")

    cells = _m_and_mx_cells(tmp_path, "coptic", (80.0, 82.0), (81.0, 84.0))
    labels, bars = _spy_axes(monkeypatch, "set_xticklabels"), _spy_axes(monkeypatch, "bar")
    tables.write_tables(cells, tmp_path / "tables", scales=["cpu"])
    assert [list(args[0]) for args, _, _ in labels] == [["Coptic"]] and [list(args[0]) for args, _, _ in bars] == [[0]]


def test_delta_plot_marks_the_papers_delta(tmp_path, monkeypatch):
    """Each plotted bar carries the paper's own Δ for its cell: Wolof µB-MX's published 77.74 minus µB-M's
    77.71 = +0.03 (the paper's Table 2), drawn at the bar's centre; a cell without a bar gets no cross."""
    import matplotlib
    matplotlib.use("Agg")

    cells = _m_and_mx_cells(tmp_path, "wolof", (70.0, 72.0), (71.0, 74.0))
    scatters, bar_calls = _spy_axes(monkeypatch, "scatter"), _spy_axes(monkeypatch, "bar")
    titles = _spy_axes(monkeypatch, "set_title")
    written = tables.write_tables(cells, tmp_path / "tables", scales=["cpu"])
    assert "hatched" not in titles[0][0][0]  # every bar has its interval: no legend for a hatch none has
    drawn = [(list(args[0]), list(args[1]), kwargs.get("label")) for args, kwargs, _ in scatters]
    bars = [[(b.get_x() + b.get_width() / 2, b.get_height()) for b in container] for _, _, container in bar_calls]
    assert (tmp_path / "tables" / "cpu" / "table2_delta.png") in written["cpu"]
    assert len(bars) == 1 and [h for _, h in bars[0]] == [pytest.approx(1.5)]  # ours, paired: (+1 + +2) / 2
    (x,), (y,), label = drawn[0]
    assert len(drawn) == 1 and label == "paper's Δ"
    assert x == pytest.approx(bars[0][0][0]) and y == pytest.approx(77.74 - 77.71)


def test_delta_plot_says_what_a_hatched_bar_is_when_one_is(tmp_path, monkeypatch):
    """One seed each: the Δ has no interval, its bar is hatched, and the title says what the hatch means."""
    import matplotlib
    matplotlib.use("Agg")

    cells = _m_and_mx_cells(tmp_path, "wolof", (70.0,), (71.0,))
    titles, bar_calls = _spy_axes(monkeypatch, "set_title"), _spy_axes(monkeypatch, "bar")
    tables.write_tables(cells, tmp_path / "tables", scales=["cpu"])
    assert [bar.get_hatch() for bar in bar_calls[0][2]] == ["//"]
    assert titles[0][0][0].endswith("\nhatched: one seed, no interval")
    # a title longer than the figure is wide wraps, with nothing cut (the TG table's, for one)
    from types import SimpleNamespace as Entry
    long = ("Transformer Grammars (Sartran et al. 2022, Table 1's measure): held-out per-word perplexity (↓; Wolof: "
            "corpus-parse dev split, English: EWT test) — paper scale")
    rows = [("M", [Entry(delta=None)]), ("MX", [Entry(delta=Entry(mean=1.0, half_width=0.5))])]
    assert tables.delta_plot(tmp_path / "long.png", long, ["wolof"], rows)
    width = bar_calls[-1][2][0].axes.figure.get_figwidth()
    lines = titles[-1][0][0].splitlines()
    assert len(lines) > 1 and all(len(line) <= width * 15 for line in lines) and " ".join(lines) == long


def test_a_paper_form_table_sets_each_model_against_its_tg_table_form_seed_by_seed():
    """The same models in two forms: each row's Δ pairs seeds (ours before the record's), checked
    against Student's t from the per-seed differences; nothing where one form lacks the cell."""
    import statistics

    from scipy import stats

    from reporting.tables import form_markdown

    def cell(table, row, values, seeds=(42, 43, 44)):
        return Cell(table, "paper", row, "wolof", {"seeds": list(seeds), "n": len(values),
                                                   "test": {"mean": statistics.fmean(values), "sd": statistics.stdev(values), "values": values}})

    form, tg = [1000.0, 1100.0, 1040.0], [1400.0, 1450.0, 1420.0]
    cells = [cell("tg_paper_form", "tg", form), cell("tg", "tg", tg), cell("tg", "tg", [1.0, 2.0, 3.0]),  # a record: ours win
             cell("tg_paper_form", "txl_trees", [900.0, 950.0], seeds=(42, 44)), cell("tg", "txl_trees", [1600.0, 1700.0, 1650.0]),
             cell("tg", "txl_terminals", [500.0, 510.0, 490.0])]
    text = form_markdown("tg_paper_form", "paper", cells)
    differences = [a - b for a, b in zip(form, tg)]
    half = stats.t.ppf(0.975, 2) * statistics.stdev(differences) / 3 ** 0.5
    assert f"| TG | {statistics.fmean(differences):+.2f} ± {half:.2f} | — |" in text
    assert "| TXL (trees) | " in text and "2 shared seeds" in text  # 900 − 1600, 950 − 1650
    assert "TXL (terminals)" not in text  # no paper-form cell
    assert form_markdown("tg", "paper", cells) == "" and form_markdown("tg_paper_form", "cpu", cells) == ""
