"""`arshim cluster` (tools/arshim/cluster/) with its command layer faked (cluster_fake.py): the exact commands it
generates, the state it keeps, the one-line refusals and exit statuses of docs/cluster.md."""
import os
import signal

import pytest

from arshim.cluster import plan
from arshim.cluster import system as real_system
from arshim.cluster.jobs import Jobs as Rig
from cluster_fake import FakeSystem

NSENTER = ["nsenter", "-t", "{anchor}", "-n", "-u", "-m", "-i", "-r", "--", "/bin/sh", "-c",
           'cd "$1" 2>/dev/null || cd /; shift; exec "$@"', "sh", "{cwd}"]
ANCHOR_SCRIPT = ('hostname "$1" && mount --bind "$2" /etc/hosts && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && '
                 'echo ready && exec sleep infinity')


def in_host(anchor, argv):
    return [w.format(anchor=anchor, cwd=os.getcwd()) for w in NSENTER] + argv


def tbf(ns, dev, rate, burst, limit):
    return ["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", burst,
            "limit", limit]


def one_line(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


def test_up_2_hosts_at_1gbit(fake):
    assert fake.run("up", "--hosts", "2", "--link", "1gbit") == 0
    probe = f"rt-probe{os.getpid()}"
    commands = fake.system.commands
    assert commands[:5] == [
        ["ip", "netns", "add", probe],
        ["ip", "-n", probe, "link", "add", "pa", "type", "veth", "peer", "name", "pb"],
        ["tc", "-n", probe, "qdisc", "add", "dev", "pa", "root", "tbf", "rate", "1gbit", "burst", "128k", "latency",
         "10ms"],
        ["ip", "netns", "exec", probe, "unshare", "--uts", "--mount", "--ipc", "--propagation", "private", "true"],
        ["ip", "netns", "del", probe]]
    hosts = os.path.join(fake.state, "hosts")
    expected = [["ip", "netns", "add", "rt-sw"],
                ["ip", "-n", "rt-sw", "link", "set", "lo", "up"],
                ["ip", "-n", "rt-sw", "link", "add", "br0", "type", "bridge", "forward_delay", "0", "stp_state", "0"],
                ["ip", "-n", "rt-sw", "link", "set", "br0", "up"]]
    for i in range(2):
        expected += [["ip", "netns", "add", f"rt-h{i}"],
                     ["ip", "-n", "rt-sw", "link", "add", f"h{i}", "type", "veth", "peer", "name", "arsh0", "netns",
                      f"rt-h{i}"],
                     ["ip", "-n", "rt-sw", "link", "set", f"h{i}", "master", "br0"],
                     ["ip", "-n", "rt-sw", "link", "set", f"h{i}", "up"],
                     ["ip", "-n", f"rt-h{i}", "link", "set", "lo", "up"],
                     ["ip", "-n", f"rt-h{i}", "addr", "add", f"10.99.0.1{i}/24", "dev", "arsh0"],
                     ["ip", "-n", f"rt-h{i}", "link", "set", "arsh0", "up"],
                     ["ip", "netns", "exec", f"rt-h{i}", "unshare", "--uts", "--mount", "--ipc", "--propagation",
                      "private", "/bin/sh", "-c", ANCHOR_SCRIPT, "sh", f"rt-h{i}", hosts]]
    for i in range(2):
        expected += [["ip", "-n", f"rt-h{i}", "link", "set", "dev", "arsh0", "gso_max_size", "16384"],
                     ["ip", "-n", "rt-sw", "link", "set", "dev", f"h{i}", "gso_max_size", "16384"],
                     tbf(f"rt-h{i}", "arsh0", "1gbit", "36864", "6286864"),
                     tbf("rt-sw", f"h{i}", "1gbit", "36864", "6286864")]
    assert commands[5:] == expected
    # the anchors run detached (their own session), their PIDs kept
    assert [detach for _, detach, _ in fake.system.started] == [True, True]
    assert open(os.path.join(fake.state, "anchor-h1.pid")).read() == "1002\n"
    config = open(os.path.join(fake.state, "config")).read().splitlines()
    assert config[1:] == ["PREFIX=rt", "HOSTS=2", "SUBNET=10.99.0", "IFACE=arsh0", "LINK=1gbit", "RIG_MTU=1500"]
    assert open(hosts).read().endswith("10.99.0.10 rt-h0\n10.99.0.11 rt-h1\n")
    assert fake.system.locked == os.path.join(fake.run_dir, "rt.lock")


def test_up_again_only_reshapes(fake, capsys):
    fake.up("--hosts", "2", "--link", "1gbit")
    assert fake.run("up", "--hosts", "2", "--link", "1gbit") == 0
    assert not any(c[:3] == ["ip", "netns", "add"] and not c[3].startswith("rt-probe") for c in fake.system.commands)
    assert "arshim-cluster: already up: 2 hosts, link 1gbit" in capsys.readouterr().err
    fake.system.clear()
    assert fake.run("up", "--hosts", "2", "--link", "10gbit", "--mtu", "9000") == 0
    shaping = [c for c in fake.system.commands if "probe" not in " ".join(c)]
    assert shaping[2] == tbf("rt-h0", "arsh0", "10gbit", "135168", "62635168")
    assert shaping[-1] == ["ip", "-n", "rt-sw", "link", "set", "dev", "br0", "mtu", "9000"]
    assert "RIG_MTU=9000\n" in open(os.path.join(fake.state, "config")).read()


def test_mpirun_2x2_mpich(fake):
    fake.up("--hosts", "2")
    assert fake.run("mpirun", "--mpi", "mpich", "--ppn", "2", "--", "./app", "-x") == 0
    [command] = fake.system.commands
    ssh = [f for f in os.listdir(fake.state) if f.startswith("ssh-")]
    assert len(ssh) == 1 and os.access(os.path.join(fake.state, ssh[0]), os.X_OK)
    assert command == in_host("1001", [
        "env", "-u", "ARSHIM_BUILD_DIR", "-u", "ARSHIM_CLUSTER_LOCKED", "-u", "ARSHIM_CLUSTER_MPICH_FINALIZE",
        "-u", "ARSHIM_CLUSTER_NAME", "-u", "ARSHIM_CLUSTER_STATE",
        "mpirun.mpich", "-launcher", "ssh", "-launcher-exec", os.path.join(fake.state, ssh[0]),
        "-hosts", "rt-h0:2,rt-h1:2", "-n", "4", "-ppn", "2", "-genv", "UCX_TLS", "tcp,self",
        "-genv", "UCX_NET_DEVICES", "arsh0", "-genv", "UCX_WARN_UNUSED_ENV_VARS", "n",
        "-genv", "LD_PRELOAD", fake.yield_lib, "./app", "-x"])
    assert fake.environ["OMPI_ALLOW_RUN_AS_ROOT"] == "1"


def test_mpirun_openmpi_np_and_no_yield(fake):
    fake.up("--hosts", "3")
    assert fake.run("mpirun", "--mpi", "openmpi", "--np", "3", "--no-yield", "--", "./app") == 0
    [command] = fake.system.commands
    assert command[command.index("--host") + 1] == "rt-h0:1,rt-h1:1,rt-h2:1"
    assert command[-1] == "./app" and "LD_PRELOAD" not in command


def test_wrap_mpich_rewrites_the_command_line(fake, monkeypatch):
    monkeypatch.setattr("arshim.cluster.launch.launcher_flavor", lambda w: "mpich" if "mpich" in w else None)
    fake.up("--hosts", "2")
    rc = fake.run("wrap", "--ppn", "2", "--", "mpirun.mpich", "-n", "4", "--oversubscribe", "-genv", "LD_PRELOAD",
                  f"/shim.so:{fake.yield_lib}", "./bench", "--max", "1M")
    assert rc == 0
    [command] = fake.system.commands
    tail = command[command.index("UCX_WARN_UNUSED_ENV_VARS") + 2:]
    assert tail == ["-genv", "LD_PRELOAD", f"/shim.so:{fake.yield_lib}", "./bench", "--max", "1M"]
    assert command[command.index("mpirun.mpich"):][7:9] == ["-n", "4"]


def test_wrap_failure_cleans_the_hosts(fake, monkeypatch):
    monkeypatch.setattr("arshim.cluster.launch.launcher_flavor", lambda w: "openmpi")
    fake.up("--hosts", "2")
    fake.system.results[("nsenter",)] = 3
    fake.system.outputs.append((lambda a: a[:4] == ["ip", "netns", "pids", "rt-h1"], (0, "1002 4242\n")))
    fake.system.alive_pids.add("4242")
    assert fake.run("wrap", "--", "mpirun.openmpi", "--mca", "mpi_yield_when_idle", "0", "./a") == 3
    launched = fake.system.commands[0]
    assert launched.count("mpi_yield_when_idle") == 1 and launched[-1] == "./a"
    assert fake.system.signals == [(["4242"], signal.SIGTERM)]


def test_run_openmpi_through_arshim_run(fake):
    fake.up("--hosts", "2", "--link", "1gbit")
    rc = fake.run("run", "--mpi", "openmpi", "--ppn", "2", "--timeout", "30", "-x", "A=1", "--", "./prog", "7")
    assert rc == 0
    launched = fake.system.commands[0]
    start = launched.index("timeout")
    assert launched[start:start + 10] == ["timeout", "-k", "10", "30", fake_python(), str(fake.build / "tools" /
                                          "arshim"), "run", "--mpi", "openmpi", "--"]
    assert launched[-4:] == ["-x", "A=1", "./prog", "7"]
    # clean afterwards: the processes left on every host, by PID (none here)
    assert fake.system.commands[1:] == [["ip", "netns", "pids", "rt-h0"], ["ip", "netns", "pids", "rt-h1"]]


def fake_python():
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else pytest.skip("no /usr/bin/python3")


def test_run_native_mpich_brings_the_rig_up_and_down(fake, capsys):
    rc = fake.run("run", "--hosts", "2", "--mpi", "mpich", "--native", "-x", "A=1", "--", "./prog")
    assert rc == 0
    launched = next(c for c in fake.system.commands if c[0] == "nsenter")
    assert launched[launched.index("timeout"):launched.index("timeout") + 5] == \
        ["timeout", "-k", "10", "600", "mpirun.mpich"]
    assert launched[-7:] == ["-genv", "A", "1", "-genv", "LD_PRELOAD", fake.yield_lib, "./prog"]
    assert fake.system.commands[-3:] == [["ip", "netns", "del", "rt-sw"], ["ip", "netns", "del", "rt-h0"],
                                         ["ip", "netns", "del", "rt-h1"]]
    assert not os.path.exists(fake.state) and fake.system.namespaces == []
    assert "arshim-cluster: run on 2 hosts x 1 ranks, link 10gbit, mpich, native" in capsys.readouterr().err


def test_run_timeout_is_reported(fake, capsys):
    fake.up()
    fake.system.results[("nsenter",)] = 124
    assert fake.run("run", "--mpi", "openmpi", "--timeout", "5", "--", "./hang") == 124
    assert "arshim-cluster: run timed out after 5s" in capsys.readouterr().err


def test_down_kills_by_pid_and_removes_everything(fake, capsys):
    fake.up("--hosts", "2")
    fake.system.outputs.append((lambda a: a[:3] == ["ip", "netns", "pids"], (0, "77\n")))
    fake.system.alive_pids.add("77")
    assert fake.run("down") == 0
    assert fake.system.signals[0] == (["77", "77", "77"], signal.SIGTERM)
    assert [c for c in fake.system.commands if c[:3] == ["ip", "netns", "del"]] == [
        ["ip", "netns", "del", "rt-sw"], ["ip", "netns", "del", "rt-h0"], ["ip", "netns", "del", "rt-h1"]]
    assert not os.path.exists(fake.state)
    assert capsys.readouterr().err.splitlines()[-1] == "arshim-cluster: down"
    assert fake.run("down") == 0  # idempotent


def test_down_fails_when_namespaces_stay(fake, capsys):
    fake.up()
    fake.system.results[("ip", "netns", "del", "rt-h1")] = 1

    def sticky(argv, **kw):
        rc = FakeSystem.run(fake.system, argv, **kw)
        if argv == ["ip", "netns", "del", "rt-h1"]:
            fake.system.namespaces.append("rt-h1")
        return rc
    fake.system.run = sticky
    capsys.readouterr()
    assert fake.run("down") == 1
    err = capsys.readouterr().err.splitlines()
    assert "arshim-cluster: warning: cannot delete namespace rt-h1" in err
    assert err[-1] == "arshim-cluster: error: namespaces left behind: rt-h1 "


def test_watch_starts_a_detached_reaper(fake):
    fake.system.alive_pids.add("555")
    fake.environ["ARSHIM_CLUSTER_LOCKED"] = "rt"
    assert fake.run("up", "--watch", "555") == 0
    argv, detach, env = fake.system.started[-1]
    instance = open(os.path.join(fake.state, "config")).read().split("\n")[0].split("=")[1]
    assert argv[:3] == ["/bin/sh", "-c", 'export ARSHIM_CLUSTER_REAPER=$$; while [ -d "/proc/$1" ]; do sleep 0.5; '
                        'done; exec bash "$3" down --if-instance "$2"']
    assert argv[3:6] == ["arshim-cluster-reaper", "555", instance] and argv[6].endswith("tools/cluster/arshim-cluster")
    assert detach and "ARSHIM_CLUSTER_LOCKED" not in env and env["ARSHIM_CLUSTER_LOCK_WAIT"] == "120"
    assert os.path.exists(os.path.join(fake.run_dir, "rt.reaper.log"))
    # the reaper of a replaced rig leaves the new one up
    assert fake.run("down", "--if-instance", "0-0-0") == 0
    assert os.path.exists(fake.state)
    assert fake.run("down", "--if-instance", instance) == 0
    assert not os.path.exists(fake.state)


def test_status(fake, capsys):
    assert fake.run("status") == 0
    assert capsys.readouterr().out == "rig 'rt': down\n"
    fake.up("--hosts", "2", "--link", "1gbit")
    fake.system.outputs += [
        (lambda a: a[:2] == ["ip", "netns"] and a[-1].endswith("rx_bytes"), (0, "123\n4567\n")),
        (lambda a: a[:1] == ["tc"], (0, "qdisc tbf 8001: root refcnt 3 rate 1Gbit\nsecond line\n")),
        (lambda a: a == ["ip", "netns", "pids", "rt-h1"], (0, "1002\n999\n"))]
    capsys.readouterr()
    assert fake.run("status") == 0
    assert capsys.readouterr().out.splitlines() == [
        f"rig 'rt': 2 hosts, link 1gbit, mtu 1500, state {fake.state}",
        "  rt-h0      10.99.0.10   anchor 1001    tx          123 B  rx         4567 B  qdisc: qdisc tbf 8001: root "
        "refcnt 3 rate 1Gbit",
        "  rt-h1      10.99.0.11   anchor 1002    tx          123 B  rx         4567 B  qdisc: qdisc tbf 8001: root "
        "refcnt 3 rate 1Gbit",
        "             processes: 999 "]
    fake.system.alive_pids.clear()  # the anchors died: the rig is down, its namespaces left
    assert fake.run("status") == 0
    assert capsys.readouterr().out.splitlines() == [
        "rig 'rt': down", "  (namespaces left: rt-sw rt-h0 rt-h1  — run `arshim cluster down`)"]


def test_exec(fake):
    fake.up("--hosts", "3")
    assert fake.run("exec", "rt-h2", "--", "hostname") == 0
    assert fake.system.commands == [in_host("1003", ["hostname"])]


VERIFY_OUT = ("rank 0 host rt-h0\nprobe: node split matches hosts\n"
              "probe: allreduce bytes=2097152 reps=2 seconds=0.0400\n"
              "probe: point-to-point hosts=2 bytes=2097152 stream_seconds=0.0200 steps_seconds=0.0400\n")


def test_verify(fake, capsys):
    fake.up("--hosts", "2", "--link", "1gbit")
    (fake.build / "tools" / "cluster").mkdir()
    probe = fake.build / "tools" / "cluster" / "cluster_probe-openmpi"
    probe.write_text("")
    probe.chmod(0o755)
    counts = iter(["0 0", "0 0", "4200000 4200000", "4200000 4200000"])
    fake.system.outputs += [
        (lambda a: "connect" in a and "rtt" in a, (0, "61\n")),
        (lambda a: "connect" in a and "stream" in a, (0, "0.0179\n")),
        (lambda a: "timeout" in a, (0, VERIFY_OUT))]
    original = fake.system.capture

    def capture(argv, **kw):
        if argv[-1].endswith("rx_bytes"):
            return 0, next(counts)
        return original(argv, **kw)
    fake.system.capture = capture
    capsys.readouterr()
    assert fake.run("verify", "--mpi", "openmpi", "--bytes", "2M", "--reps", "2") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["verify: 2 hosts x 2 ranks, link 1gbit",
                       "verify: TCP round trip h0<->h1 61 us (veth; the rig adds no latency, see docs/cluster.md)",
                       "verify: TCP reference h0<->h1: 2097152 B each way at once over one plain TCP connection in "
                       "17.9 ms = 1.067 x the link bound at MTU 1500 (headers and acknowledgements share the link)"]
    assert "  openmpi: rt-h1 NIC tx     4200000 B rx     4200000 B = 1.00 / 1.00 x the ring bound 4194304 B: ok" in out
    assert out[-1] == ("verify: OK: every rank's shared-memory node is its virtual host, allreduce traffic crosses the "
                       "links")
    launched = next(c for c in fake.system.commands if "timeout" in c)
    assert launched[-11:] == [str(probe), "--ppn", "2", "--hosts", "2", "--prefix", "rt-h", "--bytes", "2097152",
                              "--reps", "2"]


def test_verify_counts_failures(fake, capsys):
    fake.up("--hosts", "2", "--link", "none")
    fake.environ["ARSHIM_BUILD_DIR"] = str(fake.build)
    (fake.build / "tools" / "cluster").mkdir()
    for flavor in ("mpich", "openmpi"):
        probe = fake.build / "tools" / "cluster" / f"cluster_probe-{flavor}"
        probe.write_text("")
        probe.chmod(0o755)
    fake.system.outputs += [(lambda a: a[-1].endswith("rx_bytes"), (0, "5 5")),
                            (lambda a: "timeout" in a and "mpirun.mpich" in a, (1, "it broke\n")),
                            (lambda a: "timeout" in a, (0, "probe: node split differs\n"))]
    capsys.readouterr()
    assert fake.run("verify") == 1
    out = capsys.readouterr().out.splitlines()
    assert "    it broke" in out and "verify: mpich: FAILED (the probe did not run cleanly)" in out
    assert "verify: openmpi: FAILED node split" in out
    assert out[-1] == "verify: FAILED (4 check(s))"  # mpich's run; openmpi's split and both hosts' traffic


@pytest.mark.parametrize("args, status, line", [
    (["bogus"], 2, "arshim-cluster: error: unknown command 'bogus' (up, down, status, shape, exec, ssh, clean, mpirun, "
                   "wrap, run, verify, check)"),
    (["up", "--hosts", "1"], 2, "arshim-cluster: error: --hosts must be 2..8"),
    (["up", "--hosts"], 2, "arshim-cluster: error: --hosts needs a value"),
    (["up", "--link", "fast"], 2,
     "arshim-cluster: error: unknown link 'fast' (1gbit, 10gbit, none, or a tc rate such as 2500mbit)"),
    (["up", "--mtu", "100"], 2, "arshim-cluster: error: --mtu must be 1280..65535 bytes (1500: Ethernet's default, "
                                "9000: jumbo frames), not '100'"),
    (["up", "--sideways"], 2, "arshim-cluster: error: up: unknown option '--sideways'"),
    (["up", "--watch", "abc"], 1, "arshim-cluster: error: --watch abc: no such process"),
    (["--name"], 2, "arshim-cluster: --name needs a value"),
    (["down", "--name"], 2, "arshim-cluster: --name needs a value"),  # never the default rig instead
    (["--name", "Bad", "status"], 2, "arshim-cluster: bad rig name 'Bad' (a-z, 0-9, -; at most 16)"),
    (["status", "--name", "x_y"], 2, "arshim-cluster: bad rig name 'x_y' (a-z, 0-9, -; at most 16)"),
    (["shape"], 1, "arshim-cluster: error: the rig is not up"),
    (["mpirun", "--mpi", "mpich", "--", "./a"], 1, "arshim-cluster: error: the rig is not up (arshim cluster up --hosts N)"),
    (["mpirun", "./a"], 2, "arshim-cluster: error: mpirun: unknown option './a' (put mpirun's own arguments after --)"),
    (["wrap"], 2, "arshim-cluster: error: wrap: no mpirun command (arshim cluster wrap --ppn 2 -- mpirun.mpich -n 4 "
                  "./app)"),
    (["wrap", "--ppn", "0", "--", "mpirun.mpich"], 2, "arshim-cluster: error: --ppn must be a positive number, not '0'"),
    (["run"], 2, "arshim-cluster: error: run: no program (arshim cluster run --hosts 2 --ppn 2 -- ./app)"),
    (["run", "--fast", "--", "./a"], 2, "arshim-cluster: error: run: unknown option '--fast' (usage: arshim cluster "
                                        "run [--hosts N] [--ppn P] [--link L] [--mpi F] [--native] -- PROG ARGS)"),
    (["verify", "--bytes", "3Q"], 2, "arshim-cluster: error: bad size '3Q' (e.g. 4M, 64K)"),
    (["verify", "--mpi", "lam"], 2, "arshim-cluster: error: unknown MPI flavor 'lam' (mpich, openmpi)"),
    (["verify", "--loud"], 2, "arshim-cluster: error: verify: unknown option '--loud'"),
    (["verify"], 1, "arshim-cluster: error: the rig is not up (arshim cluster up)"),
    (["exec", "h0", "--", "true"], 1, "arshim-cluster: error: the rig is not up (arshim cluster up)"),
])
def test_refusals_are_one_line(fake, capsys, args, status, line):
    assert fake.run(*args) == status
    assert one_line(capsys) == line


@pytest.mark.parametrize("args, status, line", [
    (["shape", "--fast"], 2, "arshim-cluster: error: usage: shape [--link 1gbit|10gbit|none|RATE] [--mtu BYTES]"),
    (["shape"], 2, "arshim-cluster: error: usage: shape [--link 1gbit|10gbit|none|RATE] [--mtu BYTES]"),
    (["shape", "--mtu", "70000"], 2, "arshim-cluster: error: --mtu must be 1280..65535 bytes (1500: Ethernet's "
                                     "default, 9000: jumbo frames), not '70000'"),
    (["exec", "h2", "--", "true"], 1, "arshim-cluster: error: unknown virtual host 'h2' (the rig has 2 hosts: h0..h1)"),
    (["exec", "h1", "--"], 2, "arshim-cluster: error: exec: no command"),
    (["mpirun", "--", "./a"], 2, "arshim-cluster: error: mpirun: --mpi mpich|openmpi is required"),
    (["mpirun", "--mpi", "mpich", "--np", "5", "--ppn", "2", "--", "./a"], 2,
     "arshim-cluster: error: 5 ranks at 2 per host need 3 hosts; the rig has 2"),
    (["run", "--", "/nonexistent/prog"], 2,
     "arshim-cluster: error: /nonexistent/prog: program not found; pass --mpi mpich|openmpi"),
])
def test_refusals_on_a_rig_that_is_up(fake, capsys, args, status, line):
    fake.up("--hosts", "2")
    capsys.readouterr()
    assert fake.run(*args) == status
    assert one_line(capsys) == line
    assert not any(c[0] == "nsenter" for c in fake.system.commands)


def test_not_root_skips(fake, capsys):
    fake.system.uid_value = 1000
    for command in (["up"], ["status"], ["down"], ["check"], ["bogus"]):
        assert fake.run(*command) == 77
        assert one_line(capsys) == ("arshim-cluster: SKIP: the emulated cluster needs root (network namespaces); "
                                    "running as tester")
    assert fake.system.commands == []
    assert fake.run("--help") == 0 and "Commands:" in capsys.readouterr().out


@pytest.mark.parametrize("failing, line", [
    (None, "arshim-cluster: SKIP: 'nsenter' not found (Debian: iproute2, util-linux, coreutils)"),
    (("ip", "netns", "add"), "arshim-cluster: SKIP: cannot create a network namespace (ip netns add failed; "
                             "container without CAP_SYS_ADMIN?)"),
    (("tc",), "arshim-cluster: SKIP: tc tbf is unavailable (sch_tbf)"),
    (("ip", "netns", "exec"), "arshim-cluster: SKIP: cannot create UTS/mount/IPC namespaces (unshare failed)"),
])
def test_check_reasons(fake, capsys, failing, line):
    if failing is None:
        fake.system.missing.add("nsenter")
    else:
        fake.system.results[failing] = 1
    assert fake.run("check") == 77
    assert one_line(capsys) == line
    if failing not in (None, ("ip", "netns", "add")):
        assert fake.system.commands[-1][:3] == ["ip", "netns", "del"]  # the probe namespace never stays


def test_name_selects_the_rig(fake):
    assert fake.run("status", "--name", "other") == 0
    assert fake.environ["ARSHIM_CLUSTER_NAME"] == "other"
    assert fake.environ["ARSHIM_CLUSTER_STATE"] == os.path.join(fake.run_dir, "other")
    fake.environ["ARSHIM_CLUSTER_STATE"] = "/elsewhere"
    assert fake.run("--name", "third", "status") == 0
    assert fake.environ["ARSHIM_CLUSTER_STATE"] == os.path.join(fake.run_dir, "third")


def test_files_are_never_written_through_a_planted_symlink(fake, tmp_path, capsys):
    target = tmp_path / "victim"
    target.write_text("precious\n")
    os.makedirs(fake.state)
    os.symlink(target, os.path.join(fake.state, "anchor-h0.log"))
    os.symlink(target, os.path.join(fake.state, "hosts"))
    # an existing state directory is taken down first: the planted names are gone with it
    assert fake.run("up") == 0
    assert target.read_text() == "precious\n"
    # planted while the rig is up: the config is replaced (rename), never followed
    os.unlink(os.path.join(fake.state, "config"))
    os.symlink(target, os.path.join(fake.state, "config"))
    assert fake.run("down") == 0
    assert target.read_text() == "precious\n" and not os.path.lexists(fake.state)


def test_anchor_log_is_opened_without_following_symlinks(fake, tmp_path, capsys):
    target = tmp_path / "victim"
    target.write_text("precious\n")
    names = plan.Names("rt", run_dir=fake.run_dir)
    r = Rig(names, fake.system, fake.environ, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
    os.makedirs(names.state)
    os.symlink(target, names.state_file("anchor-h0.log"))
    with pytest.raises(OSError):
        r.start_anchor(0)
    assert target.read_text() == "precious\n"


def test_lock_refuses_a_symlink(tmp_path):
    target = tmp_path / "victim"
    target.write_text("x")
    os.symlink(target, tmp_path / "rt.lock")
    with pytest.raises(OSError):
        real_system.System().lock(str(tmp_path / "rt.lock"), 0, lambda: None)
    assert real_system.System().lock(str(tmp_path / "ok.lock"), 0, lambda: None)
    assert target.read_text() == "x"


def test_nested_invocations_do_not_lock_again(fake):
    fake.environ["ARSHIM_CLUSTER_LOCKED"] = "rt"
    assert fake.run("up") == 0
    assert not hasattr(fake.system, "locked")


def test_watch_of_no_process_builds_nothing(fake, capsys):
    assert fake.run("up", "--watch", "999999") == 1
    assert one_line(capsys) == "arshim-cluster: error: --watch 999999: no such process"
    assert not any(c[:3] == ["ip", "netns", "add"] and "probe" not in c[3] for c in fake.system.commands)


def test_the_wrapper_starts_the_package():
    """tools/cluster/arshim-cluster, as the tests, benchmarks and `arshim cluster` run it (nothing here touches the
    machine: help, and a rig name refused before anything runs)."""
    import subprocess
    script = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "cluster", "arshim-cluster")
    p = subprocess.run(["bash", script, "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("arshim-cluster: an emulated multi-host cluster")
    p = subprocess.run(["bash", script, "--name", "NO", "status"], capture_output=True, text=True, timeout=60,
                       cwd="/", env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "/nonexistent"})
    assert (p.returncode, p.stderr) == (2, "arshim-cluster: bad rig name 'NO' (a-z, 0-9, -; at most 16)\n")
