#!/usr/bin/env python3
"""`arshim run -- srun ...` on a real single-machine Slurm (docs/install.md "Slurm").

Starts munged (a key generated for the run), slurmctld and slurmd from Debian's slurm-wlm 22.05 in a temporary
configuration (state, spool, logs and sockets in a temporary directory, SlurmUser/SlurmdUser root, two free ports
on 127.0.0.1, one node of this machine's name with 4 CPU slots), runs the examples through `arshim run -- srun`,
and stops every daemon it started (by PID) on exit, failure and timeout included.

  slurm_test.py --arshim build/tools/arshim --build BUILD_DIR --examples SOURCE/examples [--yield-lib LIB]

Checks: MPICH under `srun --mpi=pmi2` and Open MPI under `srun --mpi=pmix` with ARShim loaded in the tasks (the
statistics summary is printed, the log counts every call), mpi4py under srun with Python file:line call sites, and
srun's --export handling (an existing name list is extended, --export=NONE refused, srun itself not preloaded).
Exit 77 (skipped) when not root or Slurm/munge are not installed.
"""
import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

failures = []
PYTHON = "/usr/bin/python3"



def slurm_version():
    """slurmd's version as (major, minor), e.g. (24, 11); (0, 0) when `slurmd -V` says nothing readable."""
    try:
        out = subprocess.run(["slurmd", "-V"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return (0, 0)
    match = re.search(r"(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)

def check(condition, message):
    print(f"  {'ok  ' if condition else 'FAIL'} {message}")
    if not condition:
        failures.append(message)
    return condition


def free_ports(count):
    """Ports free on 127.0.0.1 now (bound then released: a small race, acceptable for a test)."""
    sockets, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


def die_with_parent(sig=signal.SIGTERM):
    """In a child before exec: `sig` when this test process dies, even by SIGKILL (meson's second signal after a
    timeout), so no daemon or srun outlives the test (prctl PR_SET_PDEATHSIG; kept across exec)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


class Cluster:
    """munged + slurmctld + slurmd in `root`, all in the foreground as children of this process."""

    def __init__(self, root):
        self.root = root
        self.procs = []
        self.node = socket.gethostname().split(".")[0]
        self.conf = os.path.join(root, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def write_config(self):
        # munged wants every directory above its socket searchable by all and writable by no one else
        os.chmod(os.path.dirname(self.root), 0o711)
        os.chmod(self.root, 0o711)
        for d in ("state", "spool"):
            os.makedirs(os.path.join(self.root, d))
        key = os.path.join(self.root, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        ctld_port, d_port = free_ports(2)
        r = self.root
        text = f"""# Written by test/slurm/slurm_test.py for one test run.
ClusterName=arshimtest
SlurmctldHost={self.node}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={r}/munge.socket
CredType=cred/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/slurmctld.log
SlurmdLogFile={r}/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
SlurmdParameters=config_overrides
NodeName={self.node} NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=test Nodes={self.node} Default=YES MaxTime=10 State=UP OverSubscribe=YES
"""
        with open(self.conf, "w") as f:
            f.write(text)
        # Slurm 23.11 and later (Debian 13: 24.11) initialise a cgroup plugin in slurmd whatever the proctrack and
        # task plugins, and fail where no cgroup file system is mounted (a chroot, a container); they accept
        # CgroupPlugin=disabled, which Slurm 22.05 (Debian 12) does not know.
        if slurm_version() >= (23, 11):
            with open(os.path.join(os.path.dirname(self.conf), "cgroup.conf"), "w") as f:
                f.write("# Written by test/slurm/slurm_test.py: no cgroups for this test's slurmd.\nCgroupPlugin=disabled\n")

    def start(self, name, command):
        log = open(os.path.join(self.root, name + ".out"), "w")
        self.procs.append((name, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                                  start_new_session=True, preexec_fn=die_with_parent)))

    def up(self):
        self.write_config()
        r = self.root
        self.start("munged", ["munged", "-F", f"--key-file={r}/munge.key", f"--socket={r}/munge.socket",
                              f"--pid-file={r}/munged.pid", f"--log-file={r}/munged.log",
                              f"--seed-file={r}/munged.seed"])
        if not self.wait_for(lambda: os.path.exists(f"{r}/munge.socket"), 15):
            return False
        self.start("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        self.start("slurmd", ["slurmd", "-D", "-f", self.conf, "-N", self.node])
        return self.wait_for(self.node_idle, 60)

    def node_idle(self):
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env,
                             timeout=20).stdout
        return out.strip() == "idle"

    def wait_for(self, condition, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            for name, p in self.procs:
                if p.poll() is not None:
                    print(f"{name} exited with {p.returncode}")
                    return False
            try:
                if condition():
                    return True
            except (OSError, subprocess.SubprocessError):
                pass
            time.sleep(0.5)
        return False

    def down(self):
        """Every daemon this test started, by PID: SIGTERM, then SIGKILL after 10 s; their tasks' process groups."""
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for name, p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []

    def dump_logs(self):
        for name in ("slurmctld.log", "slurmd.log", "munged.log", "slurmctld.out", "slurmd.out", "munged.out"):
            path = os.path.join(self.root, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    tail = f.readlines()[-25:]
                print(f"--- {name} (last lines)\n" + "".join(tail))


def run(cluster, command, extra_env=None, timeout=240):
    """Runs a command in a session of its own: on a timeout or when this test is stopped, the whole group is killed
    (srun forks a helper that outlives a SIGKILL of srun alone), and srun dies with this process."""
    env = dict(cluster.env, **(extra_env or {}))
    print("$ " + " ".join(command))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, preexec_fn=lambda: die_with_parent(signal.SIGKILL))
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException as e:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        if not isinstance(e, subprocess.TimeoutExpired):
            raise
        print(f"timed out after {timeout} s")
        return subprocess.CompletedProcess(command, 124, out, err)
    print(out, end="")
    print(err, end="", file=sys.stderr)
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def mpi_case(args, cluster, tmp, flavor, mpi_plugin, extra_env):
    print(f"== {flavor}: arshim run -- srun -n 2 --mpi={mpi_plugin}")
    log = os.path.join(tmp, f"{flavor}.json")
    env = dict(extra_env, ARSHIM_STATS=log)
    sweep = os.path.join(args.build, "examples", f"allreduce_sweep-{flavor}")
    proc = run(cluster, [args.arshim, "run", "-v", "--", "srun", "-n", "2", f"--mpi={mpi_plugin}", sweep,
                         "--max", "64K", "--reps", "2"], env)
    check(proc.returncode == 0 and "all results correct" in proc.stdout, f"{flavor}: the example ran under srun")
    check(re.search(r"srun --export=ALL,LD_PRELOAD=\S*libarshim-" + flavor + r"\.so", proc.stderr) is not None,
          f"{flavor}: srun gets --export=ALL,LD_PRELOAD=...libarshim-{flavor}.so")
    # The summary is for people: that it is shown is checked, what it says is the log's (below).
    check(re.search(r"^arshim\[0\] summary: ", proc.stderr, re.M) is not None, f"{flavor}: the statistics summary "
          "is shown")
    if check(os.path.exists(log), f"{flavor}: the statistics log was written"):
        with open(log) as f:
            doc = json.load(f)
        check(doc["run"]["np"] == 2 and doc["run"]["mpi"]["flavor"] == flavor and doc["totals"]["calls"] > 0,
              f"{flavor}: the log has 2 ranks of {flavor} and {doc['totals']['calls']} calls")
        startup = doc["run"].get("startup_check", {})
        check(startup.get("checked") is True and startup.get("all_loaded") is True
              and startup.get("ranks_without_arshim_count") == 0 and startup.get("ranks_other_build_count") == 0,
              f"{flavor}: the log says both tasks loaded ARShim (run.startup_check: {startup})")
        job = str(doc["run"].get("job_id", ""))
        check(re.fullmatch(r"\d{1,3}", job) is not None, f"{flavor}: the log's job id {job} is Slurm's (SLURM_JOB_ID "
              "of a fresh controller: a small number)")


def mpi4py_case(args, cluster, tmp, extra_env):
    print("== mpi4py (Open MPI): arshim run -- srun -n 2 --mpi=pmix python3 mpi4py_allreduce.py")
    log = os.path.join(tmp, "mpi4py.json")
    script = os.path.join(args.examples, "mpi4py_allreduce.py")
    proc = run(cluster, [args.arshim, "run", "--", "srun", "-n", "2", "--mpi=pmix", PYTHON, script, "--steps", "2"],
               dict(extra_env, ARSHIM_STATS=log))
    check(proc.returncode == 0 and "all results correct" in proc.stdout, "mpi4py: the example ran under srun")
    if check(os.path.exists(log), "mpi4py: the statistics log was written"):
        with open(log) as f:
            sites = json.load(f)["callsites"]["sites"]
        python = [s["frames"][0] for s in sites if s["frames"] and s["frames"][0].get("binding") == "python"]
        check(python and all(f["file"].endswith("mpi4py_allreduce.py") and f["line"] > 0 and f["function"] == "main"
                             for f in python) and len(python) == len(sites),
              f"mpi4py: every call site is a Python line of mpi4py_allreduce.py: {[s['site'] for s in sites]}")


def export_cases(args, cluster, extra_env):
    print("== srun --export handling")
    env_prog = "/usr/bin/env"
    proc = run(cluster, [args.arshim, "run", "-v", "--mpi", "openmpi", "--", "srun", "-n", "1", "--export=PATH",
                         env_prog], dict(extra_env, ARSHIM_LOG="warn", ARSHIM_STATS_DEPTH="2", LD_PRELOAD=""))
    lines = set(proc.stdout.splitlines())
    check(proc.returncode == 0 and any(l.startswith("LD_PRELOAD=") and "libarshim-openmpi.so" in l for l in lines),
          "--export=PATH: the task gets LD_PRELOAD")
    check("ARSHIM_STATS_DEPTH=2" in lines and "ARSHIM_LOG=warn" in lines, "--export=PATH: ARSHIM_* added by name")
    check(not any(l.startswith("HOME=") for l in lines), "--export=PATH: other variables stay out (HOME)")
    check("srun -n 1 --export=PATH,LD_PRELOAD=" in proc.stderr and proc.stderr.count("--export") == 1,
          "the name list is extended in place")
    proc = run(cluster, [args.arshim, "run", "--mpi", "mpich", "--", "srun", "-n", "1", "--export=NONE", env_prog],
               extra_env)
    check(proc.returncode == 2 and proc.stderr.strip().startswith("arshim: srun --export=NONE:")
          and len(proc.stderr.strip().splitlines()) == 1, "--export=NONE is refused with one line")
    # srun itself must not load ARShim (nor the library it links): its own maps are checked through a task that
    # prints its parent's (slurmstepd's) environment would not tell, so run `arshim run` on a fake srun instead.
    fake = os.path.join(cluster.root, "fakebin")
    os.makedirs(fake, exist_ok=True)
    with open(os.path.join(fake, "srun"), "w") as f:
        f.write('#!/bin/sh\necho "srun LD_PRELOAD=[${LD_PRELOAD:-}]"\nfor a in "$@"; do echo "arg $a"; done\n')
    os.chmod(os.path.join(fake, "srun"), 0o755)
    proc = run(cluster, [args.arshim, "run", "--mpi", "openmpi", "--", "srun", "-n", "1", "/bin/true"],
               dict(extra_env, PATH=fake + ":" + os.environ["PATH"], LD_PRELOAD="/nonexistent-user-preload.so"))
    out = proc.stdout.splitlines()
    check("srun LD_PRELOAD=[]" in out, "srun runs without LD_PRELOAD in its own environment")
    check(any(l.startswith("arg --export=ALL,LD_PRELOAD=") and l.endswith(":/nonexistent-user-preload.so")
              for l in out), "an earlier LD_PRELOAD is kept after ARShim's library, for the tasks")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arshim", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--examples", required=True)
    parser.add_argument("--yield-lib", default="", help="MPICH ranks: the test-only yield helper (test/support)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("skipped: the test runs slurmctld and slurmd as root")
        return 77
    missing = [p for p in ("munged", "slurmctld", "slurmd", "srun", "sinfo") if shutil.which(p) is None]
    if missing:
        print(f"skipped: {', '.join(missing)} not installed (Debian: slurmctld slurmd slurm-client munge)")
        return 77
    with tempfile.TemporaryDirectory(prefix="arshim-slurm-") as tmp:
        cluster = Cluster(os.path.join(tmp, "slurm"))
        os.makedirs(cluster.root)
        # SIGTERM (meson's timeout) takes the same way out as a failure: the daemons are stopped by `finally`.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
        try:
            if not check(cluster.up(), "munged, slurmctld and slurmd up, the node idle"):
                cluster.dump_logs()
                return 1
            common = {"ARSHIM_STATS_SUMMARY": "1", "OMPI_MCA_mpi_yield_when_idle": "1", "OMPI_MCA_btl": "self,vader"}
            mpich = dict(common, LD_PRELOAD=args.yield_lib) if args.yield_lib else common
            mpi_case(args, cluster, tmp, "mpich", "pmi2", mpich)
            mpi_case(args, cluster, tmp, "openmpi", "pmix", common)
            if subprocess.run([PYTHON, "-c", "import mpi4py, numpy"], capture_output=True).returncode == 0:
                mpi4py_case(args, cluster, tmp, common)
            else:
                print("(no mpi4py/numpy for /usr/bin/python3: the mpi4py case is left out)")
            export_cases(args, cluster, common)
            if failures:
                cluster.dump_logs()
        finally:
            cluster.down()
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
