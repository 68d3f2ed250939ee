"""Training curves from the cache, for readers without W&B: one PNG per (scale, language, curve),
a line per condition (and seed), drawn by `python -m reporting.report`.

What the steps keep in ``metrics.json`` ``history`` and is drawn here:

* ``pretrain_microbert``: every validation's ``step`` and ``dev_mlm_loss`` → dev MLM loss by step;
* ``finetune_ud_parser``: every epoch's ``las`` on dev (epoch 0 = untrained head) → dev LAS by epoch;
* ``finetune_ner``: every epoch's ``dev_f1`` → dev span F1 by epoch;
* ``finetune_pronto``: every epoch's ``dev_accuracy`` (when dev is held out) → dev accuracy by epoch;
* ``train_tg_lm``: its ``dev_history`` (with ``validate_every``) → dev per-word perplexity by step, a
  line per LM kind and seed, on a log scale (`tg_curve_series`).
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from reporting.cache import Entry, _class_of, _read_metrics, cache_dirs, graph_labels
from reporting.graphs import FileGraph

# curve name → (entry kind, task prefix or None, x field, y field, y label)
CURVES = {
    "pretraining_dev_mlm_loss": ("encoder", None, "step", "dev_mlm_loss", "dev MLM loss"),
    "ud_dev_las": ("cell", "ud_parsing", "epoch", "las", "dev LAS"),
    "ner_dev_f1": ("cell", "ner", "epoch", "dev_f1", "dev span F1"),
    "pronto_dev_accuracy": ("cell", "pronto:", "epoch", "dev_accuracy", "dev accuracy"),
    "tg_dev_perplexity": ("tg", None, "step", "perplexity", "dev per-word perplexity"),
    # The LMs with a form setting off its default (`tg_form`): the `tg_paper_form` files' own figure.
    "tg_paper_form_dev_perplexity": ("tg", None, "step", "perplexity", "dev per-word perplexity, the TG paper's forms"),
}
LOG_SCALE = {"tg_dev_perplexity", "tg_paper_form_dev_perplexity"}  # perplexities fall by orders of magnitude early on
# The `train_tg_lm` settings that choose between the reference code's and the TG paper's forms.
TG_FORM_SETTINGS = ("cnt2_attends_self", "closing_nonterminals", "clip_relative_positions")

Series = Dict[Tuple[str, str, str], Dict[str, List[Tuple[float, float]]]]


def _history(entry: Entry) -> List[dict]:
    folder = Path(entry.path).parent if entry.kind == "encoder" else Path(entry.path)
    path = folder / "metrics.json"
    return json.loads(path.read_text()).get("history") or [] if path.exists() else []


def curve_series(entries: Sequence[Entry]) -> Series:
    """{(scale, language, curve name): {line label: [(x, y), …]}} of every entry with a history.
    PrOnto's five tasks share one figure, a line per task and condition."""
    series: Series = defaultdict(dict)
    for entry in entries:
        for name, (kind, task, x_field, y_field, _) in CURVES.items():
            if entry.kind != kind or (task is not None and not str(entry.task or "").startswith(task)):
                continue
            points = [(record[x_field], record[y_field]) for record in _history(entry)
                      if record.get(x_field) is not None and isinstance(record.get(y_field), (int, float))]
            if not points:
                continue
            label = f"{entry.condition or '?'} s{entry.seed}"
            if name == "pronto_dev_accuracy":
                label = f"{str(entry.task).split(':', 1)[-1]} {label}"
            lines = series[(entry.scale or "unknown", entry.language or "unknown", name)]
            if label in lines:  # same condition and seed from another config: tell them apart by cache entry
                label = f"{label} ({entry.unique_id[-6:]})"
            lines[label] = points
    return series


def tg_form(result: Path) -> str:
    """A `train_tg_lm` result's form settings that are off their defaults, as "name: value, …"
    ("" for the default form, every committed `tg` figure's), read from its saved config."""
    from steps.tg.language_model import CONFIG, TrainTgLanguageModel

    path = Path(result) / CONFIG
    settings = json.loads(path.read_text()) if path.exists() else {}
    defaults = TrainTgLanguageModel.SKIP_DEFAULT_ARGUMENTS
    return ", ".join(f"{name}: {json.dumps(settings[name])}" for name in TG_FORM_SETTINGS
                     if name in settings and settings[name] != defaults[name])


def _tg_lms(workspace_dir: Path, graphs: Sequence[FileGraph]):
    """(labels of its experiment file, metrics with the LM's ``form`` (`tg_form`)) of every cached
    Transformer-Grammar LM with a dev curve that an experiment file builds (one no file builds any
    more is left out: `prune`)."""
    labels = graph_labels(graphs)
    for unique_id, folder in cache_dirs(workspace_dir).items():
        if _class_of(unique_id) != "TrainTgLanguageModel" or unique_id not in labels:
            continue
        metrics = _read_metrics(folder / "result")
        if metrics.get("dev_history"):
            yield labels[unique_id], {**metrics, "form": tg_form(folder / "result")}


