# Sourced by scripts/fuzz.sh and scripts/check_sanitizers.sh (not run): the one place that says how the
# clang-14 sanitizer builds are configured.
#   configure_sanitizer_build asan DIR   # ASan + UBSan + libFuzzer's coverage (-DLOCKSTEP_FUZZ=ON): the fuzz
#                                        # targets and the ASan test run share this build, so its layers
#                                        # compile once (the coverage callbacks are no-ops without libFuzzer)
#   configure_sanitizer_build tsan DIR   # TSan (-DLOCKSTEP_SANITIZE=thread), `lockstep` without the client
#                                        # (-DLOCKSTEP_SERVER_CLI_ONLY=ON: engine subcommands and serve)
# Both: -O1 -gline-tables-only (the client, the cli and the test programs' own code -O0: CMakeLists.txt's
# LOCKSTEP_SANITIZER_FAST_OPTIMIZE), assertions on, every report fatal, no benchmarks; tests on (only the
# targets asked for are built). Highway's static target only, which the kernel table does not use: programs
# run with LOCKSTEP_CPU=scalar (the SIMD kernels are the Release build's tests' job, and the ARM check's).
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
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS="-DHWY_COMPILE_ONLY_STATIC=1" \
    -DLOCKSTEP_BUILD_TESTS=ON -DLOCKSTEP_BUILD_BENCH=OFF "${options[@]}" >/dev/null
}
