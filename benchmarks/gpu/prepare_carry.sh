#!/usr/bin/env bash
# What a device call of allocation.sh carries, prepared here (all of it ignored by git):
#   .whl/                 the Python packages the GPU image lacks (Tango 1.3.2 and its light dependencies)
#   .carry/cache/         the cache entries the call reads, from WORKSPACE
#   shared/data/LANGUAGE/ the language's data (step IDs hash the files, so all of it travels)
# Usage: bash benchmarks/gpu/prepare_carry.sh [WORKSPACE [LANGUAGE [CELL:STEP ...]]]
# CELL:STEP names a step of benchmarks/gpu/LANGUAGE_CELL_paper_scale.jsonnet (its ID from
# tests/data/step_ids.json), or FILE.jsonnet:STEP any experiment file's; default m:tokenizer
# m:pretraining_data. Add m:pretrained_model for finetune=m, or a stopped entry to resume (one that
# fits the carry: a paper-regime parser's checkpoint does not). Then: device tool, carry [".whl", ".carry"].
set -eu
workspace=${1:-workspace}
language=${2:-wolof}
shift $(( $# < 2 ? $# : 2 ))
entries=${*:-m:tokenizer m:pretraining_data}
for ignored in /.carry/ /shared/; do grep -qxF "$ignored" .git/info/exclude || echo "$ignored" >> .git/info/exclude; done
mkdir -p .whl .carry/cache shared/data
platforms="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $platforms -d .whl \
  ai2-tango==1.3.2 base58==2.1.1 click==8.1.3 click-help-colors==0.9.4 conllu==6.0.0 dill==0.4.1 petname==2.9 \
  pytz==2026.6 rjsonnet==0.5.6 pytorch-crf==0.7.2 rich==13.9.4 \
  stanza==1.15.0 emoji==2.16.0 protobuf==7.36.2 orjson==3.13.0 platformdirs==4.14.8 \
  udtools==0.2.9 udapi==0.5.2 regex==2026.5.9 colorama==0.4.6 termcolor==3.3.0  # fine-tuning: MST decoding, udeval
python3 -m pip wheel -q --no-deps --no-build-isolation -w .whl sqlitedict==2.1.0 seqeval==1.2.2  # source-only on PyPI
rm -rf "shared/data/$language" && cp -r "${SIB_DATA_ROOT:-../shared/data}/$language" shared/data/
for entry in $entries; do
  id=$(python3 -c 'import json, sys; lang, cell, step = sys.argv[1:]; f = cell if cell.endswith(".jsonnet") else f"benchmarks/gpu/{lang}_{cell}_paper_scale.jsonnet"; print(json.load(open("tests/data/step_ids.json"))[f][step])' \
       "$language" "${entry%%:*}" "${entry#*:}")
  rm -rf ".carry/cache/$id" && cp -r "$workspace/cache/$id" .carry/cache/ && rm -f ".carry/cache/$id/lock"
  echo "prepare_carry: $entry = $id"
done
du -sh .whl .carry shared
