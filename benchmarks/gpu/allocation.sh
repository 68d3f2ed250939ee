#!/usr/bin/env bash
# One device call of the Wolof paper-scale campaign (issue 14), sized for a 15-minute allocation:
# the eager lever benchmark, then µB-M's paper-scale pretraining alone with the fastest eager levers
# plus torch.compile (CUDA graphs; eager again if that fails), its wall time being the speed bar,
# then µB-MXPT-SLA's with the same levers and the time left, then the new cache entries packed
# under $OUT. Each part stops at its share of SECONDS and resumes on the next call.
# Prepared here (README, "GPU campaign"):
#   .whl/  the Python packages the GPU image lacks     .carry/cache/  the cached entries it reads
#   shared/data/wolof/  the language's data (step IDs hash the files, so all of it travels)
# Device tool: command "bash benchmarks/gpu/allocation.sh 520", carry [".whl", ".carry"].
set -u
total=${1:-520}
start=$(date +%s)
left() { echo $(( start + total - $1 - $(date +%s) )); }  # seconds left, keeping $1 for what follows
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
# No W&B on the GPU image: the steps' metrics and histories are in their cache entries anyway.
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 SIB_DATA_ROOT=$PWD/shared/data SIB_WANDB=off
mkdir -p workspace/cache "$OUT/logs"
cp -r .carry/cache/. workspace/cache/
since=$(date +%s)  # entries touched after this are what comes back
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/logs/gpu.csv"
python3 benchmarks/gpu/campaign.py levers "$OUT/logs" --budget 90 --lever-runs eager
cp benchmarks/gpu/levers.json "$OUT/logs/levers_eager.json"
# The compile lever on top (its fixed-shape benchmark rows would cost two compiles of this call).
python3 -c 'import json, sys; p = sys.argv[1]; l = json.load(open(p)); l["compile_encoder"] = {"mode": "reduce-overhead"}; open(p, "w").write(json.dumps(l, indent=2) + "\n")' benchmarks/gpu/levers.json
pretrain() { python3 benchmarks/gpu/campaign.py pretrain "$OUT/logs" --files "benchmarks/gpu/wolof_$1_paper_scale.jsonnet" --budget "$2"; }
pretrain m "$(left 100)"
if [ $? = 1 ]; then  # failed (not out of time): eager levers, and the same pretraining again
  cp "$OUT/logs/levers_eager.json" benchmarks/gpu/levers.json
  pretrain m "$(left 100)"
fi
cp benchmarks/gpu/levers.json "$OUT/logs/levers.json"
pretrain mxpt_sla "$(left 35)"
python3 benchmarks/gpu/campaign.py pack "$OUT" --since "$since"
tar czf "$OUT/records.tar.gz" -C "$OUT" logs && rm -r "$OUT/logs"  # the device tool brings back 8 files at most
ls -la "$OUT"
