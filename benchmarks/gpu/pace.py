"""The pace of a file's real pretraining loop, in a short run: steps/s and the full run's minutes.

    python benchmarks/gpu/pace.py experiments/paper/wolof_m.jsonnet --steps 3000 --window 500 [--json OUT]

Runs the file's `pretrain_microbert` step as configured (levers, loader workers, batch size, data)
but for ``--steps`` optimizer steps, validating every ``--window``, in a scratch workspace; its
inputs (pretraining data, tokenizer) come from the real workspace's cache. The first window holds
the compiles and the loader's start; the pace is the median of the later windows (steps over the
training seconds of each window, validation excluded), and the projection is the configured
``max_steps`` at that pace: the figure the "≤ 5 minutes on one GPU" bar is about, measured in a
minute instead of a whole run. Nothing it trains is kept. ``--without-compile`` drops the
torch.compile levers (a like-for-like eager ratio of two conditions, without their compile times).
``--profile FILE`` runs the probe under torch.profiler and writes where a step's time goes over
its last ``--profile-steps`` optimizer steps (the compiles, CUDA-graph recordings and loader start
before them are not recorded): the ops by self device time and by self host time, and per step the
kernel launches and the host waits on the device (what a launch-bound loop is made of).
Validation then reads one dev batch; loader workers are other processes and not in it.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

# torch.compile of the encoder (CUDA graphs) and of the P/T losses, as configs/levers.json names them.
COMPILE_LEVERS = {"compile_encoder": {"mode": "reduce-overhead"}, "compile_objectives": {}}


def window_paces(history: list, window: int) -> list:
    """Steps/s of each validation window: its steps over its training seconds (tokens / tokens/s)."""
    paces, tokens_before = [], 0
    for record in history:
        tokens = record["train_tokens"] - tokens_before
        tokens_before = record["train_tokens"]
        paces.append(window * record["tokens_per_second"] / tokens)
    return paces


# Runtime calls that make the host wait for the device (a sync), and the launch calls.
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync")
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaGraphLaunch")


def profile_summary(averages, steps: int, rows: int = 30, after: int = 0) -> str:
    """A plain-text account of a profiled run (``profiler.key_averages()``) of ``steps`` optimizer
    steps that followed ``after`` unrecorded ones: per-step launches and host waits, then the top
    ops by self device time (if any device ran) and by self host time."""
    counts = {event.key: event.count for event in averages}
    launches = sum(counts.get(name, 0) for name in LAUNCH_CALLS)
    waits = {name: counts[name] for name in SYNC_CALLS if counts.get(name)}
    has_device = any(getattr(event, "self_device_time_total", 0) for event in averages)
    lines = [f"{steps} optimizer steps profiled" + (f", after {after} unrecorded ones (compiles and start-up)" if after
                                                     else " (startup included, and one dev batch a validation window)"),
             f"kernel launches: {launches} ({launches / steps:.1f} a step)",
             "host waits on the device: " + (", ".join(f"{name} {count} ({count / steps:.1f} a step)" for name, count in waits.items())
                                             or "none recorded"), ""]
    if has_device:
        lines += ["Top ops by self device time:", averages.table(sort_by="self_device_time_total", row_limit=rows), ""]
    lines += ["Top ops by self host time:", averages.table(sort_by="self_cpu_time_total", row_limit=rows)]
    return "\n".join(lines)


def cached_pretraining(experiment: Path, workspace_dir: Optional[Path] = None, step_name: str = "pretrained_model"):
    """``experiment``'s pretraining step and its arguments, its inputs (data, tokenizer, soft labels)
    read from the cache of ``workspace_dir`` (default tango.yml's): what a probe of its loop needs."""
    import steps as _registered  # noqa: F401  (registers the steps; compat shims first)
    from tango.common import Params
    from tango.settings import TangoGlobalSettings
    from tango.step_graph import StepGraph
    from tango.workspaces import LocalWorkspace

    from steps.pretrain.pretrain import PretrainMicrobert

    graph = StepGraph.from_params(Params.from_file(experiment).pop("steps"))
    if step_name not in graph or not isinstance(graph[step_name], PretrainMicrobert):
        raise SystemExit(f"{experiment}: no pretrain_microbert step named {step_name!r}")
    workspace = LocalWorkspace(workspace_dir or REPO / TangoGlobalSettings.from_file(REPO / "tango.yml").workspace["dir"])
    configured = graph[step_name]
    kwargs = dict(configured.kwargs)
    for name in ("pretraining_data", "tokenizer", "soft_label_table"):
        if hasattr(kwargs.get(name), "result"):
            dependency = kwargs[name]
            if dependency not in workspace.step_cache:
                raise SystemExit(f"{experiment}: {dependency.name} is not in the cache of {workspace.dir}; run it or unpack it first")
            kwargs[name] = dependency.result(workspace)
    return configured, kwargs


def measure_pace(experiment: Path, steps: int, window: int, workspace_dir: Optional[Path] = None, step_name: str = "pretrained_model",
                 overrides: Optional[dict] = None, profile: Optional[Path] = None, profile_steps: Optional[int] = None) -> dict:
    from tango.workspaces import LocalWorkspace

    from steps.pretrain.pretrain import PretrainMicrobert

    if steps % window or steps < 2 * window:
        raise SystemExit(f"--steps ({steps}) must be a multiple of --window ({window}) and at least two windows")
    _, kwargs = cached_pretraining(experiment, workspace_dir, step_name)
    training = copy.deepcopy(kwargs["training"])
    full_steps = training.max_steps
    training.max_steps, training.validate_every, training.checkpoint_every = steps, window, steps
    if profile:  # one dev batch a validation, so the account is the training steps'
        training.max_validation_rows = training.batch_size
    kwargs.update(training=training, **(overrides or {}))
    import torch.profiler
    from torch.optim.optimizer import register_optimizer_step_post_hook

    activities = [torch.profiler.ProfilerActivity.CPU, *([torch.profiler.ProfilerActivity.CUDA] if torch.cuda.is_available() else [])]
    recorded = min(profile_steps or steps, steps)
    # The last `recorded` optimizer steps: the profiler's schedule advances on every optimizer step
    # (a global post-step hook), so the loop itself needs no profiling code.
    warmup = 1 if steps > recorded else 0  # the profiler's own start-up, in a step not recorded
    schedule = torch.profiler.schedule(skip_first=steps - recorded - warmup, wait=0, warmup=warmup, active=recorded, repeat=1)
    with tempfile.TemporaryDirectory(prefix="pace-") as scratch:
        with (torch.profiler.profile(activities=activities, schedule=schedule) if profile else contextlib.nullcontext()) as profiler:
            hook = register_optimizer_step_post_hook(lambda *_: profiler.step()) if profile else None
            try:
                result = PretrainMicrobert(step_name=f"pace-{step_name}", **kwargs).result(LocalWorkspace(Path(scratch)))
            finally:
                if hook is not None:
                    hook.remove()
        metrics = json.loads((result / "metrics.json").read_text())
    if profile:
        Path(profile).write_text(f"{experiment}\n" + profile_summary(profiler.key_averages(), recorded, after=steps - recorded) + "\n",
                                 encoding="utf-8")
    paces = window_paces(metrics["history"], window)
    steady = statistics.median(paces[1:])
    return {
        "experiment": str(experiment.relative_to(REPO) if experiment.is_absolute() else experiment),
        "condition": metrics["condition"], "device": metrics["device"], "steps": steps, "window": window,
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "batch_size": training.batch_size, "levers": {k: metrics.get(k) for k in ("precision", "fused_optimizer", "compile_encoder",
                                                                                   "compile_objectives", "parse_inputs_in_loader")},
        "loader_workers": kwargs.get("loader_workers", 0), "window_steps_per_second": paces,
        "steps_per_second": steady, "full_run_steps": full_steps, "full_run_minutes": full_steps / steady / 60,
        "train_seconds": metrics["final"]["train_seconds"], "wall_seconds": metrics["final"]["wall_seconds"],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiments", type=Path, nargs="+")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--window", type=int, default=500)
    parser.add_argument("-w", "--workspace", type=Path, help="the workspace whose cache holds the inputs (default: tango.yml's)")
    parser.add_argument("--json", type=Path, help="append one JSON line per file here")
    compiling = parser.add_mutually_exclusive_group()
    compiling.add_argument("--without-compile", action="store_true",
                           help="the file's levers less torch.compile (encoder and P/T losses): eager paces, no compile in the first window")
    compiling.add_argument("--with-compile", action="store_true",
                           help="the file's levers plus torch.compile of the encoder and P/T losses (COMPILE_LEVERS), "
                                "also where the file leaves them out (MXPT-SLA: the paper scale's eager_conditions, configs/scales.libsonnet)")
    parser.add_argument("--profile", type=Path, help="profile the run and write where its time goes here (one file: one experiment)")
    parser.add_argument("--profile-steps", type=int, help="with --profile: record only the last this many steps (default: all)")
    parser.add_argument("--note", help="kept in each record: which code it measured (the report prints it beside the pace)")
    args = parser.parse_args(argv)
    if args.profile and len(args.experiments) > 1:
        parser.error("--profile takes one experiment file")
    from benchmarks.records import append_record

    overrides = dict.fromkeys(COMPILE_LEVERS) if args.without_compile else dict(COMPILE_LEVERS) if args.with_compile else None
    for experiment in args.experiments:
        record = measure_pace(experiment, args.steps, args.window, args.workspace, overrides=overrides, profile=args.profile,
                              profile_steps=args.profile_steps)
        print(f"pace: {record['condition']} on {record['device']}: {record['steps_per_second']:.1f} steps/s after the first window "
              f"(windows: {', '.join(f'{p:.0f}' for p in record['window_steps_per_second'])}); "
              f"{record['full_run_steps']} steps would take {record['full_run_minutes']:.2f} min", flush=True)
        if args.note:
            record["note"] = args.note
        if args.json:
            append_record(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
