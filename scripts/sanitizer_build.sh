# Sourced by scripts/fuzz.sh and scripts/check_sanitizers.sh (not run): the one place that says how the
# clang-14 sanitizer builds are configured.
#   configure_sanitizer_build asan DIR   # ASan + UBSan + libFuzzer's coverage (-DLOCKSTEP_FUZZ=ON): the fuzz
#                                        # targets and the ASan test run share this build, so its layers
#                                        # compile once (the coverage callbacks are no-ops without libFuzzer)
#   configure_sanitizer_build tsan DIR   # TSan (-DLOCKSTEP_SANITIZE=thread), `lockstep` without the client
#                                        # (-DLOCKSTEP_SERVER_CLI_ONLY=ON: engine subcommands and serve)
# Both: -O1 -gline-tables-only (the client, the cli and the test programs' own code -O0: CMakeLists.txt's
# LOCKSTEP_SANITIZER_FAST_OPTIMIZE), assertions on, every report fatal, no benchmarks; tests on (only the
# targets asked for are built). Highway's static target only, made its AVX2 target by the baseline's flags
# plus the AES, PCLMUL, LZCNT and BMI that Highway's AVX2 also asks for (every x86-64 CPU with AVX2 that CI
# or a user meets has them): programs run with LOCKSTEP_CPU=avx2, so the sanitizers see the AVX2 kernels
# (avx2-vnni too, forced) and the tests run ~15x faster than at the scalar level (EngineRecurrentTest under
# ASan: 4 s instead of 67 s). The AVX-512 targets and the scalar kernels are the Release build's tests' job.
configure_sanitizer_build() {
  local kind=$1 dir=$2 options
  case "$kind" in
    asan) options=(-DLOCKSTEP_FUZZ=ON -DLOCKSTEP_SANITIZE= -DLOCKSTEP_SERVER_CLI_ONLY=OFF) ;;
    tsan) options=(-DLOCKSTEP_FUZZ=OFF -DLOCKSTEP_SANITIZE=thread -DLOCKSTEP_SERVER_CLI_ONLY=ON) ;;
    *)
      echo "configure_sanitizer_build: unknown kind '$kind' (asan or tsan)" >&2
      return 2
      ;;
  esac
  local source_dir
  source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  cmake -S "$source_dir" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS="-DHWY_COMPILE_ONLY_STATIC=1 -maes -mpclmul -mlzcnt -mbmi" \
    -DLOCKSTEP_BUILD_TESTS=ON -DLOCKSTEP_BUILD_BENCH=OFF "${options[@]}" >/dev/null
}
