#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang-14, ASan and UBSan in build-fuzz/ (only the targets and the
# layers they link; Highway's static target only, its AVX2 one, -O1, assertions on;
# scripts/sanitizer_build.sh configures it, and the ASan tests of scripts/check_sanitizers.sh share it), then
# runs each target on its seed corpus (fuzz/corpus/<target>/, read only; new inputs go to a scratch corpus
# in the run directory), two at a time.
# Per target it prints executions and crashes; the exit status is nonzero if any target found a crash, a
# leak, a timeout (an input running over 10 s), an allocation over 2 GiB or a broken property, and its
# reproducer is left in the run directory (printed). docs/testing.md has the long runs and how to replay.
#   scripts/fuzz.sh                                   # the test command's short run: 20 s per target
#   SECONDS_PER_TARGET=600 scripts/fuzz.sh jinja_fuzzer gguf_fuzzer      # longer, two targets
#   RUNS=1000000 SECONDS_PER_TARGET=3600 scripts/fuzz.sh                 # 10^6 executions each (or an hour)
# Env: BUILD_DIR (build-fuzz), FUZZ_BUILD=0 (use the build as it is), JOBS (targets at once and build jobs;
# 2), RUN_DIR (default a new temp dir), SECONDS_PER_TARGET (20), RUNS (executions per target; default no
# limit), FUZZ_ARGS (more libFuzzer flags).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-fuzz}
seconds=${SECONDS_PER_TARGET:-20}
runs=${RUNS:--1}
jobs=${JOBS:-2}
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(http_request_fuzzer openai_completion_fuzzer openai_chat_fuzzer tgi_fuzzer embeddings_fuzzer rerank_fuzzer
    gguf_fuzzer tokenizer_fuzzer jinja_fuzzer sse_fuzzer grammar_fuzzer tool_call_fuzzer harmony_fuzzer)
fi

if [[ "${FUZZ_BUILD:-1}" != 0 ]]; then
  bash "$root/scripts/install_deps.sh"
  start=$SECONDS
  # shellcheck source=scripts/sanitizer_build.sh
  source "$root/scripts/sanitizer_build.sh"
  configure_sanitizer_build asan "$build_dir"  # shared with the ASan tests (scripts/check_sanitizers.sh)
  cmake --build "$build_dir" -j"$jobs" --target "${targets[@]}"
  echo "fuzz: built ${#targets[@]} targets in $((SECONDS - start)) s" >&2
fi

run_dir=${RUN_DIR:-$(mktemp -d -t lockstep-fuzz.XXXXXX)}  # under $TMPDIR (test.sh: build/test-tmp)
symbolizer=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
export ASAN_OPTIONS="detect_leaks=1${symbolizer:+:external_symbolizer_path=$symbolizer}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${symbolizer:+:external_symbolizer_path=$symbolizer}"
# Only Highway's static target was compiled, its AVX2 one (scripts/sanitizer_build.sh): the targets that
# load a model run the AVX2 kernels.
export LOCKSTEP_CPU=avx2
# The fuzz targets find the shared test data (real vocabularies) beside the checkout.
[[ -d "$root/../shared/testdata" ]] && export LOCKSTEP_TESTDATA=${LOCKSTEP_TESTDATA:-$root/../shared/testdata}

# The libFuzzer dictionaries (fuzz/dict/) a target's mutations draw words from: the field names and
# keywords its parser branches on, which random bytes rarely spell.
dictionaries() {
  case $1 in
    openai_completion_fuzzer | openai_chat_fuzzer | tgi_fuzzer) echo api json_schema ;;
    embeddings_fuzzer | rerank_fuzzer) echo api ;;
    grammar_fuzzer) echo grammar json_schema ;;
    tool_call_fuzzer) echo tool_call ;;
    harmony_fuzzer) echo harmony ;;
  esac
}

run_one() {
  local target=$1 dir=$run_dir/$1 status=0 dict_args=() part
  mkdir -p "$dir/corpus"
  rm -f "$dir/dict"  # a reused RUN_DIR: made anew, not appended to
  for part in $(dictionaries "$target"); do cat "$root/fuzz/dict/$part.dict" >>"$dir/dict"; done
  [[ -f $dir/dict ]] && dict_args=(-dict="$dir/dict")
  # shellcheck disable=SC2086  # FUZZ_ARGS is a list
  "$build_dir/fuzz/$target" -max_total_time="$seconds" -runs="$runs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$dir/" "${dict_args[@]}" ${FUZZ_ARGS:-} "$dir/corpus" \
    "$root/fuzz/corpus/$target" >"$dir/log" 2>&1 || status=$?
  local execs rate found
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
  found=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' -o -name 'slow-unit-*' \) | wc -l)
  if ((status != 0)); then
    echo "fuzz: $target: FAILED (exit $status) after ${execs:-?} executions; $found reproducer(s) in $dir," \
      "log $dir/log:" >&2
    grep -m1 -A12 -E '^==[0-9]+==ERROR|runtime error|fuzz property broken|ERROR: libFuzzer' "$dir/log" >&2 || tail -20 "$dir/log" >&2
    # The frames in the project's own code, which a deep library stack (nlohmann's) pushes past those lines.
    grep -E '^ +#[0-9]+ .* in .*(lockstep|LLVMFuzzerTestOneInput)' "$dir/log" | head -8 >&2 || true
    return "$status"
  fi
  echo "fuzz: $target: ${execs:-0} executions (${rate:-?}/s), 0 crashes, corpus $(find "$dir/corpus" -type f | wc -l) new inputs"
}

failed=0
running=0
start=$SECONDS
for target in "${targets[@]}"; do
  if [[ ! -x "$build_dir/fuzz/$target" ]]; then
    echo "fuzz: $build_dir/fuzz/$target is not built" >&2
    exit 2
  fi
  run_one "$target" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
echo "fuzz: ${#targets[@]} targets run in $((SECONDS - start)) s; runs in $run_dir" >&2
exit "$failed"
