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
# Left to the host's ctest by default (SKIP_UNDER_QEMU overrides; "" runs everything): the slowest cases of
# the architecture sweeps. Every architecture still runs here in ReferenceTest (against the scalar
# double-precision reference) and in BatchInvarianceTest, and every kernel in the tensor tests, bit for bit
# against the scalar reference; the peer goldens (tolerances against llama.cpp / ik_llama.cpp) run here for
# the few shapes in keep_peer only: a dense model, a MoE, sliding windows with soft-capping, latent attention
# and per-layer shapes. Run for every shape they took ~270 of the emulated ~960 CPU-s (2 cores, Dec 2026).
keep_peer=" tiny-qwen2 tiny-qwen3moe tiny-gemma3 tiny-deepseek3 tiny-gemma4 "
skip_peer=""
for golden in "$root"/tests/model/testdata/peer/*.json; do
  shape=$(basename "$golden" .json)
  if [[ $keep_peer != *" $shape "* ]]; then skip_peer+="${skip_peer:+|}${shape//[^a-zA-Z0-9]/_}"; fi
done
skip_peer="PeerGoldenTest\\..*/(${skip_peer})( |\$)"
skip_reference='ReferenceTest\..*/tiny_(gemma2_f32|phi3_f32|phi4_mini_bf16|mistral_swa_f16)( |$)'
skip_invariance='BatchInvarianceTest\..*/tiny_(gemma2_f32|phi3_f16)_'
skip=${SKIP_UNDER_QEMU-"$skip_peer|$skip_reference|$skip_invariance"}
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
