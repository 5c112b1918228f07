#!/usr/bin/env bash
# Builds ARShim's Debian package from this source tree, and optionally installs it and runs its smoke test from the
# installed paths (docs/install.md "Debian package"; .ci/run does all three).
#
#   bash tools/packaging/deb-check.sh [--install] [--remove] [OUTDIR]
#
#   OUTDIR     where the .deb files go (default: build-deb/ in the source tree)
#   --install  apt-get install the package (root), then tools/packaging/deb-smoke.sh
#   --remove   afterwards, remove the package again (dpkg -r), for machines that keep running
#
# The source is exported first (the files git tracks, with their working-tree contents, or the whole tree without
# build directories when there is no git), tools/packaging/debian becomes its debian/ and debian/changelog is written
# with meson.build's version, so the top level stays as it is and the package version cannot drift. Builds with
# dpkg-buildpackage -b -uc -us, DEB_BUILD_OPTIONS="parallel=2 nocheck"; prints how long the build took.
set -euo pipefail
cd "$(dirname "$0")/../.."
source_dir=$PWD
install=0 remove=0 outdir=$source_dir/build-deb
while [[ $# -gt 0 ]]; do
  case $1 in
    --install) install=1 ;;
    --remove) remove=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "deb-check: unknown option $1 (allowed: --install, --remove, OUTDIR)" >&2; exit 2 ;;
    *) outdir=$1 ;;
  esac
  shift
done

version=$(sed -n "s/^ *version: *'\([0-9][0-9.]*\)',.*/\1/p" meson.build | head -1)
[[ -n $version ]] || { echo "deb-check: cannot read the project version from meson.build" >&2; exit 1; }
work=$(mktemp -d /tmp/arshim-deb-XXXXXX)
trap 'rm -rf "$work"' EXIT
export_dir=$work/arshim-$version
mkdir -p "$export_dir" "$outdir"

if git -C "$source_dir" rev-parse --git-dir >/dev/null 2>&1; then
  # Tracked files deleted in the working tree are left out, as a commit of the tree would leave them out.
  git -C "$source_dir" ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
    xargs -0 cp --parents -a -t "$export_dir"
else
  tar -C "$source_dir" --exclude='./build*' --exclude='./debian' -cf - . | tar -C "$export_dir" -xf -
fi
[[ -f $export_dir/meson.build ]] || { echo "deb-check: the source export has no meson.build" >&2; exit 1; }
rm -rf "$export_dir/debian"
cp -a tools/packaging/debian "$export_dir/debian"
cat >"$export_dir/debian/changelog" <<EOF
arshim ($version) unstable; urgency=medium

  * Built from the ARShim repository (tools/packaging/deb-check.sh).

 -- ARShim developers <arshim@example.invalid>  $(date -R)
EOF

(cd "$export_dir" && dpkg-checkbuilddeps) || {
  echo "deb-check: build dependencies missing (above); Debian: apt-get install debhelper plus the list" >&2; exit 1; }
start=$(date +%s)
(cd "$export_dir" && DEB_BUILD_OPTIONS="parallel=2 nocheck" dpkg-buildpackage -b -uc -us) >"$work/build.log" 2>&1 || {
  tail -40 "$work/build.log"; echo "deb-check: dpkg-buildpackage failed" >&2; exit 1; }
seconds=$(( $(date +%s) - start ))
mv "$work"/arshim_"$version"_*.deb "$outdir"/
find "$work" -maxdepth 1 -name 'arshim-dbgsym_*' -exec mv {} "$outdir"/ \;
deb=$(ls "$outdir"/arshim_"$version"_*.deb)
echo "deb-check: built $deb in ${seconds} s"
dpkg-deb --contents "$deb" | awk '{print $NF}' | grep -E 'bin/arshim$|libarshim-(mpich|openmpi)\.so$|default\.toml$|schema\.json$|arshim\.1' || true

if [[ $install == 1 ]]; then
  [[ $(id -u) -eq 0 ]] || { echo "deb-check: --install needs root" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb" >"$work/install.log" 2>&1 || {
    tail -20 "$work/install.log"; echo "deb-check: apt-get install $deb failed" >&2; exit 1; }
  echo "deb-check: installed $(dpkg-query -W -f='${Package} ${Version}' arshim)"
  rc=0
  bash tools/packaging/deb-smoke.sh "$source_dir/examples" || rc=$?
  if [[ $remove == 1 ]]; then
    dpkg -r arshim >/dev/null && echo "deb-check: removed the package again"
  fi
  exit $rc
fi
