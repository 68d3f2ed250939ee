"""Cache integrity.

- Editing one data file recomputes exactly the steps that read it (and their dependents);
  touching it without a change recomputes nothing (DataPath keys follow content, not mtime).
- A result file deleted or cut short inside a complete cache entry stops its reader with a
  one-line DamagedCacheEntry naming the entry, never a silently different input.
- ``python -m reporting.tables`` on a partly filled cache fills what exists, marks the rest "—",
  shows a damaged entry as "damaged" (never its number) and says how many of each.

Real load_corpus / train_tokenizer steps on a few Wolof Wikipedia pages copied under a temporary
data root; the table cells come from a stand-in fine-tuning step (registered here) through the
real score_cell / aggregate_cell steps, in seconds.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from tango.common import Params
from tango.step_graph import StepGraph
from tango.workspaces import LocalWorkspace

import steps  # noqa: F401  (registers the steps, applies the Tango patches)
from reporting import tables
from steps.common.formats import MANIFEST_NAME, DamagedCacheEntry, DirectoryFormat

PAGES = 12  # Wolof Wikipedia pages per corpus: enough text for a 200-piece vocabulary


@pytest.fixture
def small_data_root(tmp_path, data_root, monkeypatch):
    """Two disjoint slices of the Wolof corpus, ``wolof/corpus_a`` and ``wolof/corpus_b``."""
    pages = sorted((data_root / "wolof" / "corpus").glob("*.html"), key=lambda p: p.name)
    pages = [p for p in pages if 1000 < p.stat().st_size < 20000][: 2 * PAGES]
    root = tmp_path / "data"
    for folder, chosen in (("corpus_a", pages[:PAGES]), ("corpus_b", pages[PAGES:])):
        (root / "wolof" / folder).mkdir(parents=True)
        for page in chosen:
            shutil.copyfile(page, root / "wolof" / folder / page.name)
    monkeypatch.setenv("SIB_DATA_ROOT", str(root))
    return root


def _data_graph() -> StepGraph:
    config = {}
    for name in ("a", "b"):
        config[f"corpus_{name}"] = {"type": "load_corpus", "language": "wolof", "corpus": {"path": f"wolof/corpus_{name}"}}
        config[f"tokenizer_{name}"] = {"type": "train_tokenizer", "corpus": {"type": "ref", "ref": f"corpus_{name}"},
                                       "vocab_size": 200}
    return StepGraph.from_params(config)


def _run_and_list_computed(workspace: LocalWorkspace) -> set:
    """Build the graph afresh (as `tango run` would), run it, return the names of the steps it computed."""
    graph = _data_graph()
    computed = {name for name, step in graph.items() if step not in workspace.step_cache}
    for name in ("tokenizer_a", "tokenizer_b"):
        graph[name].result(workspace)
    assert all(step in workspace.step_cache for step in graph.values())
    return computed


def test_an_edited_file_recomputes_exactly_its_dependents_and_a_touched_one_nothing(tmp_path, small_data_root):
    workspace = LocalWorkspace(tmp_path / "ws")
    assert _run_and_list_computed(workspace) == {"corpus_a", "tokenizer_a", "corpus_b", "tokenizer_b"}
    assert _run_and_list_computed(workspace) == set()

    touched = sorted((small_data_root / "wolof" / "corpus_b").iterdir())[0]
    stat = touched.stat()
    os.utime(touched, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert _run_and_list_computed(workspace) == set()

    edited = sorted((small_data_root / "wolof" / "corpus_a").iterdir())[0]
    edited.write_text(edited.read_text(encoding="utf-8") + "\n<p>Jàng ak bind ci làkku wolof.</p>\n", encoding="utf-8")
    before = {name: step.unique_id for name, step in _data_graph().items()}
    assert _run_and_list_computed(workspace) == {"corpus_a", "tokenizer_a"}
    # ...and the recomputed corpus holds the added sentence, so the key did follow the content.
    corpus_a = _data_graph()["corpus_a"].result(workspace)
    assert any("làkku" in " ".join(sentence) for split in ("train", "dev") for sentence in corpus_a[split])
    assert _run_and_list_computed(workspace) == set()
    assert {name: step.unique_id for name, step in _data_graph().items()} == before


def _one_line_damage_error(reading, entry: Path, file_name: str) -> str:
    with pytest.raises(DamagedCacheEntry) as caught:
        reading()
    message = str(caught.value)
    assert "\n" not in message and str(entry) in message and file_name in message
    assert "delete this folder and run again" in message
    return message


def test_a_deleted_or_truncated_result_file_is_a_clear_error(tmp_path, small_data_root):
    workspace = LocalWorkspace(tmp_path / "ws")
    _run_and_list_computed(workspace)
    graph = _data_graph()
    tokenizer_entry = workspace.step_dir(graph["tokenizer_a"])
    corpus_entry = workspace.step_dir(graph["corpus_b"])
    assert json.loads((tokenizer_entry / MANIFEST_NAME).read_text())["tokenizer.json"] > 0

    def read(name):  # a fresh process's read: nothing remembered in memory
        return lambda: LocalWorkspace(workspace.dir).step_cache[_data_graph()[name]]

    # A directory result (DirectoryFormat): one file truncated, another deleted.
    vocabulary = tokenizer_entry / "result" / "tokenizer.json"
    intact = vocabulary.read_bytes()
    vocabulary.write_bytes(intact[:100])
    assert "100 bytes" in _one_line_damage_error(read("tokenizer_a"), tokenizer_entry, "result/tokenizer.json")
    vocabulary.write_bytes(intact)
    assert read("tokenizer_a")() == tokenizer_entry / "result"
    (tokenizer_entry / "result" / "tokenizer_config.json").unlink()
    assert "is missing" in _one_line_damage_error(read("tokenizer_a"), tokenizer_entry, "result/tokenizer_config.json")
    # Tango's own pickled result: cut short, then gone.
    pickled = corpus_entry / "data.dill.gz"
    pickled.write_bytes(pickled.read_bytes()[: pickled.stat().st_size // 2])
    _one_line_damage_error(read("corpus_b"), corpus_entry, "data.dill.gz")
    pickled.unlink()
    _one_line_damage_error(read("corpus_b"), corpus_entry, "data.dill.gz")
    # A step downstream of the damaged entry stops with the same error; nothing is cached for it.
    downstream = StepGraph.from_params({
        "corpus_b": {"type": "load_corpus", "language": "wolof", "corpus": {"path": "wolof/corpus_b"}},
        "tokenizer_b_300": {"type": "train_tokenizer", "corpus": {"type": "ref", "ref": "corpus_b"}, "vocab_size": 300},
    })
    fresh = LocalWorkspace(workspace.dir)
    _one_line_damage_error(lambda: downstream["tokenizer_b_300"].result(fresh), corpus_entry, "data.dill.gz")
    assert downstream["tokenizer_b_300"] not in fresh.step_cache
    # Removing the entry, as the message says, recomputes it.
    shutil.rmtree(corpus_entry)
    assert downstream["tokenizer_b_300"].result(LocalWorkspace(workspace.dir)).is_dir()


def test_directory_format_reads_entries_written_before_the_manifest(tmp_path):
    entry = tmp_path / "entry"
    (entry / "result").mkdir(parents=True)
    (entry / "result" / "weights.bin").write_bytes(b"1234")
    assert DirectoryFormat().read(entry) == entry / "result"  # no manifest: nothing to check against


def _cell_experiment(path: Path, row: str, las: float) -> Path:
    path.write_text(json.dumps({"steps": {
        "ft": {"type": "fake_ud_finetune", "las": las, "seed": 1},
        "score": {"type": "score_cell", "finetuned": {"type": "ref", "ref": "ft"}, "table": "table2", "row": row,
                  "column": "wolof", "scale": "cpu", "seed": 1},
        "cell": {"type": "aggregate_cell", "scores": [{"type": "ref", "ref": "score"}]},
    }}))
    return path


def _tables(files, workspace: Path, out: Path, capsys):
    assert tables.main([*map(str, files), "--workspace", str(workspace), "--out", str(out), "--scale", "cpu"]) == 0
    captured = capsys.readouterr()
    markdown = (out / "cpu" / "table2.md").read_text()
    line = {row: next(l for l in markdown.splitlines() if l.startswith(f"| µB-{row} |")) for row in ("M", "MX")}
    return captured.out, captured.err, markdown, line


def test_tables_fill_what_exists_mark_the_rest_and_never_show_a_damaged_number(tmp_path, capsys):
    workspace = LocalWorkspace(tmp_path / "ws")
    computed = _cell_experiment(tmp_path / "wolof_m.json", "M", 71.25)
    pending = _cell_experiment(tmp_path / "wolof_mx.json", "MX", 75.5)
    graph = StepGraph.from_params(Params.from_file(computed).pop("steps"))
    graph["cell"].result(workspace)

    out, _, markdown, line = _tables([computed, pending], workspace.dir, tmp_path / "t1", capsys)
    assert "2 table cells: 1 cached, 1 not cached (shown as —), 0 damaged" in out
    assert line["M"].startswith("| µB-M | 71.25 |") and line["MX"].startswith("| µB-MX | — |")  # Wolof, ours
    assert "— not in this cache" in markdown

    entry = workspace.step_dir(graph["cell"])
    result = entry / "data.json"
    intact = result.read_bytes()
    damages = {
        "truncated": intact[: len(intact) // 2],
        "deleted": None,
        "not an aggregate": json.dumps({"test": {"mean": 99.0}}).encode(),
        "mean disagrees with values": intact.replace(b'"mean": 71.25', b'"mean": 99.0'),
    }
    assert damages["mean disagrees with values"] != intact
    for index, (damage, content) in enumerate(damages.items()):
        if content is None:
            result.unlink()
        else:
            result.write_bytes(content)
        out, err, markdown, line = _tables([computed, pending], workspace.dir, tmp_path / f"t{index + 2}", capsys)
        assert "2 table cells: 0 cached, 1 not cached (shown as —), 1 damaged" in out, damage
        assert str(entry) in err and "damaged cache entry" in err, damage
        assert line["M"].startswith("| µB-M | damaged |"), damage
        assert "71.25" not in markdown and "99.00" not in markdown, damage  # (the record's M Wolof is another figure)
        rows = (tmp_path / f"t{index + 2}" / "cpu" / "table2.csv").read_text()
        assert "71.2500" not in rows and "99.0000" not in rows and ",damaged," in rows, damage
    result.write_bytes(intact)
    out, _, _, line = _tables([computed, pending], workspace.dir, tmp_path / "t_restored", capsys)
    assert "1 cached" in out and line["M"].startswith("| µB-M | 71.25 |")

