"""arshim simulate (tools/arshim/simulate.py): the platform generator, the link bound, --resume's reading, the cost
model's machine derived from the platform, the model_us column and the arshim-tuned configurations over a fake
smpirun (with the built arshim-policy, ARSHIM_POLICY_PROGRAM), and bad input (one line on stderr, exit status 2)
through `arshim simulate` as a program. No MPI, no SimGrid needed."""
import csv
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from arshim import simulate

ARSHIM = os.path.join(os.path.dirname(simulate.__file__), "..", "arshim.py")


def cluster(xml_text):
    root = ET.fromstring(xml_text.split("\n", 2)[2])  # past the XML declaration and the DOCTYPE
    assert root.tag == "platform" and root.get("version") == "4.1"
    clusters = root.findall("cluster")
    assert len(clusters) == 1
    return clusters[0].attrib


@pytest.mark.parametrize("topology", simulate.TOPOLOGIES)
@pytest.mark.parametrize("nodes,ppn", [(1, 1), (4, 4), (16, 1), (64, 16), (1024, 4)])
def test_platform_hosts_cores_links(topology, nodes, ppn):
    c = cluster(simulate.platform_xml(nodes, ppn, 100, 1.5, topology))
    assert c["prefix"] == "node-" and c["suffix"] == ""
    assert c["radical"] == f"0-{nodes - 1}"
    assert c["core"] == str(ppn)
    assert c["bw"] == "12.5GBps" and c["lat"] == "1.5us"
    if topology == "flat":
        assert "topology" not in c and c["bb_bw"] == f"{12.5 * nodes:g}GBps"
    elif topology == "fat-tree":
        assert c["topology"] == "FAT_TREE"
    else:
        assert c["topology"] == "TORUS"


def test_link_speed_in_bytes():
    assert cluster(simulate.platform_xml(2, 1, 10, 1, "flat"))["bw"] == "1.25GBps"
    assert cluster(simulate.platform_xml(2, 1, 1, 20, "flat"))["bw"] == "0.125GBps"


@pytest.mark.parametrize("nodes", [1, 2, 4, 7, 12, 16, 17, 64, 100, 256, 1000, 1024, 4096])
def test_fat_tree_covers_every_host(nodes):
    levels, children, parents, links = simulate.fat_tree_parameters(nodes).split(";")
    children = [int(x) for x in children.split(",")]
    parents = [int(x) for x in parents.split(",")]
    assert int(levels) == len(children) == len(parents) == len(links.split(","))
    product = 1
    for c in children:
        product *= c
    assert product == nodes
    assert all(p >= 1 for p in parents)
    if len(children) == 2:  # non-blocking: as many spines as hosts per leaf
        assert parents[1] == children[0] and children[1] >= 2


@pytest.mark.parametrize("nodes,expected", [(16, "4,4"), (64, "4,4,4"), (12, "3,4"), (7, "7"), (1024, "8,8,16"),
                                            (256, "4,8,8"), (2, "2"), (1, "1")])
def test_torus_dimensions(nodes, expected):
    dims = simulate.torus_dimensions(nodes)
    product = 1
    for d in dims.split(","):
        product *= int(d)
    assert product == nodes
    assert dims == expected


def test_unknown_topology_refused():
    with pytest.raises(simulate.SimulateError, match="unknown; allowed: flat, fat-tree, torus"):
        simulate.platform_xml(4, 4, 100, 1, "hypercube")
    with pytest.raises(simulate.SimulateError):
        simulate.platform_xml(0, 4, 100, 1, "flat")


def test_hostfile():
    assert simulate.hostfile_text(3, 4) == "node-0:4\nnode-1:4\nnode-2:4\n"


def test_bound():
    assert simulate.bound_us(1, 1 << 20, 100) is None
    # 2 nodes, 1 MB at 100 Gbit/s (12.5 GB/s): 2 x 1/2 x 1e6 / 12.5e9 s = 80 us
    assert simulate.bound_us(2, 1_000_000, 100) == pytest.approx(80.0)
    assert simulate.bound_us(4, 4 << 20, 10) == pytest.approx(2 * 3 / 4 * (4 << 20) / 1.25e9 * 1e6)


