#!/usr/bin/env bash
# Builds ARShim and runs its test suite on another Debian release, in a chroot on this machine (root only):
#
#   tools/checks/platform.sh trixie|forky [-- MESON-TEST-ARGS...]
#
#   tools/checks/platform.sh trixie                        the whole suite on Debian 13
#   tools/checks/platform.sh trixie -- --suite unit        one suite (any `meson test` arguments after --)
#   tools/checks/platform.sh forky -- shim-core policy     named tests on Debian 14 (testing)
#
# Steps: (1) a `debootstrap --variant=buildd` chroot from the mirror this machine's apt uses, made once and kept
# under $ARSHIM_PLATFORM_CACHE/<release> (default /var/cache/arshim-platform), or the chroot named by
# $ARSHIM_PLATFORM_ROOT; (2) /proc, /dev, /dev/pts, /dev/shm and /sys bind-mounted, unmounted however the script
# ends; (3) a snapshot of this source tree (tracked and untracked files, not ignored ones such as build*/) copied to
# /src/arshim inside; (4) the packages installed by the tree's own tools/quickstart.sh (one package list for every
# release); (5) a build in /var/tmp/arshim-build inside the chroot (kept, so a rerun only recompiles what changed),
# with $ARSHIM_PLATFORM_JOBS (default 2) jobs and $ARSHIM_PLATFORM_SETUP (meson setup options, e.g.
# "-Dfuzz=disabled -Dsmpi=disabled"; they apply when that build directory is made); (6) `meson test` with the
# arguments given, its closing line "N passed, N failed, N skipped", and its exit status as this script's.
# Exit status: the suite's; 1 when a step before the suite fails; 2 on bad arguments.
set -euo pipefail

usage() { echo "usage: tools/checks/platform.sh trixie|forky [-- MESON-TEST-ARGS...]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
release=$1
shift
case $release in
  trixie | forky) ;;
  -h | --help) sed -n '2,19p' "$0" | cut -c3-; exit 0 ;;
  *) echo "platform.sh: unknown release '$release' (allowed: trixie, forky)" >&2; exit 2 ;;
