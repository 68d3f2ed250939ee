#!/usr/bin/env bash
# One device call of the Wolof paper-scale campaign (issue 14), sized for a 15-minute allocation:
#   bash benchmarks/gpu/allocation.sh SECONDS [PART ...]
# runs the parts in order, each until it is done or the call's time is (keeping 40 s to pack the
# new cache entries under $OUT); the next call resumes where this one stopped. Parts:
#   levers             time the eager levers, write µB-M's fastest plus torch.compile to levers.json
#                      (a pretraining that fails retries without the compile levers); MXPT-SLA rows also
#                      with its parse built ahead, as the loader workers build it
#   loader             what feeding the loop costs per batch on this box (bench_pretrain_loader.py, ~1 min)
#   ratio              µB-MXPT-SLA's step against µB-M's under the chosen levers (fused AdamW, eager and
#                      compiled, P/T losses compiled too), its parse in-model and built ahead; levers.json
#                      is left as it is
#   pace=CELL,...      each cell's real pretraining loop for 3,000 steps (benchmarks/gpu/pace.py, nothing
#                      kept): steps/s and the projected full run, the speed bars' figures in ~1-2 min each
#   pace-eager=CELL,...  the same without torch.compile (no compile in the call's time; an eager ratio)
#   pace-compiled=CELL,...  the same with torch.compile even where the file pretrains eager (MXPT-SLA): its
#                      first window holds the compile, the projection the compiled pace (the 1.3x bar's figure)
#   profile=CELL,...   each cell's loop for 600 steps, its last 100 under torch.profiler (~1 min each, plus
#                      any compile, which is not recorded; 400 steps took the profiler over 3 min to summarise):
#                      launches and host waits per step, top ops by device and host time, in
#                      logs/profile_<file>.txt; profile-eager=CELL,... the same without torch.compile
#   finetune-step      the paper head's UD fine-tuning step, eager and with the parser compiled
#                      (bench_finetune_step.py on a random-init encoder, ~2-3 min with two compiles): whether
#                      torch.compile cuts a step bound by its launches (~34 ms alone on the H100)
#   pretrain=CELL      that cell's paper-scale pretraining alone (CELL: m, mxpt_sla)
#   finetune=CELL,...  every fine-tuning step of those cells, then their scores (CELL: m, random_init, or
#                      an experiment file such as benchmarks/gpu/decomposition/wolof_paper_paper.jsonnet;
#                      mxpt_sla also needs the corpus parser, 75 MB, over the carry limit). A fine-tune
#                      stopped with a checkpoint over 32 MiB stays on the machine: call again while warm
# Default: levers pretrain=m pretrain=mxpt_sla. What travels (.whl/, .carry/cache/, shared/data/wolof/)
# is prepared here by benchmarks/gpu/prepare_carry.sh.
# Device tool: command "bash benchmarks/gpu/allocation.sh 520 ...", carry [".whl", ".carry"].
set -u
total=${1:-520}
shift
parts=${*:-levers pretrain=m pretrain=mxpt_sla}
start=$(date +%s)
left() { echo $(( start + total - $1 - $(date +%s) )); }  # seconds left, keeping $1 for what follows
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
# No W&B on the GPU image: the steps' metrics and histories are in their cache entries anyway.
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 SIB_DATA_ROOT=$PWD/shared/data SIB_WANDB=off
mkdir -p workspace/cache "$OUT/logs"
cp -r .carry/cache/. workspace/cache/
since=$(date +%s)  # entries touched after this are what comes back
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/logs/gpu.csv"
campaign() { python3 benchmarks/gpu/campaign.py "$@"; }
# A cell name (m, mxpt_sla, random_init) is its Wolof paper-scale file; a path ending in .jsonnet is itself.
cells() { for cell in ${1//,/ }; do case $cell in *.jsonnet) echo "$cell" ;; *) echo "benchmarks/gpu/wolof_${cell}_paper_scale.jsonnet" ;; esac; done; }
for part in $parts; do
  budget=$(left 40)
  if [ "$budget" -lt 30 ]; then echo "allocation: no time left for $part"; break; fi
  echo "allocation: $part, $budget s left"
  case $part in
    levers)
      campaign levers "$OUT/logs" --budget $(( budget < 90 ? budget : 90 )) --lever-runs eager
      cp benchmarks/gpu/levers.json "$OUT/logs/levers_eager.json"
      # The compile lever on top (its fixed-shape benchmark rows would cost two compiles of this call).
      campaign compile-levers --to on ;;
    loader)
      timeout "$budget" python3 benchmarks/bench_pretrain_loader.py --workers 10 --batches 30 \
        --json "$OUT/logs/gpu_pretrain_loader.json" > "$OUT/logs/loader.log" 2>&1
      tail -12 "$OUT/logs/loader.log" ;;
    ratio)
      timeout "$budget" python3 benchmarks/bench_pretrain_step.py --device cuda --batch-size 256 --length 64 --steps 30 \
        --warmup 5 --conditions M MXPT-SLA --parse-in-loader --optimizer fused --compile none reduce-overhead --compile-objectives \
        --json "$OUT/logs/gpu_pretrain_step_ratio.json" > "$OUT/logs/ratio.log" 2>&1
      tail -12 "$OUT/logs/ratio.log" ;;
    pace=*|pace-eager=*|pace-compiled=*)
      compiling=$(case ${part%%=*} in pace-eager) echo --without-compile ;; pace-compiled) echo --with-compile ;; esac)
      timeout "$budget" python3 benchmarks/gpu/pace.py $(cells "${part#*=}") --steps 3000 --window 500 -w workspace $compiling \
        --json "$OUT/logs/gpu_pace.jsonl" >> "$OUT/logs/pace.log" 2>&1
      grep -a "^pace:" "$OUT/logs/pace.log" || tail -12 "$OUT/logs/pace.log" ;;
    finetune-step)
      python3 benchmarks/gpu/run_steps.py "$(cells random_init)" random_encoder -w workspace > "$OUT/logs/finetune_step.log" 2>&1
      encoder=$(ls -d workspace/cache/RandomInitEncoder-*/result/encoder | head -1)
      timeout "$(left 40)" python3 benchmarks/bench_finetune_step.py --encoder "$encoder" --head paper --device cuda --variants current \
        --compile none default --steps 60 --warmup 10 --json "$OUT/logs/gpu_finetune_step.json" >> "$OUT/logs/finetune_step.log" 2>&1
      grep -a "ms/step\|speed-up" "$OUT/logs/finetune_step.log" || tail -12 "$OUT/logs/finetune_step.log" ;;
    profile=*|profile-eager=*)
      eager=$([ "${part%%=*}" = profile-eager ] && echo --without-compile)
      for file in $(cells "${part#*=}"); do
        if [ "$(left 40)" -lt 30 ]; then echo "allocation: no time left to profile $file"; break; fi
        record="$OUT/logs/${part%%=*}_$(basename "$file" .jsonnet).txt"
        timeout "$(left 40)" python3 benchmarks/gpu/pace.py "$file" --steps 600 --window 300 --profile-steps 100 -w workspace $eager \
          --profile "$record" >> "$OUT/logs/profile.log" 2>&1
        head -4 "$record" 2>/dev/null || tail -5 "$OUT/logs/profile.log"
      done ;;
    pretrain=*)
      campaign pretrain "$OUT/logs" --files $(cells "${part#pretrain=}") --budget "$budget"
      if [ $? = 1 ]; then  # failed, not out of time: again without the compile levers (eager ones measured here, if any)
        if [ -f "$OUT/logs/levers_eager.json" ]; then cp "$OUT/logs/levers_eager.json" benchmarks/gpu/levers.json
        else campaign compile-levers --to off
        fi
        campaign pretrain "$OUT/logs" --files $(cells "${part#pretrain=}") --budget "$(left 40)"
      fi ;;
    finetune=*)
      campaign finetune "$OUT/logs" --files $(cells "${part#finetune=}") --budget "$budget" ;;
    *) echo "allocation: unknown part $part"; exit 2 ;;
  esac
done
cp benchmarks/gpu/levers.json "$OUT/logs/levers.json"
for entry in .carry/cache/*/; do  # reading an entry takes its lock, which would pack it again
  touch -d "@$(( since - 1 ))" "workspace/cache/$(basename "$entry")"
done
campaign pack "$OUT" --since "$since"
tar czf "$OUT/records.tar.gz" -C "$OUT" logs && rm -r "$OUT/logs"  # the device tool brings back 8 files at most
ls -la "$OUT"
