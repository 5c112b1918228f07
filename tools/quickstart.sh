#!/usr/bin/env bash
# One-command set-up for a fresh Debian 12 machine (run as root, or with sudo available):
#
#   bash tools/quickstart.sh demo   install what is missing, build, run examples/allreduce_sweep under MPICH and
#                                   Open MPI with ARShim preloaded (through `arshim run`), show ARShim's summary
#   bash tools/quickstart.sh test   install what is missing, build, run the whole test suite
#   bash tools/quickstart.sh build  install what is missing and build only
#
# BUILD_DIR (default: build) selects the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

PACKAGES=(build-essential gfortran meson ninja-build pkg-config python3 python3-numpy python3-mpi4py
          python3-pytest mpich libmpich-dev openmpi-bin libopenmpi-dev
          libspdlog-dev libunwind-dev catch2 libtomlplusplus-dev nlohmann-json3-dev libcli11-dev
          clang libclang-rt-14-dev iproute2 procps libdw-dev python3-matplotlib python3-jsonschema
          g++-aarch64-linux-gnu qemu-user
          slurmctld slurmd slurm-client munge lmod debhelper scalapack-mpi-test libsimgrid-dev)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "quickstart: installing ${missing[*]}"
    local sudo=()
    [[ $(id -u) -ne 0 ]] && sudo=(sudo)
    "${sudo[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

build() {
  if [[ ! -f $BUILD_DIR/build.ninja ]]; then
    meson setup "$BUILD_DIR" --buildtype=release
  fi
  meson compile -C "$BUILD_DIR"
}

demo() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export ARSHIM_LOG=${ARSHIM_LOG:-info} ARSHIM_STATS_SUMMARY=${ARSHIM_STATS_SUMMARY:-1}
  local np=${NP:-2}
  for flavor in mpich openmpi; do
    echo
    echo "=== examples/allreduce_sweep under $flavor, $np ranks, ARShim preloaded ==="
    local extra=()
    [[ $flavor == openmpi ]] && extra=(--oversubscribe --mca mpi_yield_when_idle 1 --bind-to none)
    "$BUILD_DIR/tools/arshim" run -v -- "mpirun.$flavor" -n "$np" "${extra[@]}" \
      "$BUILD_DIR/examples/allreduce_sweep-$flavor" --max "${MAX_BYTES:-16M}"
  done
}

run_tests() {
  local log=$BUILD_DIR/meson-logs/testlog.txt rc=0
  meson test -C "$BUILD_DIR" --print-errorlogs "$@" || rc=$?
  # A plain closing line for CI: "N passed, N failed".
  if [[ -f $BUILD_DIR/meson-logs/testlog.json ]]; then
    python3 - "$BUILD_DIR/meson-logs/testlog.json" <<'PY'
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    result = json.loads(line).get("result")
    if result in ("OK", "EXPECTEDFAIL"): passed += 1
    elif result == "SKIP": skipped += 1
    else: failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
  fi
  return $rc
}

case ${1:-} in
  demo) install_missing; build; demo ;;
  test) shift; install_missing; build; run_tests "$@" ;;
  build) install_missing; build ;;
  *) echo "usage: bash tools/quickstart.sh demo|test|build" >&2; exit 2 ;;
esac
