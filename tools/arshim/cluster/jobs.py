"""What runs on the rig: mpirun, wrap and run (MPI jobs on the virtual hosts, with the helpers MPICH ranks need) and
verify (the probe under each MPI, the plain-TCP references). The command lines come from launch.py, the verdicts
from verify.py; the rig itself (state, hosts, lock) from rig.py."""
import os
import shutil
import tempfile

from . import Failure
from . import launch, plan, verify
from .rig import Rig
from .system import DEVNULL, PIPE
from .. import ToolError
from ..files import write_file
from ..flavors import program_flavor

ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


class Jobs(Rig):

    def build_dir(self):
        return self.environ.get("ARSHIM_BUILD_DIR") or os.path.join(self.src, "build")

    def python(self):
        return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else shutil.which("python3") or "python3"

    def yield_lib(self):
        lib = self.environ.get("ARSHIM_TEST_YIELD_LIB") or os.path.join(self.build_dir(), "test",
                                                                         "libarshim-test-yield.so")
        return os.path.realpath(lib) if os.path.isfile(lib) else None

    def compiled(self, built, source, compile_to, cached, why):
        """A helper meson built (if newer than its source), else one compiled here into `cached` (once)."""
        if os.path.isfile(built) and os.path.getmtime(built) > os.path.getmtime(source):
            return os.path.realpath(built)
        if not os.path.isfile(cached) or os.path.getmtime(source) > os.path.getmtime(cached):
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            # Compiled in a new directory of its own (the compiler opens its output by name, following a symbolic
            # link), then renamed into place.
            tmpdir = tempfile.mkdtemp(dir=os.path.dirname(cached))
            try:
                tmp = os.path.join(tmpdir, os.path.basename(cached))
                if self.system.run(compile_to(tmp), stdout=2) != 0:
                    raise Failure(why)
                os.replace(tmp, cached)
            finally:
                shutil.rmtree(tmpdir, ignore_errors=True)
        return cached

    def finalize_helper(self):
        """MPICH 4.0.2 + UCX over TCP: MPI_Finalize hangs in about half of the 2x2 runs (docs/cluster.md); the
        preloaded helper (tools/cluster/ucx_finalize_progress.c) keeps each rank's UCX worker progressing.
        ARSHIM_CLUSTER_MPICH_FINALIZE=plain leaves it out (to reproduce the hang)."""
        if self.environ.get("ARSHIM_CLUSTER_MPICH_FINALIZE", "progress") == "plain":
            return None
        src = os.path.join(self.here, "ucx_finalize_progress.c")
        return self.compiled(
            os.path.join(self.build_dir(), "tools", "cluster", "libarshim-cluster-ucx-finalize.so"), src,
            lambda out: [self.environ.get("CC") or "cc", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", out,
                         src, "-lpthread", "-ldl"],
            os.path.join(self.names.run_dir, "cache", "libarshim-cluster-ucx-finalize.so"),
            f"cannot compile {src} (install build-essential) or set ARSHIM_CLUSTER_MPICH_FINALIZE=plain")

    def mpich_helpers(self, use_yield=True):
        """Libraries the rig preloads into MPICH ranks (colon separated): the finalize helper, and unless
        use_yield is off the busy-poll yield helper (ranks outnumber cores; test/support/yield_progress.c)."""
        return ":".join(lib for lib in (self.finalize_helper(), self.yield_lib() if use_yield else None) if lib)

    def mpirun_command(self, flavor, np, ppn):
        path, text = launch.ssh_wrapper(self.names, self.fake_ssh, self.environ.get("ARSHIM_CLUSTER_SSH_ENV", ""))
        if not os.access(path, os.X_OK):
            write_file(path, text, 0o755)
        return launch.mpirun_command(self.names, self.hosts, flavor, np, ppn, path)

    def launch(self, argv, capture=False):
        """argv on host 0 under mpirun's environment: the rig's variables removed, root allowed (Open MPI)."""
        self.environ.update(ROOT_ENV)
        full = self.in_host_argv(0, launch.launch_env(self.environ) + argv)
        return self.system.capture(full, merge_stderr=True) if capture else self.system.run(full)

    def mpirun(self, flavor, ppn, np, use_yield, args):
        self.require_up("arshim cluster up --hosts N")
        if flavor is None:
            raise Failure("mpirun: --mpi mpich|openmpi is required", 2)
        np = np or self.hosts * ppn
        command = self.mpirun_command(flavor, np, ppn)
        if flavor == "mpich":
            args = launch.add_mpich_helpers(args, self.mpich_helpers(use_yield))
        return self.launch(command + args)

    def wrap(self, ppn, use_yield, command):
        if not command:
            raise Failure("wrap: no mpirun command (arshim cluster wrap --ppn 2 -- mpirun.mpich -n 4 ./app)", 2)
        self.require_up("arshim cluster up --hosts N")
        wrapped = launch.parse_wrapped(command)
        np = plan.check_count("-n", wrapped.np) if wrapped.np is not None else self.hosts * ppn
        mpirun = self.mpirun_command(wrapped.flavor, np, ppn)
        args = wrapped.rest
        if wrapped.flavor == "mpich":
            args = launch.dedupe_preload(launch.add_mpich_helpers(args, self.mpich_helpers(use_yield)))
        rc = self.launch(mpirun + args)
        if rc != 0:
            self.quietly(self.clean)
        return rc

    def run(self, program, hosts=None, ppn=1, link=None, flavor=None, native=False, timeout=None, variables=(),
            use_yield=True):
        if flavor is None:
            try:
                flavor = program_flavor(program[0])
            except ToolError as e:
                raise Failure(str(e), 2) from None
        brought_up = False
        try:
            if not self.is_up() or (hosts is not None and str(self.hosts) != hosts):
                brought_up = True  # brought up here: taken down here, whatever happens
                self.up(hosts or "2", link or "10gbit")
            elif link is not None and plan.rate_of(link) != self.link:
                self.shape_links(link)
            self.load_config()
            return self.run_on_rig(program, ppn, flavor, native, timeout, variables, use_yield)
        finally:
            if brought_up:
                self.quietly(self.down)

    def run_on_rig(self, program, ppn, flavor, native, timeout, variables, use_yield):
        mpirun = self.mpirun_command(flavor, self.hosts * ppn, ppn) + launch.rank_variables(flavor, variables)
        pre = []
        if native:
            if flavor == "mpich":
                mpirun += launch.add_mpich_helpers([], self.mpich_helpers(use_yield))
        else:
            arshim = os.path.join(self.build_dir(), "tools", "arshim")
            if not os.path.isfile(arshim):
                raise Failure(f"{arshim} not found: build first (meson compile -C {self.build_dir()}) or set "
                              "ARSHIM_BUILD_DIR")
            # `arshim run` adds -genv LD_PRELOAD "libarshim-mpich.so:$LD_PRELOAD" (MPICH) or -x LD_PRELOAD=...
            # (Open MPI) and every ARSHIM_* variable; under MPICH the rig's helpers ride along in LD_PRELOAD.
            pre = [self.python(), arshim, "run", "--mpi", flavor, "--"]
            helpers = self.mpich_helpers(use_yield) if flavor == "mpich" else ""
            if helpers:
                preload = self.environ.get("LD_PRELOAD")
                pre = ["env", f"LD_PRELOAD={helpers}" + (f":{preload}" if preload else "")] + pre
        timeout = timeout or self.environ.get("ARSHIM_CLUSTER_TIMEOUT") or "600"
        self.log(f"run on {self.hosts} hosts x {ppn} ranks, link {self.link}, {flavor}, "
                 f"{'native' if native else 'ARShim'}")
        rc = self.launch(["timeout", "-k", "10", timeout] + pre + mpirun + program)
        if rc in (124, 137):
            self.log(f"run timed out after {timeout}s")
        self.quietly(self.clean)  # processes a hung or killed run left behind, by PID
        return rc

    # -----------------------------------------------------------------------------------------------------------
    # verify

    def probe_program(self, flavor):
        built = os.path.join(self.build_dir(), "tools", "cluster", f"cluster_probe-{flavor}")
        if os.access(built, os.X_OK):
            return built
        os.makedirs(self.names.state, exist_ok=True)
        out = self.names.state_file(f"cluster_probe-{flavor}")
        if self.system.run([f"mpicc.{flavor}", "-O2", "-I", os.path.join(self.src, "examples", "support"), "-o",
                            out, os.path.join(self.here, "cluster_probe.c")], stdout=2) != 0:
            raise Failure(f"cannot build the probe with mpicc.{flavor}")
        return out

    def tcp_probe(self, mode, *args):
        """A plain-TCP probe between h0 (client) and h1 (server), tools/cluster/tcp_probe.py: its output."""
        script = os.path.join(self.here, "tcp_probe.py")
        server = self.system.start(self.in_host_argv(1, [self.python(), script, "serve", "17999", mode, *args]),
                                   stdout=DEVNULL, quiet=True)
        _, out = self.system.capture(
            self.in_host_argv(0, [self.python(), script, "connect", self.address(1), "17999", mode, *args]),
            quiet=True)
        server.wait()
        return out.strip()

    def tcp_ring(self, n):
        """The plain-TCP ring over every host (tcp_probe.py ring): the median over three rounds of the slowest host's
        seconds, or None if a host's transfer failed."""
        script = os.path.join(self.here, "tcp_probe.py")
        processes = [self.system.start(self.in_host_argv(i, [
            self.python(), script, "ring", str(i), str(self.hosts), "17998", self.address((i + 1) % self.hosts),
            str(n)]), stdout=PIPE, quiet=True) for i in range(self.hosts)]
        outputs = [p.communicate()[0] for p in processes]
        if any(p.returncode != 0 for p in processes):
            return None
        try:
            return verify.ring_seconds(outputs)
        except ValueError:
            return None

    def verify(self, flavors=("mpich", "openmpi"), ppn=2, n=16 << 20, reps=4):
        self.require_up()
        hosts, link, failures = self.hosts, self.link, 0
        self.say(f"verify: {hosts} hosts x {ppn} ranks, link {link}")
        # Latency the rig gives (no netem: nothing is added): TCP round trip h0 <-> h1.
        rtt = self.tcp_probe("rtt") or "?"
        self.say(f"verify: TCP round trip h0<->h1 {rtt} us (veth; the rig adds no latency, see docs/cluster.md)")
        limit = plan.rate_bits(link)
        if link != "none" and limit:
            reference = to_float(self.tcp_probe("stream", str(n)))
            ring = ""
            if hosts > 2:
                seconds = self.tcp_ring(n)
                ring = "none" if seconds is None else repr(seconds)
            for line in verify.reference_lines(reference, n, limit, self.config["RIG_MTU"], hosts, ring):
                self.say(line)
        for flavor in flavors:
            failures += self.verify_flavor(flavor, ppn, n, reps, limit)
        if failures:
            self.say(f"verify: FAILED ({failures} check(s))")
            return 1
        self.say("verify: OK: every rank's shared-memory node is its virtual host, allreduce traffic crosses the links")
        return 0

    def verify_flavor(self, flavor, ppn, n, reps, limit):
        """Runs the probe under one MPI: the number of failed checks."""
        hosts = self.hosts
        probe = self.probe_program(flavor)
        before = [self.counters(i) for i in range(hosts)]
        mpirun = self.mpirun_command(flavor, hosts * ppn, ppn)
        if flavor == "mpich":
            mpirun += launch.add_mpich_helpers([], self.mpich_helpers(True))
        rc, out = self.launch(["timeout", "-k", "5", "120"] + mpirun + [
            probe, "--ppn", str(ppn), "--hosts", str(hosts), "--prefix", f"{self.names.prefix}-h", "--bytes", str(n),
            "--reps", str(reps)], capture=True)
        out = out.rstrip("\n")
        if rc != 0:
            for line in out.split("\n"):
                self.say("    " + line)
            self.say(f"verify: {flavor}: FAILED (the probe did not run cleanly)")
            self.quietly(self.clean)
            return 1
        after = [self.counters(i) for i in range(hosts)]
        failures = 0
        for line in verify.probe_lines(flavor, out):
            self.say(line)
        if not verify.node_split_ok(out):
            self.say(f"verify: {flavor}: FAILED node split")
            failures += 1
        lines, failed = verify.traffic_lines(flavor, self.names, before, after, n, reps)
        for line in lines:
            self.say(line)
        failures += failed
        seconds = verify.allreduce_seconds(out)
        if seconds is not None and self.link != "none" and limit:
            lines, failed = verify.timing_lines(flavor, seconds, n, reps, hosts, limit)
            for line in lines:
                self.say(line)
            failures += failed
            p2p = verify.p2p_line(flavor, out, limit)
            if p2p:
                self.say(p2p)
        return failures


def to_float(text):
    try:
        return float(text)
    except ValueError:
        return None
