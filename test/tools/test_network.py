"""arshim simulate --network (tools/arshim/network.py) and the libraries' algorithms of the native configurations
(tools/arshim/library_algorithms.py): the built-in networks' SMPI settings, calibration files good and hostile (one
line naming the file and the key, exit status 2), the shipped calibrations, the cost model reading the table at the
size of every message it costs (the built arshim-policy, ARSHIM_POLICY_PROGRAM), and the algorithm MPICH 4.0.2 and
Open MPI 4.1 pick per size and communicator against their published thresholds. No SimGrid needed (a fake smpirun)."""
import csv
import json
import os
import subprocess
import sys

import pytest

from arshim import library_algorithms as algorithms
from arshim import network as networks
from arshim import simulate

ARSHIM = os.path.join(os.path.dirname(simulate.__file__), "..", "arshim.py")
SHIPPED = os.path.join(os.path.dirname(simulate.__file__), "..", "simulate", "networks")
POLICY_PROGRAM = os.environ.get("ARSHIM_POLICY_PROGRAM")
needs_policy_program = pytest.mark.skipif(not POLICY_PROGRAM or not os.access(POLICY_PROGRAM, os.X_OK),
                                          reason="arshim-policy not built (ARSHIM_POLICY_PROGRAM)")


def run(*args):
    done = subprocess.run([sys.executable, ARSHIM, "simulate", *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


# ---- the built-in networks ----------------------------------------------------------------------------------------

def test_ideal_is_the_link_bound_world():
    cfg = networks.network("ideal").smpi_config()
    assert cfg == ["--cfg=smpi/bw-factor:0:1.0", "--cfg=smpi/lat-factor:0:1.0", "--cfg=network/crosstraffic:0"]
    ideal = networks.network("ideal")
    assert ideal.bandwidth_share() == 1.0 and ideal.overhead(1 << 20) == 0
    assert ideal.sections() == [[0, 1.0, 1.0, 0.0, 0.0]]


def test_smpi_is_what_simulate_passed_before():
    smpi = networks.network("smpi")
    cfg = smpi.smpi_config()
    assert cfg[0].startswith("--cfg=smpi/bw-factor:0:0.812084;257:0.338112;") and cfg[0].endswith(";65472:0.940694")
    assert cfg[1].endswith("15424:3.48845;65472:11.6436") and cfg[2] == "--cfg=network/crosstraffic:1"
    assert smpi.bandwidth_share() == pytest.approx(1 / 1.05)
    assert networks.factor_at(smpi.lat_factor, 4 << 20) == 11.6436
    assert networks.factor_at(smpi.lat_factor, 100) == 2.01467


# ---- calibration files ---------------------------------------------------------------------------------------------

GOOD = """name = "lab"
description = "a test network"
crosstraffic = false
lat_factor = [[0, 1.5], [1000, 3.0]]
bw_factor = [[0, 0.5], [4000, 0.9]]
os = [[0, 1e-6, 0.0], [2000, 2e-6, 1e-10]]
or = [[0, 5e-7, 0.0]]
ois = [[0, 3e-7, 0.0]]
copy_bytes_per_s = 1e10
reduce_bytes_per_s = 4e9
[platform]
link_gbit = 25
latency_us = 0.7
"""


def test_calibration_file_is_read_whole(tmp_path):
    path = tmp_path / "lab.toml"
    path.write_text(GOOD)
    lab = networks.network(str(path))
    assert lab.name == "lab" and lab.source == str(path) and lab.crosstraffic is False
    assert lab.copy_bytes_per_s == 1e10 and lab.reduce_bytes_per_s == 4e9
    assert lab.platform == {"link_gbit": "25", "latency_us": "0.7"}
    cfg = lab.smpi_config()
    assert "--cfg=smpi/lat-factor:0:1.5;1000:3.0" in cfg and "--cfg=network/crosstraffic:0" in cfg
    assert "--cfg=smpi/os:0:1e-06:0.0;2000:2e-06:1e-10" in cfg and "--cfg=smpi/ois:0:3e-07:0.0" in cfg
    # smpi/os: the first section also below its bound, then above each bound (smpi::Host::osend).
    assert lab.overhead(100) == pytest.approx(1e-6 + 5e-7)
    assert lab.overhead(3000) == pytest.approx(2e-6 + 3000e-10 + 5e-7)
    # The model's table: one section per bound of any table, the factors from the bound on, the overheads above it.
    # (A factor's bound less the 16 bytes SMPI adds to a message's size when it compares, network.SMPI_EXTRA_BYTES.)
    assert lab.sections() == [[0, 1.5, 0.5, pytest.approx(1.5e-6), 0.0], [984, 3.0, 0.5, pytest.approx(1.5e-6), 0.0],
                              [2000, 3.0, 0.5, pytest.approx(2.5e-6), 1e-10], [3984, 3.0, 0.9, pytest.approx(2.5e-6),
                                                                              1e-10]]
    assert networks.factor_at(lab.lat_factor, 984) == 1.5 and networks.factor_at(lab.lat_factor, 985) == 3.0


def test_shipped_calibrations():
    edr = networks.network("edr")
    assert edr.name == "edr" and not edr.crosstraffic
    assert edr.platform["link_gbit"] == "100" and edr.platform["latency_us"] == "0.5"
    # Published 4 MiB: 24 610 MB/s both ways, half each way, of 12 500 MB/s.
    assert networks.factor_at(edr.bw_factor, 4 << 20) == pytest.approx(24610 / 2 / 12500, abs=1e-3)
    assert edr.overhead(8) == pytest.approx(2 * 1.53e-7)
    # One-way 8 B in SMPI's terms: the route's 1 us x factor + overheads = the published 0.98 us (+-0.01).
    assert 1.0 * networks.factor_at(edr.lat_factor, 8) + edr.overhead(8) * 1e6 == pytest.approx(0.98, abs=0.01)
    # The rig's calibration is --preset rig under --network smpi: the same factors and platform.
    rig = networks.network("rig")
    assert rig.lat_factor == networks.SMPI.lat_factor and rig.bw_factor == networks.SMPI.bw_factor
    assert rig.crosstraffic and rig.smpi_config() == networks.SMPI.smpi_config()
    assert {k: float(v) for k, v in rig.platform.items()} == {k: float(v) for k, v in simulate.PRESETS["rig"].items()}
    a = simulate.platform_options(simulate.build_parser().parse_args(["--nodes", "2", "--preset", "rig"]))
    args = simulate.build_parser().parse_args(["--nodes", "2", "--network", "rig"])
    args.network_model = networks.network(args.network)
    assert simulate.platform_options(args) == a


def test_explicit_options_beat_the_calibrations_platform(tmp_path):
    path = tmp_path / "lab.toml"
    path.write_text(GOOD)
    args = simulate.build_parser().parse_args(["--nodes", "2", "--network", str(path), "--latency-us", "3"])
    args.network_model = networks.network(args.network)
    values = simulate.platform_options(args)
    assert values["link_gbit"] == 25 and values["latency_us"] == 3 and values["loopback_gbytes"] == 20


@pytest.mark.parametrize("text,words", [
    ("lat_factor = [[0, 1.0]]\nspeed = 3\n", "unknown key 'speed'; allowed: name, description"),
    ("name = \"x\"\n", "needs lat_factor or bw_factor"),
    ("lat_factor = [[0, -1.0]]\n", "key lat_factor: -1.0 is not a number above 0"),
    ("lat_factor = [[0, \"fast\"]]\n", "key lat_factor: 'fast' is not a number"),
    ("lat_factor = [[0, 1.0, 2.0]]\n", "key lat_factor: every section is [above bytes, factor]"),
    ("lat_factor = [[100, 1.0], [10, 2.0]]\n", "key lat_factor: section bounds are whole byte counts in ascending"),
    ("lat_factor = [[0.5, 1.0]]\n", "section bounds are whole byte counts"),
    ("bw_factor = [[0, nan]]\n", "key bw_factor: nan is not a number"),
    ("bw_factor = [[0, inf]]\n", "key bw_factor: inf is not a number"),
    ("bw_factor = 3\n", "key bw_factor: a list of at most 32 sections"),
    ("bw_factor = [[0, 1.0]]\nos = [[0, 2.0, 0.0]]\n", "key os: 2.0 is not a number at least 0 and at most 1"),
    ("bw_factor = [[0, 1.0]]\ncrosstraffic = 1\n", "key crosstraffic: true or false"),
    ("bw_factor = [[0, 1.0]]\ncopy_bytes_per_s = 0\n", "key copy_bytes_per_s: 0 is not a number above 0"),
    ("bw_factor = [[0, 1.0]]\nname = \"smpi\"\n", "key name: one line of text"),
    ("bw_factor = [[0, 1.0]]\n[platform]\nlink_gbps = 3\n", "unknown key platform.link_gbps; allowed: link_gbit"),
    ("bw_factor = [[0, 1.0]]\n[platform]\nbandwidth_efficiency = 2\n", "key platform.bandwidth_efficiency: 2"),
    ("bw_factor = [[0, 1.0]\n", "not TOML"),
    ("lat_factor = " + "[" * 5000 + "]" * 5000 + "\n", "--network"),
    ("x = 1" + "0" * 5000 + "\n", "--network"),
    ("lat_factor = [" + ", ".join(f"[{i}, 1.0]" for i in range(40)) + "]\n", "a list of at most 32 sections"),
])
def test_bad_calibration_is_one_line_naming_file_and_key(tmp_path, text, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    rc, out, err = run("--nodes", "2", "--network", str(path), "--out", str(tmp_path / "o.csv"))
    lines = err.splitlines()
    assert rc == 2 and out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"arshim simulate: --network {path}") and words in lines[0], lines[0]
    assert not (tmp_path / "o.csv").exists()


def test_hostile_calibration_files(tmp_path):
    os.mkfifo(tmp_path / "fifo.toml")
    (tmp_path / "big.toml").write_bytes(b"# " + b"x" * (300 << 10) + b"\n")
    (tmp_path / "bytes.toml").write_bytes(b"name = \"\xff\"\n")
    (tmp_path / "dir.toml").mkdir()
    (tmp_path / "link.toml").symlink_to("/dev/zero")
    for name, words in (("fifo.toml", "a FIFO, not a regular file"), ("big.toml", "larger than 262144 bytes"),
                        ("bytes.toml", "not UTF-8"), ("dir.toml", "a directory, not a regular file"),
                        ("link.toml", "a character device, not a regular file"),
                        ("absent.toml", "cannot read"), ("unknown-name", "cannot read")):
        rc, out, err = run("--nodes", "2", "--network", str(tmp_path / name), "--out", str(tmp_path / "o.csv"))
        lines = err.splitlines()
        assert rc == 2 and len(lines) == 1 and words in lines[0] and "--network" in lines[0], (name, err)
    rc, _, err = run("--nodes", "2", "--network", "fastest", "--out", str(tmp_path / "o.csv"))
    assert rc == 2 and "--network fastest: cannot read" in err and "give ideal, smpi or a calibration file" in err


# ---- the smpirun command and the CSV -----------------------------------------------------------------------------

@pytest.fixture
def fake_sim(tmp_path):
    log = tmp_path / "calls.log"
    smpirun = tmp_path / "smpirun"
    smpirun.write_text("#!/bin/sh\n"
                       f'echo "$*" >> "{log}"\n'
                       'while [ "$1" != "--iterations" ]; do shift; done\nshift 2\n'
                       'for s in "$@"; do echo "probe $s 100.0"; done\n')
    smpirun.chmod(0o755)
    probes = []
    for kind in ("native", "arshim"):
        (tmp_path / f"probe-{kind}").write_text("")
        probes += [f"--probe-{kind}", str(tmp_path / f"probe-{kind}")]
    return {"log": log, "args": probes + ["--smpirun", str(smpirun), "--policy-program", str(POLICY_PROGRAM)]}


@needs_policy_program
def test_native_mpich_runs_mpichs_algorithm_per_size_on_the_network(fake_sim, tmp_path, capsys):
    out = tmp_path / "s.csv"
    rc = simulate.main(fake_sim["args"] + ["--nodes", "16", "--ppn", "4", "--sizes", "8,64K,4M", "--network", "ideal",
                                           "--configs", "native-mpich,native-ompi,arshim-default-mpich",
                                           "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    assert "network ideal (latency and bandwidth factors 1" in capsys.readouterr().err
    calls = fake_sim["log"].read_text().splitlines()
    assert all("--cfg=smpi/lat-factor:0:1.0" in c and "--cfg=network/crosstraffic:0" in c for c in calls)
    mpich = [c for c in calls if "coll-selector:mpich" in c and "probe-native" in c]
    # 8 B: recursive doubling among the node roots; 64 KiB and 4 MiB: Rabenseifner among them, one run each.
    assert len(mpich) == 2
    assert any("--cfg=smpi/allreduce:smp_rdb" in c and c.endswith(" 8") for c in mpich)
    assert any("--cfg=smpi/allreduce:smp_rsag_rab" in c and c.endswith(" 65536 4194304") for c in mpich)
    # Open MPI 4.1's rules are SimGrid's ompi selector's here: nothing forced.
    assert not any("smpi/allreduce" in c for c in calls if "coll-selector:ompi" in c)
    # ARShim's library calls follow its route (the model's decision): at 8 B the latency path's node leaders run
    # MPICH's recursive doubling among 16 nodes; from 64 KiB the built-in table's segments are the SMPI build's own
    # schedule, no blocking call, so nothing is forced.
    arshim = [c for c in calls if "probe-arshim" in c]
    assert any("--cfg=smpi/allreduce:rdb" in c and c.endswith(" 8") for c in arshim)
    assert not any("smpi/allreduce" in c for c in arshim if not c.endswith(" 8"))
    with open(out) as f:
        rows = {(r["bytes"], r["config"]): r for r in csv.DictReader(f)}
    assert {r["network"] for r in rows.values()} == {"ideal"}
    assert rows[("8", "native-mpich")]["algorithm"].startswith("smp_rdb: MPICH 4.0.2 ch4 alpha")
    assert rows[("4194304", "native-ompi")]["algorithm"] == "Open MPI 4.1 Rabenseifner (selector: rab_rdb)"
    assert rows[("8", "arshim-default-mpich")]["algorithm"].startswith("rdb: library calls: MPICH 4.0.2 ch4 beta")
    assert rows[("4194304", "arshim-default-mpich")]["algorithm"] == ""


@needs_policy_program
def test_arshim_library_calls_at_one_rank_per_node_run_mpichs_algorithm(fake_sim, tmp_path, capsys):
    # One rank per node: ARShim's library calls are on communicators of one rank per node, so under mpich they get
    # MPICH 4.0.2's choice too; under ompi the selector.
    out = tmp_path / "s.csv"
    rc = simulate.main(fake_sim["args"] + ["--nodes", "16", "--ppn", "1", "--sizes", "8,1M", "--configs",
                                           "arshim-default-mpich,arshim-default-ompi", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    calls = [c for c in fake_sim["log"].read_text().splitlines() if "probe-arshim" in c]
    assert any("--cfg=smpi/allreduce:rdb" in c and c.endswith(" 8") for c in calls if "selector:mpich" in c)
    assert any("--cfg=smpi/allreduce:rab_rdb" in c and c.endswith(" 1048576") for c in calls if "selector:mpich" in c)
    # Under ompi the selector decides, except where Open MPI 4.1 falls back to recursive doubling (its segmented ring
    # on 8 bytes over 16 ranks), which SimGrid's selector does not: forced as for native-ompi.
    assert any("--cfg=smpi/allreduce:rdb" in c and c.endswith(" 8") for c in calls if "selector:ompi" in c)
    assert not any("smpi/allreduce" in c and c.endswith(" 1048576") for c in calls if "selector:ompi" in c)
    with open(out) as f:
        rows = {(r["bytes"], r["config"]): r for r in csv.DictReader(f)}
    assert rows[("1048576", "arshim-default-mpich")]["algorithm"].startswith("rab_rdb: library calls: MPICH 4.0.2")
    assert rows[("1048576", "arshim-default-ompi")]["algorithm"] == ""
    assert rows[("8", "arshim-default-ompi")]["algorithm"].startswith("rdb: library calls: Open MPI 4.1")
    assert simulate.library_calls_algorithm("mpich", 16, 4, 1 << 20) == (None, "")
    # With several ranks per node the route decides (the model's decision for the configuration at that size): the
    # leaders' partitions among one rank per node take MPICH's composition beta, the library's route its own choice,
    # a schedule (pipelined, multi-leader pieces) no blocking call.
    calls = lambda nbytes, decision: simulate.library_calls_algorithm("mpich", 16, 4, nbytes, decision)[0]  # noqa
    assert calls(4 << 20, "multileader leaders=4 pipeline_k=1 kernel=native") == "rab_rdb"
    assert calls(64, "multileader leaders=8 pipeline_k=1 kernel=native") == "rdb"      # 2 doubles < 16 nodes
    assert calls(64, "latency kernel=native") == "rdb" and calls(4096, "latency kernel=native") == "rab_rdb"
    assert calls(4 << 20, "native") == "smp_rsag_rab"
    assert calls(4 << 20, "pipelined segment_bytes=1M window=8 kernel=native") is None
    assert calls(4 << 20, "multileader leaders=4 pipeline_k=4 kernel=native") is None
    assert simulate.library_calls_algorithm("ompi", 16, 4, 4 << 20, "native") == (None, "")
    assert simulate.library_calls_algorithm("ompi", 16, 4, 8, "latency kernel=native")[0] == "rdb"  # 16 leaders


def test_the_tuners_simulated_library_runs_the_librarys_algorithms(fake_sim, tmp_path):
    # arshim tune --simulate measures the library's allreduce as arshim simulate's natives run it.
    probes = {"native": str(tmp_path / "probe-native"), "arshim": str(tmp_path / "probe-arshim")}
    smpirun = fake_sim["args"][fake_sim["args"].index("--smpirun") + 1]
    cluster = simulate.SimulatedCluster("--nodes 2 --ppn 2 --network ideal", probes, smpirun=smpirun)
    try:
        times, _ = cluster.run("mpich", {}, [8, 1 << 20], with_arshim=False)
        assert times == {8: 100.0, 1 << 20: 100.0}
        cluster.run("mpich", {}, [1 << 20], one_per_host=True, with_arshim=False)
        cluster.run("mpich", {"ARSHIM_PATH": "multileader"}, [1 << 20], one_per_host=True)
        cluster.run("ompi", {}, [1 << 20], with_arshim=False)
    finally:
        cluster.close()
    calls = fake_sim["log"].read_text().splitlines()
    assert "--cfg=smpi/allreduce:smp_rdb" in calls[0] and calls[0].endswith(" 8") and "-np 4" in calls[0]
    assert "--cfg=smpi/allreduce:smp_rsag_rab" in calls[1] and calls[1].endswith(" 1048576")
    assert "--cfg=smpi/allreduce:rab_rdb" in calls[2] and "-np 2" in calls[2]   # one rank per host: beta
    assert "--cfg=smpi/allreduce:rab_rdb" in calls[3] and "probe-arshim" in calls[3]  # its library calls, too
    assert "smpi/allreduce" not in calls[4] and "coll-selector:ompi" in calls[4]
    assert all("--cfg=network/crosstraffic:0" in c for c in calls)


@needs_policy_program
def test_model_reads_the_table_per_message_size(tmp_path):
    # 4 nodes x 1, 1 MiB, MPICH: Rabenseifner, steps of 512 KiB (distance 1) and 256 KiB (distance 2), each twice.
    # A table that charges messages above 300 000 bytes 10 x the latency, half the bandwidth and 1 us more: only the
    # 512 KiB steps pay it. Folded into one latency and bandwidth (the model before --network) no number fits both.
    n = 1 << 20
    shape = {"nodes": 4, "ppn": 1, "bytes": n,
             "params": {"alpha": 1e-6, "net_bw": 1e9, "gamma": 1e18, "copy_bw": 1e10, "intra_latency": 1e-7,
                        "stream_gain": 1},
             "network": [[0, 1.0, 1.0, 0.0, 0.0], [300000, 10.0, 0.5, 1e-6, 0.0]]}
    done = subprocess.run([POLICY_PROGRAM, "predict", "--shapes", "-", "--mpi", "mpich"],
                          input=json.dumps({"shapes": [shape]}), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)["predictions"][0]["flavors"]["mpich"]["native_us"]
    big = 10e-6 + 1e-6 + (n / 2) / (1e9 * 0.5)
    small = 1e-6 + (n / 4) / 1e9
    assert got == pytest.approx(2 * (big + small) * 1e6, rel=1e-9)
    # Without the table: plain alpha-beta.
    shape.pop("network")
    done = subprocess.run([POLICY_PROGRAM, "predict", "--shapes", "-", "--mpi", "mpich"],
                          input=json.dumps({"shapes": [shape]}), capture_output=True, text=True, timeout=60)
    plain = json.loads(done.stdout)["predictions"][0]["flavors"]["mpich"]["native_us"]
    assert plain == pytest.approx(2 * (2e-6 + 0.75 * n / 1e9) * 1e6, rel=1e-9)
    # A bad table is one line.
    shape["network"] = [[10, 1.0, 1.0, 0, 0], [5, 1.0, 1.0, 0, 0]]
    done = subprocess.run([POLICY_PROGRAM, "predict", "--shapes", "-"], input=json.dumps({"shapes": [shape]}),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "ascending bounds" in done.stderr


@needs_policy_program
def test_model_column_under_each_network(fake_sim, tmp_path, capsys):
    # 2 x 1, 1 MiB, MPICH: Rabenseifner, two exchanges of 512 KiB. Ideal: 2 (2 us + n/2 / 12.5 GB/s). EDR: its
    # table above 256 KiB (latency 5.7, bandwidth 0.975) and its 0.306 us of overheads per message, 0.5 us links.
    # Both: a reduction of n/2 at the rate the ranks are charged at (the default; neither network gives one).
    n = 1 << 20
    reduce = n / 2 / simulate.DEFAULT_REDUCE_BYTES_PER_S
    for name, expected in (("ideal", 2 * (2e-6 + n / 2 / 12.5e9) + reduce),
                           ("edr", 2 * (1e-6 * 5.7 + 3.06e-7 + n / 2 / (12.5e9 * 0.975)) + reduce)):
        out = tmp_path / f"{name}.csv"
        rc = simulate.main(fake_sim["args"] + ["--nodes", "2", "--ppn", "1", "--sizes", "1M", "--network", name,
                                               "--configs", "native-mpich", "--out", str(out)])
        assert rc == 0, capsys.readouterr().err
        with open(out) as f:
            row = next(csv.DictReader(f))
        assert row["network"] == name and row["algorithm"].startswith("rab_rdb: MPICH 4.0.2 ch4 beta")
        assert float(row["model_us"]) == pytest.approx(expected * 1e6, rel=1e-4), name


# ---- the libraries' algorithms -------------------------------------------------------------------------------------

# MPICH 4.0.2 (maint/tuning/coll/ch4/generic.json and mpir/generic.json, as compiled into libmpich.so.12.2.2):
# one node -> composition gamma (POSIX release_gather); one rank per node -> MPIR on the whole communicator;
# otherwise composition alpha, MPIR among the node roots. MPIR: recursive doubling for <= 8 bytes or count <
# pof2(ranks), Rabenseifner (reduce_scatter_allgather) otherwise. The probe reduces doubles (8 bytes).
@pytest.mark.parametrize("nodes,ppn,nbytes,expected", [
    (64, 1, 8, "rdb"),            # <= 8 bytes
    (64, 1, 16, "rdb"),           # count 2 < 64
    (64, 1, 504, "rdb"),          # count 63 < 64
    (64, 1, 512, "rab_rdb"),      # count 64 = pof2(64)
    (64, 1, 4 << 20, "rab_rdb"),
    (2, 1, 16, "rab_rdb"),        # count 2 >= pof2(2), 16 > 8
    (2, 1, 8, "rdb"),
    (48, 1, 256, "rab_rdb"),      # count 32 = pof2(48)
    (48, 1, 248, "rdb"),          # count 31
    (16, 4, 8, "smp_rdb"),        # alpha, recursive doubling among 16 roots
    (16, 4, 120, "smp_rdb"),      # count 15 < 16
    (16, 4, 128, "smp_rsag_rab"),  # count 16: Rabenseifner among the roots; 64 ranks, a power of two
    (16, 4, 4 << 20, "smp_rsag_rab"),
    (16, 28, 4 << 20, "rab_rdb"),  # 28 per host: SimGrid's smp_* deadlock; flat Rabenseifner stands in
    (16, 28, 8, "mvapich2_two_level"),  # ... and two levels with recursive doubling among the leaders
    (16, 28, 120, "mvapich2_two_level"),  # count 15 < 16
    (16, 12, 128, "rab_rdb"),
    (3, 4, 16, "smp_rsag"),       # count 2 >= pof2(3 roots) = 2; 12 ranks, smp_rsag_rab refuses: the ring
    (3, 4, 8, "smp_rdb"),
    (1, 16, 4 << 20, "smp_rdb"),  # gamma: one node
    (1, 2, 8, "smp_rdb"),
])
def test_mpich_402_algorithm_per_size_and_communicator(nodes, ppn, nbytes, expected):
    assert algorithms.mpich_402(nodes, ppn, nbytes)[0] == expected


# Open MPI 4.1 coll/tuned fixed rules (commutative): the thresholds of coll_tuned_decision_fixed.c, and its fallbacks
# to recursive doubling (ring: count < size; Rabenseifner: count < pof2).
@pytest.mark.parametrize("ranks,nbytes,rule,forced", [
    (64, 8, 3, None), (64, 262143, 3, None), (64, 262144, 6, None),
    (15, 8191, 3, None), (15, 8192, 6, None), (16, 4095, 3, None), (16, 4096, 6, None),
    (448, 4095, 2, None), (448, 4096, 6, None),
    (1024, 2047, 2, None), (1024, 2048, 3, None), (1024, 16384, 6, None),
    (2, 4, 4, "rdb"),             # ring with count 0 < 2
    (2, 65536, 5, None), (2, 262144, 6, None),
    (24, 32, 5, "rdb"),           # segmented ring, count 4 < 24
    (48, 8192, 6, None),
    (4, 16, 3, None),             # 4..7 ranks: ring below 16 bytes
    (4, 8, 4, "rdb"),             # count 1 < 4
])
def test_ompi_41_rules(ranks, nbytes, rule, forced):
    assert algorithms.ompi_41_rule(ranks, nbytes) == rule
    assert algorithms.ompi_41(ranks, nbytes)[0] == forced