def test_resume_reads_done_rows(tmp_path):
    out = tmp_path / "s.csv"
    out.write_text("nodes,ppn,bytes,config,sim_us,model_us,bound_us,network,algorithm\n"
                   "4,4,8,native-mpich,11.1,,0.001,smpi,rdb: x\n4,4,65536,native-mpich,81.2,,7.9,ideal,\n4,4,8,cut")
    assert simulate.read_done(str(out)) == {("4", "4", "8", "native-mpich", "smpi"),
                                            ("4", "4", "65536", "native-mpich", "ideal")}
    # A CSV from before --network (no network column) is not resumed: its rows name no network.
    (tmp_path / "old.csv").write_text("nodes,ppn,bytes,config,sim_us,model_us,bound_us\n4,4,8,native-mpich,1,,1\n")
    with pytest.raises(simulate.SimulateError, match="names no network"):
        simulate.read_done(str(tmp_path / "old.csv"))
    assert simulate.read_done(str(tmp_path / "absent.csv")) == set()
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(simulate.SimulateError, match="not a CSV of arshim simulate"):
        simulate.read_done(str(tmp_path / "other.csv"))


def run(*args, env=None):
    done = subprocess.run([sys.executable, ARSHIM, "simulate", *args], capture_output=True, text=True, timeout=60,
                          env=env, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


def one_line_refusal(rc, out, err, words):
    assert rc == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("arshim simulate: ") and words in lines[0]


def test_bad_topology(tmp_path):
    one_line_refusal(*run("--nodes", "4", "--topology", "ring", "--out", str(tmp_path / "o.csv")),
                     "--topology 'ring': unknown")


@pytest.mark.parametrize("value", ["0", "-3", "x", "100000000"])
def test_bad_node_count(tmp_path, value):
    one_line_refusal(*run("--nodes", value, "--out", str(tmp_path / "o.csv")), "--nodes")


def test_bad_sizes_and_configs(tmp_path):
    one_line_refusal(*run("--nodes", "2", "--sizes", "8,lots", "--out", str(tmp_path / "o.csv")), "--sizes")
    one_line_refusal(*run("--nodes", "2", "--configs", "native-mpich,fastest", "--out", str(tmp_path / "o.csv")),
                     "--configs: unknown fastest")


def test_missing_smpirun(tmp_path):
    one_line_refusal(*run("--nodes", "2", "--smpirun", str(tmp_path / "no-smpirun"), "--out", str(tmp_path / "o.csv")),
                     "not found")
    env = dict(os.environ, PATH=str(tmp_path))  # no smpirun on PATH
    one_line_refusal(*run("--nodes", "2", "--out", str(tmp_path / "o.csv"), env=env), "smpirun not found")
    assert not (tmp_path / "o.csv").exists()


def test_existing_output_needs_resume(tmp_path):
    fake = tmp_path / "smpirun"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    out = tmp_path / "o.csv"
    out.write_text("something else\n")
    one_line_refusal(*run("--nodes", "2", "--smpirun", str(fake), "--out", str(out)), "pass --resume")
    one_line_refusal(*run("--nodes", "2", "--smpirun", str(fake), "--out", str(out), "--resume"),
                     "not a CSV of arshim simulate")


def test_rows_are_never_appended_through_a_planted_symlink_or_to_a_fifo(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    planted = tmp_path / "sweep.csv"
    planted.symlink_to(victim)
    with pytest.raises(simulate.SimulateError, match="cannot append"):
        simulate.append_rows(str(planted))
    assert victim.read_text() == "precious\n"
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(simulate.SimulateError):
        simulate.append_rows(str(fifo))
    regular = tmp_path / "ok.csv"
    regular.write_text("a\n")
    with simulate.append_rows(str(regular)) as f:
        f.write("b\n")
    assert regular.read_text() == "a\nb\n"


# ---- the platform's new parameters, and the model's machine ------------------------------------------------------

def test_efficiency_and_loopback_in_the_platform():
    c = cluster(simulate.platform_xml(4, 2, 1, 1.6, "flat", efficiency=0.93, loopback_gbytes=0.27,
                                      loopback_latency_us=3.2))
    assert c["bw"] == "0.11625GBps"                       # 1 Gbit/s x 0.93 of payload
    assert c["bb_bw"] == "0.465GBps"                      # the backbone as wide as the 4 links at that rate
    assert c["loopback_bw"] == "0.27GBps" and c["loopback_lat"] == "3.2us"
    assert c["lat"] == "1.6us"
    defaults = cluster(simulate.platform_xml(4, 2, 1, 1, "flat"))
    assert defaults["bw"] == "0.125GBps" and defaults["loopback_bw"] == "20GBps" and defaults["loopback_lat"] == "0.2us"
    for bad in (0, -0.5, 1.5):
        with pytest.raises(simulate.SimulateError, match="bandwidth efficiency"):
            simulate.platform_xml(2, 1, 1, 1, "flat", efficiency=bad)


def test_smpi_factors_by_size():
    # SimGrid 3.32's tables: from 64 KiB - 64 bytes, 0.940694 of the bandwidth and 11.6436 x the latency; SMPI
    # compares a message's size + 16 bytes with the bound (measured, test/smpi/network_check.py).
    assert simulate.smpi_factor(simulate.SMPI_BW_FACTOR, 1 << 20) == 0.940694
    assert simulate.smpi_factor(simulate.SMPI_LAT_FACTOR, 65457) == 11.6436
    assert simulate.smpi_factor(simulate.SMPI_LAT_FACTOR, 65456) == 3.48845
    assert simulate.smpi_factor(simulate.SMPI_LAT_FACTOR, 8) == 2.01467
    assert simulate.smpi_factor(simulate.SMPI_BW_FACTOR, 0) == 0.812084
    assert simulate.factor_text(simulate.SMPI_LAT_FACTOR).startswith("0:2.01467;257:1.95341;")


@pytest.mark.parametrize("nodes,topology,links", [(2, "flat", 2), (1024, "flat", 2), (16, "fat-tree", 2),
                                                  (32, "fat-tree", 2 + 2 * 16 / 31), (2, "torus", 1),
                                                  (16, "torus", 2 * 16 / 15)])
def test_route_links(nodes, topology, links):
    assert simulate.route_links(nodes, topology) == pytest.approx(links)


def test_model_params_from_the_platform():
    # The route and the link raw; SMPI's factors go with them as the table the model reads per message.
    p = simulate.model_params(1 << 20, 2, 1, 1, 1, "flat")
    assert p["alpha"] == pytest.approx(2 * 1e-6)                      # two links of 1 us
    assert p["net_bw"] == pytest.approx(125e6 / 1.05)                 # cross traffic's acknowledgements
    # Computation at the rates the simulation charges (compute_settings gives the ranks the same), not free.
    assert p["stream_gain"] == 1 and p["gamma"] == simulate.DEFAULT_REDUCE_BYTES_PER_S
    assert p["intra_latency"] == pytest.approx(0.2e-6) and p["copy_bw"] == simulate.DEFAULT_COPY_BYTES_PER_S
    assert p["network"][-1] == [65456, 11.6436, 0.940694, 0.0, 0.0] and p["network"][0][0] == 0
    assert simulate.model_params(8, 2, 1, 1, 1, "flat") == p          # the size no longer folds the factors in
    p = simulate.model_params(1 << 20, 16, 4, 100, 1, "flat", efficiency=0.5, loopback_gbytes=2, loopback_latency_us=1)
    assert p["net_bw"] == pytest.approx(12.5e9 * 0.5 / 1.05) and p["intra_latency"] == pytest.approx(1e-6)
    assert p["copy_bw"] == simulate.DEFAULT_COPY_BYTES_PER_S                # the loopback is the library's, not ours
    assert p["intra_bw"] == pytest.approx(2e9)                              # the library's messages take it, uncharged
    # The tuner's one-latency machine still folds them: 16 KiB pieces (3.48845), 512 KiB (0.940694).
    f = simulate.folded_params(1 << 20, 16, 4, 100, 1, "flat", efficiency=0.5, loopback_gbytes=2, loopback_latency_us=1)
    assert f["alpha"] == pytest.approx(2 * 1e-6 * 3.48845) and f["intra_latency"] == pytest.approx(1e-6 * 3.48845)
    assert f["net_bw"] == pytest.approx(12.5e9 * 0.5 * 0.940694 / 1.05)
    assert f["gamma"] == simulate.DEFAULT_REDUCE_BYTES_PER_S


def test_model_charges_what_the_ranks_are_charged(tmp_path):
    # A calibration's copy and reduce rates reach the ranks (ARSHIM_SMPI_*) and the model alike; without them both
    # take the defaults.
    calibration = tmp_path / "node.toml"
    calibration.write_text("lat_factor = [[0, 1.0]]\ncopy_bytes_per_s = 3.5e9\nreduce_bytes_per_s = 1.25e9\n")
    net = simulate.networks.network(str(calibration))
    p = simulate.model_params(1 << 20, 16, 4, 100, 1, "flat", network=net)
    ranks = simulate.compute_settings(net)
    assert p["copy_bw"] == float(ranks["ARSHIM_SMPI_COPY_BYTES_PER_S"]) == 3.5e9
    assert p["gamma"] == float(ranks["ARSHIM_SMPI_REDUCE_BYTES_PER_S"]) == 1.25e9
    for name in ("smpi", "ideal", "edr"):
        net = simulate.networks.network(name)
        p, ranks = simulate.model_params(8, 2, 2, 100, 1, "flat", network=net), simulate.compute_settings(net)
        assert (p["copy_bw"], p["gamma"]) == (float(ranks["ARSHIM_SMPI_COPY_BYTES_PER_S"]),
                                              float(ranks["ARSHIM_SMPI_REDUCE_BYTES_PER_S"]))


def test_presets_fill_only_what_is_not_given():
    args = simulate.build_parser().parse_args(["--nodes", "2", "--preset", "rig", "--latency-us", "5"])
    values = simulate.platform_options(args)
    rig = simulate.PRESETS["rig"]
    assert values["latency_us"] == 5
    assert values["link_gbit"] == float(rig["link_gbit"]) and values["efficiency"] == float(rig["bandwidth_efficiency"])
    assert values["loopback_gbytes"] == float(rig["loopback_gbytes"])
    plain = simulate.platform_options(simulate.build_parser().parse_args(["--nodes", "2"]))
    assert plain == {"link_gbit": 100, "latency_us": 1, "efficiency": 1, "loopback_gbytes": 20,
                     "loopback_latency_us": 0.2}


def test_configs_all_and_tuned():
    assert simulate.parse_configs("all") == list(simulate.CONFIGS)
    assert simulate.parse_configs("all", "t.toml") == list(simulate.CONFIGS) + ["arshim-tuned-mpich", "arshim-tuned-ompi"]
    assert simulate.parse_configs("arshim-tuned-ompi", "t.toml") == ["arshim-tuned-ompi"]
    with pytest.raises(simulate.SimulateError, match="arshim-tuned-mpich: needs --policy FILE"):
        simulate.parse_configs("native-mpich,arshim-tuned-mpich")


# ---- bad input of the new options ---------------------------------------------------------------------------------

def test_tuned_without_policy(tmp_path):
    one_line_refusal(*run("--nodes", "2", "--configs", "arshim-tuned-mpich", "--out", str(tmp_path / "o.csv")),
                     "arshim-tuned-mpich: needs --policy FILE")
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("options,words", [
    (["--preset", "cluster"], "--preset 'cluster': unknown; allowed: rig"),
    (["--bandwidth-efficiency", "1.2"], "--bandwidth-efficiency 1.2: must be at most 1"),
    (["--bandwidth-efficiency", "0"], "--bandwidth-efficiency 0: must be a positive number"),
    (["--loopback-gbytes", "fast"], "--loopback-gbytes 'fast': not a number"),
    (["--loopback-latency-us", "-1"], "--loopback-latency-us -1: must be a positive number"),
    (["--model-from", "guess"], "--model-from 'guess': unknown"),
    (["--model-from", "policy"], "--model-from policy: needs --policy FILE"),
])
def test_bad_platform_and_model_options(tmp_path, options, words):
    one_line_refusal(*run("--nodes", "2", *options, "--out", str(tmp_path / "o.csv")), words)


def test_policy_that_is_no_file(tmp_path):
    os.mkfifo(tmp_path / "fifo.toml")
    one_line_refusal(*run("--nodes", "2", "--policy", str(tmp_path / "fifo.toml"), "--out", str(tmp_path / "o.csv")),
                     "not a regular file")


# ---- the model_us column over a fake smpirun ------------------------------------------------------------------------

POLICY_PROGRAM = os.environ.get("ARSHIM_POLICY_PROGRAM")
needs_policy_program = pytest.mark.skipif(not POLICY_PROGRAM or not os.access(POLICY_PROGRAM, os.X_OK),
                                          reason="arshim-policy not built (ARSHIM_POLICY_PROGRAM)")


def fake_probes(tmp_path):
    """Stand-ins for the two probe programs (a fake smpirun never runs them): their command-line options."""
    options = []
    for kind in ("native", "arshim"):
        probe = tmp_path / f"probe-{kind}"
        probe.write_text("")
        options += [f"--probe-{kind}", str(probe)]
    return options


@needs_policy_program
def test_a_timeout_kills_the_simulation_smpirun_left_running(tmp_path):
    # smpirun runs the simulation in the background and waits for it: a timeout must end both, not orphan the child.
    child_pid = tmp_path / "child.pid"
    fake = tmp_path / "smpirun"
    fake.write_text("#!/bin/sh\n"
                    f'sleep 120 & echo $! > "{child_pid}"\n'
                    "wait\n")
    fake.chmod(0o755)
    probes = fake_probes(tmp_path)
    rc, out, err = run("--nodes", "2", "--configs", "native-mpich", "--sizes", "8", "--smpirun", str(fake),
                       "--policy-program", str(POLICY_PROGRAM), "--timeout", "2", "--out", str(tmp_path / "o.csv"),
                       *probes)
    assert rc == 2 and "took longer than --timeout" in err, err
    pid = int(child_pid.read_text())
    for _ in range(50):  # the kill is delivered at once; give the kernel a moment to reap
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail(f"the simulation's child {pid} outlived the timeout")


@pytest.fixture
def fake_sim(tmp_path):
    """A fake smpirun that answers 100 us for every size and logs the configuration it was given, and stand-ins for
    the two probes."""
    log = tmp_path / "calls.log"
    smpirun = tmp_path / "smpirun"
    smpirun.write_text("#!/bin/sh\n"
                       f'echo "$ARSHIM_PATH|$ARSHIM_POLICY|$ARSHIM_POLICY_MODE|$*" >> "{log}"\n'
                       'while [ "$1" != "--iterations" ]; do shift; done\nshift 2\n'
                       'for s in "$@"; do echo "probe $s 100.0"; done\n')
    smpirun.chmod(0o755)
    probes = fake_probes(tmp_path)
    return {"smpirun": str(smpirun), "log": log, "args": probes + ["--smpirun", str(smpirun), "--policy-program",
                                                                    str(POLICY_PROGRAM)]}


def simulate_rows(fake, tmp_path, *options, capsys=None, name="sweep.csv"):
    out = tmp_path / name
    rc = simulate.main(fake["args"] + ["--out", str(out), *options])
    assert rc == 0, capsys.readouterr().err if capsys else rc
    with open(out) as f:
        return {(r["bytes"], r["config"]): r for r in csv.DictReader(f)}


@needs_policy_program
def test_model_column_for_a_known_shape(fake_sim, tmp_path, capsys):
    rows = simulate_rows(fake_sim, tmp_path, "--nodes", "2", "--ppn", "1", "--link-gbit", "1", "--latency-us", "1",
                         "--sizes", "1M", "--configs", "native-mpich,native-ompi,arshim-default-mpich,"
                         "arshim-multileader-ompi,arshim-reproducible-mpich", capsys=capsys)
    assert "model_us from the platform" in capsys.readouterr().err
    n = 1 << 20
    # 2 nodes x 1, 1 MiB: the route is two links of 1 us, x 11.6436 (SMPI's latency factor from 64 KiB); a link
    # carries 1 Gbit/s x 0.940694 / 1.05 each way. MPICH 4.0.2 (the model) takes Rabenseifner between the two ranks:
    # two exchanges of n/2, and a reduction of n/2 at the rate the ranks are charged at (the default: no network
    # gives one).
    alpha = 2 * 1e-6 * 11.6436
    net_bw = 125e6 * 0.940694 / 1.05
    rabenseifner = (2 * (alpha + n / 2 / net_bw) + n / 2 / simulate.DEFAULT_REDUCE_BYTES_PER_S) * 1e6
    assert float(rows[(str(n), "native-mpich")]["model_us"]) == pytest.approx(rabenseifner, rel=1e-6)
    # Open MPI 4.1.4 on 2 ranks at 1 MiB: Rabenseifner too (coll/tuned's table below 4 ranks from 256 KiB).
    assert float(rows[(str(n), "native-ompi")]["model_us"]) == pytest.approx(rabenseifner, rel=1e-6)
    # The built-in table at one rank per node on 2 nodes: the library's allreduce (MPICH's rules under mpich), and the
    # multi-leader path declines to it at one rank per node on 2 nodes.
    assert float(rows[(str(n), "arshim-default-mpich")]["model_us"]) == pytest.approx(rabenseifner, rel=1e-6)
    assert float(rows[(str(n), "arshim-multileader-ompi")]["model_us"]) == pytest.approx(rabenseifner, rel=1e-6)
    # No model of the reproducible path: empty, never a made-up number.
    assert rows[(str(n), "arshim-reproducible-mpich")]["model_us"] == ""
    assert all(r["sim_us"] == "100.000" and r["bound_us"] == "8388.608" for r in rows.values())


@needs_policy_program
def test_model_column_every_row_filled(fake_sim, tmp_path, capsys):
    rows = simulate_rows(fake_sim, tmp_path, "--nodes", "4", "--ppn", "4", "--sizes", "8,64K,4M", capsys=capsys)
    # Every configuration at every size, but the latency path only up to its 4 KiB (2 selectors x 2 sizes fewer).
    assert len(rows) == 3 * len(simulate.CONFIGS) - 4
    assert ("65536", "arshim-latency-ompi") not in rows and ("8", "arshim-latency-mpich") in rows
    for (size, config), row in rows.items():
        if "reproducible" in config:
            assert row["model_us"] == ""
        else:
            assert float(row["model_us"]) > 0, (size, config)
    # A larger call costs more, and the model says the same path costs the same under either selector's rules here
    # only where the library's algorithms agree: no constant column.
    assert float(rows[("4194304", "native-mpich")]["model_us"]) > float(rows[("65536", "native-mpich")]["model_us"])
    assert len({row["model_us"] for row in rows.values()}) > 10


TUNED_TABLE = """version = 1

[model]
alpha = 2e-5
net_bw = 5e8
copy_bw = 1e10
intra_latency = 1e-6
gamma = 1e18
stream_gain = 1

[[rule]]
nodes = "2"
path = "native"
"""


@needs_policy_program
def test_tuned_configurations_run_the_table_and_its_model(fake_sim, tmp_path, capsys):
    table = tmp_path / "tuned.toml"
    table.write_text(TUNED_TABLE)
    rows = simulate_rows(fake_sim, tmp_path, "--nodes", "2", "--ppn", "1", "--link-gbit", "1", "--sizes", "1M",
                         "--policy", str(table), "--configs", "arshim-tuned-mpich,arshim-tuned-ompi,native-mpich",
                         capsys=capsys)
    assert "tuned.toml [model]" in capsys.readouterr().err
    # The table's machine (auto: its [model]) and its rule (native): Rabenseifner, 2 (20 us + n/2 / 0.5 GB/s).
    expected = 2 * (20 + (1 << 20) / 2 / 5e8 * 1e6)
    for config in ("arshim-tuned-mpich", "arshim-tuned-ompi", "native-mpich"):
        assert float(rows[("1048576", config)]["model_us"]) == pytest.approx(expected, rel=1e-6)
    calls = fake_sim["log"].read_text().splitlines()
    tuned = [c for c in calls if "coll-selector:mpich" in c and str(table) in c]
    assert tuned and tuned[0].startswith(f"|{table}|prepend|")   # ARSHIM_POLICY, prepend; no ARSHIM_PATH
    assert any(c.startswith("|||") and "coll-selector:mpich" in c for c in calls)  # native: no ARSHIM_* at all
    # --model-from platform: the platform's machine instead, for the same rule (test_model_column_for_a_known_shape).
    rows = simulate_rows(fake_sim, tmp_path, "--nodes", "2", "--ppn", "1", "--link-gbit", "1", "--sizes", "1M",
                         "--policy", str(table), "--model-from", "platform", "--configs", "arshim-tuned-mpich",
                         capsys=capsys, name="platform.csv")
    # The platform's machine charges the reduction (n/2 at the default rate); the table's [model] above, with its
    # gamma of 1e18, does not.
    rabenseifner = (2 * (2 * 1e-6 * 11.6436 + (1 << 20) / 2 / (125e6 * 0.940694 / 1.05))
                    + (1 << 20) / 2 / simulate.DEFAULT_REDUCE_BYTES_PER_S) * 1e6
    assert float(rows[("1048576", "arshim-tuned-mpich")]["model_us"]) == pytest.approx(rabenseifner, rel=1e-6)


@needs_policy_program
def test_tuned_table_the_shim_would_reject(fake_sim, tmp_path, capsys):
    table = tmp_path / "bad.toml"
    table.write_text('version = 1\n[[rule]]\npath = "pipelined"\nsegmnts = 4\n')
    rc = simulate.main(fake_sim["args"] + ["--nodes", "2", "--sizes", "1M", "--policy", str(table), "--configs",
                                           "arshim-tuned-mpich", "--out", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err.splitlines()
    assert rc == 2 and len(err) == 1 and "ARShim would not use this table" in err[0] and "segmnts" in err[0]
    assert not fake_sim["log"].exists()  # nothing simulated


# ---- arshim tune's candidates, forced one by one ------------------------------------------------------------------

def test_candidates_keyword_follows_the_layout():
    four = simulate.parse_configs("candidates-ompi", ppn=4, nodes=16)
    assert four == ["arshim-multileader-l1-ompi", "arshim-multileader-l2-ompi", "arshim-multileader-l4-ompi",
                    "arshim-latency-ompi", "arshim-pipelined-one-ompi", "arshim-pipelined-64K-ompi", "arshim-pipelined-256K-ompi",
                    "arshim-pipelined-1M-ompi"]
    both = simulate.parse_configs("candidates", ppn=4, nodes=16)
    assert len(both) == 16 and {c.rsplit("-", 1)[1] for c in both} == {"mpich", "ompi"}
    # One rank per node on 3 nodes: ARShim's ring is a candidate, and the latency path (ARShim's recursive doubling
    # among the nodes); no multi-leader with several leaders.
    three = simulate.parse_configs("candidates-mpich", ppn=1, nodes=3)
    assert three[:2] == ["arshim-multileader-ring-mpich", "arshim-latency-mpich"] and not any("-l2-" in c for c in three)
    # A candidate of another layout is refused, naming this layout's.
    with pytest.raises(simulate.SimulateError, match=r"unknown arshim-multileader-l8-ompi on 16 x 4.*multileader-l4"):
        simulate.parse_configs("arshim-multileader-l8-ompi", ppn=4, nodes=16)
    # Listed twice (by name and by the keyword): simulated once.
    assert simulate.parse_configs("arshim-pipelined-1M-ompi,candidates-ompi", ppn=4, nodes=16).count(
        "arshim-pipelined-1M-ompi") == 1


def test_more_leaders_than_the_tuner_measures():
    # The DPML paper's sweep goes to 16 leaders (16 x 28); the tuner's candidates stop at 8. Powers of two up to the
    # ppn are accepted by name, with the candidates' settings; other counts and more than the ppn are refused.
    assert "arshim-multileader-l16-mpich" not in simulate.parse_configs("candidates-mpich", ppn=28, nodes=16)
    assert simulate.parse_configs("arshim-multileader-l16-mpich,arshim-multileader-l1-ompi", ppn=28, nodes=16) == [
        "arshim-multileader-l16-mpich", "arshim-multileader-l1-ompi"]

    class Args:
        ppn, nodes, policy = 28, 16, None
    assert simulate.config_settings("arshim-multileader-l16-mpich", Args) == {
        "ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "16", "ARSHIM_PIPELINE_K": "1"}
    assert simulate.config_sizes("arshim-multileader-l16-mpich", [64, 1 << 19], Args) == [64, 1 << 19]
    for bad in ("arshim-multileader-l32-mpich", "arshim-multileader-l12-mpich", "arshim-multileader-l016-mpich",
                "arshim-multileader-l16-foo", "arshim-multileader-l-mpich"):
        with pytest.raises(simulate.SimulateError, match="unknown"):
            simulate.parse_configs(bad, ppn=28, nodes=16)
    with pytest.raises(simulate.SimulateError, match="unknown"):
        simulate.parse_configs("arshim-multileader-l16-mpich", ppn=8, nodes=16)


def test_config_parts_settings_and_sizes():
    class Args:
        ppn, nodes, policy = 4, 16, "t.toml"
    assert simulate.config_parts("native-ompi") == ("native", "ompi", "ompi")
    assert simulate.config_parts("arshim-default-mpich") == ("default", "default", "mpich")
    assert simulate.config_parts("arshim-latency-ompi") == ("path", "latency", "ompi")
    assert simulate.config_parts("arshim-pipelined-256K-ompi") == ("candidate", "pipelined-256K", "ompi")
    assert simulate.config_settings("arshim-multileader-l2-mpich", Args) == {
        "ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "2", "ARSHIM_PIPELINE_K": "1"}
    assert simulate.config_settings("arshim-latency-ompi", Args) == {"ARSHIM_PATH": "latency"}
    assert simulate.config_settings("native-ompi", Args) == {}
    sizes = [8, 4096, 65536, 1 << 20]
    # The tuner measures a segment size only from one segment up, the whole message as one call below 64 KiB.
    assert simulate.config_sizes("arshim-pipelined-256K-ompi", sizes, Args) == [1 << 20]
    assert simulate.config_sizes("arshim-pipelined-one-ompi", sizes, Args) == [8, 4096]
    assert simulate.config_sizes("arshim-multileader-l4-ompi", sizes, Args) == sizes
    assert simulate.config_sizes("arshim-default-ompi", sizes, Args) == sizes
    assert simulate.config_sizes("arshim-latency-ompi", sizes, Args) == [8, 4096]


@pytest.fixture
def fake_sim_served(tmp_path):
    """A fake smpirun whose forced path serves no call (the probe's SERVED column 0) and logs its settings."""
    log = tmp_path / "calls.log"
    smpirun = tmp_path / "smpirun"
    smpirun.write_text("#!/bin/sh\n"
                       f'echo "$ARSHIM_PATH|$ARSHIM_LEADERS|$ARSHIM_SEGMENT_BYTES|$*" >> "{log}"\n'
                       'while [ "$1" != "--iterations" ]; do shift; done\nshift 2\n'
                       'for s in "$@"; do if [ -n "$ARSHIM_PATH" ]; then echo "probe $s 50.0 0.000"; '
                       'else echo "probe $s 100.0 -1.000"; fi; done\n')
    smpirun.chmod(0o755)
    return {"smpirun": str(smpirun), "log": log, "args": fake_probes(tmp_path) + [
        "--smpirun", str(smpirun), "--policy-program", str(POLICY_PROGRAM)]}


@needs_policy_program
def test_candidate_runs_its_settings_and_a_declining_path_is_named(fake_sim_served, tmp_path, capsys):
    rows = simulate_rows(fake_sim_served, tmp_path, "--nodes", "4", "--ppn", "4", "--sizes", "8,1M", "--configs",
                         "arshim-multileader-l2-ompi,arshim-pipelined-256K-ompi,native-ompi", capsys=capsys)
    assert set(rows) == {("8", "arshim-multileader-l2-ompi"), ("1048576", "arshim-multileader-l2-ompi"),
                         ("1048576", "arshim-pipelined-256K-ompi"), ("8", "native-ompi"), ("1048576", "native-ompi")}
    calls = fake_sim_served["log"].read_text().splitlines()
    assert any(c.startswith("multileader|2||") for c in calls), calls
    assert any(c.startswith("pipelined||262144|") and c.endswith(" 1048576") for c in calls), calls
    err = capsys.readouterr().err
    assert "arshim-multileader-l2-ompi: the forced path declined calls at 8, 1M (served 0%)" in err
    # Each candidate's model_us is its own parameters' prediction: two leaders and one differ at 1 MiB on 4 x 4.
    assert rows[("1048576", "arshim-multileader-l2-ompi")]["model_us"] != ""
    assert rows[("1048576", "arshim-pipelined-256K-ompi")]["model_us"] != rows[("1048576", "native-ompi")]["model_us"]


# ---- arshim tune --simulate: its cluster options ------------------------------------------------------------------

def run_tune(*args):
    done = subprocess.run([sys.executable, ARSHIM, "tune", *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("options,words", [
    (["--simulate", "--nodes 2 --ppn 2", "--", "mpirun", "-n", "4"], "give it no launcher line"),
    (["--simulate", "--nodes 2 --ppn 2", "--wrap", "env", "--mpi", "mpich"], "no --wrap"),
    (["--simulate", "--nodes 2 stray", "--mpi", "mpich"], "'stray' is not a cluster option"),
    (["--simulate", "--nodes 2 --ppn", "--mpi", "mpich"], "--ppn: expected one argument"),
    (["--simulate", "--nodes 2 --ppn 2"], "pass --mpi mpich|openmpi"),
    (["--simulate", "--ppn 2", "--mpi", "mpich"], "give the cluster's --nodes"),
    (["--simulate", "--nodes 2 --out x.csv", "--mpi", "mpich"], "--out is not a cluster option"),
    (["--simulate", "--nodes 0", "--mpi", "mpich"], "--nodes 0: must be between 1"),
    (["--simulate", "--nodes 2 --topology ring", "--mpi", "mpich"], "--topology 'ring': unknown"),
    (["--simulate", "--nodes 2 'unbalanced", "--mpi", "mpich"], "No closing quotation"),
    (["--simulate", "--nodes 2 --smpirun /nonexistent/smpirun", "--mpi", "mpich"], "not found"),
])
def test_tune_simulate_bad_cluster_is_one_line(tmp_path, options, words):
    rc, out, err = run_tune("--out", str(tmp_path / "t.toml"), *options)
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("arshim tune: ") and words in lines[0], err
    assert not (tmp_path / "t.toml").exists()
