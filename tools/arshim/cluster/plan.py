"""The rig's plan, without side effects: names and addresses, link rates and the shaper's settings, the text of its
state files, and the exact `ip` / `tc` commands that build and shape it. Everything the rig creates is named
PREFIX-* (namespaces PREFIX-h0.., PREFIX-sw) and addressed inside those namespaces only."""
import os
import re

from . import Failure

DEFAULT_NAME = "arshim"
RUN_DIR = "/run/arshim-cluster"
IFACE = "arsh0"           # each virtual host's NIC (never a name the machine itself uses)
BRIDGE = "br0"
MAX_HOSTS = 8
DEFAULT_SUBNET = "10.99.0"  # host i is SUBNET.(10+i)/24, only inside the rig's namespaces
DEFAULT_MTU = 1500
NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,15}")
SUBNET_RE = re.compile(r"(25[0-5]|2[0-4][0-9]|1?[0-9]{1,2})(\.(25[0-5]|2[0-4][0-9]|1?[0-9]{1,2})){2}")
CONFIG_KEYS = ("INSTANCE", "PREFIX", "HOSTS", "SUBNET", "IFACE", "LINK", "RIG_MTU")


class Names:
    """One rig's names: PREFIX (--name / $ARSHIM_CLUSTER_NAME), its state directory and lock, its subnet."""

    def __init__(self, prefix, state=None, subnet=DEFAULT_SUBNET, run_dir=RUN_DIR):
        if not NAME_RE.fullmatch(prefix):
            raise Failure(f"bad rig name '{prefix}' (a-z, 0-9, -; at most 16)", 2, plain=True)
        # The subnet is written into the config the fake ssh sources: three numbers, nothing else.
        if not SUBNET_RE.fullmatch(subnet):
            raise Failure(f"bad ARSHIM_CLUSTER_SUBNET '{subnet}' (three numbers, e.g. 10.99.0)", 2, plain=True)
        self.prefix, self.subnet, self.run_dir = prefix, subnet, run_dir
        self.state = state or os.path.join(run_dir, prefix)
        self.lock = os.path.join(run_dir, prefix + ".lock")
        self.reaper_log = os.path.join(run_dir, prefix + ".reaper.log")

    @classmethod
    def from_environment(cls, env, run_dir=RUN_DIR):
        return cls(env.get("ARSHIM_CLUSTER_NAME") or DEFAULT_NAME, env.get("ARSHIM_CLUSTER_STATE") or None,
                   env.get("ARSHIM_CLUSTER_SUBNET") or DEFAULT_SUBNET, run_dir)

    @property
    def switch(self):
        return f"{self.prefix}-sw"

    def host(self, i):
        return f"{self.prefix}-h{i}"

    def address(self, i, subnet=None):
        return f"{subnet or self.subnet}.{10 + i}"

    def is_rig_namespace(self, name):
        return re.fullmatch(re.escape(self.prefix) + r"-(h[0-9]+|sw)", name) is not None

    def state_file(self, name):
        return os.path.join(self.state, name)


# ---------------------------------------------------------------------------------------------------------------
# links

PRESETS = {"none": "none", "unshaped": "none", "off": "none", "0": "none",
           "1g": "1gbit", "1gbit": "1gbit", "1gbps": "1gbit", "1gbit/s": "1gbit",
           "10g": "10gbit", "10gbit": "10gbit", "10gbps": "10gbit", "10gbit/s": "10gbit",
           "25g": "25gbit", "25gbit": "25gbit"}
UNITS = {"gbit": 10**9, "mbit": 10**6, "kbit": 10**3}


def rate_of(link):
    """A --link preset or tc rate -> the tc rate, or "none" (unshaped)."""
    text = link.lower()
    if text in PRESETS:
        return PRESETS[text]
    # a number and a unit, nothing else: the rate goes to tc and into the config the fake ssh sources
    if re.fullmatch(r"[0-9]+(\.[0-9]+)?(gbit|mbit|kbit)", text):
        return text
    raise Failure(f"unknown link '{link}' (1gbit, 10gbit, none, or a tc rate such as 2500mbit)", 2)


def rate_bits(rate):
    """tc rate -> bits/s (0 for none)."""
    m = re.fullmatch(r"([0-9]+)(?:\.([0-9]+))?(gbit|mbit|kbit)", rate)
    if not m:
        return 0
    fraction = m.group(2) or ""
    return (int(m.group(1) + fraction) * UNITS[m.group(3)]) // 10 ** len(fraction)


