#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs every test. This is the command CI runs.
# Each step prints how long it took and the disk space left ("test.sh: <step>: N s, M free") so CI logs show
# where the time and the disk go.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
step() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name: $((SECONDS - start)) s, $(df -h --output=avail . | tail -1 | tr -d ' ') free" >&2
}
arm64_check=${LOCKSTEP_ARM64_CHECK:-1}  # LOCKSTEP_ARM64_CHECK=0 skips the ARM check

step "debian packages (build)" bash scripts/install_deps.sh build
# Beside the host build, which keeps the cores busy: the other Debian packages (tests, fuzz and sanitizer
# builds) and then the npm packages of the node-based tests, which mostly wait on the network and the disk;
# and the ARM check's packages, then its cross build at nice 19: it gets the CPU time the other steps leave
# idle (link tails, tests waiting on sockets and child processes) and is done, or nearly, when its tests run
# at the end. Their output is shown when they are waited for.
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
test_setup() {
  step "debian packages (tests, beside the build)" bash scripts/install_deps.sh
  step "npm packages (beside the build)" node_steps
}
test_setup >"$logs/test-setup.log" 2>&1 &
setup_pid=$!
arm64_build() {
  step "ARM check packages (beside the build)" bash scripts/install_arm64_deps.sh
  step "ARM cross build (beside the other steps, nice 19)" env BUILD_ONLY=1 nice -n 19 bash scripts/check_arm64.sh
}
arm64_build_pid=""
stop_arm64_build() {  # on an early exit: the build runs in its own process group (setsid)
  if [[ -n $arm64_build_pid ]]; then kill -- -"$arm64_build_pid" 2>/dev/null || true; fi
}
if [[ $arm64_check != 0 ]]; then
  trap stop_arm64_build EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  # setsid gives the build its own session, and so its own scheduler autogroup where the kernel has them
  # (kernel.sched_autogroup_enabled=1, Debian's default): nice then only ranks processes inside a group, and
  # the group itself competes with the host build's as an equal. Its group's nice 19 makes it the
  # background job it is meant to be; where autogroups are off, the write fails and nice -n 19 does it.
  setsid bash -c "echo 19 2>/dev/null >/proc/self/autogroup || true; $(declare -f step arm64_build); arm64_build" \
    >"$logs/arm64-build.log" 2>&1 &
  arm64_build_pid=$!
fi

step "host build" bash scripts/build.sh
wait "$setup_pid" || true
cat "$logs/test-setup.log" >&2
bash scripts/install_deps.sh  # nothing to do, unless the install beside the build failed: then again, here
# The tests' scratch files (models of several MB per test process; tests/testing/testdata.h) go to a folder
# of the build's, emptied after each step, so that a test killed on a timeout leaves nothing in /tmp.
export TMPDIR=$root/build/test-tmp
clean_tmp() { rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"; }
clean_tmp
step "host ctest" ctest --test-dir build --output-on-failure -j2 --timeout 900
# Every libFuzzer target (fuzz/: HTTP parser and router, API requests, GGUF, tokenizers, Jinja, SSE, grammars,
# tool calls in model output)
# built with clang ASan + UBSan in build-fuzz/ and run LOCKSTEP_FUZZ_SECONDS (default 20) s on its seed
# corpus, two at a time (the runs ~130 s; the build's cold cost in docs/testing.md). LOCKSTEP_FUZZ_SECONDS=0
# skips it.
if [[ "${LOCKSTEP_FUZZ_SECONDS:-20}" != 0 ]]; then
  clean_tmp
  step "fuzz" env SECONDS_PER_TARGET="${LOCKSTEP_FUZZ_SECONDS:-20}" bash scripts/fuzz.sh
fi
# Sanitizers (scripts/check_sanitizers.sh; docs/testing.md says what each covers, leaves out and costs): ASan
# + UBSan on the engine, server and client tests in build-fuzz/ (the fuzz step's build, so the layers are
# compiled already), then TSan on the engine tests and on the Release build's server tests run against a
# TSan-built `lockstep serve`. The slow suites (64-stream load, every-architecture sweeps, nginx, browser,
# peers) are the host ctest's. LOCKSTEP_SANITIZERS=0 skips both; =asan or =tsan runs one. Each sanitizer
# build is removed once its tests pass (build-fuzz/ ~1.4 GB, build-tsan/ ~0.2 GB), so that the disk holds one
# at a time; LOCKSTEP_KEEP_BUILDS=1 keeps them (scripts/check_sanitizers.sh alone keeps them too).
sanitizers=${LOCKSTEP_SANITIZERS:-asan tsan}
if [[ $sanitizers != 0 ]]; then
  remove_build=1
  [[ ${LOCKSTEP_KEEP_BUILDS:-0} == 0 ]] || remove_build=0
  for kind in $sanitizers; do
    clean_tmp
    step "sanitizers ($kind)" env JOBS=2 REMOVE_BUILD=$remove_build bash scripts/check_sanitizers.sh "$kind"
  done
fi
# The lower layers' tests again, cross-built for 64-bit ARM (beside the other steps, above) and run under qemu
# (on 2 cores about 3 minutes of build, 6 of tests): all of them on a Cortex-A76 (NEON dot products, no i8mm:
# levels scalar, neon, neon-dotprod, and the cross-CPU golden), and the tensor tests again on qemu's "max"
# CPU, which adds i8mm (level neon-i8mm). LOCKSTEP_ARM64_CHECK=0 skips it. A failed package install or build
# shows here and is tried again there.
if [[ $arm64_check != 0 ]]; then
  wait "$arm64_build_pid" || true
  arm64_build_pid=""
  cat "$logs/arm64-build.log" >&2
  clean_tmp
  step "ARM check" env CPUS="cortex-a76 max:tensor" bash scripts/check_arm64.sh
fi
clean_tmp
