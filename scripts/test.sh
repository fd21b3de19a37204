#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs every test. This is the command CI runs.
# Each step prints how long it took ("test.sh: <step>: N s") so CI logs show where the time goes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
step() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name: $((SECONDS - start)) s" >&2
}
arm64_check=${LOCKSTEP_ARM64_CHECK:-1}  # LOCKSTEP_ARM64_CHECK=0 skips the ARM check

step "debian packages" bash scripts/install_deps.sh
# The steps that mostly wait on the network run beside the host build, which keeps the cores busy: the npm
# packages of the node-based tests and the ARM check's packages. Their output is shown after the build.
logs=build/step-logs
mkdir -p "$logs"
npm_packages() {  # npm_packages DIR MESSAGE-IF-UNAVAILABLE
  (cd "$1" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || echo "lockstep: $2" >&2
}
node_steps() {
  if [[ -f tests/server/compat/package-lock.json ]]; then
    npm_packages tests/server/compat \
      "npm packages for the client-compatibility test unavailable; that test will be skipped"
  fi
  # The Kubernetes manifests' schema check (tests/deploy/kubernetes): schemas from pinned npm packages.
  npm_packages tests/deploy/kubernetes \
    "npm packages for the Kubernetes manifest check unavailable; that test will be skipped"
  # The browser test's driver, playwright-core (it drives Debian's chromium; no browser download). The test
  # itself (BrowserTest.*, ~40 s on 2 busy cores) runs in ctest; under CI a missing driver or browser fails it.
  npm_packages tests/web "playwright-core unavailable; the browser test will be skipped (failed under CI)"
}
step "npm packages (beside the build)" node_steps >"$logs/npm.log" 2>&1 &
npm_pid=$!
if [[ $arm64_check != 0 ]]; then
  step "ARM check packages (beside the build)" bash scripts/install_arm64_deps.sh >"$logs/arm64-deps.log" 2>&1 &
  arm64_deps_pid=$!
fi

step "host build" bash scripts/build.sh
wait "$npm_pid" || true
cat "$logs/npm.log" >&2
step "host ctest" ctest --test-dir build --output-on-failure -j2 --timeout 900
# Every libFuzzer target (fuzz/: HTTP parser and router, API requests, GGUF, tokenizers, Jinja, SSE, grammars)
# built with clang ASan + UBSan in build-fuzz/ and run LOCKSTEP_FUZZ_SECONDS (default 20) s on its seed
# corpus, two at a time (the runs ~100 s; the build's cold cost in docs/testing.md). LOCKSTEP_FUZZ_SECONDS=0
# skips it.
if [[ "${LOCKSTEP_FUZZ_SECONDS:-20}" != 0 ]]; then
  step "fuzz" env SECONDS_PER_TARGET="${LOCKSTEP_FUZZ_SECONDS:-20}" bash scripts/fuzz.sh
fi
# The lower layers' tests again, cross-built for 64-bit ARM and run under qemu (on 2 cores about 3 minutes of
# build, 6 of tests): all of them on a Cortex-A76 (NEON dot products, no i8mm: levels scalar, neon,
# neon-dotprod, and the cross-CPU golden), and the tensor tests again on qemu's "max" CPU, which adds i8mm
# (level neon-i8mm). LOCKSTEP_ARM64_CHECK=0 skips it. A failed package install shows here and is tried again
# there.
if [[ $arm64_check != 0 ]]; then
  wait "$arm64_deps_pid" || true
  cat "$logs/arm64-deps.log" >&2
  step "ARM check" env CPUS="cortex-a76 max:tensor" bash scripts/check_arm64.sh
fi