def gso_for(rate):
    """GSO packet size for a rate: veth hands tbf whole GSO packets (up to 64 KiB), and tbf can only pass a packet
    that fits its bucket, so the bucket must hold one. At <= 2.5 Gbit/s, 16 KiB packets keep the bucket small (a
    message after an idle period gets at most ~36 KiB ahead of the line rate); at higher rates 64 KiB packets keep the
    CPU cost down (2 cores: per-packet work, not the shaper, would otherwise set the rate)."""
    bits = rate_bits(rate)
    return 16384 if 0 < bits <= 2500000000 else 65536


def tbf_args(rate):
    """tbf's rate, bucket and queue. Bucket: two GSO packets + headers, or 100 us at line rate if larger. With room
    for only one packet, every packet waited for the shaper's timer, and a timer that fired late on the busy 2-core
    machine lost link time for good: one plain TCP connection carried 16 MiB both ways in 1.17-1.24x the link bound
    at 1 Gbit/s (MTU 1500), against 1.06-1.08x with room for two (docs/cluster.md "The rig's TCP reference"). Queue:
    50 ms at line rate, at least 4 MiB: a real NIC pushes back on TCP instead of dropping; drops here would cost
    200 ms retransmit timeouts."""
    bits, gso = rate_bits(rate), gso_for(rate)
    burst = max(bits // 8 // 10000, 2 * gso + 4096)
    limit = max(burst + bits // 8 // 20, 4194304)
    return ["rate", rate, "burst", str(burst), "limit", str(limit)]


def link_text(rate):
    return "unshaped" if rate == "none" else f"{rate} each way (tbf)"


def check_mtu(mtu):
    if not (re.fullmatch(r"[0-9]{1,5}", mtu) and 1280 <= int(mtu) <= 65535):
        raise Failure(f"--mtu must be 1280..65535 bytes (1500: Ethernet's default, 9000: jumbo frames), not '{mtu}'",
                      2)
    return int(mtu)


def check_hosts(hosts):
    if not (re.fullmatch(r"[0-9]+", hosts) and 2 <= int(hosts) <= MAX_HOSTS):
        raise Failure(f"--hosts must be 2..{MAX_HOSTS}", 2)
    return int(hosts)


def check_count(option, value):
    """A positive count given on the command line (--ppn, --np, --reps)."""
    if not (re.fullmatch(r"[0-9]{1,6}", value) and int(value) > 0):
        raise Failure(f"{option} must be a positive number, not '{value}'", 2)
    return int(value)


# ---------------------------------------------------------------------------------------------------------------
# commands (argv lists) that build and shape the rig

def switch_commands(names):
    sw = names.switch
    return [["ip", "netns", "add", sw],
            ["ip", "-n", sw, "link", "set", "lo", "up"],
            ["ip", "-n", sw, "link", "add", BRIDGE, "type", "bridge", "forward_delay", "0", "stp_state", "0"],
            ["ip", "-n", sw, "link", "set", BRIDGE, "up"]]


def host_commands(names, i):
    """Host i's namespace and NIC. The veth pair is created inside the switch namespace and its host end moved
    straight into the host namespace: it never appears in the machine's own namespace."""
    sw, ns = names.switch, names.host(i)
    return [["ip", "netns", "add", ns],
            ["ip", "-n", sw, "link", "add", f"h{i}", "type", "veth", "peer", "name", IFACE, "netns", ns],
            ["ip", "-n", sw, "link", "set", f"h{i}", "master", BRIDGE],
            ["ip", "-n", sw, "link", "set", f"h{i}", "up"],
            ["ip", "-n", ns, "link", "set", "lo", "up"],
            ["ip", "-n", ns, "addr", "add", f"{names.address(i)}/24", "dev", IFACE],
            ["ip", "-n", ns, "link", "set", IFACE, "up"]]


def shape_commands(names, hosts, rate):
    """(command, may fail) pairs: tbf on both ends of each host's veth (host -> switch on the host's NIC, switch ->
    host on the switch port). No netem in this kernel: latency cannot be added, only bandwidth limited."""
    gso = str(gso_for(rate))
    out = []
    for i in range(hosts):
        ns, port = names.host(i), f"h{i}"
        out += [(["ip", "-n", ns, "link", "set", "dev", IFACE, "gso_max_size", gso], False),
                (["ip", "-n", names.switch, "link", "set", "dev", port, "gso_max_size", gso], False)]
        if rate == "none":
            out += [(["tc", "-n", ns, "qdisc", "del", "dev", IFACE, "root"], True),
                    (["tc", "-n", names.switch, "qdisc", "del", "dev", port, "root"], True)]
        else:
            out += [(["tc", "-n", ns, "qdisc", "replace", "dev", IFACE, "root", "tbf"] + tbf_args(rate), False),
                    (["tc", "-n", names.switch, "qdisc", "replace", "dev", port, "root", "tbf"] + tbf_args(rate),
                     False)]
    return out


def mtu_commands(names, hosts, mtu):
    """The MTU of every interface of the rig (host NICs, switch ports, bridge). The shaper counts every frame's
    headers, so the MTU sets how much of a link's rate TCP payload can use."""
    out = []
    for i in range(hosts):
        out += [["ip", "-n", names.host(i), "link", "set", "dev", IFACE, "mtu", str(mtu)],
                ["ip", "-n", names.switch, "link", "set", "dev", f"h{i}", "mtu", str(mtu)]]
    return out + [["ip", "-n", names.switch, "link", "set", "dev", BRIDGE, "mtu", str(mtu)]]


def anchor_command(names, i):
    """The anchor holds host i's UTS (host name), mount (/etc/hosts, /dev/shm) and IPC namespaces; its network
    namespace is the named one. It prints `ready` once they are set up."""
    return ["ip", "netns", "exec", names.host(i), "unshare", "--uts", "--mount", "--ipc", "--propagation", "private",
            "/bin/sh", "-c", 'hostname "$1" && mount --bind "$2" /etc/hosts && mount -t tmpfs -o mode=1777 tmpfs '
            '/dev/shm && echo ready && exec sleep infinity', "sh", names.host(i), names.state_file("hosts")]


def in_host_command(anchor, cwd, argv):
    """argv run inside a virtual host (all four namespaces of its anchor), in cwd if the host can see it. `-r`: the
    anchor's root directory, not its mount namespace's root: entering a mount namespace otherwise leaves a chroot
    (the rig inside tools/checks/platform.sh's Debian 13 chroot ran the host's files)."""
    return ["nsenter", "-t", str(anchor), "-n", "-u", "-m", "-i", "-r", "--", "/bin/sh", "-c",
            'cd "$1" 2>/dev/null || cd /; shift; exec "$@"', "sh", cwd] + list(argv)


def counters_command(names, i):
    stats = f"/sys/class/net/{IFACE}/statistics"
    return ["ip", "netns", "exec", names.host(i), "cat", f"{stats}/tx_bytes", f"{stats}/rx_bytes"]


# ---------------------------------------------------------------------------------------------------------------
# state files

def hosts_text(names, hosts):
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
    return "\n".join(lines + [f"{names.address(i)} {names.host(i)}" for i in range(hosts)]) + "\n"


def config_text(config):
    """The config as KEY=VALUE lines (tools/cluster/ssh sources it: every value is checked to be a plain word)."""
    for key, value in config.items():
        if key not in CONFIG_KEYS or not re.fullmatch(r"[A-Za-z0-9._/-]+", str(value)):
            raise Failure(f"refusing to write config {key}={value!r}")
    return "".join(f"{key}={config[key]}\n" for key in CONFIG_KEYS if key in config)


def parse_config(text):
    """KEY=VALUE lines -> dict, known keys only; a rig made before --mtu has no RIG_MTU (1500)."""
    config = {"RIG_MTU": str(DEFAULT_MTU)}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in CONFIG_KEYS:
            config[key] = value
    if not re.fullmatch(r"[0-9]+", config.get("HOSTS", "")):
        raise ValueError("no HOSTS")
    return config


def host_index(names, hosts, word):
    """h1, 1, PREFIX-h1 -> 1."""
    h = word[len(names.prefix) + 1:] if word.startswith(names.prefix + "-") else word
    h = h[1:] if h.startswith("h") else h
    if re.fullmatch(r"[0-9]+", h) and int(h) < hosts:
        return int(h)
    raise Failure(f"unknown virtual host '{word}' (the rig has {hosts} hosts: h0..h{hosts - 1})")
