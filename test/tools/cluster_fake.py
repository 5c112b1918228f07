"""A fake of the rig's command layer (tools/arshim/cluster/system.py) for test/tools/test_cluster*.py: it records
every command and keeps just enough state (namespaces, live PIDs) for the rig's logic to run, and touches nothing
on the machine."""
import os

from arshim.cluster import cli


class FakeProcess:
    def __init__(self, pid, stdout="", returncode=0):
        self.pid, self.returncode, self._stdout = pid, returncode, stdout

    def poll(self):
        return None

    def wait(self):
        return self.returncode

    def communicate(self):
        return self._stdout, None


class FakeSystem:
    def __init__(self, uid=0):
        self.uid_value = uid
        self.commands = []        # every command run, captured or started, in order
        self.started = []         # (argv, detach) of background commands
        self.signals = []         # (pids, signal)
        self.namespaces = []
        self.alive_pids = set()
        self.next_pid = 1000
        self.results = {}         # argv prefix (tuple) -> exit status of run()
        self.outputs = []         # (predicate(argv), (status, text)) for capture()
        self.missing = set()      # tools `which` does not find

    # the command layer
    def run(self, argv, env=None, quiet=False, stdout=None):
        self.commands.append(list(argv))
        if argv[:3] == ["ip", "netns", "add"]:
            self.namespaces.append(argv[3])
        if argv[:3] == ["ip", "netns", "del"] and argv[3] in self.namespaces:
            self.namespaces.remove(argv[3])
        for prefix, rc in self.results.items():
            if tuple(argv[:len(prefix)]) == prefix:
                return rc
        return 0

    def capture(self, argv, env=None, merge_stderr=False, quiet=False):
        if argv[:3] == ["ip", "netns", "list"]:
            return 0, "".join(f"{n} (id: {i})\n" for i, n in enumerate(self.namespaces))
        self.commands.append(list(argv))
        for matches, result in self.outputs:
            if matches(argv):
                return result
        return 0, ""

    def start(self, argv, env=None, stdout=None, quiet=False, detach=False):
        self.commands.append(list(argv))
        self.started.append((list(argv), detach, env))
        self.next_pid += 1
        if isinstance(stdout, int) and stdout > 2:
            os.write(stdout, b"ready\n")   # the anchor's word
        self.alive_pids.add(str(self.next_pid))
        return FakeProcess(self.next_pid, "0.5 0.6 0.7\n")

    def which(self, name):
        return None if name in self.missing else f"/usr/bin/{name}"

    def uid(self):
        return self.uid_value

    def user(self):
        return "tester"

    def alive(self, pid):
        return str(pid) in self.alive_pids

    def signal(self, pids, sig=15):
        self.signals.append((list(pids), sig))
        self.alive_pids -= {str(p) for p in pids}

    def sleep(self, seconds):
        pass

    def lock(self, path, wait_seconds, on_wait):
        self.locked = path
        return True

    def execv(self, argv):
        self.commands.append(list(argv))
        raise SystemExit(0)

    # helpers for the tests
    def clear(self):
        self.commands.clear()
        self.started.clear()


class Harness:
    """`arshim cluster` as a function: run(*args) -> exit status, against the fake, with the rig's state and lock in
    a temporary directory and its own environment."""

    def __init__(self, tmp_path, system):
        self.system, self.run_dir = system, str(tmp_path / "run")
        self.build = tmp_path / "build"
        (self.build / "tools").mkdir(parents=True)
        (self.build / "tools" / "arshim").write_text("# arshim\n")
        (self.build / "test").mkdir()
        (self.build / "test" / "libarshim-test-yield.so").write_text("")
        self.environ = {"ARSHIM_CLUSTER_NAME": "rt", "ARSHIM_BUILD_DIR": str(self.build),
                        "ARSHIM_CLUSTER_MPICH_FINALIZE": "plain", "PATH": "/usr/bin:/bin"}
        os.makedirs(self.run_dir)

    @property
    def state(self):
        return os.path.join(self.run_dir, "rt")

    @property
    def yield_lib(self):
        return os.path.realpath(self.build / "test" / "libarshim-test-yield.so")

    def run(self, *args):
        return cli.main(list(args), self.system, self.environ, self.run_dir)

    def up(self, *args):
        assert self.run("up", *args) == 0
        self.system.clear()
