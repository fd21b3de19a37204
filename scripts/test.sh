#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs every test. This is the command CI runs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
if [[ -f tests/server/compat/package-lock.json ]]; then
  (cd tests/server/compat && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    echo "lockstep: npm packages for the client-compatibility test unavailable; that test will be skipped" >&2
fi
# The Kubernetes manifests' schema check (tests/deploy/kubernetes): schemas from pinned npm packages.
(cd tests/deploy/kubernetes && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
  echo "lockstep: npm packages for the Kubernetes manifest check unavailable; that test will be skipped" >&2
# The browser test's driver, playwright-core (it drives Debian's chromium; no browser download). The test
# itself (BrowserTest.*, ~40 s on 2 busy cores) runs in ctest; under CI a missing driver or browser fails it.
(cd tests/web && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
  echo "lockstep: playwright-core unavailable; the browser test will be skipped (failed under CI)" >&2
ctest --test-dir build --output-on-failure -j2 --timeout 900
# Every libFuzzer target (fuzz/: HTTP parser and router, API requests, GGUF, tokenizers, Jinja, SSE, grammars)
# built with clang ASan + UBSan in build-fuzz/ and run LOCKSTEP_FUZZ_SECONDS (default 20) s on its seed
# corpus, two at a time (the runs ~100 s; the build's cold cost in docs/testing.md). LOCKSTEP_FUZZ_SECONDS=0
# skips it.
if [[ "${LOCKSTEP_FUZZ_SECONDS:-20}" != 0 ]]; then
  SECONDS_PER_TARGET="${LOCKSTEP_FUZZ_SECONDS:-20}" bash scripts/fuzz.sh
fi
# The lower layers' tests again, cross-built for 64-bit ARM (NEON) and run under qemu (about 7 minutes on 2
# cores); LOCKSTEP_ARM64_CHECK=0 skips it.
if [[ "${LOCKSTEP_ARM64_CHECK:-1}" != 0 ]]; then
  CPUS=cortex-a76 bash scripts/check_arm64.sh
fi
