#!/usr/bin/env python3
"""spack_build_steps: build and install ARShim from its Spack recipe (packages/arshim/package.py) the way Spack's
MesonPackage does, without Spack (docs/install.md "Spack").

  spack_build_steps.py --source DIR --stage DIR --prefix DIR --mpi-name NAME --mpi-prefix DIR [--variant K=V]...
                       [-j N] [--smoke LAUNCHER PROGRAM]

The recipe is loaded with a small stand-in for `spack.package` that records its directives. The steps:

  1. the spec: the recipe's variant defaults and --variant values; the MPI provider --mpi-name at --mpi-prefix;
     the recipe's conflicts are checked against it;
  2. meson: in <stage>/spack-build-<hash>, `meson setup <source>` with Spack's standard arguments
     (-Dprefix, -Dlibdir=<prefix>/lib, -Dbuildtype from the variant, -Dstrip=false, -Ddefault_library=shared,
     -Dwrap_mode=nodownload) and the recipe's meson_args(), in an environment cleaned as Spack cleans it;
  3. build: `ninja -v -j N`; 4. install: `ninja install`;
  5. the recipe's sanity_check_is_file, then its run_after("install") checks (as `spack install --test=root`);
  6. --smoke: <prefix>/bin/arshim run -- LAUNCHER -n 2 PROGRAM.

Dependencies are whatever pkg-config and the compiler find on this system (Debian's packages here), standing in for
the recipe's depends_on packages, which are listed but not built. Exit 0 when every step passed.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.realpath(__file__))
RECIPE = os.path.join(HERE, "packages", "arshim", "package.py")


class InstallError(Exception):
    pass


class Prefix(str):
    """Spack's Prefix: a path whose attributes are subdirectories (prefix.bin, prefix.lib)."""

    def __getattr__(self, name):
        return Prefix(os.path.join(self, name))


def spack_package_module(directives):
    """The names `from spack.package import *` gives the recipe; directives are recorded in `directives`."""
    module = types.ModuleType("spack.package")

    def directive(kind):
        def record(*args, **kwargs):
            directives.append((kind, args, kwargs))
        return record

    for kind in ("version", "variant", "depends_on", "conflicts", "maintainers", "license", "provides", "patch",
                 "resource", "extends"):
        setattr(module, kind, directive(kind))

    class MesonPackage:
        run_tests = True  # as `spack install --test=root`

    def run_after(phase):
        def mark(fn):
            fn.run_after = phase
            return fn
        return mark

    def on_package_attributes(**attributes):
        def wrap(fn):
            def guarded(self, *args, **kwargs):
                if all(getattr(self, k) == v for k, v in attributes.items()):
                    return fn(self, *args, **kwargs)
            guarded.__name__ = fn.__name__
            guarded.run_after = getattr(fn, "run_after", None)
            return guarded
        return wrap

    class Executable:
        def __init__(self, path):
            self.path = path

        def __call__(self, *args, output=None):
            proc = subprocess.run([self.path, *args], capture_output=output is str, text=True)
            if proc.returncode != 0:
                raise InstallError(f"{self.path} {' '.join(args)}: exit {proc.returncode}\n{proc.stderr or ''}")
            return proc.stdout if output is str else None

    module.MesonPackage = MesonPackage
    module.InstallError = InstallError
    module.Executable = Executable
    module.run_after = run_after
    module.on_package_attributes = on_package_attributes
    module.join_path = os.path.join
    module.__all__ = [n for n in vars(module) if not n.startswith("_")]
    return module


def load_recipe():
    directives = []
    spack = types.ModuleType("spack")
    spack.package = spack_package_module(directives)
    sys.modules["spack"], sys.modules["spack.package"] = spack, spack.package
    spec = importlib.util.spec_from_file_location("arshim_recipe", RECIPE)
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    return recipe, directives


class Variant:
    def __init__(self, value):
        self.value = value


class Dependency:
    def __init__(self, name, prefix):
        self.name = name
        self.prefix = Prefix(prefix)


class Spec:
    """What the recipe reads of a concrete spec: variants, spec["mpi"], `"+variant" in spec`."""

    def __init__(self, variants, mpi):
        self.name = "arshim"
        self.variants = variants
        self.mpi = mpi

    def __getitem__(self, name):
        if name != "mpi":
            raise KeyError(f"the stand-in spec has no dependency {name} (only mpi)")
        return self.mpi

    def __contains__(self, constraint):
        if constraint.startswith(("+", "~")):
            v = self.variants.get(constraint[1:])
            return v is not None and v.value == constraint.startswith("+")
        if "=" in constraint:
            name, value = constraint.split("=", 1)
            return name in self.variants and str(self.variants[name].value) == value
        return False

    def satisfies(self, constraint):
        """`^provider` and `key=value` / `+flag` constraints, space-separated (all must hold)."""
        for part in constraint.split():
            if part.startswith("^"):
                if self.mpi.name != part[1:].split("@")[0]:
                    return False
            elif part not in self:
                return False
        return True


