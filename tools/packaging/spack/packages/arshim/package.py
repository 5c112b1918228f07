# Spack recipe for ARShim (docs/install.md "Spack"). Kept in ARShim's repository; its build steps are exercised by
# tools/packaging/spack/spack_build_steps.py, which runs them the way Spack's MesonPackage does.
#
#   spack repo add <ARShim source>/tools/packaging/spack
#   spack install arshim ^mpich            # or ^openmpi, ^intel-oneapi-mpi, ^mvapich2, ^hpcx-mpi, ...
#   spack develop --path <checkout> arshim@main && spack install   # from a checkout (in an environment)

import os

from spack.package import *

# MPI providers by the ABI of their library: one ARShim library per ABI (docs/install.md "Other MPI builds").
MPICH_ABI = ("mpich", "mvapich", "mvapich2", "mvapich2-gdr", "mvapich2x", "intel-mpi", "intel-oneapi-mpi",
             "cray-mpich")
OPENMPI_ABI = ("openmpi", "hpcx-mpi")


class Arshim(MesonPackage):
    """PMPI interposition library, preloaded into unmodified MPI programs: every MPI_Allreduce goes to the fastest
    correct path for the call (the library's, pipelined, multi-leader node shared memory, SHARP), chosen by a policy
    table, with call statistics that name the call sites (C, Fortran and Python through mpi4py)."""

    # The project has no public home or release tarballs yet: these are placeholders (.invalid). Set `git` to your
    # mirror of the repository, or build from a checkout with `spack develop` (above).
    homepage = "https://arshim.example.invalid"
    git = "https://arshim.example.invalid/arshim.git"

    version("main", branch="main")

    variant("abi", default="auto", values=("auto", "mpich", "openmpi"), multi=False,
            description="MPI ABI of the library to build; auto: from the MPI provider "
                        "(MPICH, MVAPICH, Intel MPI, Cray MPICH: mpich; Open MPI, HPC-X: openmpi)")
    variant("libdw", default=True,
            description="file:line call sites from DWARF line tables (elfutils' libdw, loaded at run time)")
    # Spack's MesonPackage defaults to debugoptimized; ARShim's figures are measured with release builds.
    variant("buildtype", default="release", description="Meson build type",
            values=("plain", "debug", "debugoptimized", "release", "minsize"))

    depends_on("mpi")
    depends_on("meson@1.0:", type="build")
    depends_on("ninja", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("cmake", type="build")  # finds toml++'s CMake package when it has no pkg-config file
    depends_on("cli11@2:", type="build")
    depends_on("spdlog")
    depends_on("libunwind")
    depends_on("tomlplusplus")
    depends_on("nlohmann-json")
    depends_on("elfutils", when="+libdw")
    depends_on("python@3.9:", type="run")  # the arshim command
    depends_on("py-jsonschema", type="run")  # arshim report and tune --from-stats validate every log they read

    conflicts("^mpt", msg="HPE MPT's ABI is neither MPICH's nor Open MPI's")
    conflicts("^msmpi", msg="ARShim is built for Linux MPI libraries")
    conflicts("^mpich", when="abi=openmpi")
    conflicts("^openmpi", when="abi=mpich")

    sanity_check_is_file = [join_path("bin", "arshim"), join_path("share", "arshim", "default.toml")]

    def mpi_abi(self):
        """"mpich" or "openmpi": the variant, or the provider's ABI."""
        abi = self.spec.variants["abi"].value
        if abi != "auto":
            return abi
        name = self.spec["mpi"].name
        if name in MPICH_ABI:
            return "mpich"
        if name in OPENMPI_ABI:
            return "openmpi"
        raise InstallError(f"arshim: the MPI provider {name} is of no ABI ARShim knows; "
                           f"allowed: {', '.join(MPICH_ABI + OPENMPI_ABI)}, or set abi=mpich|openmpi")

    def meson_args(self):
        abi = self.mpi_abi()
        other = "openmpi" if abi == "mpich" else "mpich"
        mpi = self.spec["mpi"]
        args = [f"-D{abi}=enabled", f"-D{other}=disabled", "-Dtests=false", "-Dexamples=false",
                "-Dfuzz=disabled"]
        if os.path.isfile(join_path(mpi.prefix.bin, "mpicc")):
            # The provider's own wrapper: its flags, whatever pkg-config files the provider ships or lacks.
            args.append(f"-D{abi}_prefix={mpi.prefix}")
        elif mpi.name == "cray-mpich":
            args.append("-Dmpich_pkg=cray-mpich")  # no bin/mpicc (the Cray compiler wrappers add it): its .pc file
        else:
            raise InstallError(f"arshim: {mpi.name} at {mpi.prefix} has no bin/mpicc")
        return args

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_install(self):
        """The installed arshim finds its library (--version lists it)."""
        arshim = Executable(join_path(self.prefix.bin, "arshim"))
        out = arshim("--version", output=str)
        if f"libarshim-{self.mpi_abi()}.so" not in out:
            raise InstallError(f"arshim --version does not list libarshim-{self.mpi_abi()}.so:\n{out}")
