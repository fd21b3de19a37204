#!/usr/bin/env bash
# Cross-builds lockstep's lower layers' tests (gguf, tensor, model) for 64-bit ARM (aarch64: NEON through
# Highway) with Debian 12's cross compiler and multiarch arm64 packages, and runs them under qemu-aarch64 user
# emulation, once per emulated CPU. Exit status nonzero if anything fails. Safe to run again: installs
# packages only when missing (needs root or sudo then) and rebuilds incrementally.
#   scripts/check_arm64.sh                  # build in build-arm64/, test on CPUs "max cortex-a76"
#   BUILD_DIR=... JOBS=2 CPUS="max" TARGETS="tensor_tests" scripts/check_arm64.sh
# model_tests runs the `lockstep` binary (under the emulator, via a wrapper script), so the whole program is
# built: every layer's dependencies are needed for arm64 too (the header-only ones are the host's).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-arm64}
jobs=${JOBS:-2}
cpus=${CPUS:-max cortex-a76}  # qemu's "max" has SVE2 (unused: tensor code is NEON only), cortex-a76 NEON only
targets=${TARGETS:-gguf_tests tensor_tests model_tests}

packages=(
  cmake ninja-build pkg-config nlohmann-json3-dev libcli11-dev libboost-dev
  g++-aarch64-linux-gnu qemu-user
  libhwy-dev:arm64 libfmt-dev:arm64 libspdlog-dev:arm64 libpcre2-dev:arm64 libssl-dev:arm64
  libgtest-dev:arm64 libgmock-dev:arm64
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "check_arm64: installing ${missing[*]}" >&2
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
  -DLOCKSTEP_BUILD_BENCH=OFF >/dev/null
# shellcheck disable=SC2086  # targets is a list
nice -n 10 cmake --build "$build_dir" -j "$jobs" --target $targets

# Tests of executables not built here appear as <name>_NOT_BUILT; the style check is the host build's job.
status=0
for cpu in $cpus; do
  echo "check_arm64: ctest under qemu-aarch64 -cpu $cpu" >&2
  QEMU_CPU=$cpu nice -n 10 ctest --test-dir "$build_dir" -j "$jobs" -E '_NOT_BUILT|^Style\.' \
    --output-on-failure --timeout 600 || status=1
done
exit $status
