#!/usr/bin/env bash
# Cross-builds lockstep's lower layers' tests (gguf, tensor, model) for 64-bit ARM (aarch64: NEON through
# Highway) with Debian 12's cross compiler and multiarch arm64 packages, and runs them under qemu-aarch64 user
# emulation, once per emulated CPU. Exit status nonzero if anything fails. Safe to run again: installs
# packages only when missing (scripts/install_arm64_deps.sh; needs root or sudo then) and rebuilds
# incrementally.
#   scripts/check_arm64.sh                  # build in build-arm64/, test on CPUs "max cortex-a76"
#   BUILD_DIR=... JOBS=2 CPUS="max" TARGETS="tensor_tests" scripts/check_arm64.sh
#   CPUS="cortex-a76 max:tensor" scripts/check_arm64.sh   # CPU:LABEL runs only that layer's tests there
#   SKIP_UNDER_QEMU= scripts/check_arm64.sh # every test, the slow float sweeps too (see below)
#   BUILD_ONLY=1 scripts/check_arm64.sh     # packages and build, no tests (scripts/test.sh builds beside its
#                                           # other steps, then runs this again for the tests)
# model_tests runs the `lockstep` binary (under the emulator, via a wrapper script) for its info, generate and
# make-model tests; the cross build makes it with those subcommands only (LOCKSTEP_ENGINE_CLI_ONLY), so no
# server, client or their commands are compiled for ARM.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-arm64}
jobs=${JOBS:-2}
cpus=${CPUS:-max cortex-a76}  # qemu's "max" has SVE2 (unused: tensor code is NEON only), cortex-a76 NEON only
targets=${TARGETS:-gguf_tests tensor_tests model_tests}

bash "$root/scripts/install_arm64_deps.sh"

cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
  -DLOCKSTEP_BUILD_BENCH=OFF -DLOCKSTEP_ENGINE_CLI_ONLY=ON >/dev/null
start=$SECONDS
# shellcheck disable=SC2086  # targets is a list
nice -n 10 cmake --build "$build_dir" -j "$jobs" --target $targets
echo "check_arm64: built $targets in $((SECONDS - start)) s" >&2
if [[ ${BUILD_ONLY:-0} != 0 ]]; then exit 0; fi

# Tests of executables not built here appear as <name>_NOT_BUILT; the style check is the host build's job.
# Left to the host's ctest by default (SKIP_UNDER_QEMU overrides; "" runs everything), since emulation makes
# them ~100x slower and the ARM build adds nothing to them that the tests run here do not check: the ARM
# kernels are held bit for bit to the scalar reference in the tensor tests (on both CPUs), and the recorded
# tokens of CrossCpuGolden are reproduced at every ARM level. Left out:
# - the peer goldens (tolerances against llama.cpp / ik_llama.cpp) but for the shapes in keep_peer: a dense
#   model, a MoE, sliding windows with soft-capping, latent attention and per-layer shapes;
# - ReferenceTest's and BatchInvarianceTest's float-weight cases (f32, f16, bf16) of the architectures whose
#   quantized or f32 twin runs here (same forward pass; the float kernels are in the tensor tests), and the
#   smollm2 IQ4_XS invariance case (tiny-256's IQ4_XS runs);
# - model-logic checks that are the same C++ on every CPU: the absorbed against the decompressed latent
#   attention, windowed chunking and thread counts, make-model's type mixes and two of its CLI type sweeps,
#   the MLA-width attention rows over an f32 KV cache (f16 and q8_0 run).
# The cases left out since 2026-12-06 (float twins, logic checks) took 390 of the Cortex-A76 run's 1060
# test CPU-s (2-core Zen 5 host); the peer goldens left out before, ~270.
keep_peer=" tiny-qwen2 tiny-qwen3moe tiny-gemma3 tiny-deepseek3 tiny-gemma4 "
skip_peer=""
for golden in "$root"/tests/model/testdata/peer/*.json; do
  shape=$(basename "$golden" .json)
  if [[ $keep_peer != *" $shape "* ]]; then skip_peer+="${skip_peer:+|}${shape//[^a-zA-Z0-9]/_}"; fi
done
skip_peer="PeerGoldenTest\\..*/(${skip_peer})( |\$)"
float_twins="gemma2_f32|gemma3_f32|gemma4_f32|glm4_f32|ministral3_f32|mistral_swa_f16|phi3_f32|phi4_mini_bf16"
float_twins+="|qwen35_f32|deepseek2_f32|deepseek3_f32|deepseek3_grouped_f32|deepseek3_split_f32"
float_twins+="|gpt_oss_f16|gpt_oss_f32|mixtral_f16|mixtral_f32|qwen2moe_f32|qwen3moe_f32|qwen3moe_bf16"
skip_reference="ReferenceTest\\..*/tiny_(${float_twins})( |\$)"
skip_invariance='BatchInvarianceTest\..*/tiny_(gemma2_f32|phi3_f16|deepseek2_f32|qwen35_f32|gpt_oss_f32|mixtral_bf16'
skip_invariance+='|qwen3moe_f32|smollm2_iq4_xs)_'
skip_logic='^AbsorbedLatentAttention\.LogitsMatchTheDecompressedForm$'
skip_logic+='|^BatchInvariance\.WindowedChunkingAndThreadCountDoNotChangeLogits$|^ModelBuilder\.Q5KMQ5KSAndQ4KSMixes$'
skip_logic+='|^MakeModelCli\.SmolLM2ShapeQ[23]KHasIQ4_NLAndRunsAtEveryLevel$'
skip_logic+='|AttendRowsTest\.ValuesOfAnotherWidthThanKeys/f32( |$)'
skip=${SKIP_UNDER_QEMU-"$skip_peer|$skip_reference|$skip_invariance|$skip_logic"}
status=0
for entry in $cpus; do
  cpu=${entry%%:*}
  label=()
  if [[ $entry == *:* ]]; then label=(-L "^${entry#*:}\$"); fi
  echo "check_arm64: ctest ${label[*]} under qemu-aarch64 -cpu $cpu" >&2
  QEMU_CPU=$cpu nice -n 10 ctest --test-dir "$build_dir" -j "$jobs" "${label[@]}" \
    -E "_NOT_BUILT|^Style\\.${skip:+|$skip}" --output-on-failure --timeout 600 || status=1
done
exit $status
