"""The cache browser (reporting/cache.py) on a small real cache: two experiment files of real steps
(PrOnto texts → WordPiece → MLM data → a tiny µB-M → a PrOnto cell), run through Tango in seconds.

`ls --json` is checked against Tango's step-info store, the README's load example runs on the
cached encoder and gives its hidden states, `export` is loadable with no project code, and `prune`
removes the entries only the dropped file built — never one a kept file still refers to."""
from __future__ import annotations

import gzip
import json
import lzma
import shutil
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SUBPROCESS_TIMEOUT_S
import torch
from tango.common import Params
from tango.step_graph import StepGraph
from tango.workspaces import LocalWorkspace

import steps  # noqa: F401
from reporting import cache

REPO = Path(__file__).resolve().parents[1]
SAMPLE = "pronto_sample_spanish"
TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 128}


def _excerpt(data_root: Path, folder: Path, name: str, lines: int) -> str:
    path = folder / name
    path.write_text("".join((data_root / SAMPLE / name).read_text(encoding="utf-8").splitlines(True)[:lines]), encoding="utf-8")
    return str(path)


def _experiment(path: Path, data: dict, max_steps: int, pronto_epochs: int = 1) -> Path:
    """One encoder pretrained for ``max_steps`` and one PrOnto cell (row M, column spanish, smoke)."""
    ref = lambda name: {"type": "ref", "ref": name}  # noqa: E731
    steps_config = {
        "texts": {"type": "pronto_texts", "files": [{"path": data["texts"]}], "tasks": ["sentence_mood"], "dev_every": 5},
        "tokenizer": {"type": "train_tokenizer", "corpus": ref("texts"), "vocab_size": 300},
        "pretraining_data": {"type": "build_mlm_pretraining_data", "corpus": ref("texts"), "tokenizer": ref("tokenizer"), "max_length": 64},
        "pretrained_model": {"type": "pretrain_microbert", "pretraining_data": ref("pretraining_data"), "tokenizer": ref("tokenizer"),
                             "condition": "M", "model": TINY_MODEL, "num_threads": 1,
                             "training": {"max_steps": max_steps, "batch_size": 8, "validate_every": 2, "max_validation_rows": 16,
                                          "checkpoint_every": 4, "seed": 3}},
        "pronto_s1": {"type": "finetune_pronto", "encoder": ref("pretrained_model"), "task": "proper_noun_subject", "num_threads": 1,
                      **{split: {"path": data[split]} for split in ("train", "dev", "test")},
                      "config": {"epochs": pronto_epochs, "batch_size": 16, "max_length": 64, "seed": 1}},
        "pronto_score_s1": {"type": "score_cell", "finetuned": ref("pronto_s1"), "table": "table7", "row": "M",
                            "column": "spanish", "scale": "smoke", "seed": 1},
        "pronto_cell": {"type": "aggregate_cell", "scores": [ref("pronto_score_s1")]},
    }
    path.write_text(json.dumps({"steps": steps_config}))
    return path


def _run(path: Path, workspace: LocalWorkspace) -> StepGraph:
    graph = StepGraph.from_params(Params.from_file(path).pop("steps"))
    workspace.register_run(graph.values())  # links every step under runs/<name>/, as `tango run` does
    graph["pronto_cell"].result(workspace)
    return graph


