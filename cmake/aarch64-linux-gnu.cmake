# CMake toolchain for cross-building lockstep for 64-bit ARM (aarch64; NEON through Highway) on a Debian 12
# x86-64 host with Debian's cross compiler and multiarch arm64 -dev packages (scripts/check_arm64.sh installs
# them). Programs built with it (including gtest_discover_tests' test listing) run under qemu-aarch64 user mode.
#   cmake -S . -B /tmp/arm64-build -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Target libraries: the cross toolchain's own (libc, libstdc++) and Debian multiarch arm64 packages
# (/usr/lib/aarch64-linux-gnu, found through CMAKE_LIBRARY_ARCHITECTURE, which CMake takes from the compiler).
# Header-only, architecture-independent packages (nlohmann-json, CLI11, Boost headers) come from /usr as usual.
# Programs (ninja, ccache, pkg-config) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config must report the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)

# Run with the multiarch runtime (libc6:arm64, which the -dev packages pull in, and its loader in /lib): with
# "-L /usr/aarch64-linux-gnu" the cross package's older loader would meet the multiarch libc.so.6, and
# pthread_create then hangs.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
