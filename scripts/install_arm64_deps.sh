#!/usr/bin/env bash
# Installs what scripts/check_arm64.sh needs (Debian 12): the cross compiler, qemu user emulation and the
# multiarch arm64 -dev packages of lockstep's compiled dependencies. Safe to run again: does nothing when every
# package is there; needs root (or sudo) only when something is missing. scripts/test.sh runs it beside the
# host build (it is mostly download time).
set -euo pipefail

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
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install_arm64_deps: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
