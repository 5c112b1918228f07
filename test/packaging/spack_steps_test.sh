#!/usr/bin/env bash
# The Spack recipe's build steps, run the way Spack runs them (tools/packaging/spack/spack_build_steps.py): an MPICH
# provider that is a site install with bin/mpicc and no pkg-config file (-Dmpich_prefix), meson/ninja/ninja install
# into a temporary prefix, the recipe's install checks, an example through the installed arshim, and the installed
# Lmod module file loaded with Lmod (when installed). docs/install.md "Spack", "Environment modules".
#   spack_steps_test.sh SOURCE_DIR BUILD_DIR [YIELD_LIB]
set -uo pipefail
source_dir=$(realpath "$1") build=$(realpath "$2") yield_lib=${3:-}
tmp=$(mktemp -d /tmp/arshim-spack-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
if ! command -v mpicc.mpich >/dev/null; then echo "skipped: no mpicc.mpich"; exit 77; fi

# The provider: a prefix holding only the wrapper, as a site install without .pc files looks to the recipe.
mkdir -p "$tmp/mpich/bin"
ln -s "$(command -v mpicc.mpich)" "$tmp/mpich/bin/mpicc"
[[ -n $yield_lib ]] && export LD_PRELOAD=$yield_lib  # test-only, MPICH ranks of the smoke run yield (test/support)
for name in $(env | sed -n 's/^\(ARSHIM_[^=]*\)=.*/\1/p'); do unset "$name"; done
python3 "$source_dir/tools/packaging/spack/spack_build_steps.py" --source "$source_dir" --stage "$tmp/stage" \
  --prefix "$tmp/prefix" --mpi-name mpich --mpi-prefix "$tmp/mpich" -j 2 \
  --smoke mpirun.mpich "$build/examples/allreduce_sweep-mpich" || fail=1
unset LD_PRELOAD
grep -q -- "-Dmpich_prefix=$tmp/mpich" "$tmp/stage/spack-build-out.txt" && echo "ok: meson got -Dmpich_prefix" ||
  { echo "FAIL: the recipe did not pass -Dmpich_prefix"; fail=1; }
grep -q "mpich *: MPICH .*(mpich_prefix=" "$tmp/stage/spack-build-out.txt" && echo "ok: MPICH found from the wrapper" ||
  { echo "FAIL: meson's summary does not show MPICH from mpich_prefix"; fail=1; }
[[ -f $tmp/prefix/lib/libarshim-mpich.so && ! -e $tmp/prefix/lib/libarshim-openmpi.so ]] &&
  echo "ok: one library, MPICH's, in <prefix>/lib" || { echo "FAIL: libraries in $tmp/prefix/lib: $(ls "$tmp/prefix/lib" 2>&1)"; fail=1; }

# A wrong provider for the variant is refused by the recipe's conflicts before anything is built.
out=$(python3 "$source_dir/tools/packaging/spack/spack_build_steps.py" --source "$source_dir" --stage "$tmp/stage2" \
  --prefix "$tmp/prefix2" --mpi-name mpich --mpi-prefix "$tmp/mpich" --variant abi=openmpi 2>&1)
grep -q "conflicts with ^mpich abi=openmpi" <<<"$out" && echo "ok: abi=openmpi ^mpich conflicts" ||
  { echo "FAIL: abi=openmpi ^mpich not refused: $out"; fail=1; }

# The installed module file, through Lmod.
lmod_init=$(ls /usr/share/lmod/lmod/init/bash 2>/dev/null)
if [[ -n $lmod_init ]]; then
  out=$(env -i HOME="$HOME" PATH=/usr/bin:/bin bash -c "source $lmod_init && module use $tmp/prefix/share/arshim/modulefiles \
        && module load arshim && command -v arshim && echo ARSHIM_ROOT=\$ARSHIM_ROOT && echo MANPATH=\$MANPATH && arshim --version" 2>&1)
  grep -qx "$tmp/prefix/bin/arshim" <<<"$out" && echo "ok: module load arshim puts it on PATH" ||
    { echo "FAIL: module load arshim: $out"; fail=1; }
  grep -q "^ARSHIM_ROOT=$tmp/prefix$" <<<"$out" && grep -q "^MANPATH=$tmp/prefix/share/man" <<<"$out" &&
    echo "ok: ARSHIM_ROOT and MANPATH set" || { echo "FAIL: module environment: $out"; fail=1; }
  grep -q "mpich .*$tmp/prefix/lib/libarshim-mpich.so" <<<"$out" && echo "ok: arshim --version from the module" ||
    { echo "FAIL: arshim --version under the module: $out"; fail=1; }
else
  echo "(Lmod not installed: the module file is not loaded; Debian: apt-get install lmod)"
fi
exit $fail
