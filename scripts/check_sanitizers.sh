#!/usr/bin/env bash
# Sanitizer builds (clang-14) of the layers where threads and untrusted input meet, and their tests; part of
# the README's test command (scripts/test.sh). Exit status nonzero on any failing test or any sanitizer
# report, the `lockstep` child processes the server tests start included.
#   scripts/check_sanitizers.sh asan   # ASan+UBSan: the engine, server and client tests, in build-fuzz/ (the
#                                      # fuzz targets' build, scripts/fuzz.sh: the layers compile once)
#   scripts/check_sanitizers.sh tsan   # TSan in build-tsan/: the engine and server tests (the engine thread,
#                                      # HTTP threads, cancellation, drain)
#   scripts/check_sanitizers.sh        # both, asan first
# Only the needed targets are built (the test programs and the `lockstep` binary they start); how the builds
# are configured: scripts/sanitizer_build.sh. The slow suites (the 64-stream load test, the
# every-architecture sweeps) are left to the Release build's ctest. docs/testing.md says what each build
# covers and what it costs.
# Env: JOBS (build jobs and tests at once; default nproc), ASAN_BUILD_DIR (build-fuzz), TSAN_BUILD_DIR
# (build-tsan), RELEASE_BUILD_DIR (build: the TSan run's server test programs), CTEST_ARGS (extra ctest
# arguments, e.g. "-R Engine"), REMOVE_BUILD=1 (remove a kind's build folder once its tests pass: the test
# command's disk, scripts/test.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/sanitizer_build.sh
source "$root/scripts/sanitizer_build.sh"
jobs=${JOBS:-$(nproc)}
kinds=("$@")
if ((${#kinds[@]} == 0)); then kinds=(asan tsan); fi
bash "$root/scripts/install_deps.sh"

symbolizer=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
common_options="halt_on_error=1${symbolizer:+:external_symbolizer_path=$symbolizer}"
# Highway's static target only was compiled, its AVX2 one (scripts/sanitizer_build.sh).
export LOCKSTEP_CPU=avx2
# Covered by the Release build's ctest, and slow sanitized: the every-architecture sweeps (40 s of engine
# test under ASan), the slow-client test (it must fill ~4 MiB of socket buffers with 64 sequences' events:
# 30+ steps of 64; under ASan beside another test it missed its deadline), and the official OpenAI client's
# 200 structured requests (node; 320 s under ASan, 61 s in the Release ctest).
slow_tests="EveryArchitecture"
slow_tests+="|ServerSlowClientTest|ServerStructuredCompatTest"
# ASan + UBSan only: running out of descriptors cannot be checked with UBSan, whose vptr check probes memory
# through pipe(): with no descriptor left it fails and reports a valid object as "invalid vptr" (seen in
# ConnectionLimitTest: strace shows pipe2() = EMFILE just before the report).
asan_only_excluded="RunningOutOfDescriptors"
# The TSan run's server tests come from the Release build (below): those that test the server's code in
# their own process, not in a `lockstep serve` child, would test nothing sanitized there. The ASan run has them.
tsan_in_process_server_tests="HttpRequestTest|HttpServerDrainTest|HttpWriteTimeoutTest|MetricsTest|SseTest"
tsan_in_process_server_tests+="|RequestFieldsTest|StructuredFields\.|ToolCalls\.|ToolCallGoldens|ApiErrorTest|RequestGuardTest"
tsan_in_process_server_tests+="|ServerOptionsTest|DryFields\.|GrammarCache\."
release_dir=${RELEASE_BUILD_DIR:-$root/build}

# ctest over DIR's tests labelled LABEL, less those matching EXCLUDE, with $CTEST_ARGS.
run_ctest() {
  local dir=$1 label=$2 exclude=$3
  # shellcheck disable=SC2086  # CTEST_ARGS is a list
  nice ctest --test-dir "$dir" --output-on-failure -j"$jobs" --timeout 900 -L "$label" -E "$exclude" \
    ${CTEST_ARGS:-}
}

run_kind() {
  local kind=$1 layers build_dir
  case "$kind" in
    asan)
      layers=(engine server client)
      build_dir=${ASAN_BUILD_DIR:-$root/build-fuzz}
      ;;
    tsan)
      layers=(engine server)
      build_dir=${TSAN_BUILD_DIR:-$root/build-tsan}
      ;;
    *)
      echo "check_sanitizers: unknown kind '$kind' (asan or tsan)" >&2
      return 2
      ;;
  esac
  local start=$SECONDS
  configure_sanitizer_build "$kind" "$build_dir"
  local targets=(lockstep)
  for layer in "${layers[@]}"; do targets+=("${layer}_tests"); done
  # TSan: the server tests' threads run in the `lockstep serve` child, so the Release build's server tests
  # run against the TSan-built binary ($LOCKSTEP_BINARY, tests/testing/testdata.h) instead of compiling the
  # test programs again; the engine tests (the engine thread in-process) are built with TSan.
  if [[ $kind == tsan ]]; then
    targets=(lockstep engine_tests)
    if [[ ! -f $release_dir/CMakeCache.txt ]]; then
      echo "check_sanitizers: tsan runs $release_dir's server tests: configure it first (scripts/build.sh)" >&2
      return 2
    fi
    nice cmake --build "$release_dir" -j"$jobs" --target server_tests lockstep
  fi
  nice cmake --build "$build_dir" -j"$jobs" --target "${targets[@]}"
  local built=$((SECONDS - start))

  # Reports go to files, one per process, so a report in a `lockstep serve` child (whose stderr the test
  # may not show) fails the check too; they are printed below.
  local logs=$build_dir/sanitizer-logs
  rm -rf "$logs"
  mkdir -p "$logs"
  export ASAN_OPTIONS="$common_options:detect_leaks=1:log_path=$logs/asan"
  export UBSAN_OPTIONS="$common_options:print_stacktrace=1:log_path=$logs/ubsan"
  export TSAN_OPTIONS="$common_options:second_deadlock_stack=1:log_path=$logs/tsan"
  if [[ -s "$root/scripts/tsan_suppressions.txt" ]]; then
    TSAN_OPTIONS+=":suppressions=$root/scripts/tsan_suppressions.txt"
  fi
  local status=0
  if [[ $kind == tsan ]]; then
    run_ctest "$build_dir" '^engine$' "$slow_tests" || status=$?
    LOCKSTEP_BINARY=$build_dir/lockstep run_ctest "$release_dir" '^server$' \
      "$slow_tests|$tsan_in_process_server_tests" || status=$?
  else
    run_ctest "$build_dir" "^($(IFS='|'; echo "${layers[*]}"))\$" "$slow_tests|$asan_only_excluded" ||
      status=$?
  fi
  unset ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS
  if compgen -G "$logs/*" >/dev/null; then
    echo "check_sanitizers: $kind reports:" >&2
    for f in "$logs"/*; do
      echo "== $f" >&2
      cat "$f" >&2
    done
    status=1
  fi
  echo "check_sanitizers: $kind: build ${built} s, tests $((SECONDS - start - built)) s, status $status" >&2
  if ((status == 0)) && [[ ${REMOVE_BUILD:-0} == 1 ]]; then rm -rf "$build_dir"; fi
  return $status
}

for kind in "${kinds[@]}"; do run_kind "$kind"; done
