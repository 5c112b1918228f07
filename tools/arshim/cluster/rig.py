"""The rig itself: up, down, shape, status, clean, exec, its lock and its prerequisites (jobs.py runs MPI on it).
State lives in the state directory (config, hosts file, anchor and reaper PIDs, the fake
ssh's wrapper); everything that touches the machine goes through `system` (system.py), so these are unit-tested with
a fake one. Files the rig writes as root are written whole or not at all and never through a symlink (files.py
write_file; logs through files.open_output: O_NOFOLLOW, regular files only)."""
import os
import random
import shutil
import signal
import sys
import time

from . import Failure
from . import plan, verify
from ..files import InputError, open_output, read_text, write_file

SKIP_TOOLS = ("ip", "tc", "nsenter", "unshare", "setsid", "flock", "timeout")


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
        return open_output(path, append)  # a regular file only: never through a symlink, never blocking on a FIFO

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


def remove_tree(path):
    """rm -rf: a symlink at the name is removed, never followed."""
    if os.path.islink(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
