#!/usr/bin/env bash
# Sets everything up (Debian packages, build), makes the demo model and runs the main job.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
mkdir -p models
vocab=../shared/testdata/vocab/ggml-vocab-llama-spm.gguf
vocab_args=()
[[ -f $vocab ]] && vocab_args=(--vocab-from "$vocab")
if [[ ! -f models/demo-smollm2-135m-q8_0.gguf ]]; then
  ./build/lockstep make-model --shape smollm2-135m --type q8_0 "${vocab_args[@]}" -o models/demo-smollm2-135m-q8_0.gguf
fi
./build/lockstep info -m models/demo-smollm2-135m-q8_0.gguf
./build/lockstep generate -m models/demo-smollm2-135m-q8_0.gguf -p "Once upon a time" -n 64 -t 2 --ignore-eos