def make_spec(directives, overrides, mpi):
    variants = {}
    for kind, args, kwargs in directives:
        if kind == "variant":
            variants[args[0]] = Variant(kwargs.get("default"))
    variants.setdefault("buildtype", Variant("debugoptimized"))  # MesonPackage's own variant
    for text in overrides:
        name, _, value = text.partition("=")
        if name not in variants:
            raise InstallError(f"--variant {text}: the recipe has no variant {name} (it has {', '.join(variants)})")
        if isinstance(variants[name].value, bool):
            value = value.lower() in ("1", "true", "yes", "on")
        variants[name] = Variant(value)
    spec = Spec(variants, mpi)
    for kind, args, kwargs in directives:
        if kind == "conflicts":
            when = kwargs.get("when", "")
            if spec.satisfies(args[0] + (" " + when if when else "")):
                raise InstallError(f"the recipe conflicts with {args[0]} {when}: {kwargs.get('msg', '')}")
    return spec


def std_meson_args(pkg):
    """Spack's MesonBuilder.std_args."""
    return [f"-Dprefix={pkg.prefix}", f"-Dlibdir={pkg.prefix.lib}",
            f"-Dbuildtype={pkg.spec.variants['buildtype'].value}", "-Dstrip=false", "-Ddefault_library=shared",
            "-Dwrap_mode=nodownload"]


def build_environment():
    """Spack runs the build in a cleaned environment: no user LD_LIBRARY_PATH, PKG_CONFIG_PATH, CPATH, ...;
    dependencies come from their prefixes (here: the system's)."""
    keep = ("HOME", "TMPDIR", "LANG", "LC_ALL", "TERM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return env


def step(name, command, cwd, env, log):
    print(f"==> {name}: {' '.join(command)}", flush=True)
    with open(log, "a") as out:
        out.write(f"\n==> {name}: {' '.join(command)}\n")
        out.flush()
        proc = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        with open(log) as f:
            tail = f.readlines()[-40:]
        raise InstallError(f"{name} failed (exit {proc.returncode}); last lines of {log}:\n" + "".join(tail))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, help="ARShim source tree (the stage's source_path)")
    parser.add_argument("--stage", required=True, help="directory for the build tree (Spack's stage)")
    parser.add_argument("--prefix", required=True, help="installation prefix")
    parser.add_argument("--mpi-name", required=True, help="the MPI provider's Spack name (mpich, openmpi, ...)")
    parser.add_argument("--mpi-prefix", required=True, help="its installation prefix")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("-j", type=int, default=2, help="build jobs (Spack's make_jobs)")
    parser.add_argument("--smoke", nargs=2, metavar=("LAUNCHER", "PROGRAM"),
                        help="after installing: <prefix>/bin/arshim run -- LAUNCHER -n 2 PROGRAM")
    args = parser.parse_args()
    try:
        recipe, directives = load_recipe()
        mpi = Dependency(args.mpi_name, os.path.realpath(args.mpi_prefix))
        pkg = recipe.Arshim()
        pkg.spec = make_spec(directives, args.variant, mpi)
        pkg.prefix = Prefix(os.path.realpath(args.prefix))
        deps = sorted({a[0].split("@")[0] for k, a, kw in directives if k == "depends_on"})
        print("==> recipe: depends on " + ", ".join(deps))
        print("==> spec: arshim " + " ".join(f"{k}={v.value}" for k, v in sorted(pkg.spec.variants.items())) +
              f" ^{mpi.name} (prefix {mpi.prefix})")
        build = os.path.join(args.stage, "spack-build-arshim0")
        os.makedirs(build, exist_ok=True)
        log = os.path.join(args.stage, "spack-build-out.txt")
        env = build_environment()
        meson = ["meson", "setup", os.path.realpath(args.source)] + std_meson_args(pkg) + pkg.meson_args()
        step("meson", meson, build, env, log)
        step("build", ["ninja", "-v", f"-j{args.j}"], build, env, log)
        step("install", ["ninja", "install"], build, env, log)
        for path in getattr(recipe.Arshim, "sanity_check_is_file", []):
            if not os.path.isfile(os.path.join(pkg.prefix, path)):
                raise InstallError(f"sanity check: {path} not installed in {pkg.prefix}")
        print("==> sanity checks passed")
        for name in dir(recipe.Arshim):
            fn = getattr(recipe.Arshim, name)
            if callable(fn) and getattr(fn, "run_after", None) == "install":
                print(f"==> run_after(install): {name}")
                fn(pkg)
        if args.smoke:
            launcher, program = args.smoke
            step("smoke", [os.path.join(pkg.prefix, "bin", "arshim"), "run", "-v", "--", launcher, "-n", "2", program],
                 None, dict(os.environ, ARSHIM_STATS_SUMMARY="1"), log)
            with open(log) as f:
                text = f.read()
            if "summary: " not in text.split("==> smoke:")[-1]:
                raise InstallError("smoke: no ARShim summary from the ranks")
            print("==> smoke: ARShim's summary printed by the ranks")
    except InstallError as e:
        print(f"==> Error: {e}", file=sys.stderr)
        return 1
    print(f"==> arshim installed in {args.prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
