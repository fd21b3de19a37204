#!/usr/bin/env bash
# Installs the Debian packages the build needs and builds lockstep (Release) into build/.
# Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
