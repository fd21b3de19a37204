#!/usr/bin/env bash
# Sanitizer builds (clang) of the layers where threads and untrusted input meet, and their tests; part of the
# README's test command (scripts/test.sh). Exit status nonzero on any failing test or any sanitizer report,
# the `lockstep` child processes the server tests start included.
#   scripts/check_sanitizers.sh asan   # ASan+UBSan in build-asan/: the engine, server and client tests
#   scripts/check_sanitizers.sh tsan   # TSan in build-tsan/: the engine and server tests (the engine thread,
#                                      # HTTP threads, cancellation, drain), the slow suites left to asan
#   scripts/check_sanitizers.sh        # both, asan first
# Only the needed targets are built (the test programs and the `lockstep` binary they start), at -O1 with
# line tables, asserts on, no benchmarks. docs/testing.md says what each build covers and what it costs.
# Env: JOBS (default: nproc), CTEST_ARGS (extra ctest arguments, e.g. "-R Engine").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${JOBS:-$(nproc)}
kinds=("$@")
if ((${#kinds[@]} == 0)); then kinds=(asan tsan); fi
bash "$root/scripts/install_deps.sh"

symbolizer=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
common_options="halt_on_error=1${symbolizer:+:external_symbolizer_path=$symbolizer}"

run_kind() {
  local kind=$1 sanitize layers exclude="" build_dir
  case "$kind" in
    asan)
      sanitize=address,undefined
      layers=(engine server client)
      ;;
    tsan)
      sanitize=thread
      layers=(engine server)
      # Covered by the Release and asan builds, and slow under TSan (5-15x): the 64-stream load test and
      # the every-architecture sweeps. None is about threads beyond what the other server tests exercise.
      exclude="SixtyFourConcurrentStreams|EveryArchitecture"
      ;;
    *)
      echo "check_sanitizers: unknown kind '$kind' (asan or tsan)" >&2
      return 2
      ;;
  esac
  build_dir=$root/build-$kind
  local start=$SECONDS
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DLOCKSTEP_SANITIZE=$sanitize -DLOCKSTEP_BUILD_BENCH=OFF >/dev/null
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
  local args=(--test-dir "$build_dir" --output-on-failure -j"$jobs" --timeout 900 -L "$label")
  if [[ -n "$exclude" ]]; then args+=(-E "$exclude"); fi
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
