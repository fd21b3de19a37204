#!/usr/bin/env bash
# Sets everything up (Debian packages, build), makes the demo model and runs the main job: five questions as
# one combined request, as five parallel requests, one after another, and as one request the server fans out
# (bench compare), through a lockstep server started in-process. Prints the table; the chart is written to
# out/bench-compare/chart.svg. LOCKSTEP_DEMO_REPEAT (default 3) and LOCKSTEP_DEMO_TOKENS (200) shorten it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
mkdir -p models out
model=models/demo-smollm2-135m-q8_0.gguf
vocab=../shared/testdata/vocab/ggml-vocab-llama-spm.gguf
vocab_args=()
[[ -f $vocab ]] && vocab_args=(--vocab-from "$vocab")
if [[ ! -f $model ]]; then
  ./build/lockstep make-model --shape smollm2-135m --type q8_0 "${vocab_args[@]}" -o "$model"
fi
./build/lockstep bench compare -m "$model" --builtin --max-tokens "${LOCKSTEP_DEMO_TOKENS:-200}" \
  --repeat "${LOCKSTEP_DEMO_REPEAT:-3}" --out out/bench-compare
echo
echo "Table: out/bench-compare/result.md   Chart: out/bench-compare/chart.svg   Data: out/bench-compare/result.json"