def tg_curve_series(workspace_dir: Path, graphs: Sequence[FileGraph]) -> Series:
    """{(scale, language, "tg_dev_perplexity"): {"<kind> s<seed>": [(step, perplexity), …]}} of every
    cached Transformer-Grammar LM trained with a dev curve; language and scale are those of the
    experiment file's cells."""
    series: Series = defaultdict(dict)
    for label, metrics in _tg_lms(workspace_dir, graphs):
        name = "tg_paper_form_dev_perplexity" if metrics["form"] else "tg_dev_perplexity"
        lines = series[(label.get("scale") or "unknown", label.get("language") or "unknown", name)]
        lines[f"{metrics.get('kind', '?')} s{metrics.get('seed')}"] = [(p["step"], p["perplexity"]) for p in metrics["dev_history"]]
    return series


def tg_budgets(workspace_dir: Path, graphs: Sequence[FileGraph]) -> List[dict]:
    """How long every cached Transformer-Grammar LM with a dev curve trained and what stopped it
    (``stopped_by``: "perplexity", "plateau", "budget_from" (another LM's steps) or "max_steps"), with
    the step whose weights it kept (``select_best``: its lowest dev point; else its last) and that
    point's perplexity: one dict per LM of an experiment file, ordered by scale, language, seed and kind."""
    rows = []
    for label, metrics in _tg_lms(workspace_dir, graphs):
        steps = metrics.get("steps")
        kept = metrics.get("selected_step") or steps  # runs without select_best keep their last step
        point = next((p for p in metrics["dev_history"] if p["step"] == kept), metrics["dev_history"][-1])
        rows.append({"scale": label.get("scale") or "unknown", "language": label.get("language") or "unknown",
                     "kind": metrics.get("kind"), "seed": metrics.get("seed"), "steps": steps,
                     "stopped_by": metrics.get("stopped_by"), "kept_step": kept, "kept_dev": point["perplexity"],
                     "dev_words": point["words"], "device": metrics.get("device"), "form": metrics["form"]})
    order = {"txl_terminals": 0, "txl_trees": 1, "tg": 2}
    return sorted(rows, key=lambda r: (r["scale"], r["language"], r["form"] != "", r["seed"] or 0, order.get(r["kind"], 9)))


def recorded_lines(path: Path, keep_recorded: bool) -> Optional[Dict[str, List[tuple]]]:
    """The lines a committed figure at ``path`` was drawn from (its ``.json`` sidecar), to redraw it
    with: {} when there is nothing to keep; None when a committed figure has no sidecar (drawn
    before sidecars existed), which cannot be merged and so must be left as it is."""
    if not keep_recorded or not path.exists():
        return {}
    sidecar = path.with_suffix(".json")
    if not sidecar.exists():
        return None
    return {label: [tuple(point) for point in points] for label, points in json.loads(sidecar.read_text())["lines"].items()}


def save_lines(path: Path, lines: Dict[str, Sequence[tuple]]) -> None:
    """The ``.json`` sidecar of the figure at ``path``: the lines it shows (`recorded_lines` reads it)."""
    path.with_suffix(".json").write_text(json.dumps({"lines": {label: [list(p) for p in points] for label, points in sorted(lines.items())}}))


def draw_curves(entries: Sequence[Entry], out_dir: Path, keep_recorded: bool = False) -> List[Path]:
    """Write the PNGs under ``out_dir``, each with a ``.json`` sidecar of the lines it shows;
    returns them (nothing is deleted: curves the cache lacks stay as they were).

    ``keep_recorded`` (the committed record, ``--update-docs``): a partial cache never erases a line
    of record. A figure is redrawn from its sidecar's lines plus this cache's (the cache's win where
    both have a label); a committed figure without a sidecar (drawn before sidecars existed) cannot
    be merged, so it is left as it is and not returned: delete it to have the cache redraw it."""
    return draw_series(curve_series(entries), out_dir, keep_recorded)


SEED_LABEL = re.compile(r"^(?P<group>.*?) s(?P<seed>\d+)(?: \(\w+\))?$")
DASHES = ("-", "--", ":", "-.")


