"""Train and evaluate the three left-to-right LMs of the TG comparison on one action data set.

    build_tg_actions ──► train_tg_lm (kind: tg | txl_trees | txl_terminals, seed)
                                 │
                                 ▼
                         evaluate_tg_lm (held-out split) ──► perplexity

Held-out perplexity is per word (UD words, the same count for all three models), as in the paper:
PPL = exp(−Σ log p / N_w).  For TG and TXL(trees) p is the joint p(x, y) of the sentence and its one
tree y (the corpus parser's for Wolof, gold for EWT); since p(x) = Σ_y p(x, y) ≥ p(x, y), their
figure is an upper bound on the model's string perplexity (the paper tightens it with 300 proposal
trees; we use one).  For TXL(terminals) p is the exact p(x) of the WordPiece string followed by
[SEP], which also sums to one over strings.
"""
from __future__ import annotations

import json
import math
import shutil
import time
from contextlib import closing
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from safetensors.torch import load_file, save_file
from tango import Step
from tango.common import Tqdm
from tango.format import JsonFormat
from transformers import get_cosine_schedule_with_warmup

from models.attention.transformer_grammar import CNT2, TERMINAL, action_types
from models.transformer_grammar import LM_KINDS, TransformerGrammarLM, closing_form, lm_config, next_action_labels
from steps.common.batching import bucketed_batches
from steps.common.formats import DirectoryFormat
from steps.common.runtime import derived_seed, resolve_device, torch_threads
from steps.common.training import TrainingHarness, check_finite_loss, read_back

WEIGHTS = "model.safetensors"
CONFIG = "config.json"
CHECKPOINT_NAME = "checkpoint.pt"
BEST_WEIGHTS = "best_dev.safetensors"  # in the work dir: the lowest dev point's weights (select_best)
# Test hook: raise `SimulatedCrash` right after training step N (after its checkpoint, if one is
# due), as if the process had been killed there. Not part of any cache key.
CRASH_AFTER_STEP_ENV = "SIB_TG_LM_CRASH_AFTER_STEP"
PLATEAU_TOLERANCE = 0.01  # train_tg_lm's default: a plateau is < 1 % better than the best before it


def model_sequences(actions: Dict[str, Any], split: str, kind: str, closing_nonterminals: str = "duplicated") -> List[List[int]]:
    """The id sequences ``kind`` models: the action sequence (``closing_nonterminals`` "single": its
    CNT2 copies left out, the plain linearised tree), or <s> + its terminals + [SEP]."""
    layout = actions["layout"]
    rows = actions[split]
    if kind != "txl_terminals" and closing_nonterminals == "duplicated":
        return [row["actions"] for row in rows]
    sequences = []
    for row in rows:
        ids = torch.tensor(row["actions"])
        types = action_types(ids, layout["num_terminals"], layout["num_labels"])
        if kind == "txl_terminals":
            sequences.append([layout["sos_id"]] + ids[types == TERMINAL].tolist() + [layout["eos_id"]])
        else:
            sequences.append(ids[types != CNT2].tolist())
    return sequences