@pytest.fixture(scope="module")
def small_cache(data_root, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cache-test")
    data = {"texts": _excerpt(data_root, folder, "sentence_mood_train.tsv", 300)}
    for split, lines in (("train", 33), ("dev", 17), ("test", 17)):
        data[split] = _excerpt(data_root, folder, f"proper_noun_subject_{split}.tsv", lines)
    workspace = LocalWorkspace(folder / "ws")
    kept = _experiment(folder / "kept.json", data, max_steps=4)
    dropped = _experiment(folder / "dropped.json", data, max_steps=2)
    graphs = {"kept": (kept, _run(kept, workspace)), "dropped": (dropped, _run(dropped, workspace))}
    return workspace, graphs


def _ls(capsys, workspace, files, *options):
    capsys.readouterr()
    assert cache.main(["ls", "--workspace", str(workspace.dir), "--experiments", *map(str, files), *options]) == 0
    return capsys.readouterr().out


def test_ls_json_lists_what_the_step_info_store_holds(small_cache, capsys):
    workspace, graphs = small_cache
    listed = json.loads(_ls(capsys, workspace, [graphs["kept"][0], graphs["dropped"][0]], "--json"))
    infos = [info for info in workspace.search_step_info() if info in workspace.step_cache]
    assert {e["unique_id"] for e in listed["encoders"]} == {i.unique_id for i in infos if i.step_class_name == "PretrainMicrobert"}
    assert {e["unique_id"] for e in listed["cells"]} == {i.unique_id for i in infos if i.step_class_name == "FinetunePronto"}
    assert len(listed["encoders"]) == 2 and len(listed["cells"]) == 2
    for encoder in listed["encoders"]:
        metrics = json.loads((workspace.step_dir(encoder["unique_id"]) / "result" / "metrics.json").read_text())
        assert (encoder["language"], encoder["condition"], encoder["scale"], encoder["seed"]) == ("spanish", "M", "smoke", 3)
        assert encoder["steps"] == metrics["exported_step"] in (2, 4)
        assert encoder["final_dev_mlm_loss"] == metrics["history"][-1]["dev_mlm_loss"]
        assert Path(encoder["path"], "config.json").exists() and encoder["size_bytes"] > 0 and encoder["age_days"] >= 0
    for cell in listed["cells"]:
        metrics = json.loads((Path(cell["path"]) / "metrics.json").read_text())
        assert (cell["task"], cell["seed"], cell["metric"]) == ("pronto:proper_noun_subject", 1, "accuracy")
        assert (cell["dev"], cell["test"]) == (metrics["dev"]["accuracy"], metrics["test"]["accuracy"])
        assert cell["encoder"] in {e["unique_id"] for e in listed["encoders"]}
    # Filters, and the text listing.
    assert json.loads(_ls(capsys, workspace, [graphs["kept"][0]], "--json", "--language", "wolof"))["encoders"] == []
    only = json.loads(_ls(capsys, workspace, [graphs["kept"][0]], "--json", "--condition", "m", "--scale", "smoke"))
    assert [e["unique_id"] for e in only["encoders"]] == [graphs["kept"][1]["pretrained_model"].unique_id]
    assert "1 encoders" in _ls(capsys, workspace, [graphs["kept"][0]], "--scale", "smoke", "--language", "spanish")


def _readme_example() -> str:
    readme = (REPO / "README.md").read_text()
    marker = readme.index("<!-- tests/test_cache.py runs this block")
    return re.search(r"```python\n(.*?)```", readme[marker:], re.S).group(1)


def test_readme_example_loads_the_cached_encoder_with_stock_transformers(small_cache):
    from steps.finetune.encoders import load_encoder

    workspace, graphs = small_cache
    step = graphs["kept"][1]["pretrained_model"]
    folder = workspace.step_dir(step) / "result" / "encoder"
    code = re.sub(r'folder = ".*?"', f"folder = {str(folder)!r}", _readme_example())
    assert code != _readme_example()
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102  (the README's own example)

    model, tokenizer = load_encoder(workspace.step_dir(step) / "result")  # how the fine-tuning steps load it
    model.eval()
    with torch.no_grad():
        reference = model(**tokenizer("Waaw , dama ko xam", return_tensors="pt")).last_hidden_state
    assert type(namespace["model"]).__name__ == "BertModel"
    assert torch.equal(namespace["hidden"].detach(), reference)
    # ... and the weights are the final pretraining checkpoint's (the reference exports the last step).
    checkpoint = torch.load(workspace.step_dir(step) / "work" / "checkpoint.pt", weights_only=True)
    weights = namespace["model"].state_dict()
    for name, value in checkpoint["model"].items():
        if name.startswith("bert."):
            assert torch.equal(weights[name[len("bert."):]], value), name


def test_export_is_a_self_contained_hf_folder(small_cache, tmp_path, capsys):
    workspace, graphs = small_cache
    step = graphs["kept"][1]["pretrained_model"]
    # `export` labels its card from the graphs a listing remembered (<workspace>/reporting/graphs.json),
    # without rebuilding them: list first, as a user browsing the cache would.
    _ls(capsys, workspace, [graphs["kept"][0]])
    out = tmp_path / "exported"
    assert cache.main(["export", step.unique_id[:30], str(out), "--workspace", str(workspace.dir)]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= names
    assert not any(name.endswith((".bin", ".pt", ".pkl")) for name in names)
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlanguage: ") and "\nlibrary_name: transformers\n" in card  # the Hugging Face card format
    assert step.unique_id in card and "condition M (smoke scale, seed 3)" in card and "steps: 4" in card and "final dev MLM loss" in card
    assert "| pronto:proper_noun_subject | smoke | 1 |" in card  # its downstream cell, with its scale and seed
    assert "); device cpu\n" in card  # trained in one run: its device, nothing about resuming
    # No project code: an isolated interpreter (no cwd, no PYTHONPATH) in another folder.
    probe = ("import importlib.util, sys, torch\n"
             "assert importlib.util.find_spec('models') is None and importlib.util.find_spec('steps') is None\n"
             "from transformers import AutoModel, AutoTokenizer\n"
             "m = AutoModel.from_pretrained(sys.argv[1]).eval(); t = AutoTokenizer.from_pretrained(sys.argv[1])\n"
             "print(float(m(**t('Waaw , dama ko xam', return_tensors='pt')).last_hidden_state.sum()))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    completed = subprocess.run([sys.executable, "-I", "-c", probe, str(out)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert completed.returncode == 0, completed.stderr[-2000:]
    from steps.finetune.encoders import load_encoder

    model, tokenizer = load_encoder(workspace.step_dir(step) / "result")
    with torch.no_grad():
        expected = float(model.eval()(**tokenizer("Waaw , dama ko xam", return_tensors="pt")).last_hidden_state.sum())
    assert float(completed.stdout.strip().splitlines()[-1]) == pytest.approx(expected, rel=1e-5)


def test_the_card_names_the_device_of_the_run_that_finished_a_resumed_pretraining():
    """A step records the device of its last run only: the card must not claim it for the steps
    that earlier runs, perhaps elsewhere, trained."""
    assert cache._devices({"device": "cuda"}) == "device cuda"
    assert cache._devices({"device": "cpu", "resumed_from": [12502, 56739]}) == (
        "device cpu from step 56,739 on (resumed at steps 12,502, 56,739)")
    one_run = [{"from_step": 0, "device": "cuda", "threads": 16}]
    assert cache._devices({"device": "cuda", "runs": one_run}) == "device cuda"
    assert cache._devices({"device": "cpu", "resumed_from": [30000], "runs": one_run + [
        {"from_step": 30000, "device": "cpu", "threads": 2}]}) == "device cuda (16 threads) from step 0; cpu (2 threads) from step 30,000"
    assert cache._devices({"device": "cpu", "resumed_from": [50049, 56739], "runs": [
        {"from_step": 56739, "device": "cpu", "threads": 2}]}) == "device not recorded before step 56,739; cpu (2 threads) from step 56,739"
    assert cache._devices({"device": "cpu", "runs": one_run + [{"from_step": step, "device": "cpu", "threads": 2} for step in (30000, 31000, 32000)]}) == (
        "device cuda (16 threads) from step 0; cpu (2 threads) from step 30,000 (3 runs)")
    assert cache._devices({"device": "cpu", "runs": [{"from_step": 0, "device": "cpu", "threads": 2}, {"from_step": 500, "device": "cpu", "threads": 2}]}) == (
        "device cpu (2 threads) from step 0 (2 runs)")


def test_training_curves_are_the_cached_histories(small_cache, tmp_path):
    from reporting.curves import curve_series, curves_markdown, draw_curves
    from reporting.graphs import load_graphs

    workspace, graphs = small_cache
    entries = cache.list_entries(workspace.dir, load_graphs([graphs["kept"][0], graphs["dropped"][0]], workspace.dir))
    series = curve_series(entries)
    assert set(series) == {("smoke", "spanish", "pretraining_dev_mlm_loss"), ("smoke", "spanish", "pronto_dev_accuracy")}
    expected = {}
    for name in ("kept", "dropped"):
        metrics = json.loads((workspace.step_dir(graphs[name][1]["pretrained_model"]) / "result" / "metrics.json").read_text())
        expected[len(metrics["history"])] = [(r["step"], r["dev_mlm_loss"]) for r in metrics["history"]]
    drawn = series[("smoke", "spanish", "pretraining_dev_mlm_loss")]
    assert len(drawn) == 2 and sorted(drawn.values(), key=len) == [expected[1], expected[2]]  # validations at 2 (and 4)
    pronto = json.loads((workspace.step_dir(graphs["kept"][1]["pronto_s1"]) / "result" / "metrics.json").read_text())
    assert [(r["epoch"], r["dev_accuracy"]) for r in pronto["history"]] in series[("smoke", "spanish", "pronto_dev_accuracy")].values()
    written = draw_curves(entries, tmp_path / "curves")
    assert sorted(p.name for p in written) == ["spanish_pretraining_dev_mlm_loss.png", "spanish_pronto_dev_accuracy.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)
    assert "](curves/smoke/spanish_pronto_dev_accuracy.png)" in curves_markdown(written, tmp_path)


def test_unfinished_lists_stopped_and_running_steps_from_their_checkpoints(data_root, tmp_path, monkeypatch, capsys):
    """`unfinished`: a pretraining killed after step 4 of 6 and a PrOnto fine-tune killed after
    epoch 1 of 3 are listed with how far they got and their best dev figure, as their checkpoints
    say; "running" while a process holds the entry's lock; gone once `tango run` resumes them."""
    from steps.finetune.loop import CRASH_AFTER_EPOCH_ENV
    from steps.pretrain.pretrain import CRASH_AFTER_STEP_ENV

    data = {"texts": _excerpt(data_root, tmp_path, "sentence_mood_train.tsv", 300)}
    for split, lines in (("train", 33), ("dev", 17), ("test", 17)):
        data[split] = _excerpt(data_root, tmp_path, f"proper_noun_subject_{split}.tsv", lines)
    experiment = _experiment(tmp_path / "long.json", data, max_steps=6, pronto_epochs=3)
    workspace = LocalWorkspace(tmp_path / "ws")
    graph = StepGraph.from_params(Params.from_file(experiment).pop("steps"))

    def unfinished(workspace_dir: Path = workspace.dir) -> list:
        capsys.readouterr()
        assert cache.main(["unfinished", "--json", "--workspace", str(workspace_dir), "--experiments", str(experiment)]) == 0
        return json.loads(capsys.readouterr().out)["unfinished"]

    monkeypatch.setenv(CRASH_AFTER_STEP_ENV, "4")
    with pytest.raises(Exception, match="stopping after step 4"):
        graph["pretrained_model"].result(workspace)
    [pretraining] = unfinished()
    saved = torch.load(workspace.step_dir(graph["pretrained_model"]) / "work" / "checkpoint.pt", weights_only=True)
    dev = {record["step"]: record["dev_mlm_loss"] for record in saved["state"]["history"]}
    assert sorted(dev) == [2, 4]  # validate_every 2
    assert pretraining["unique_id"] == graph["pretrained_model"].unique_id and pretraining["state"] == "stopped"
    assert (pretraining["unit"], pretraining["done"], pretraining["total"], pretraining["seed"]) == ("step", 4, 6, 3)
    assert (pretraining["language"], pretraining["condition"], pretraining["scale"]) == ("spanish", "M", "smoke")
    best_step = min(dev, key=dev.get)
    assert (pretraining["metric"], pretraining["best"], pretraining["best_at"], pretraining["last"]) == (
        "dev_mlm_loss", dev[best_step], best_step, dev[4])
    # The entry copied to a workspace with no step-info record (as `tools/jobs.py unpack` leaves it):
    # its seed and length come from the experiment file that holds the step.
    copied = tmp_path / "copied" / "cache" / graph["pretrained_model"].unique_id
    shutil.copytree(workspace.step_dir(graph["pretrained_model"]), copied)
    [moved] = unfinished(tmp_path / "copied")
    assert (moved["done"], moved["total"], moved["seed"]) == (4, 6, 3)
    # Released from there, it carries the step's config (its card and step.json), not an empty one.
    assert cache.main(["release", moved["unique_id"], "--workspace", str(tmp_path / "copied"), "--root", str(tmp_path / "out")]) == 0
    [released] = (tmp_path / "out").glob("*/*/step.json")
    assert json.loads(released.read_text())["config"] == graph["pretrained_model"].config

    monkeypatch.delenv(CRASH_AFTER_STEP_ENV)
    monkeypatch.setenv(CRASH_AFTER_EPOCH_ENV, "1")
    with pytest.raises(Exception, match="stopping after epoch 1"):
        graph["pronto_s1"].result(workspace)  # resumes the pretraining first, to its end
    [tuning] = unfinished()
    assert tuning["unique_id"] == graph["pronto_s1"].unique_id
    assert (tuning["unit"], tuning["done"], tuning["total"], tuning["metric"]) == ("epoch", 1, 3, "dev_loss")
    saved = torch.load(workspace.step_dir(graph["pronto_s1"]) / "work" / "finetune-checkpoint.pt", weights_only=True)
    [record] = saved["state"]["history"]
    assert (tuning["best"], tuning["best_at"], tuning["last"], tuning["steps"]) == (
        record["dev_loss"], 1, record["dev_loss"], saved["state"]["steps"])
    assert "epoch 1/3" in (cache.format_unfinished([cache.Unfinished(**tuning)]))
    # labelled by an experiment file read here: no "?" and no note; unlabelled (another data root): the note says why
    assert tuning["scale"] and "?" not in cache.format_unfinished([cache.Unfinished(**tuning)])
    assert "SIB_DATA_ROOT must name the data" in cache.format_unfinished([cache.Unfinished(**{**tuning, "scale": None})]).splitlines()[-1]

    # A process holding the entry's lock (as a live `tango run` does) makes it "running".
    holder = subprocess.Popen([sys.executable, "-c", "import filelock, sys, time; lock = filelock.FileLock(sys.argv[1]); "
                               "lock.acquire(); print('held', flush=True); time.sleep(120)",
                               str(workspace.step_dir(graph["pronto_s1"]) / "lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert [entry["state"] for entry in unfinished()] == ["running"]
    finally:
        holder.kill()
        holder.wait()
    monkeypatch.delenv(CRASH_AFTER_EPOCH_ENV)
    graph["pronto_s1"].result(workspace)
    assert unfinished() == []


def test_prune_removes_only_what_no_kept_file_builds(small_cache, capsys):
    """Last in this file: it removes the dropped file's entries from the shared cache."""
    workspace, graphs = small_cache
    kept_file, kept = graphs["kept"]
    _, dropped = graphs["dropped"]
    kept_ids = {step.unique_id for step in kept.values()}
    only_dropped = {step.unique_id for step in dropped.values()} - kept_ids
    shared = {step.unique_id for step in dropped.values()} & kept_ids
    assert shared >= {kept["texts"].unique_id, kept["tokenizer"].unique_id}  # the data steps are shared
    assert len(only_dropped) == 4  # pretrained_model, pronto_s1, its score and cell

    arguments = ["prune", "--workspace", str(workspace.dir), "--experiments", str(kept_file)]
    assert cache.main(arguments) == 0  # dry run
    out = capsys.readouterr().out
    assert "dry run" in out and all(unique_id in out for unique_id in only_dropped)
    assert not any(unique_id in out for unique_id in kept_ids)
    assert all((workspace.dir / "cache" / unique_id).is_dir() for unique_id in only_dropped)

    assert cache.main(arguments + ["--yes"]) == 0
    remaining = set(cache.cache_dirs(workspace.dir))
    assert kept_ids <= remaining and not (only_dropped & remaining)
    fresh = LocalWorkspace(workspace.dir)
    rows = {info.unique_id for info in fresh.search_step_info()}
    assert kept_ids <= rows and not (only_dropped & rows)
    for run in fresh.registered_runs().values():  # every run still loads; its links point at entries that exist
        assert not (set(info.unique_id for info in run.steps.values()) & only_dropped)
    links = [link for link in (workspace.dir / "runs").rglob("*") if link.is_symlink()]
    assert links and all(link.resolve().exists() for link in links)
    # The kept experiment is still wholly cached: nothing it refers to was touched.
    assert all(step in fresh.step_cache for step in kept.values())


def test_encoder_experiment_fine_tunes_a_cached_folder_without_pretraining(tmp_path):
    """The README's way to reuse a cached encoder: lib.libsonnet's encoder_experiment."""
    lib = (REPO / "configs" / "lib.libsonnet").as_posix()
    folder = "workspace/cache/PretrainMicrobert-002-x/result/encoder"
    plain, sla = tmp_path / "plain.jsonnet", tmp_path / "sla.jsonnet"
    plain.write_text(f'(import "{lib}").encoder_experiment("wolof", "{folder}", "M-reused", "smoke")')
    sla.write_text(f'(import "{lib}").encoder_experiment("wolof", "{folder}", "MXPT-SLA-reused", "smoke", encoder_needs_parse=true)')
    plain_steps = Params.from_file(plain).as_dict()["steps"]
    assert sorted(plain_steps) == ["ner_cell", "ner_s42", "ner_score_s42", "ud_parser_cell", "ud_parser_s42", "ud_parser_score_s42"]
    assert plain_steps["ud_parser_s42"]["encoder"] == folder and plain_steps["ud_parser_s42"]["sla_parse"] == "global"
    assert plain_steps["ud_parser_score_s42"]["row"] == "M-reused"
    sla_steps = Params.from_file(sla).as_dict()["steps"]
    assert {"corpus", "word_vectors", "corpus_parser"} <= set(sla_steps) and "pretrained_model" not in sla_steps
    assert sla_steps["ner_s42"]["sla_parse"] == "parse" and sla_steps["ner_s42"]["corpus_parser"] == {"type": "ref", "ref": "corpus_parser"}
    StepGraph.from_params(Params.from_file(plain).pop("steps"))  # the graph builds


# --- releases -------------------------------------------------------------------------------------


def _tango_run(experiment: Path, workspace_dir: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tango", "--settings", str(REPO / "tango.yml"), "run", str(experiment),
                           "-w", str(workspace_dir), *options], cwd=REPO, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)


def test_a_release_restored_on_a_fresh_workspace_goes_straight_to_fine_tuning(small_cache, tmp_path, capsys):
    """release → wipe → restore → `tango run` of the file that built it: nothing upstream of the
    encoder is recomputed, its fine-tuning is, and the restored entry is the released one, byte for byte."""
    workspace, graphs = small_cache
    experiment, graph = graphs["kept"]
    step = graph["pretrained_model"]
    assert cache.main(["release", step.unique_id[:30], "--workspace", str(workspace.dir), "--root", str(tmp_path / "releases"),
                       "--experiments", str(experiment)]) == 0
    released = Path(capsys.readouterr().out.strip())
    assert released == tmp_path / "releases" / "spanish" / "m-smoke-s3"
    record = json.loads((released / "release.json").read_text())
    assert record["unique_id"] == step.unique_id and {"encoder/model.safetensors", "encoder/tokenizer.json", "metrics.json",
                                                      "step.json"} <= set(record["files"])
    assert (released / "README.md").read_text().startswith("---\nlanguage: ")
    fresh = tmp_path / "fresh"
    assert cache.main(["restore", str(released), "--workspace", str(fresh)]) == 0
    # Released again from the fresh cache, which fine-tuned nothing: the card keeps the earlier card's
    # downstream rows, marked, with the same figures.
    card = (released / "README.md").read_text()
    rows = [line for line in card.split("## Downstream")[1].split("## Load")[0].splitlines() if line.startswith("| pronto")]
    recorded = json.loads((released / "downstream.json").read_text())["cells"]
    assert rows and len(recorded) == len(rows) and all(cell["test"] is not None for cell in recorded)
    # Without the file that built it, the fresh cache cannot label the entry: refused in one line, nothing written.
    with pytest.raises(SystemExit, match="pass --experiments FILE") as refused:
        cache.main(["release", step.unique_id[:30], "--workspace", str(fresh), "--root", str(tmp_path / "releases")])
    assert "\n" not in str(refused.value) and not (tmp_path / "releases" / "unknown").exists()
    assert cache.main(["release", step.unique_id[:30], "--workspace", str(fresh), "--root", str(tmp_path / "releases"),
                       "--experiments", str(experiment)]) == 0
    again = (released / "README.md").read_text()
    assert [line for line in again.splitlines() if line.startswith("| pronto")] == [row.replace(" | accuracy |", " † | accuracy |") for row in rows]
    assert "† from this release's earlier card" in again and json.loads((released / "release.json").read_text())["sha256"] == record["sha256"]
    assert json.loads((released / "downstream.json").read_text())["cells"] == recorded  # kept as data, not re-read from the card
    original, restored = workspace.step_dir(step), fresh / "cache" / step.unique_id
    assert sorted(p.relative_to(restored / "result").as_posix() for p in (restored / "result").rglob("*") if p.is_file()) == \
        sorted(p.relative_to(original / "result").as_posix() for p in (original / "result").rglob("*") if p.is_file())
    assert (restored / "result" / "encoder" / "model.safetensors").read_bytes() == (original / "result" / "encoder" / "model.safetensors").read_bytes()
    completed = _tango_run(experiment, fresh)
    assert completed.returncode == 0, completed.stderr[-3000:]
    computed = {folder.name.split("-")[0] for folder in (fresh / "cache").iterdir() if (folder / "cache-metadata.json").exists()}
    assert computed == {"PretrainMicrobert", "FinetunePronto", "ScoreCell", "AggregateCell"}, computed
    # The cell equals the one computed above the original entry.
    assert json.loads((fresh / "cache" / graph["pronto_s1"].unique_id / "result" / "metrics.json").read_text())["test"] == \
        json.loads((workspace.step_dir(graph["pronto_s1"]) / "result" / "metrics.json").read_text())["test"]
    # The same with steps side by side (`-j`): the restored entry's own inputs are nowhere in the run.
    side_by_side = tmp_path / "side_by_side"
    assert cache.main(["restore", str(released), "--workspace", str(side_by_side)]) == 0
    completed = _tango_run(experiment, side_by_side, "-j", "2")
    assert completed.returncode == 0, completed.stderr[-3000:]
    computed = {folder.name.split("-")[0] for folder in (side_by_side / "cache").iterdir() if (folder / "cache-metadata.json").exists()}
    assert computed == {"PretrainMicrobert", "FinetunePronto", "ScoreCell", "AggregateCell"}, computed


def test_data_steps_released_and_restored_spare_a_fresh_machine_everything_above_pretraining(small_cache, tmp_path, capsys):
    """Steps that are not encoders go out too: the tokenizer (a result folder) and the pretraining rows
    (Tango's data.dill.gz, a "data" release, written as the same pickle under xz). Restored on a fresh
    workspace, `tango run` pretrains from them: the texts step below them is not computed, and the
    pretraining ends on the same weights."""
    workspace, graphs = small_cache
    experiment, graph = graphs["kept"]
    released = {}
    for step_name in ("tokenizer", "pretraining_data"):
        capsys.readouterr()
        assert cache.main(["release", graph[step_name].unique_id, "--workspace", str(workspace.dir), "--root", str(tmp_path / "releases"),
                           "--experiments", str(experiment)]) == 0
        released[step_name] = Path(capsys.readouterr().out.strip())
    assert released["pretraining_data"] == tmp_path / "releases" / "unknown" / "pretraining_data"  # named after the step
    data_record = json.loads((released["pretraining_data"] / "release.json").read_text())
    assert data_record["kind"] == "data" and set(data_record["files"]) == {"data.dill.xz", "step.json"}
    data_step = json.loads((released["pretraining_data"] / "step.json").read_text())
    assert data_step["cache_metadata"]["format"] == {"type": "tango.format.DillFormat", "compress": "lzma"}
    assert json.loads((released["tokenizer"] / "release.json").read_text())["kind"] == "result"
    assert "`pretraining_data` of" in (released["pretraining_data"] / "README.md").read_text()
    fresh = tmp_path / "fresh"
    assert cache.main(["restore", *map(str, released.values()), "--workspace", str(fresh)]) == 0
    restored = fresh / "cache" / graph["pretraining_data"].unique_id / "data.dill.xz"
    original = workspace.step_dir(graph["pretraining_data"]) / "data.dill.gz"
    assert lzma.decompress(restored.read_bytes()) == gzip.decompress(original.read_bytes())  # the same pickle
    assert restored.stat().st_size < original.stat().st_size  # about half at the paper scale (releases/README.md)
    completed = _tango_run(experiment, fresh)
    assert completed.returncode == 0, completed.stderr[-3000:]
    computed = {folder.name.split("-")[0] for folder in (fresh / "cache").iterdir() if (folder / "cache-metadata.json").exists()}
    assert computed == {"TrainTokenizer", "BuildMlmPretrainingData", "PretrainMicrobert", "FinetunePronto", "ScoreCell",
                        "AggregateCell"}, computed  # the two restored, then what is above them; not the texts step
    weights = "result/encoder/model.safetensors"
    assert (fresh / "cache" / graph["pretrained_model"].unique_id / weights).read_bytes() == \
        (workspace.step_dir(graph["pretrained_model"]) / weights).read_bytes()
    # A flipped byte in the pickled rows is refused before anything is written.
    flipped = tmp_path / "flipped"
    shutil.copytree(released["pretraining_data"], flipped)
    blob = bytearray((flipped / "data.dill.xz").read_bytes())
    blob[len(blob) // 2] ^= 1
    (flipped / "data.dill.xz").write_bytes(bytes(blob))
    capsys.readouterr()
    assert cache.main(["restore", str(flipped), "--workspace", str(tmp_path / "other")]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and f"{flipped / 'data.dill.xz'}: sha256 " in error, error
    assert not (tmp_path / "other" / "cache" / graph["pretraining_data"].unique_id).exists()


def _released(small_cache, root: Path) -> Path:
    workspace, graphs = small_cache
    # The file that built it labels the encoder (language, scale), as `release --experiments` does, so
    # no test relies on an earlier one having left its graphs in the workspace's index.
    labels = cache.load_graphs([graphs["kept"][0]], workspace.dir)
    return cache.release_entry(workspace.dir, graphs["kept"][1]["pretrained_model"].unique_id, root, graphs=labels)


def test_a_release_with_one_byte_flipped_is_refused_in_one_line(small_cache, tmp_path, capsys):
    released = _released(small_cache, tmp_path / "releases")
    weights = released / "encoder" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    capsys.readouterr()
    assert cache.main(["restore", str(released), "--workspace", str(tmp_path / "ws")]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and f"{weights}: sha256 " in error and "differs from" in error, error
    assert not (tmp_path / "ws" / "cache").exists() or not any((tmp_path / "ws" / "cache").iterdir())


def test_a_release_s_downstream_figures_are_data_outside_its_hash(small_cache, tmp_path, capsys):
    """downstream.json changes without touching the encoder: restore ignores it; a release written
    again reads it back (not the card), and a malformed one stops the release in one line."""
    released = _released(small_cache, tmp_path / "releases")
    figures = released / "downstream.json"
    figures.write_text(json.dumps({"cells": [{"task": "ud_parsing", "scale": "elsewhere", "seed": 7, "dev": 1.5, "test": 2.5, "metric": "las"}]}))
    assert cache.main(["restore", str(released), "--workspace", str(tmp_path / "ws")]) == 0
    [kept] = [c for c in cache.release_downstream(released) if c.scale == "elsewhere"]
    assert (kept.task, kept.seed, kept.dev, kept.test, kept.metric) == ("ud_parsing", 7, 1.5, 2.5, "las")
    again = _released(small_cache, tmp_path / "releases")  # this cache has no such cell: kept, marked
    assert [line for line in (again / "README.md").read_text().splitlines() if "| elsewhere |" in line] == \
        ["| ud_parsing | elsewhere | 7 | 1.50 | 2.50 † | las |"]
    assert any(c.scale == "elsewhere" for c in cache.release_downstream(again))
    figures.write_text('{"cells": [7]}')
    with pytest.raises(SystemExit, match=re.escape(f"{figures}: not a list of downstream cells")) as stopped:
        cache.release_downstream(released)
    assert "\n" not in str(stopped.value)


def test_a_release_takes_the_committed_predictions_of_its_own_weights(small_cache, tmp_path, capsys):
    """tools/export_predictions.py records a cell's encoder by cache entry and by its weights' sha256.
    Released again from a cache that lacks the cell, the encoder's card takes the cell from those
    committed predictions (marked ‡) before its earlier card (†); predictions of other weights stay out."""
    from tools.export_predictions import export_result

    workspace, graphs = small_cache
    experiment, graph = graphs["kept"]
    encoder_id = graph["pretrained_model"].unique_id
    released = _released(small_cache, tmp_path / "releases")
    [recorded] = json.loads((released / "downstream.json").read_text())["cells"]
    # A fine-tuning result as the cache holds it, with a prediction file to export.
    result = tmp_path / "result"
    shutil.copytree(workspace.step_dir(graph["pronto_s1"]) / "result", result)
    assert json.loads((result / "metrics.json").read_text())["encoder"].startswith(str(workspace.dir))
    (result / "predicted-test.bio").write_text("")
    predictions = tmp_path / "predictions"
    cell = {"scale": recorded["scale"], "table": "table7", "row": "M", "column": "spanish", "seed": recorded["seed"]}
    export_result(result, predictions / "mine", cell=cell, cache_dir=workspace.dir / "cache")
    exported = json.loads((predictions / "mine" / "metrics.json").read_text())
    weights = json.loads((released / "release.json").read_text())["files"]["encoder/model.safetensors"]
    assert (exported["encoder"], exported["cell"], exported["encoder_sha256"]) == (f"{encoder_id}/result", cell, weights)
    (predictions / "other").mkdir()
    (predictions / "other" / "metrics.json").write_text(json.dumps(dict(exported, encoder_sha256="0" * 64, cell=dict(cell, scale="other"))))

    fresh = tmp_path / "fresh"
    assert cache.main(["restore", str(released), "--workspace", str(fresh)]) == 0
    first = (released / "README.md").read_text()
    assert cache.main(["release", encoder_id[:30], "--workspace", str(fresh), "--root", str(tmp_path / "releases"),
                       "--experiments", str(experiment), "--predictions", str(predictions)]) == 0
    card = (released / "README.md").read_text()
    [row] = [line for line in first.splitlines() if line.startswith("| pronto")]
    assert [line for line in card.splitlines() if line.startswith("| pronto")] == [row.replace(" | accuracy |", " ‡ | accuracy |")]
    assert "‡ from the project's committed predictions" in card and "†" not in card and "| other |" not in card
    assert json.loads((released / "downstream.json").read_text())["cells"] == [recorded]
    # Without them, the same release keeps the cell from its earlier record instead.
    assert cache.main(["release", encoder_id[:30], "--workspace", str(fresh), "--root", str(tmp_path / "releases"),
                       "--experiments", str(experiment), "--predictions", str(tmp_path / "none")]) == 0
    assert " † | accuracy |" in (released / "README.md").read_text()


def test_downstream_figures_are_written_at_the_card_s_two_decimals(tmp_path):
    """A cell from the cache (full precision) and one kept from an earlier record (two decimals) are
    written alike; a missing figure stays missing."""
    cells = [cache.Entry("", "cell", "", task="ud_parsing", scale="gpu-paper", seed=46, dev=76.10224355396808,
                         test=77.22976643128735, metric="las"),
             cache.Entry("", "cell", "", task="ner", scale="gpu-paper", seed=42, dev=90.49, test=None, metric="f1")]
    cache.write_downstream(tmp_path, cells)
    rows = json.loads((tmp_path / "downstream.json").read_text())["cells"]
    assert [(r["task"], r["dev"], r["test"]) for r in rows] == [("ner", 90.49, None), ("ud_parsing", 76.1, 77.23)]
    assert [(c.seed, c.dev, c.test) for c in cache.release_downstream(tmp_path)] == [(42, 90.49, None), (46, 76.1, 77.23)]


def test_a_cell_fine_tuned_with_added_attention_is_its_own_row_on_the_card(tmp_path):
    """M+G fine-tunes µB-M's weights with a syntax-guided GAT: the same task, scale and seed as µB-M's
    plain cell, and another figure. The committed record keeps both, downstream.json and the card
    say which is which, and a record written before cards kept the field reads as plain."""
    plain = {"task": "ud_parsing", "primary_metric": "las", "seed": 42, "syntax_gat": None, "encoder_sha256": "ab",
             "dev": {"las": 74.0}, "test": {"las": 75.07}, "cell": {"scale": "gpu-paper_tenth", "row": "M"}}
    gat = {**plain, "syntax_gat": {"gat_max_distance": 1}, "dev": {"las": 74.5}, "test": {"las": 75.5},
           "cell": {"scale": "gpu-paper_tenth", "row": "M+G"}}
    for folder, metrics in (("table2/M", plain), ("related/ud/M+G", gat), ("other", {**gat, "encoder_sha256": "cd"})):
        (tmp_path / "predictions" / folder).mkdir(parents=True)
        (tmp_path / "predictions" / folder / "metrics.json").write_text(json.dumps(metrics))
    cells = cache.committed_cells(tmp_path / "predictions", "ab")
    assert {(c.added_attention, c.test) for c in cells} == {(None, 75.07), ("syntax_gat", 75.5)} and len(cells) == 2
    [plain_cell] = [c for c in cells if c.added_attention is None]
    assert cache.earlier_rows([plain_cell], cells) == [c for c in cells if c is not plain_cell]
    cache.write_downstream(tmp_path, cells)
    assert [(r["added_attention"], r["test"]) for r in json.loads((tmp_path / "downstream.json").read_text())["cells"]] == [
        (None, 75.07), ("syntax_gat", 75.5)]
    assert {cache._cell_key(c) for c in cache.release_downstream(tmp_path)} == {cache._cell_key(c) for c in cells}
    entry = cache.Entry("PretrainMicrobert-002-x", "encoder", "PretrainMicrobert", language="wolof", condition="M", scale="gpu", seed=42)
    card = cache.model_card(entry, {}, {}, stock=True, committed=cells)
    assert "| task | scale | added at fine-tuning | seed | dev | test | metric |" in card
    assert "| ud_parsing | gpu-paper_tenth | — | 42 | 74.00 | 75.07 ‡ | las |" in card
    assert "| ud_parsing | gpu-paper_tenth | syntax-guided GAT | 42 | 74.50 | 75.50 ‡ | las |" in card
    # A card none of whose cells added anything keeps the plain columns.
    assert "| task | scale | seed | dev | test | metric |" in cache.model_card(entry, {}, {}, stock=True, committed=[plain_cell])
    (tmp_path / "downstream.json").write_text(json.dumps({"cells": [{"task": "ner", "scale": "gpu-paper", "seed": 42,
                                                                       "dev": 90.49, "test": 85.37, "metric": "f1"}]}))
    assert [c.added_attention for c in cache.release_downstream(tmp_path)] == [None]


def test_a_release_is_refused_when_its_record_or_declared_step_does_not_hold(small_cache, tmp_path):
    from steps.common.releases import ReleaseRefused, digest_of, restore_release, sha256_of

    released = _released(small_cache, tmp_path / "releases")
    record = json.loads((released / "release.json").read_text())
    (released / "extra.bin").write_bytes(b"x")  # a file the record does not name
    with pytest.raises(ReleaseRefused, match="extra.bin: not recorded"):
        restore_release(released, tmp_path / "ws")
    (released / "extra.bin").unlink()
    # A release made by another version of the step, consistently re-hashed: its ID names a version this code does not compute.
    step = json.loads((released / "step.json").read_text())
    old_id = record["unique_id"].replace("PretrainMicrobert-002-", "PretrainMicrobert-001-")
    step["unique_id"] = step["cache_metadata"]["step"] = old_id
    (released / "step.json").write_text(json.dumps(step))
    record["files"]["step.json"] = sha256_of(released / "step.json")
    record.update(unique_id=old_id, sha256=digest_of(record["files"]))
    (released / "release.json").write_text(json.dumps(record))
    with pytest.raises(ReleaseRefused, match="made by PretrainMicrobert version 001; this code's is 002"):
        restore_release(released, tmp_path / "ws")
    # step.json declaring another step than the record, hashes aside.
    step["unique_id"] = record["unique_id"] = "PretrainMicrobert-002-" + "x" * 32
    (released / "step.json").write_text(json.dumps(step))
    record["files"]["step.json"] = sha256_of(released / "step.json")
    record["sha256"] = digest_of(record["files"])
    (released / "release.json").write_text(json.dumps(record))
    with pytest.raises(ReleaseRefused, match="declares step"):
        restore_release(released, tmp_path / "ws")


def test_a_stopped_run_travels_as_its_checkpoint_and_is_restored_unfinished(tmp_path):
    from steps.common.releases import restore_release, write_release

    entry = tmp_path / "ws" / "cache" / "PretrainMicrobert-002-abc"
    (entry / "work").mkdir(parents=True)
    torch.save({"step": 7, "model": {"w": torch.arange(4.0)}}, entry / "work" / "checkpoint.pt")
    record = write_release(entry, tmp_path / "releases" / "m-partial", {"step_class": "PretrainMicrobert"})
    assert record["kind"] == "checkpoint" and set(record["files"]) == {"work/checkpoint.pt", "step.json"}
    target = restore_release(tmp_path / "releases" / "m-partial", tmp_path / "other")
    assert not (target / "cache-metadata.json").exists()  # unfinished: `tango run` resumes it
    assert torch.load(target / "work" / "checkpoint.pt", weights_only=True)["step"] == 7


def test_a_run_executes_only_the_uncached_steps_that_uncached_results_need():
    """`tango run` prunes its graph as `make` would (steps.common.compat.needed_steps), checked against
    every subset of cached steps of a small diamond by a brute-force reading of the rule."""
    from itertools import combinations
    from types import SimpleNamespace

    from steps.common.compat import needed_steps

    edges = {"corpus": [], "parser": ["corpus"], "parse": ["corpus", "parser"], "tokenizer": ["corpus"],
             "rows": ["parse", "tokenizer"], "encoder": ["rows", "tokenizer"], "ud": ["encoder", "parser"], "cell": ["ud"]}
    nodes = {name: SimpleNamespace(name=name, cache_results=True, dependencies=set()) for name in edges}
    for name, parents in edges.items():
        nodes[name].dependencies = [nodes[parent] for parent in parents]
    consumers = {name: [c for c, parents in edges.items() if name in parents] for name in edges}
    for size in range(len(edges) + 1):
        for cached in map(set, combinations(edges, size)):
            def must_run(name):  # brute force: uncached, and a sink or read by something that must run
                return name not in cached and (not consumers[name] or any(must_run(c) for c in consumers[name]))
            run = {name for name in edges if must_run(name)}
            kept = needed_steps(nodes, lambda step: step.name in cached)
            assert set(kept) == run | {parent for name in run for parent in edges[name]} | cached, (cached, set(kept))
    # The restored-encoder case: only the fine-tuning and its cell run (the parser is read by ud, so it stays).
    kept = needed_steps(nodes, lambda step: step.name in {"encoder", "parser"})
    assert set(kept) - {"encoder", "parser"} == {"ud", "cell"}


def test_every_committed_release_matches_its_hashes_and_declares_a_step_this_code_computes():
    """The releases under releases/ are what a fresh machine restores: each one verifies (file
    hashes, digest, a step class and version this code registers), as `restore` would check it."""
    from steps.common.releases import registered_versions, verify_release

    folders = sorted(p.parent for p in (REPO / "releases").rglob("release.json"))
    assert len(folders) >= 10, folders
    versions = registered_versions()
    kinds = {folder.relative_to(REPO / "releases").as_posix(): verify_release(folder, versions)["kind"] for folder in folders}
    assert {kinds[f"{language}/{name}-paper"] for language in ("wolof", "coptic") for name in ("parsed_corpus", "pretraining_data")} == {"data"}
    assert kinds["wolof/m-paper-s42"] == "result", kinds


def test_each_committed_release_card_lists_the_committed_predictions_of_its_weights():
    """A committed encoder release's downstream figures hold every cell of docs/predictions/ that
    was fine-tuned from its weights (the same sha256), with the same figures: a cell exported after
    its card was written shows here as missing until the card is written again."""
    releases = sorted(path.parent for path in (REPO / "releases").glob("*/*/release.json")
                      if json.loads(path.read_text())["files"].get("encoder/model.safetensors"))
    assert releases, "no committed encoder release"
    for folder in releases:
        weights = json.loads((folder / "release.json").read_text())["files"]["encoder/model.safetensors"]
        listed = {cache._cell_key(c): (c.dev, c.test) for c in cache.release_downstream(folder)}
        for c in cache.committed_cells(REPO / "docs" / "predictions", weights):
            key = cache._cell_key(c)
            assert key in listed, f"{folder.relative_to(REPO)}: card lacks {key}"
            assert listed[key] == (cache._two_decimals(c.dev), cache._two_decimals(c.test)), f"{folder.relative_to(REPO)}: {key}"
