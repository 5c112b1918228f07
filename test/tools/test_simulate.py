"""arshim simulate (tools/arshim/simulate.py): the platform generator, the link bound, --resume's reading, and bad
input (one line on stderr, exit status 2) through `arshim simulate` as a program. No MPI, no SimGrid needed."""
import os
import subprocess
import sys
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
    out.write_text("nodes,ppn,bytes,config,sim_us,model_us,bound_us\n4,4,8,native-mpich,11.1,,0.001\n"
                   "4,4,65536,native-mpich,81.2,,7.9\n4,4,8,cut")
    assert simulate.read_done(str(out)) == {("4", "4", "8", "native-mpich"), ("4", "4", "65536", "native-mpich")}
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