def line_styles(labels: Iterable[str]) -> Dict[str, dict]:
    """{label: plot style}: one colour per condition or LM kind, one dash per seed within it, so a
    figure's seeds of one model read as one family ("MX s43", "tg s42 (a1b2c3)")."""
    parsed = {label: SEED_LABEL.match(label) for label in labels}
    groups = sorted({m["group"] if m else label for label, m in parsed.items()})
    seeds: Dict[str, List[int]] = defaultdict(list)
    for label, m in parsed.items():
        if m:
            seeds[m["group"]].append(int(m["seed"]))
    if len(groups) > 10:  # the default cycle has ten colours: past that, tab20's twenty
        from matplotlib import colormaps
        from matplotlib.colors import to_hex

        palette = [to_hex(colormaps["tab20"](index)) for index in range(20)]
    else:
        palette = [f"C{index}" for index in range(10)]
    styles = {}
    for label, m in parsed.items():
        group = m["group"] if m else label
        dash = DASHES[sorted(set(seeds[group])).index(int(m["seed"])) % len(DASHES)] if m else "-"
        styles[label] = {"color": palette[groups.index(group) % len(palette)], "linestyle": dash}
    return styles


def fitted_limits(lines: Dict[str, Sequence[tuple]], share: float = 0.9) -> Optional[Tuple[float, float]]:
    """y limits that fit the last ``share`` of every line's x range, or None where those would show
    (nearly) the whole range anyway. A dev score climbs from ~0 in its first epochs (a loss falls
    from its start), which squeezes the stretch where runs differ into a flat band."""
    tails, everything = [], []
    for points in lines.values():
        xs = [x for x, _ in points]
        if not xs:
            continue
        start = min(xs) + (1 - share) * (max(xs) - min(xs))
        tails += [y for x, y in points if x >= start]
        everything += [y for _, y in points]
    if not tails:
        return None
    low, high, full = min(tails), max(tails), max(everything) - min(everything)
    if high - low > 0.5 * full:
        return None
    margin = 0.05 * (high - low) or 0.5
    return low - margin, high + margin


def draw_series(series: Series, out_dir: Path, keep_recorded: bool = False) -> List[Path]:
    """`draw_curves` of series already gathered (`curve_series`, `tg_curve_series`)."""
    if not series:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for (scale, language, name), lines in sorted(series.items()):
        _, _, x_field, _, y_label = CURVES[name]
        path = Path(out_dir) / scale.replace("/", "_") / f"{language}_{name}.png"
        recorded = recorded_lines(path, keep_recorded)
        if recorded is None:
            continue
        lines = {**recorded, **lines}
        many = len(lines) > 6  # a legend that long goes beside the axis, not over the lines
        figure, axis = plt.subplots(figsize=(7.5 if many else 5.5, 3.4))
        styles = line_styles(lines)
        for label, points in sorted(lines.items()):
            axis.plot([x for x, _ in points], [y for _, y in points], marker="o", markersize=2.5, linewidth=1, label=label,
                      **styles[label])
        limits = None if name in LOG_SCALE else fitted_limits(lines)
        if name in LOG_SCALE:
            axis.set_yscale("log")
        elif limits:
            axis.set_ylim(*limits)
        axis.set_xlabel(x_field)
        axis.set_ylabel(y_label)
        axis.set_title(f"{y_label} by {x_field} — {language}, {scale} scale"
                       + (f"\ny axis fit to each run's last 90% of {x_field}s" if limits else ""), fontsize=9)
        if many:
            axis.legend(fontsize=6, ncol=2 if len(lines) > 15 else 1, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        else:
            axis.legend(fontsize=6)
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=110)
        plt.close(figure)
        save_lines(path, lines)
        written.append(path)
    return written


def redraw_recorded(out_dir: Path, skip: Sequence[Path] = ()) -> List[Path]:
    """Redraw each committed figure under ``out_dir`` that this cache did not draw (``skip``) from its
    sidecar's lines alone, so that every figure of record shows the current drawing (axis fit, line
    styles); their lines, and so their provenance, stay the record's."""
    drawn = {Path(path).resolve() for path in skip}
    keys = []
    for sidecar in sorted(Path(out_dir).glob("*/*.json")):
        name = next((name for name in CURVES if sidecar.stem.endswith("_" + name)), None)
        if name is not None and sidecar.with_suffix(".png").resolve() not in drawn:
            keys.append((sidecar.parent.name, sidecar.stem[: -len(name) - 1], name))
    return draw_series({key: {} for key in keys}, out_dir, keep_recorded=True)


INTRO = "Drawn from each cached step's `metrics.json` history (`reporting/curves.py`); a line per condition and seed."


def curves_markdown(written: Sequence[Path], relative_to: Path) -> str:
    if not written:
        return "_nothing cached yet_\n"
    lines = [INTRO + "\n"]
    for path in written:
        lines.append(f"![{path.stem}]({Path(path).resolve().relative_to(Path(relative_to).resolve()).as_posix()})")
    return "\n".join(lines) + "\n"


__all__ = ["CURVES", "INTRO", "curve_series", "curves_markdown", "draw_curves", "draw_series", "redraw_recorded", "tg_curve_series"]
