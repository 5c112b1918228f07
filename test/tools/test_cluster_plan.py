"""The emulated cluster's plan, launcher lines and verdicts (tools/arshim/cluster/plan.py, launch.py, verify.py):
pure functions, no machine."""
import pytest

from arshim.cluster import Failure, launch, plan, verify

NAMES = plan.Names("rt", run_dir="/run/x")


@pytest.mark.parametrize("link, rate", [("1gbit", "1gbit"), ("1G", "1gbit"), ("10gbps", "10gbit"), ("none", "none"),
                                        ("OFF", "none"), ("0", "none"), ("25g", "25gbit"), ("2500mbit", "2500mbit"),
                                        ("800Kbit", "800kbit"), ("2.5gbit", "2.5gbit")])
def test_rate_of(link, rate):
    assert plan.rate_of(link) == rate


@pytest.mark.parametrize("link", ["3x", "", "gbit", "1gbit; rm -rf /", "1gbit\n", "-1gbit", "10 gbit"])
def test_rate_of_refuses(link):
    with pytest.raises(Failure) as e:
        plan.rate_of(link)
    assert e.value.status == 2
    assert str(e.value) == f"unknown link '{link}' (1gbit, 10gbit, none, or a tc rate such as 2500mbit)"


def test_rate_bits_and_gso():
    assert plan.rate_bits("1gbit") == 10**9
    assert plan.rate_bits("2500mbit") == 25 * 10**8
    assert plan.rate_bits("2.5gbit") == 25 * 10**8
    assert plan.rate_bits("none") == 0
    assert [plan.gso_for(r) for r in ("1gbit", "2500mbit", "2501mbit", "10gbit", "none")] == \
        [16384, 16384, 65536, 65536, 65536]


def test_tbf_args():
    # bucket: two GSO packets + 4 KiB (or 100 us at line rate); queue: 50 ms at line rate, at least 4 MiB
    assert plan.tbf_args("1gbit") == ["rate", "1gbit", "burst", "36864", "limit", "6286864"]
    assert plan.tbf_args("10gbit") == ["rate", "10gbit", "burst", "135168", "limit", "62635168"]
    assert plan.tbf_args("100mbit") == ["rate", "100mbit", "burst", "36864", "limit", "4194304"]
    assert plan.tbf_args("100gbit") == ["rate", "100gbit", "burst", "1250000", "limit", "626250000"]


@pytest.mark.parametrize("mtu", ["1279", "65536", "9k", "", "1500 ", "٣٠٠٠"])
def test_check_mtu_refuses(mtu):
    with pytest.raises(Failure) as e:
        plan.check_mtu(mtu)
    assert e.value.status == 2 and "--mtu must be 1280..65535 bytes" in str(e.value)


@pytest.mark.parametrize("hosts", ["1", "9", "x", "", "2 ", "02x"])
def test_check_hosts_refuses(hosts):
    with pytest.raises(Failure) as e:
        plan.check_hosts(hosts)
    assert (e.value.status, str(e.value)) == (2, "--hosts must be 2..8")


@pytest.mark.parametrize("name", ["BAD", "1abc", "a" * 17, "a_b", "a b", "", "ab\n", "../etc"])
def test_names_refuse_bad_rig_names(name):
    with pytest.raises(Failure) as e:
        plan.Names(name)
    assert e.value.status == 2 and e.value.plain
    shown = name.replace("\n", "\\n")  # one line: the newline escaped
    assert e.value.line() == f"arshim-cluster: bad rig name '{shown}' (a-z, 0-9, -; at most 16)"


@pytest.mark.parametrize("subnet", ["10.99", "10.99.0.1", "10.99.256", "10.99.0;x", "a.b.c"])
def test_names_refuse_bad_subnets(subnet):
    with pytest.raises(Failure):
        plan.Names("rt", subnet=subnet)


def test_names():
    n = plan.Names("rt", subnet="10.5.7", run_dir="/run/x")
    assert (n.state, n.lock, n.reaper_log) == ("/run/x/rt", "/run/x/rt.lock", "/run/x/rt.reaper.log")
    assert (n.switch, n.host(3), n.address(3)) == ("rt-sw", "rt-h3", "10.5.7.13")
    assert [m for m in ["rt-sw", "rt-h0", "rt-h12", "rt-hx", "rtx-h0", "rt-sw0", "rt-probe1"]
            if n.is_rig_namespace(m)] == ["rt-sw", "rt-h0", "rt-h12"]
    env = plan.Names.from_environment({"ARSHIM_CLUSTER_NAME": "", "ARSHIM_CLUSTER_STATE": "/tmp/s"})
    assert (env.prefix, env.state, env.subnet) == ("arshim", "/tmp/s", "10.99.0")


