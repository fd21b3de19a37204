# Sourced (not run) by scripts/install_deps.sh and scripts/install_arm64_deps.sh: the Debian packages of a list
# that are not installed yet, and their installation.
#   missing_packages PACKAGE...               # prints those not installed, one a line
#   install_missing_packages TAG PACKAGE...   # installs those; TAG starts its message ("TAG: installing ...")
# install_missing_packages does nothing when every package is installed; otherwise it needs root (or sudo). A
# package named NAME:ARCH of an architecture dpkg does not know yet (arm64) gets that architecture added
# first. Calls made at the same time (scripts/test.sh installs the tests' and the ARM check's packages at
# once, beside the build) take turns on a lock file, since apt runs one at a time.

missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

install_missing_packages() {
  local tag=$1
  shift
  if [[ -z $(missing_packages "$@") ]]; then return 0; fi
  local lock=${TMPDIR:-/tmp}/lockstep-apt.lock
  touch "$lock" 2>/dev/null || true  # read-only is enough for flock: another user's lock file works too
  (
    flock 9
    mapfile -t missing < <(missing_packages "$@")  # again: the other caller may have installed some meanwhile
    if ((${#missing[@]} == 0)); then exit 0; fi
    echo "$tag: installing ${missing[*]}" >&2
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    native=$(dpkg --print-architecture)
    for arch in $(printf '%s\n' "${missing[@]}" | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u); do
      if [[ $arch != "$native" ]] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
        $sudo dpkg --add-architecture "$arch"
      fi
    done
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  ) 9<"$lock"
}
