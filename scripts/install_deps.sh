#!/usr/bin/env bash
# Installs the Debian 12 packages lockstep needs to build and test. Safe to run again: does nothing when every
# package is already there. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git clang-format
  libhwy-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libboost-dev libssl-dev libpcre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev llvm-14
  openssl ca-certificates
  python3
  nginx
  chromium
)
# chromium: the dashboard's browser test (tests/web) drives Debian's headless Chromium; no browser is downloaded.
# clang-14 with its runtime libraries (ASan, UBSan, TSan, libFuzzer) builds the sanitizer builds
# and the libFuzzer targets (scripts/fuzz.sh); llvm-14 symbolizes their reports.
# Node.js runs the client-compatibility test (official OpenAI and Hugging Face JS clients); any version >= 18.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "lockstep: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
# nginx is run by deploy/run_replicas.sh as the current user with its own config; the system service the
# package may have started (on port 80) is not needed: stop and disable it when this script installed it.
if [[ " ${missing[*]} " == *" nginx "* ]] && command -v systemctl >/dev/null 2>&1 &&
  systemctl is-active --quiet nginx 2>/dev/null; then
  $sudo systemctl disable --now nginx >/dev/null 2>&1 || true
fi
