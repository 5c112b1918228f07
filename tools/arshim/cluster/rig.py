"""The rig's operations. State lives in the state directory (config, hosts file, anchor and reaper PIDs, the fake
ssh's wrapper); everything that touches the machine goes through `system` (system.py), so these are unit-tested with
a fake one. Files the rig writes as root are written whole or not at all and never through a symlink (files.py
write_file, O_NOFOLLOW for logs)."""
import os
import random
import shutil
import signal
import sys
import time

from . import Failure
from . import launch, plan, verify
from .system import DEVNULL, PIPE
from .. import ToolError
from ..files import InputError, read_text, write_file
from ..flavors import program_flavor
from ..sizes import parse_size

SKIP_TOOLS = ("ip", "tc", "nsenter", "unshare", "setsid", "flock", "timeout")
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


class Rig:
    def __init__(self, names, system, environ, tools_dir, out=None, err=None):
        self.names, self.system, self.environ = names, system, environ
        self.here = os.path.join(tools_dir, "cluster")
        self.src = os.path.dirname(tools_dir)
        self.fake_ssh = os.path.join(self.here, "ssh")
        self.script = os.path.join(self.here, "arshim-cluster")
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.quiet = False
        self.config = None

    # -----------------------------------------------------------------------------------------------------------
    # output, state

    def log(self, message):
        if not self.quiet:
            print(f"arshim-cluster: {message}", file=self.err, flush=True)

    def say(self, line):
        print(line, file=self.out, flush=True)

    def quietly(self, operation, *args):
        quiet, self.quiet = self.quiet, True
        try:
            return operation(*args)
        finally:
            self.quiet = quiet

    @property
    def hosts(self):
        return int(self.config["HOSTS"])

    @property
    def link(self):
        return self.config["LINK"]

    def address(self, i):
        return self.names.address(i, self.config.get("SUBNET"))

    def read_state(self, name, limit=1 << 16):
        try:
            return read_text(self.names.state_file(name), limit)
        except InputError:
            return None

    def load_config(self):
        text = self.read_state("config")
        try:
            self.config = plan.parse_config(text) if text is not None else None
        except ValueError:
            self.config = None
        return self.config is not None

    def write_config(self):
        write_file(self.names.state_file("config"), plan.config_text(self.config))

    def update_config(self, key, value):
        self.config[key] = str(value)
        self.write_config()

    def anchor(self, i):
        text = self.read_state(f"anchor-h{i}.pid")
        return text.strip() if text and text.strip().isdigit() else None

    def is_up(self):
        if not self.load_config():
            return False
        if self.names.switch not in self.namespaces(all_names=True):
            return False
        return all((pid := self.anchor(i)) and self.system.alive(pid) for i in range(self.hosts))

    def namespaces(self, all_names=False):
        """The rig's namespaces (all_names: every namespace on the machine)."""
        rc, out = self.system.capture(["ip", "netns", "list"], quiet=True)
        names = [line.split()[0] for line in out.splitlines() if line.split()] if rc == 0 else []
        return names if all_names else [n for n in names if self.names.is_rig_namespace(n)]

    def ns_pids(self, ns, *skip):
        """PIDs of processes in a network namespace (`ip netns pids`), minus those in skip."""
        _, out = self.system.capture(["ip", "netns", "pids", ns], quiet=True)
        return [p for p in out.split() if p.isdigit() and p not in skip]

    def kill_pids(self, pids):
        """TERM, wait up to 2 s, KILL."""
        if not pids:
            return
        self.system.signal(pids, signal.SIGTERM)
        for _ in range(10):
            alive = [p for p in pids if self.system.alive(p)]
            if not alive:
                return
            self.system.sleep(0.2)
        self.system.signal(alive, signal.SIGKILL)
        self.system.sleep(0.1)

    def must(self, argv):
        """Runs a command the rig cannot do without: its failure ends the command with its exit status."""
        rc = self.system.run(argv)
        if rc != 0:
            raise Failure(f"'{' '.join(argv)}' failed (exit {rc})", rc)

    # -----------------------------------------------------------------------------------------------------------
    # prerequisites, lock

    def check_prereqs(self):
        """0 if the rig can run here, else 77 after one SKIP line with the reason."""
        def skip(reason):
            print(f"arshim-cluster: SKIP: {reason}", file=self.err, flush=True)
            return 77
        if self.system.uid() != 0:
            return skip(f"the emulated cluster needs root (network namespaces); running as {self.system.user()}")
        for tool in SKIP_TOOLS:
            if not self.system.which(tool):
                return skip(f"'{tool}' not found (Debian: iproute2, util-linux, coreutils)")
        if self.system.capture(["ip", "netns", "list"], quiet=True)[0] != 0:
            return skip("'ip netns' does not work here")
        probe = f"{self.names.prefix}-probe{os.getpid()}"
        if self.system.run(["ip", "netns", "add", probe], quiet=True) != 0:
            return skip("cannot create a network namespace (ip netns add failed; container without CAP_SYS_ADMIN?)")
        trials = [(["ip", "-n", probe, "link", "add", "pa", "type", "veth", "peer", "name", "pb"],
                   "cannot create veth pairs in a network namespace"),
                  (["tc", "-n", probe, "qdisc", "add", "dev", "pa", "root", "tbf", "rate", "1gbit", "burst", "128k",
                    "latency", "10ms"], "tc tbf is unavailable (sch_tbf)"),
                  (["ip", "netns", "exec", probe, "unshare", "--uts", "--mount", "--ipc", "--propagation", "private",
                    "true"], "cannot create UTS/mount/IPC namespaces (unshare failed)")]
        reason = next((why for argv, why in trials if self.system.run(argv, quiet=True) != 0), None)
        self.system.run(["ip", "netns", "del", probe], quiet=True)
        return skip(reason) if reason else 0

    def take_lock(self):
        """One user of the rig at a time (tests, benchmarks and people share the machine). Nested invocations (the
        rig's own children) see ARSHIM_CLUSTER_LOCKED and do not lock again."""
        if self.environ.get("ARSHIM_CLUSTER_LOCKED") == self.names.prefix:
            return
        wait = self.environ.get("ARSHIM_CLUSTER_LOCK_WAIT", "900")
        wait = int(wait) if wait.isdigit() else 900
        lock = self.names.lock
        try:
            locked = self.system.lock(lock, wait, lambda: self.log(
                f"waiting for another user of the rig '{self.names.prefix}' (lock {lock})..."))
        except OSError as e:  # O_NOFOLLOW: a symlink planted at the lock's name
            raise Failure(f"cannot open the lock {lock} ({e.strerror})") from None
        if not locked:
            raise Failure(f"timed out waiting for the lock {lock}")
        self.environ["ARSHIM_CLUSTER_LOCKED"] = self.names.prefix

    # -----------------------------------------------------------------------------------------------------------
    # shaping

    def shape_links(self, link):
        rate = plan.rate_of(link)
        for argv, may_fail in plan.shape_commands(self.names, self.hosts, rate):
            if may_fail:
                self.system.run(argv, quiet=True)
            else:
                self.must(argv)
        self.update_config("LINK", rate)
        self.log(f"links: {plan.link_text(rate)}, no added latency")

    def set_mtu(self, mtu):
        mtu = plan.check_mtu(mtu)
        for argv in plan.mtu_commands(self.names, self.hosts, mtu):
            self.must(argv)
        self.update_config("RIG_MTU", mtu)
        self.log(f"mtu: {mtu} bytes on every interface")

    def shape(self, link, mtu):
        if mtu is not None:
            self.set_mtu(mtu)
        if link is not None:
            self.shape_links(link)
        return 0

    # -----------------------------------------------------------------------------------------------------------
    # up, down

    def open_log(self, path, append=False):
        mode = os.O_APPEND if append else os.O_TRUNC
        return os.open(path, os.O_WRONLY | os.O_CREAT | mode | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)

    def start_anchor(self, i):
        """Host i's anchor, detached (a signal to the caller's process group does not take it down)."""
        name, log = self.names.host(i), self.names.state_file(f"anchor-h{i}.log")
        fd = self.open_log(log)
        try:
            process = self.system.start(plan.anchor_command(self.names, i), stdout=fd, detach=True)
        finally:
            os.close(fd)
        for _ in range(100):
            if "ready" in (self.read_state(f"anchor-h{i}.log") or ""):
                break
            if process.poll() is not None:
                raise Failure(f"virtual host {name} failed to start: {self.read_state(f'anchor-h{i}.log') or ''}")
            self.system.sleep(0.05)
        else:
            raise Failure(f"virtual host {name} did not start")
        write_file(self.names.state_file(f"anchor-h{i}.pid"), f"{process.pid}\n")

    def check_watch(self, owner):
        if not (owner.isdigit() and self.system.alive(owner)):
            raise Failure(f"--watch {owner}: no such process")

    def start_reaper(self, owner):
        """A detached watcher: when the owner dies (even by SIGKILL, when its traps cannot run) it takes the rig
        down, if it is still the instance it watched."""
        self.check_watch(owner)
        old = (self.read_state("reaper.pid") or "").strip()
        if old.isdigit() and self.system.alive(old):
            self.system.signal([old])
        env = {k: v for k, v in self.environ.items() if k != "ARSHIM_CLUSTER_LOCKED"}  # the reaper locks itself
        env["ARSHIM_CLUSTER_LOCK_WAIT"] = "120"
        script = ('export ARSHIM_CLUSTER_REAPER=$$; while [ -d "/proc/$1" ]; do sleep 0.5; done; '
                  'exec bash "$3" down --if-instance "$2"')
        fd = self.open_log(self.names.reaper_log, append=True)
        try:
            process = self.system.start(["/bin/sh", "-c", script, "arshim-cluster-reaper", owner,
                                         self.config["INSTANCE"], self.script], env=env, stdout=fd, detach=True)
        finally:
            os.close(fd)
        write_file(self.names.state_file("reaper.pid"), f"{process.pid}\n")

    def up(self, hosts="2", link="10gbit", mtu="1500", watch=None):
        hosts = plan.check_hosts(hosts)
        rate = plan.rate_of(link)
        plan.check_mtu(mtu)
        if watch is not None:
            self.check_watch(watch)  # before anything is built: a rig that nobody would take down
        if self.is_up() and self.hosts == hosts:
            if self.link != rate:
                self.shape_links(rate)
            if self.config["RIG_MTU"] != mtu:
                self.set_mtu(mtu)
            if watch is not None:
                self.start_reaper(watch)
            self.log(f"already up: {self.hosts} hosts, link {self.link}")
            return 0
        if self.namespaces() or os.path.isdir(self.names.state):
            self.quietly(self.down)
        os.makedirs(self.names.state, exist_ok=True)
        instance = f"{int(time.time())}-{os.getpid()}-{random.randrange(32768)}"
        self.config = {"INSTANCE": instance, "PREFIX": self.names.prefix, "HOSTS": str(hosts),
                       "SUBNET": self.names.subnet, "IFACE": plan.IFACE, "LINK": "none", "RIG_MTU": "1500"}
        self.write_config()
        write_file(self.names.state_file("hosts"), plan.hosts_text(self.names, hosts))
        for argv in plan.switch_commands(self.names):
            self.must(argv)
        for i in range(hosts):
            for argv in plan.host_commands(self.names, i):
                self.must(argv)
            self.start_anchor(i)
        if watch is not None:
            self.start_reaper(watch)
        self.shape_links(rate)
        if mtu != "1500":
            self.set_mtu(mtu)
        self.log("up: %d virtual hosts %s" % (hosts, "".join(f"{self.names.host(i)}={self.address(i)} "
                                                            for i in range(hosts))))
        return 0

    def down(self, if_instance=None):
        if if_instance is not None and self.load_config() and self.config.get("INSTANCE") != if_instance:
            # the reaper: take down only the rig it watched, not one somebody brought up since
            self.log(f"rig {self.names.prefix} was replaced since; leaving it up")
            return 0
        reaper = (self.read_state("reaper.pid") or "").strip()
        # never kill ourselves (down is what the reaper runs)
        if reaper.isdigit() and reaper not in (str(os.getpid()), self.environ.get("ARSHIM_CLUSTER_REAPER", "")) \
                and self.system.alive(reaper):
            self.system.signal([reaper])
        pids = [p for ns in self.namespaces() for p in self.ns_pids(ns)]
        if pids:
            self.log(f"killing {len(pids)} process(es) in the rig's namespaces: {' '.join(pids)}")
            self.kill_pids(pids)
        for ns in self.namespaces():
            if self.system.run(["ip", "netns", "del", ns], quiet=True) != 0:
                self.log(f"warning: cannot delete namespace {ns}")
        remove_tree(self.names.state)
        left = self.namespaces()
        if left:
            raise Failure("namespaces left behind: " + "".join(n + " " for n in left))
        self.log("down")
        return 0

    # -----------------------------------------------------------------------------------------------------------
    # status, exec, clean

    def in_host_argv(self, i, argv):
        return plan.in_host_command(self.anchor(i), os.getcwd(), argv)

    def in_host(self, i, argv):
        """Runs argv inside virtual host i with the caller's environment and directory; its exit status."""
        return self.system.run(self.in_host_argv(i, argv))

    def counters(self, i):
        rc, out = self.system.capture(plan.counters_command(self.names, i))
        try:
            return verify.parse_counters(out)
        except ValueError:
            raise Failure(f"cannot read the NIC counters of {self.names.host(i)}") from None

    def status(self):
        if not self.is_up():
            self.say(f"rig '{self.names.prefix}': down")
            left = self.namespaces()
            if left:
                self.say("  (namespaces left: " + "".join(n + " " for n in left) + " — run `arshim cluster down`)")
            return 0
        self.say(f"rig '{self.names.prefix}': {self.hosts} hosts, link {self.link}, mtu {self.config['RIG_MTU']}, "
                 f"state {self.names.state}")
        for i in range(self.hosts):
            anchor, (tx, rx) = self.anchor(i), self.counters(i)
            _, qdisc = self.system.capture(["tc", "-n", self.names.host(i), "qdisc", "show", "dev", plan.IFACE])
            qdisc = (qdisc.splitlines() or [""])[0]
            self.say(f"  {self.names.host(i):<10} {self.address(i):<12} anchor {anchor:<7} tx {tx:>12} B  "
                     f"rx {rx:>12} B  qdisc: {qdisc}")
            others = self.ns_pids(self.names.host(i), anchor)
            if others:
                self.say("             processes: " + "".join(p + " " for p in others))
        return 0

    def clean(self):
        """Kills what a killed or hung run left on the hosts (by PID); the anchors stay."""
        if not self.is_up():
            return 0
        pids = [p for i in range(self.hosts) for p in self.ns_pids(self.names.host(i), self.anchor(i))]
        if pids:
            self.log(f"killing {len(pids)} process(es) left on the virtual hosts: {' '.join(pids)}")
            self.kill_pids(pids)
        return 0

    def require_up(self, hint="arshim cluster up"):
        if not self.is_up():
            raise Failure("the rig is not up" + (f" ({hint})" if hint else ""))

    def exec_(self, args):
        """exec HOST [--] CMD..."""
        self.require_up()
        if not args:
            raise Failure("exec HOST -- CMD")
        i = plan.host_index(self.names, self.hosts, args[0])
        argv = args[2:] if args[1:2] == ["--"] else args[1:]
        if not argv:
            raise Failure("exec: no command", 2)
        return self.in_host(i, argv)

    # -----------------------------------------------------------------------------------------------------------
    # launching MPI

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
            tmp = f"{cached}.{os.getpid()}"
            if self.system.run(compile_to(tmp), stdout=2) != 0:
                raise Failure(why)
            os.replace(tmp, cached)
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


def remove_tree(path):
    """rm -rf: a symlink at the name is removed, never followed."""
    if os.path.islink(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
