#!/usr/bin/env bash
# Installs the Debian 12 packages lockstep needs. Safe to run again: does nothing when every package is already
# there. Needs root (or sudo) only when something is missing.
#   scripts/install_deps.sh         # everything: building, the tests, the fuzz and sanitizer builds
#   scripts/install_deps.sh build   # only what building needs (scripts/build.sh); scripts/test.sh installs the
#                                   # rest beside the build
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/debian_packages.sh
source "$root/scripts/debian_packages.sh"

# The build configures with python3 (the docs tests) and clang-format (the style test) present.
build_packages=(
  build-essential cmake ninja-build ccache pkg-config git clang-format python3
  libhwy-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libboost-dev libssl-dev libpcre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
# clang-14 with its runtime libraries (ASan, UBSan, TSan, libFuzzer) builds the sanitizer builds and the
# libFuzzer targets (scripts/fuzz.sh); llvm-14 symbolizes their reports. openssl and ca-certificates: TLS at
# run time (the client's https, npm). nginx: the scale-out tests (deploy/run_replicas.sh). chromium: the
# dashboard's browser test (tests/web) drives Debian's headless Chromium; no browser is downloaded. Node.js
# runs the client-compatibility test (official OpenAI and Hugging Face JS clients) and the other node-based
# tests; any version >= 18.
test_packages=(
  clang-14 libclang-rt-14-dev llvm-14
  openssl ca-certificates
  nginx
  chromium
)
command -v npm >/dev/null 2>&1 || test_packages+=(nodejs npm)

case "${1:-all}" in
  build) packages=("${build_packages[@]}") ;;
  all) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *)
    echo "install_deps: unknown set '$1' (build, or nothing for all)" >&2
    exit 2
    ;;
esac

nginx_missing=$(missing_packages nginx)
install_missing_packages lockstep "${packages[@]}"
# nginx is run by deploy/run_replicas.sh as the current user with its own config; the system service the
# package may have started (on port 80) is not needed: stop and disable it when this script installed it.
if [[ -n $nginx_missing && " ${packages[*]} " == *" nginx "* ]] && command -v systemctl >/dev/null 2>&1 &&
  systemctl is-active --quiet nginx 2>/dev/null; then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  $sudo systemctl disable --now nginx >/dev/null 2>&1 || true
fi
