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
# (build-tsan), CTEST_ARGS (extra ctest arguments, e.g. "-R Engine").
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
# Highway's static target only was compiled (scripts/sanitizer_build.sh): the scalar kernels.
export LOCKSTEP_CPU=scalar
# Covered by the Release build's ctest, and slow sanitized (and with the scalar kernels): the 64-stream load
# test and the every-architecture sweeps. Neither is about threads or parsing beyond what the other server
# and engine tests exercise.
slow_tests="SixtyFourConcurrentStreams|EveryArchitecture"

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
  local label
  label="^($(IFS='|'; echo "${layers[*]}"))\$"
  local args=(--test-dir "$build_dir" --output-on-failure -j"$jobs" --timeout 900 -L "$label" -E "$slow_tests")
  local status=0
  # shellcheck disable=SC2086  # CTEST_ARGS is a list
  nice ctest "${args[@]}" ${CTEST_ARGS:-} || status=$?
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
  return $status
}

for kind in "${kinds[@]}"; do run_kind "$kind"; done