def test_host_index():
    assert [plan.host_index(NAMES, 3, w) for w in ("h1", "1", "rt-h2", "h0")] == [1, 1, 2, 0]
    for word in ("h3", "x", "rt-x", "", "other-h1", "-1"):
        with pytest.raises(Failure) as e:
            plan.host_index(NAMES, 3, word)
        assert str(e.value) == f"unknown virtual host '{word}' (the rig has 3 hosts: h0..h2)"


def test_config_round_trip_and_refusals():
    config = {"INSTANCE": "1-2-3", "PREFIX": "rt", "HOSTS": "2", "SUBNET": "10.99.0", "IFACE": "arsh0",
              "LINK": "1gbit", "RIG_MTU": "1500"}
    text = plan.config_text(config)
    assert text == ("INSTANCE=1-2-3\nPREFIX=rt\nHOSTS=2\nSUBNET=10.99.0\nIFACE=arsh0\nLINK=1gbit\nRIG_MTU=1500\n")
    assert plan.parse_config(text) == config
    # tools/cluster/ssh sources the config: nothing but plain words goes in
    for key, value in (("LINK", "1gbit;reboot"), ("HOSTS", "$(id)"), ("OTHER", "1")):
        with pytest.raises(Failure):
            plan.config_text(dict(config, **{key: value}))
    assert plan.parse_config("HOSTS=3\nJUNK\nEVIL=1\n") == {"HOSTS": "3", "RIG_MTU": "1500"}  # made before --mtu
    with pytest.raises(ValueError):
        plan.parse_config("LINK=1gbit\n")


def test_hosts_text():
    assert plan.hosts_text(NAMES, 2) == ("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"
                                         "10.99.0.10 rt-h0\n10.99.0.11 rt-h1\n")


def test_shape_commands_unshaped_may_fail():
    cmds = plan.shape_commands(NAMES, 2, "none")
    assert cmds[:4] == [(["ip", "-n", "rt-h0", "link", "set", "dev", "arsh0", "gso_max_size", "65536"], False),
                        (["ip", "-n", "rt-sw", "link", "set", "dev", "h0", "gso_max_size", "65536"], False),
                        (["tc", "-n", "rt-h0", "qdisc", "del", "dev", "arsh0", "root"], True),
                        (["tc", "-n", "rt-sw", "qdisc", "del", "dev", "h0", "root"], True)]
    assert len(cmds) == 8


def test_mtu_commands():
    assert plan.mtu_commands(NAMES, 2, 9000) == [
        ["ip", "-n", "rt-h0", "link", "set", "dev", "arsh0", "mtu", "9000"],
        ["ip", "-n", "rt-sw", "link", "set", "dev", "h0", "mtu", "9000"],
        ["ip", "-n", "rt-h1", "link", "set", "dev", "arsh0", "mtu", "9000"],
        ["ip", "-n", "rt-sw", "link", "set", "dev", "h1", "mtu", "9000"],
        ["ip", "-n", "rt-sw", "link", "set", "dev", "br0", "mtu", "9000"]]


# ---------------------------------------------------------------------------------------------------------------
# launch

def test_launch_env_strips_the_rigs_variables():
    env = {"ARSHIM_CLUSTER_STATE": "s", "ARSHIM_CLUSTER_NAME": "n", "ARSHIM_BUILD_DIR": "b", "ARSHIM_PATH": "x",
           "ARSHIM_TEST_YIELD_LIB": "y", "PATH": "/bin", "ARSHIM_CLUSTERX": "kept"}
    assert launch.launch_env(env) == ["env", "-u", "ARSHIM_BUILD_DIR", "-u", "ARSHIM_CLUSTER_NAME",
                                      "-u", "ARSHIM_CLUSTER_STATE", "-u", "ARSHIM_TEST_YIELD_LIB"]


def test_ssh_wrapper_quotes():
    names = plan.Names("rt", state="/run/it's")
    path, text = launch.ssh_wrapper(names, "/src/tools/cluster/ssh", "A B")
    assert path.startswith("/run/it's/ssh-")
    assert text.splitlines() == [
        "#!/bin/sh", "# arshim-cluster: the fake ssh of rig rt, as its launchers run it",
        "ARSHIM_CLUSTER_STATE='/run/it'\\''s' ARSHIM_CLUSTER_SSH_ENV='A B' exec '/src/tools/cluster/ssh' \"$@\""]
    assert launch.ssh_wrapper(names, "/src/tools/cluster/ssh", "A")[0] != path