esac
if [[ $# -gt 0 ]]; then
  [[ $1 == -- ]] || { echo "platform.sh: unexpected argument '$1' (meson test arguments go after --)" >&2; exit 2; }
  shift
fi
[[ $(id -u) -eq 0 ]] || { echo "platform.sh: needs root (debootstrap, chroot, mount)" >&2; exit 1; }

src=$(cd "$(dirname "$0")/../.." && pwd)
cache=${ARSHIM_PLATFORM_CACHE:-/var/cache/arshim-platform}
root=$(realpath -m "${ARSHIM_PLATFORM_ROOT:-$cache/$release}")  # a symbolic link to a chroot: the chroot's own path
jobs=${ARSHIM_PLATFORM_JOBS:-2}
build_dir=/var/tmp/arshim-build  # inside the chroot

t0=$SECONDS
step_start=$SECONDS
step() { step_start=$SECONDS; echo "platform.sh: [$release] $*" >&2; }
step_done() { echo "platform.sh: [$release] ... done in $((SECONDS - step_start)) s" >&2; }
die() { echo "platform.sh: [$release] $*" >&2; exit 1; }

# One run per chroot at a time.
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock -n 9 || die "another platform.sh run is using $root (lock $root.lock)"

# The mirror this machine's apt uses (deb822 .sources first, then sources.list), deb.debian.org if none is found.
mirror() {
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
        grep -v -- '-security' | head -1 || true)
  if [[ -z $uri ]]; then
    uri=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' \
          /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v -- '-security' | head -1 || true)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

# Nothing may be mounted below a directory this script removes.
mounted_below() { findmnt -rn -o TARGET | grep -- "^$1/" >/dev/null; }  # not grep -q: no SIGPIPE under pipefail

# (1) The chroot. debootstrap removes its /debootstrap directory only when it succeeds.
if [[ ! -f $root/etc/debian_version || -d $root/debootstrap ]]; then
  command -v debootstrap >/dev/null || {
    step "installing debootstrap"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap; } >/dev/null ||
      die "cannot install debootstrap"
  }
  [[ -e $root ]] && die "$root exists but is not a finished chroot; remove it (nothing mounted below) and rerun"
  partial=$root.partial
  if [[ -e $partial ]]; then
    mounted_below "$partial" && die "$partial has mounts below it; unmount them first"
    rm -rf "$partial"
  fi
  script=/usr/share/debootstrap/scripts/$release
  [[ -e $script ]] || script=/usr/share/debootstrap/scripts/sid  # forky: the sid script (a newer debootstrap has it)
  m=$(mirror)
  step "bootstrapping $release from $m into $root (a few minutes; log: $partial.log)"
  debootstrap --variant=buildd "$release" "$partial" "$m" "$script" >"$partial.log" 2>&1 ||
    { tail -n 20 "$partial.log" >&2; die "debootstrap failed (log: $partial.log)"; }
  mv "$partial" "$root"
  mv "$partial.log" "$root.bootstrap.log"
  step_done
fi

# (2) Mounts, undone on every exit. Processes this run left in the chroot (an MPI daemon of a failed test) are ended
# first, by process id, so that nothing holds the mounts: those whose /proc/PID/root is $root (resolved above) and
# whose environment carries this run's token (every process started inside inherits it; not an ARSHIM_* name, which
# `arshim run` would pass to the ranks as a setting), never another user's of the same chroot.
token=$$.$(date +%s%N)
mounts=()
cleanup() {
  local rc=$? pid i environ
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [[ $pid -ne $$ && $(readlink "/proc/$pid/root" 2>/dev/null) == "$root" ]] || continue
    environ=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) || continue
    [[ $'\n'$environ$'\n' == *$'\n'"PLATFORM_SH_RUN_TOKEN=$token"$'\n'* ]] && kill -9 "$pid" 2>/dev/null
  done
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null ||
      echo "platform.sh: could not unmount ${mounts[i]}" >&2
  done
  echo "platform.sh: [$release] total $((SECONDS - t0)) s, exit $rc" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# The chroot's root a mount point of its own first (bound onto itself), so that `ip netns exec` / `ip -n` inside can
# make / a slave mount (it fails with "mount --make-rslave / failed" otherwise, and the cluster tests skip).
if ! mountpoint -q "$root"; then
  mount --bind "$root" "$root"
  mounts+=("$root")
fi
for m in proc sys dev dev/pts dev/shm; do
  mkdir -p "$root/$m"
  mountpoint -q "$root/$m" && continue  # mounted by someone else: theirs to unmount
  mount --bind "/$m" "$root/$m"
  mounts+=("$root/$m")
done

# Release-wide settings inside: DNS, no services started by package scripts, and apt accepting a mirror snapshot's
# expired Release files (forky's, or any release's when this machine's mirror is a snapshot).
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99arshim-platform"

# (3) The source snapshot. tar keeps modification times, so the kept build recompiles only what changed.
step "copying $src into $root/src/arshim"
rm -rf "$root/src/arshim"
mkdir -p "$root/src/arshim"
if [[ $(git -C "$src" rev-parse --show-toplevel 2>/dev/null) == "$src" ]]; then
  (cd "$src" && git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
    tar -xf - -C "$root/src/arshim"
else
  tar -C "$src" --exclude='./build*' --exclude=__pycache__ -cf - . | tar -xf - -C "$root/src/arshim"
fi
step_done

# In the background and waited for, so that an INT or TERM sent to this script ends it at once (bash runs a trap only
# after a foreground child ends); the cleanup then ends what runs inside.
inside() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 TERM=dumb BUILD_DIR=$build_dir JOBS="$jobs" SETUP_OPTIONS="${ARSHIM_PLATFORM_SETUP:-}" \
    PLATFORM_SH_RUN_TOKEN="$token" "$@" &
  wait $!
}

# (4) Packages, (5) build, (6) the suite.
step "installing packages (tools/quickstart.sh install)"
inside bash /src/arshim/tools/quickstart.sh install || die "installing packages failed"
step_done
step "building in $root$build_dir (meson compile -j $jobs)"
inside bash /src/arshim/tools/quickstart.sh build || die "the build failed"
step_done
step "meson test ${*:-(the whole suite)}"
rc=0
inside bash /src/arshim/tools/quickstart.sh test "$@" || rc=$?
step_done
exit "$rc"
