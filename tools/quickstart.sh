#!/usr/bin/env bash
# One-command set-up for a fresh Debian 12 (bookworm) or 13 (trixie) machine (run as root, or with sudo available):
#
#   bash tools/quickstart.sh demo   install what the demo needs, build only the libraries, the CLI and the example,
#                                   run examples/allreduce_sweep under MPICH and Open MPI with ARShim preloaded
#                                   (through `arshim run`), show ARShim's summary
#   bash tools/quickstart.sh test   install everything the suite uses, build everything, run the whole test suite
#   bash tools/quickstart.sh build  install everything and build everything
#   bash tools/quickstart.sh install  install everything only
#
# A build directory the demo configured (tests, fuzzers and the SimGrid build switched off) is reconfigured with
# everything on by the next `test` or `build`.
#
# BUILD_DIR (default: build) selects the build directory; JOBS (default: ninja's own choice) caps `meson compile -j`;
# SETUP_OPTIONS (e.g. "-Dfuzz=disabled -Dsmpi=disabled") are added to `meson setup` when the build directory is made.
# tools/checks/platform.sh runs this script inside a Debian 13 or 14 chroot (docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-}
read -r -a setup_options <<<"${SETUP_OPTIONS:-}"

# What the demo needs: a compiler, meson, both MPIs and the libraries the shim links.
DEMO_PACKAGES=(build-essential meson ninja-build pkg-config python3 mpich libmpich-dev openmpi-bin libopenmpi-dev
               libspdlog-dev libunwind-dev libtomlplusplus-dev nlohmann-json3-dev libcli11-dev)
# What the whole suite needs besides.
PACKAGES=("${DEMO_PACKAGES[@]}" gfortran python3-numpy python3-mpi4py python3-pytest catch2
          clang iproute2 procps libdw-dev python3-matplotlib python3-jsonschema
          g++-aarch64-linux-gnu qemu-user
          slurmctld slurmd slurm-client munge lmod debhelper scalapack-mpi-test libsimgrid-dev)

# The compiler-rt package (libFuzzer and the sanitizers for test/fuzz) is versioned: libclang-rt-14-dev on Debian 12,
# libclang-rt-19-dev on Debian 13. The one matching the major version of the clang just installed.
clang_rt_package() {
  local major
  major=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\)\..*/\1/p' | head -1)
  [[ -n $major ]] || { echo "quickstart: cannot read clang's version from 'clang --version'" >&2; return 1; }
  echo "libclang-rt-$major-dev"
}

updated=0
apt_install() {
  local missing=() sudo=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [[ ${#missing[@]} -gt 0 ]] || return 0
  [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  if [[ $updated -eq 0 ]]; then
    "${sudo[@]}" apt-get update -q
    updated=1
  fi
  # A package the release's archive does not have (Debian testing drops some for a while, e.g. scalapack-mpi-test in
  # forky) is named and left out; the tests that need it skip. Without what the build needs, meson setup says so.
  local available=() absent=()
  for p in "${missing[@]}"; do
    if [[ $(apt-cache policy "$p" 2>/dev/null) =~ Candidate:\ [^\(] ]]; then available+=("$p"); else absent+=("$p"); fi
  done
  [[ ${#absent[@]} -eq 0 ]] || echo "quickstart: not in this release's archive, left out: ${absent[*]}" >&2
  [[ ${#available[@]} -gt 0 ]] || return 0
  echo "quickstart: installing ${available[*]}"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${available[@]}"
}

install_missing() {
  apt_install "${PACKAGES[@]}"
  local rt
  rt=$(clang_rt_package)
  apt_install "$rt"
}

demo_stamp=$BUILD_DIR/.quickstart-demo-only
build() {
  if [[ ! -f $BUILD_DIR/build.ninja ]]; then
    meson setup "$BUILD_DIR" --buildtype=release "${setup_options[@]}"
  elif [[ -f $demo_stamp ]]; then
    # Configured by the demo: everything back on, and the dependencies installed since then found.
    meson setup --reconfigure "$BUILD_DIR" -Dtests=true -Dfuzz=auto -Dsmpi=auto
    rm -f "$demo_stamp"
  fi
  meson compile -C "$BUILD_DIR" ${JOBS:+-j "$JOBS"}
}

# The demo's build: the two shim libraries and the example (the `arshim` CLI is written by meson setup).
build_demo() {
  if [[ ! -f $BUILD_DIR/build.ninja ]]; then
    meson setup "$BUILD_DIR" --buildtype=release -Dtests=false -Dfuzz=disabled -Dsmpi=disabled "${setup_options[@]}"
    touch "$demo_stamp"
  fi
  local targets=() flavor
  for flavor in mpich openmpi; do
    targets+=("arshim-$flavor" "allreduce_sweep-$flavor")
  done
  meson compile -C "$BUILD_DIR" ${JOBS:+-j "$JOBS"} "${targets[@]}"
}

demo() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export ARSHIM_LOG=${ARSHIM_LOG:-info} ARSHIM_STATS_SUMMARY=${ARSHIM_STATS_SUMMARY:-1}
  local np=${NP:-2}
  for flavor in mpich openmpi; do
    echo
    echo "=== examples/allreduce_sweep under $flavor, $np ranks, ARShim preloaded ==="
    local extra=()
    # One node: shared memory only (Open MPI 5's TCP transport otherwise prints "Unable to find reachable pairing
    # between local and remote interfaces" where the host has no routable interface; vader is Open MPI 5's sm too).
    [[ $flavor == openmpi ]] && extra=(--oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader --bind-to none)
    "$BUILD_DIR/tools/arshim" run -v -- "mpirun.$flavor" -n "$np" "${extra[@]}" \
      "$BUILD_DIR/examples/allreduce_sweep-$flavor" --max "${MAX_BYTES:-16M}"
  done
}

run_tests() {
  local log=$BUILD_DIR/meson-logs/testlog.txt rc=0
  rm -f "$BUILD_DIR/meson-logs/testlog.json"  # a run that stops before any test must not print the last run's line
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
  demo) t0=$SECONDS
        apt_install "${DEMO_PACKAGES[@]}"
        t1=$SECONDS
        build_demo
        t2=$SECONDS
        demo
        echo
        echo "quickstart: demo done in $((SECONDS - t0)) s: packages $((t1 - t0)) s, build $((t2 - t1)) s," \
             "both runs $((SECONDS - t2)) s" ;;
  test) shift; install_missing; build; run_tests "$@" ;;
  build) install_missing; build ;;
  install) install_missing ;;
  *) echo "usage: bash tools/quickstart.sh demo|test|build|install" >&2; exit 2 ;;
esac