def test_mpirun_command_2x2():
    assert launch.mpirun_command(NAMES, 2, "mpich", 4, 2, "/s") == [
        "mpirun.mpich", "-launcher", "ssh", "-launcher-exec", "/s", "-hosts", "rt-h0:2,rt-h1:2", "-n", "4",
        "-ppn", "2", "-genv", "UCX_TLS", "tcp,self", "-genv", "UCX_NET_DEVICES", "arsh0",
        "-genv", "UCX_WARN_UNUSED_ENV_VARS", "n"]
    assert launch.mpirun_command(NAMES, 2, "openmpi", 4, 2, "/s") == [
        "mpirun.openmpi", "--host", "rt-h0:2,rt-h1:2", "-n", "4", "--map-by", "ppr:2:node", "--bind-to", "none",
        "--mca", "plm_rsh_agent", "/s", "--mca", "plm_rsh_no_tree_spawn", "1", "--mca", "pml", "ob1",
        "--mca", "btl", "tcp,self,vader", "--mca", "btl_tcp_if_include", "arsh0", "--mca", "oob_tcp_if_include",
        "arsh0", "--mca", "mpi_yield_when_idle", "1"]
    # 3 ranks at 2 per host: two hosts, the last one partly used
    assert "rt-h0:2,rt-h1:2" in launch.mpirun_command(NAMES, 3, "mpich", 3, 2, "/s")


def test_mpirun_command_refuses():
    with pytest.raises(Failure) as e:
        launch.mpirun_command(NAMES, 2, "mpich", 5, 2, "/s")
    assert (e.value.status, str(e.value)) == (2, "5 ranks at 2 per host need 3 hosts; the rig has 2")
    with pytest.raises(Failure) as e:
        launch.mpirun_command(NAMES, 2, "lam", 2, 1, "/s")
    assert (e.value.status, str(e.value)) == (2, "unknown MPI flavor 'lam' (mpich, openmpi)")


def test_add_mpich_helpers():
    assert launch.add_mpich_helpers(["./a"], "/f.so:/y.so") == ["-genv", "LD_PRELOAD", "/f.so:/y.so", "./a"]
    assert launch.add_mpich_helpers(["-genv", "LD_PRELOAD", "/shim.so", "./a"], "/y.so") == \
        ["-genv", "LD_PRELOAD", "/shim.so:/y.so", "./a"]
    assert launch.add_mpich_helpers(["-env", "LD_PRELOAD", "/shim.so"], "") == ["-env", "LD_PRELOAD", "/shim.so"]
    assert launch.add_mpich_helpers(["./a"], "") == ["./a"]
    # a -genv LD_PRELOAD without its value is no list to extend
    assert launch.add_mpich_helpers(["-genv", "LD_PRELOAD"], "/y.so") == ["-genv", "LD_PRELOAD", "/y.so", "-genv",
                                                                          "LD_PRELOAD"]


def test_dedupe_preload():
    assert launch.dedupe_preload(["-genv", "LD_PRELOAD", "/a:/y::/a:/y:/b", "./p", "LD_PRELOAD", "/a:/a"]) == \
        ["-genv", "LD_PRELOAD", "/a:/y:/b", "./p", "LD_PRELOAD", "/a:/a"]


def test_rank_variables():
    assert launch.rank_variables("openmpi", ["A=1", "B=x=y"]) == ["-x", "A=1", "-x", "B=x=y"]
    assert launch.rank_variables("mpich", ["A=1", "B=x=y", "C"]) == ["-genv", "A", "1", "-genv", "B", "x=y",
                                                                    "-genv", "C", "C"]


