#!/usr/bin/env bash
# Installs what scripts/check_arm64.sh needs (Debian 12): the cross compiler, qemu user emulation and the
# multiarch arm64 -dev packages of lockstep's compiled dependencies. Safe to run again: does nothing when every
# package is there; needs root (or sudo) only when something is missing. scripts/test.sh runs it beside the
# host build (it is mostly download time).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/debian_packages.sh
source "$root/scripts/debian_packages.sh"

install_missing_packages install_arm64_deps \
  cmake ninja-build pkg-config nlohmann-json3-dev libcli11-dev libboost-dev \
  g++-aarch64-linux-gnu qemu-user \
  libhwy-dev:arm64 libfmt-dev:arm64 libspdlog-dev:arm64 libpcre2-dev:arm64 libssl-dev:arm64 \
  libgtest-dev:arm64 libgmock-dev:arm64