def lm_sequences(actions: Dict[str, Any], split: str, config) -> List[List[int]]:
    """`model_sequences` of the LM whose config is ``config`` (its kind and closing form)."""
    return model_sequences(actions, split, config.tg_kind, closing_form(config))


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int = 0) -> torch.Tensor:
    length = max(len(s) for s in sequences)
    batch = torch.full((len(sequences), length), pad_id, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        batch[row, : len(sequence)] = torch.tensor(sequence)
    return batch


def load_lm(directory: Path, device: Optional[str] = "cpu") -> TransformerGrammarLM:
    settings = json.loads((Path(directory) / CONFIG).read_text())
    settings.setdefault("relative_form", "bias")  # models saved before the Transformer-XL form (VERSION 001)
    model = TransformerGrammarLM(lm_config(**settings))
    model.load_state_dict(load_file(str(Path(directory) / WEIGHTS)))
    return model.to(resolve_device(device)).eval()


def load_cell_lm(model: Path, row: str, step: str, device: Optional[str] = "cpu") -> Tuple[TransformerGrammarLM, Dict[str, Any]]:
    """A `train_tg_lm` model and its training metrics, for a table cell whose ``row`` must name the
    model's kind (``step`` names the caller in the error), on ``device``."""
    lm = load_lm(model, device)
    if row != lm.config.tg_kind:
        raise ValueError(f"{step}: row {row!r} names another kind than the model's ({lm.config.tg_kind!r})")
    return lm, json.loads((Path(model) / "metrics.json").read_text())


def sentence_nll(model: TransformerGrammarLM, sequences: Sequence[Sequence[int]], batch_size: int = 64) -> List[float]:
    """−log p of each whole sequence (sum over its prediction events), in nats, on the model's device."""
    config = model.config
    device = next(model.parameters()).device
    totals: List[float] = [0.0] * len(sequences)
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            input_ids = pad_batch([sequences[i] for i in chosen]).to(device)
            labels = next_action_labels(input_ids, config.tg_num_terminals, config.tg_num_labels)
            nll = model(input_ids, labels).token_nll.sum(-1)
            for index, value in zip(chosen, nll.tolist()):
                totals[index] = value
    return totals


def split_perplexity(model: TransformerGrammarLM, actions: Dict[str, Any], split: str,
                     max_sentences: Optional[int] = None) -> Dict[str, Any]:
    """Per-word perplexity of ``model`` (its kind's sequences, see the module doc) on the first
    ``max_sentences`` rows of ``split`` (all if None): {"perplexity", "nll_nats", "words", "sentences"}.
    `evaluate_tg_lm` scores a model with it, and `train_tg_lm` its held-out curve."""
    rows = actions[split][:max_sentences]
    totals = sentence_nll(model, lm_sequences({**actions, split: rows}, split, model.config))
    words = sum(sentence["words"] for sentence in rows)
    nll = sum(totals)
    return {"perplexity": math.exp(nll / words), "nll_nats": nll, "words": words, "sentences": len(totals)}


def stop_reason(dev_history: Sequence[Dict[str, float]], stop_at_perplexity: Optional[float],
                plateau_validations: Optional[int], plateau_tolerance: float) -> Optional[str]:
    """Whether the held-out curve so far stops training: "perplexity" once its last point is at or
    below ``stop_at_perplexity``; "plateau" once its last ``plateau_validations`` points (K) together
    lowered the best perplexity of the points before them by less than ``plateau_tolerance`` of it,
    i.e. (best before − best of the last K) < tolerance × best before, which needs K + 1 points
    (with tolerance 1.0 it holds at point K + 1, whatever the curve); None: go on. A rule left None
    never stops a run."""
    if not dev_history:
        return None
    if stop_at_perplexity is not None and dev_history[-1]["perplexity"] <= stop_at_perplexity:
        return "perplexity"
    if plateau_validations is not None and len(dev_history) > plateau_validations:
        before = min(point["perplexity"] for point in dev_history[:-plateau_validations])
        recent = min(point["perplexity"] for point in dev_history[-plateau_validations:])
        if before - recent < plateau_tolerance * before:
            return "plateau"
    return None


def _save_weights(model: torch.nn.Module, path: Path) -> None:
    """The model's weights as safetensors at ``path``, written whole or not at all."""
    partial = path.with_name(path.name + ".partial")
    save_file({name: tensor.detach().cpu().contiguous() for name, tensor in model.state_dict().items()}, str(partial))
    partial.replace(path)


@Step.register("train_tg_lm")
class TrainTgLanguageModel(Step):
    """Train one µB-size left-to-right LM (`models.transformer_grammar`) of ``kind`` on the train
    split of `build_tg_actions`: AdamW, linear warmup then cosine decay over ``max_steps``,
    length-bucketed batches drawn from (seed, epoch), next-action NLL over labelled positions.

    Long runs as short jobs: every ``checkpoint_every`` steps (and at the last one) the full state
    (model, optimizer, schedule, RNG, the step, the batch order's epoch counter and pending batches,
    the curves) is written atomically to the step's work directory; running the same step again
    after a kill resumes there ("resuming from step N" in the log, ``resumed_from`` in metrics.json)
    and, on CPU, ends bit for bit where the uninterrupted run ends (dropout is seeded from (seed,
    step)). A SIGINT (`tools/jobs.py run` at the end of its budget) stops the run at the end of the
    step under way, with a checkpoint there. Checkpoint, resume, SIGINT stop and crash hook are the
    training harness's (`steps.common.training`), shared with pretraining and fine-tuning.

    Held-out curve and stop rule: with ``validate_every`` the dev split's per-word perplexity
    (`split_perplexity`, what `evaluate_tg_lm` reports) is computed every that many steps and at the
    last one, into metrics.json's ``dev_history`` [{step, perplexity, ...}]. ``stop_at_perplexity``
    and ``plateau_validations``/``plateau_tolerance`` (`stop_reason`) then may end training before
    ``max_steps``; each applies only when set. The schedule stays the one of ``max_steps``, so a
    stopped run is the first steps of the full one. metrics.json records ``stopped_by``
    ("max_steps" | "perplexity" | "plateau" | "budget_from") and ``steps`` (the step it stopped
    at); the saved weights are the last step's. For a comparison of the three kinds at one budget,
    set the rule on one kind only (TXL (terminals): train until its dev perplexity reaches a target,
    e.g. 500 for Wolof, or its curve flattens) and give the other kinds its ``steps`` as their budget
    with the same ``max_steps`` (so the same schedule): ``budget_from`` (that kind's result, same
    seed) does it in one graph.

    Result: a directory with ``model.safetensors``, ``config.json`` (the `lm_config` arguments) and
    ``metrics.json`` (training loss curve, dev curve, seconds per step, what stopped the run).
    """

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "002"  # 002: Transformer-XL relative-position scores (relative_form; "bias" was 001's)
    FORMAT = DirectoryFormat()
    SKIP_ID_ARGUMENTS = {"num_threads", "device", "checkpoint_every"}
    SKIP_DEFAULT_ARGUMENTS = {"relative_form": "transformer_xl", "validate_every": None, "max_validation_sequences": None,
                              "stop_at_perplexity": None, "plateau_validations": None, "plateau_tolerance": PLATEAU_TOLERANCE,
                              "budget_from": None, "select_best": False, "cnt2_attends_self": True,
                              "closing_nonterminals": "duplicated", "clip_relative_positions": True}

    def run(  # type: ignore[override]
        self,
        actions: Dict[str, Any],
        kind: str,
        seed: int = 42,
        max_steps: int = 2000,
        batch_size: int = 32,
        lr: float = 1e-3,
        warmup: float = 0.1,
        weight_decay: float = 0.01,
        num_threads: Optional[int] = None,
        relative_form: str = "transformer_xl",
        device: Optional[str] = "auto",
        checkpoint_every: int = 250,
        validate_every: Optional[int] = None,
        max_validation_sequences: Optional[int] = None,
        stop_at_perplexity: Optional[float] = None,
        plateau_validations: Optional[int] = None,
        plateau_tolerance: float = PLATEAU_TOLERANCE,
        budget_from: Optional[Path] = None,
        select_best: bool = False,
        cnt2_attends_self: bool = True,
        closing_nonterminals: str = "duplicated",
        clip_relative_positions: bool = True,
    ) -> Path:
        """:param relative_form: "transformer_xl" (the paper's scores) or "bias" (one learned scalar
            per layer, head and relative position; `models.transformer_grammar`).
        :param device: "auto" (the GPU when there is one), "cpu" or "cuda"; recorded in metrics.json.
        :param checkpoint_every: steps between checkpoints (also written at the last step and on
            SIGINT); where a resumed run starts, never what it computes, so not in the cache key.
        :param validate_every: steps between two points of the dev curve (and one at the last step);
            None: no curve, no stop rule.
        :param max_validation_sequences: the dev curve scores the dev split's first N sentences
            (speed); None: all of them.
        :param stop_at_perplexity: stop once a dev point's per-word perplexity is ≤ this.
        :param plateau_validations: K: stop once the last K dev points lowered the best perplexity of
            the points before them by less than ``plateau_tolerance`` (relative: 0.01 = 1 %).
        :param budget_from: a `train_tg_lm` result with the same ``max_steps``: train for exactly the
            steps it trained (its ``steps``), e.g. the TXL (terminals) run that a stop rule ended.
        :param select_best: the result keeps the weights of the dev point with the lowest perplexity,
            not the last step's: the TG paper's "model checkpoint with the lowest validation loss"
            (Sartran et al. 2022, §4, Experimental Details). Needs validate_every.
        :param cnt2_attends_self: TG only. True (the default, the reference code's and every committed
            figure's): a CNT2 attends to the stack and to itself; False: to the stack alone, as the
            paper's Algorithm 1 (`models.attention.transformer_grammar`). Keyed only when False.
        :param closing_nonterminals: TXL (trees) only. "duplicated" (the default, every committed
            figure's): TG's action sequence, each closing nonterminal followed by its CNT2 copy;
            "single": the plain linearised tree the paper trains TXL (trees) on (§3, after Choe and
            Charniak 2016). Keyed only when "single".
        :param clip_relative_positions: the TXLs only. True (the default, every committed figure's):
            i − j clipped to TG's range [−1, 62]; False: Transformer-XL's unclipped i − j. Keyed
            only when False.
        Each setting is checked by `lm_config` before any data is read."""
        device = resolve_device(device)
        if kind not in LM_KINDS:
            raise ValueError(f"unknown LM kind {kind!r}; known: {LM_KINDS}")
        layout = actions["layout"]
        settings = {"kind": kind, "vocab_size": len(actions["vocabulary"]), "num_terminals": layout["num_terminals"],
                    "num_labels": layout["num_labels"], "relative_form": relative_form, "cnt2_attends_self": cnt2_attends_self,
                    "closing_nonterminals": closing_nonterminals, "clip_relative_positions": clip_relative_positions}
        config = lm_config(**settings)  # refuses a setting the kind does not have
        if checkpoint_every < 1 or (validate_every is not None and validate_every < 1):
            raise ValueError("checkpoint_every and validate_every must be positive")
        rule = stop_at_perplexity is not None or plateau_validations is not None
        if rule and validate_every is None:
            raise ValueError("stop_at_perplexity and plateau_validations need validate_every (the dev curve they read)")
        if plateau_validations is not None and plateau_validations < 1:
            raise ValueError(f"plateau_validations must be positive, got {plateau_validations}")
        if plateau_tolerance != PLATEAU_TOLERANCE and plateau_validations is None:
            raise ValueError("plateau_tolerance is plateau_validations' tolerance: set both or neither")
        if select_best and validate_every is None:
            raise ValueError("select_best needs validate_every (the dev points it selects from)")
        if validate_every is not None and "dev" not in actions:
            raise ValueError("validate_every needs a dev split in the actions")
        budget = max_steps
        if budget_from is not None:
            if rule:
                raise ValueError("budget_from and a stop rule exclude each other: the budget is the other run's")
            source = json.loads((Path(budget_from) / "metrics.json").read_text())
            if source["max_steps"] != max_steps:
                raise ValueError(f"budget_from: {Path(budget_from) / 'metrics.json'} has max_steps {source['max_steps']}, "
                                 f"this run {max_steps}: the schedules would differ")
            budget = source.get("steps", max_steps)  # results from before the stop rules always trained max_steps
        sequences = lm_sequences(actions, "train", config)
        torch.manual_seed(derived_seed(seed, "tg_lm_init"))
        model = TransformerGrammarLM(config).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-6, weight_decay=weight_decay)
        schedule = get_cosine_schedule_with_warmup(optimizer, int(warmup * max_steps), max_steps)
        lengths = [len(s) for s in sequences]
        # The batch order: `pending` holds what is left of pass `epoch` (drawn from (seed, epoch)).
        state: Dict[str, Any] = {"step": 0, "epoch": 0, "pending": [], "history": [], "dev_history": [], "stopped_by": None,
                                 "train_seconds": 0.0, "validation_seconds": 0.0, "resumed_from": []}
        harness = TrainingHarness(self.work_dir / CHECKPOINT_NAME, device, "step", CRASH_AFTER_STEP_ENV)
        saved = harness.resume(model, optimizer, schedule)
        if saved is not None:
            state = saved["state"]
            state["resumed_from"].append(state["step"])
            self.logger.info("%s: resuming from step %d (checkpoint %s)", kind, state["step"], harness.path)
        losses: List[Tuple[int, torch.Tensor]] = []  # steps whose loss is still on the device
        # A bar over the steps this run may take (a stop rule may end it sooner): a paper-scale LM
        # logs its loss only every max_steps / 20 steps.
        progress = Tqdm.tqdm(total=budget, initial=state["step"], desc=f"training {kind} LM")
        shown: Dict[str, str] = {}  # the bar's latest loss and dev point
        with torch_threads(num_threads), harness, closing(progress):
            model.train()
            while state["step"] < budget and state["stopped_by"] is None:
                step_start = time.perf_counter()
                step = state["step"] + 1
                if not state["pending"]:
                    state["pending"] = bucketed_batches(lengths, batch_size, torch.Generator().manual_seed(
                        derived_seed(seed, "tg_lm_batches", state["epoch"])))
                    state["epoch"] += 1
                input_ids = pad_batch([sequences[i] for i in state["pending"].pop()]).to(device)
                torch.manual_seed(derived_seed(seed, "tg_lm_dropout", step))
                loss = model(input_ids, next_action_labels(input_ids, layout["num_terminals"], layout["num_labels"])).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                optimizer.zero_grad(set_to_none=True)
                state["step"] = step
                losses.append((step, loss.detach()))
                progress.update(1)
                logged = step % max(1, max_steps // 20) == 0 or step == max_steps
                validating = validate_every is not None and (step % validate_every == 0 or step == budget)
                checkpointing = step % checkpoint_every == 0 or step == budget or harness.stop_requested
                if logged or validating or checkpointing or harness.crashes_after(step):
                    # One device wait for the steps since the last read; a non-finite loss stops the
                    # run here, before a checkpoint or a dev point could keep its weights.
                    for number, value in zip([n for n, _ in losses], read_back([v for _, v in losses])):
                        check_finite_loss(value, f"step {number}", kind)
                        if number == step and logged:
                            state["history"].append({"step": step, "loss": value})
                            self.logger.info("%s step %d/%d loss %.3f", kind, step, max_steps, value)
                    shown["loss"] = f"{value:.3f}"
                    progress.set_postfix(shown)
                    losses = []
                state["train_seconds"] += time.perf_counter() - step_start
                if validating:
                    validation_start = time.perf_counter()
                    model.eval()
                    point = split_perplexity(model, actions, "dev", max_validation_sequences)
                    model.train()
                    state["dev_history"].append({"step": step, "perplexity": point["perplexity"], "words": point["words"]})
                    best_before = min((p["perplexity"] for p in state["dev_history"][:-1]), default=math.inf)
                    if select_best and point["perplexity"] < best_before:
                        # Written before the checkpoint that records it: a run resumed from an older
                        # checkpoint replays this point bit for bit and writes the same file again.
                        _save_weights(model, self.work_dir / BEST_WEIGHTS)
                    state["validation_seconds"] += time.perf_counter() - validation_start
                    state["stopped_by"] = stop_reason(state["dev_history"], stop_at_perplexity, plateau_validations, plateau_tolerance)
                    shown["dev ppl"] = f"{point['perplexity']:.1f}"
                    progress.set_postfix(shown)
                    self.logger.info("%s step %d: dev per-word perplexity %.2f over %d words%s", kind, step, point["perplexity"],
                                     point["words"], f"; stopping ({state['stopped_by']})" if state["stopped_by"] else "")
                finished = step == budget or state["stopped_by"] is not None
                if checkpointing or finished:
                    harness.save(model, optimizer, schedule, state=state)
                harness.boundary(step, budget, finished, self.logger)
        stopped_by = state["stopped_by"] or ("budget_from" if budget < max_steps else "max_steps")
        out = self.work_dir / "lm"
        out.mkdir(parents=True, exist_ok=True)
        # The first lowest dev point: the one whose weights BEST_WEIGHTS holds (written on a strict improvement).
        selected = min(state["dev_history"], key=lambda p: p["perplexity"])["step"] if select_best else state["step"]
        if select_best:
            shutil.copyfile(self.work_dir / BEST_WEIGHTS, out / WEIGHTS)  # a copy: a rerun of this tail finds it again
        else:
            _save_weights(model, out / WEIGHTS)
        (out / CONFIG).write_text(json.dumps(settings, indent=2))
        seconds = state["train_seconds"]
        metrics = {"kind": kind, "seed": seed, "max_steps": max_steps, "batch_size": batch_size, "epochs": state["epoch"],
                   "train_sequences": len(sequences), "seconds": seconds, "seconds_per_step": seconds / max(state["step"], 1),
                   "parameters": sum(p.numel() for p in model.parameters()), "history": state["history"], "device": str(device),
                   "steps": state["step"], "stopped_by": stopped_by, "dev_history": state["dev_history"],
                   "validation_seconds": state["validation_seconds"], "resumed_from": state["resumed_from"],
                   "selected_step": selected}
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
        return out


@Step.register("evaluate_tg_lm")
class EvaluateTgLanguageModel(Step):
    """Held-out per-word perplexity of a `train_tg_lm` model on ``split`` (see the module doc for
    what it bounds), as one seed's score of the TG table: the `score_cell` layout (table "tg", row =
    the model's kind, column = ``language``) with the perplexity as "test" (the held-out split, named
    in "split"), so that `aggregate_cell` and `python -m reporting.tables` read it like any cell."""

    DETERMINISTIC = True
    CACHEABLE = True
    VERSION = "001"
    FORMAT = JsonFormat()
    SKIP_ID_ARGUMENTS = {"num_threads", "device"}

    def run(  # type: ignore[override]
        self, model: Path, actions: Dict[str, Any], table: str, row: str, column: str, scale: str, split: str = "dev",
        max_sentences: Optional[int] = None, num_threads: Optional[int] = None, device: Optional[str] = "auto",
    ) -> Dict[str, Any]:
        """:param table, row, column, scale: the cell, as for `score_cell` (row: the model's kind,
            column: the language); the reporting graph reads them from the config.
        :param max_sentences: score only the split's first N sentences (smoke scale); None = all."""
        lm, training = load_cell_lm(model, row, "evaluate_tg_lm", device)
        kind, language = lm.config.tg_kind, column
        with torch_threads(num_threads):
            score = split_perplexity(lm, actions, split, max_sentences)
        self.logger.info("%s %s %s: per-word perplexity %.2f over %d words", language, kind, split, score["perplexity"], score["words"])
        return {
            "table": table, "row": kind, "column": language, "scale": scale, "seed": training["seed"],
            "task": "language_modelling", "metric": "perplexity", "test": score["perplexity"], "dev": None,
            "split": split, "nll_nats": score["nll_nats"], "words": score["words"], "sentences": score["sentences"],
            "bound": "exact p(x)" if kind == "txl_terminals" else "upper bound: joint p(x, y) with one tree",
            "encoder": None, "train_seconds": training["seconds"], "device": str(next(lm.parameters()).device),
        }


def bracketing(sequence: Sequence[int], vocabulary: Sequence[str]) -> str:
    """A sampled action sequence as text: the tree with "(rel … rel)", CNT2 copies and <s> left out."""
    return " ".join(vocabulary[i] for i in sequence[1:] if not vocabulary[i].endswith(")²"))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Sample trees from a trained TG (or TXL (trees)) model:
    ``python -m steps.tg.language_model <train_tg_lm result dir> <vocabulary.json> [-n 5]``, where
    vocabulary.json is the "vocabulary" list of the build_tg_actions result."""
    import argparse

    from models.transformer_grammar import sample_actions

    parser = argparse.ArgumentParser(description=main.__doc__.split("\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("vocabulary", type=Path)
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    vocabulary = json.loads(args.vocabulary.read_text())
    model = load_lm(args.model)
    for sample in sample_actions(model, args.n, args.max_length, torch.Generator().manual_seed(args.seed)):
        print(bracketing(sample, vocabulary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