def test_parse_wrapped():
    flavors = {"mpirun.mpich": "mpich", "mpirun.openmpi": "openmpi"}.get
    w = launch.parse_wrapped(["mpirun.openmpi", "-n", "4", "--oversubscribe", "--mca", "mpi_yield_when_idle", "0",
                              "--mca", "btl_base_verbose", "1", "-x", "A=1", "./app", "-n", "2", "--n", "64"], flavors)
    assert (w.flavor, w.np) == ("openmpi", "4")  # the program's own -n and --n are its arguments, not the launcher's
    assert w.rest == ["--mca", "btl_base_verbose", "1", "-x", "A=1", "./app", "-n", "2", "--n", "64"]
    w = launch.parse_wrapped(["mpirun.mpich", "-n", "2", "-n", "4", "./app"], flavors)
    assert w.np == "4"  # among the launcher's options the last -n wins, as in a launcher
    for bad, message in ((["srun", "-n", "2"], "wrap: srun is neither mpirun.mpich nor mpirun.openmpi"),
                         (["mpirun.mpich", "-n"], "wrap: -n needs a value"),
                         (["mpirun.mpich", "--mca", "x"], "wrap: --mca needs a name and a value")):
        with pytest.raises(Failure) as e:
            launch.parse_wrapped(bad, flavors)
        assert (e.value.status, str(e.value)) == (2, message)


# ---------------------------------------------------------------------------------------------------------------
# verify

def test_traffic_lines():
    lines, failures = verify.traffic_lines("mpich", NAMES, [(0, 0), (10, 10)], [(4 << 20, 4 << 20), (10, 9 << 20)],
                                           2 << 20, 2)
    assert failures == 1
    assert lines == ["  mpich: rt-h0 NIC tx     4194304 B rx     4194304 B = 1.00 / 1.00 x the ring bound 4194304 B: ok",
                     "  mpich: rt-h1 NIC tx           0 B rx     9437174 B = 0.00 / 2.25 x the ring bound 4194304 B: "
                     "FAILED"]


def test_timing_lines():
    lines, failed = verify.timing_lines("openmpi", 0.0336, 2 << 20, 2, 2, 10**9)
    assert not failed
    assert lines == ["  openmpi: 2 x 2097152 B allreduce took 33.6 ms; link bound 33.6 ms (effective 1.00 Gbit/s "
                     "per host of 1)"]
    lines, failed = verify.timing_lines("openmpi", 0.01, 2 << 20, 2, 2, 10**10)
    assert not failed
    lines, failed = verify.timing_lines("mpich", 0.001, 2 << 20, 2, 2, 10**9)
    assert failed and lines[-1] == "verify: mpich: FAILED: faster than the link allows: traffic is not shaped"


def test_reference_lines():
    assert verify.reference_lines(None, 1 << 20, 10**9, "1500", 3, "none") == [
        "verify: TCP reference h0<->h1: not measured (the transfer did not run)",
        "verify: TCP ring reference over 3 hosts: not measured (the transfer did not run)"]
    lines = verify.reference_lines(0.0179, 2 << 20, 10**9, "1500", 2, "")
    assert lines == ["verify: TCP reference h0<->h1: 2097152 B each way at once over one plain TCP connection in "
                     "17.9 ms = 1.067 x the link bound at MTU 1500 (headers and acknowledgements share the link)"]
    assert verify.reference_lines(0.1, 1 << 20, 10**9, "9000", 3, "0.0118")[1].endswith(
        "in 11.8 ms = 1.055 x the allreduce bound of 1048576 B")


def test_probe_output():
    out = ("rank 0 host rt-h0 node 0\nnoise\nprobe: node split matches hosts\n"
           "probe: allreduce bytes=2097152 reps=2 seconds=0.0400 other=1\n"
           "probe: point-to-point hosts=2 bytes=2097152 stream_seconds=0.0200 steps_seconds=0.0400")
    assert verify.probe_lines("mpich", out) == ["  mpich: rank 0 host rt-h0 node 0",
                                                "  mpich: probe: node split matches hosts",
                                                "  mpich: probe: allreduce bytes=2097152 reps=2 seconds=0.0400 other=1"]
    assert verify.node_split_ok(out) and not verify.node_split_ok("probe: node split differs")
    assert verify.allreduce_seconds(out) == 0.04 and verify.allreduce_seconds("x") is None
    assert verify.p2p_line("mpich", out, 10**9) == (
        "  mpich: point-to-point among one rank per host, the bound's bytes: one stream 20.0 ms = 1.192 x the "
        "bound, 2 blocking ring steps 40.0 ms = 2.384 x")
    assert verify.p2p_line("mpich", "probe: point-to-point junk", 10**9) is None


def test_ring_seconds():
    # per round, the slowest host; then the median over the rounds
    assert verify.ring_seconds(["1 5 3", "2 1 4", "0.5 0.5 9"]) == 5.0
    assert verify.ring_seconds(["1 2", "3"]) == 3.0
