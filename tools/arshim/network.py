"""The simulated network of `arshim simulate --network` (docs/scale.md "The network"): `ideal` (SMPI's latency and
bandwidth factors 1, no cross traffic: every message pays the route's latency and moves at the link's rate, the world
of the link bound), `smpi` (SimGrid 3.32's default factors and cross traffic, what `arshim simulate` always passed
before --network) or a calibration file (TOML): the factors by message size, SMPI's per-message overheads and, for
charging a node's computation, its copy and reduce rates.

A calibration file (every key optional but at least one factor table; tools/simulate/networks/*.toml):

    name = "edr"                          # how tables name the network (default: the file's name)
    description = "..."                   # one line
    crosstraffic = false                  # SMPI's network/crosstraffic (default true, SMPI's own default)
    lat_factor = [[0, 1.0], [1024, 1.1]]  # [from bytes, factor]: a message of at least that many bytes (the last
    bw_factor = [[0, 1.0], [1024, 0.13]]  #   such section) pays the route's latency x factor, moves at link x factor
    os = [[0, 2e-7, 0.0]]                 # smpi/os, smpi/or, smpi/ois: [above bytes, seconds, seconds per byte]
    or = [[0, 2e-7, 0.0]]                 #   (SMPI's per-message CPU time of a send, a receive, an isend)
    ois = [[0, 2e-7, 0.0]]
    copy_bytes_per_s = 1.0e10             # a node's copy and reduce rates with all its ranks active (for charging
    reduce_bytes_per_s = 5.0e9            #   computation; read and checked here, used by the compute charge)
    [platform]                            # values for the platform options not given, as --preset gives them
    link_gbit = 100
    latency_us = 0.5
    loopback_gbytes = 20
    loopback_latency_us = 0.2
    bandwidth_efficiency = 1

The file is read as hostile input (files.read_text: a regular file of at most 256 KiB, UTF-8); anything wrong in it
is one NetworkError naming the file, the key and what is allowed."""
import math
import os
import tomllib

from . import ToolError, files
from .text import escape

MAX_FILE_BYTES = 256 << 10
MAX_SECTIONS = 32
MAX_BYTES = 1 << 50
NAMES = ("ideal", "smpi")

# SMPI's network model (network/model:SMPI) corrects each message by its size: its latency by smpi/lat-factor and its
# bandwidth by smpi/bw-factor, piecewise. SimGrid 3.32's defaults (src/simgrid/sg_config.cpp), as (above bytes,
# factor): SMPI takes the last section whose bound is below the message's size plus SMPI_EXTRA_BYTES (factor_at).
# Passed to smpirun explicitly so that the simulation and the model use one table whatever SimGrid's
# own defaults are.
SMPI_BW_FACTOR = ((0, 0.812084), (257, 0.338112), (732, 0.341987), (1426, 0.608902), (3484, 0.77493),
                  (5776, 1.08739), (9376, 0.58729), (15424, 0.697866), (65472, 0.940694))
SMPI_LAT_FACTOR = ((0, 2.01467), (257, 1.95341), (732, 1.9503), (1426, 1.61075), (3484, 1.88101),
                   (5776, 2.18796), (9376, 2.59299), (15424, 3.48845), (65472, 11.6436))
# network/crosstraffic (on by default): a transfer also loads the reverse direction of its route with 5% of its rate
# (the acknowledgements), so two hosts exchanging a message each way get bw-factor / 1.05 of their links each
# (measured: 2 nodes x 1, 1 Gbit/s, 1 to 4 MiB, 0.896 of the link).
CROSSTRAFFIC = 1.05
# SimGrid 3.32 compares a message's size plus 16 bytes with the factors' bounds (a section applies when size + 16 is
# above its bound). Measured (2 x 1 ranks, Rabenseifner's two exchanges of 65 536 bytes, a latency factor of 50
# from a bound of 65 536 + k): k = 1 to 15 charge it, k = 16 and more do not; and 65 472-byte messages pay SimGrid's
# 11.6436 above 65 472.
SMPI_EXTRA_BYTES = 16
PLATFORM_KEYS = ("link_gbit", "latency_us", "loopback_gbytes", "loopback_latency_us", "bandwidth_efficiency")
FILE_KEYS = ("name", "description", "crosstraffic", "lat_factor", "bw_factor", "os", "or", "ois",
             "copy_bytes_per_s", "reduce_bytes_per_s", "platform")


class NetworkError(ToolError):
    pass


def factor_at(table, nbytes):
    """SimGrid 3.32's smpi/lat-factor and smpi/bw-factor for a message of `nbytes`: the factor of the last section
    whose bound is below nbytes + SMPI_EXTRA_BYTES; 1 below the first."""
    value = 1.0
    for above, factor in table:
        if nbytes + SMPI_EXTRA_BYTES <= above:
            break
        value = factor
    return value


def overhead_section(table, nbytes):
    """smpi/os, smpi/or, smpi/ois (smpi::Host::osend): (seconds, seconds per byte) of the last section whose bound is
    below `nbytes`, the first section's at or below its bound; (0, 0) without sections."""
    if not table:
        return 0.0, 0.0
    _, base, per_byte = table[0]
    for above, b, p in table:
        if nbytes <= above:
            break
        base, per_byte = b, p
    return base, per_byte


def overhead_at(table, nbytes):
    base, per_byte = overhead_section(table, nbytes)
    return base + per_byte * nbytes


class Network:
    """One simulated network: SMPI's settings for it and the same table for the cost model."""

    def __init__(self, name, description, lat_factor, bw_factor, crosstraffic, os_=(), or_=(), ois=(),
                 copy_bytes_per_s=None, reduce_bytes_per_s=None, platform=None, source=None):
        self.name, self.description = name, description
        self.lat_factor, self.bw_factor = tuple(lat_factor), tuple(bw_factor)
        self.crosstraffic = crosstraffic
        self.os, self.or_, self.ois = tuple(os_), tuple(or_), tuple(ois)
        self.copy_bytes_per_s, self.reduce_bytes_per_s = copy_bytes_per_s, reduce_bytes_per_s
        self.platform = dict(platform or {})
        self.source = source  # the calibration file, None for a built-in network

    def smpi_config(self):
        """smpirun's --cfg options for this network."""
        cfg = [f"--cfg=smpi/bw-factor:{table_text(self.bw_factor)}",
               f"--cfg=smpi/lat-factor:{table_text(self.lat_factor)}",
               f"--cfg=network/crosstraffic:{1 if self.crosstraffic else 0}"]
        for key, table in (("os", self.os), ("or", self.or_), ("ois", self.ois)):
            if table:
                cfg.append(f"--cfg=smpi/{key}:" + ";".join(f"{a}:{b!r}:{p!r}" for a, b, p in table))
        return cfg

    def bandwidth_share(self):
        """The share of a link's rate each direction gets when two hosts exchange (cross traffic's acknowledgements
        take 1/1.05 of it in SMPI), before the bandwidth factor."""
        return 1 / CROSSTRAFFIC if self.crosstraffic else 1.0

    def overhead(self, nbytes):
        """A message's per-message CPU time: its sender's (smpi/os) and its receiver's (smpi/or), in seconds."""
        return overhead_at(self.os, nbytes) + overhead_at(self.or_, nbytes)

    def sections(self):
        """The model's table (MachineParams::sections, arshim-policy predict's "network"): one section per bound of
        any of the tables, [above, lat, bw, overhead, overhead_per_byte] for the messages larger than `above`: a
        factor's bound less SMPI_EXTRA_BYTES (factor_at), an overhead's bound as it is (smpi::Host::osend)."""
        bounds = sorted({max(0, a - SMPI_EXTRA_BYTES) for a, _ in self.lat_factor + self.bw_factor} |
                        {a for a, _, _ in self.os} | {a for a, _, _ in self.or_} | {0})
        rows = []
        for above in bounds:
            probe = above + 1
            send, recv = overhead_section(self.os, probe), overhead_section(self.or_, probe)
            rows.append([above, factor_at(self.lat_factor, probe), factor_at(self.bw_factor, probe),
                         send[0] + recv[0], send[1] + recv[1]])
        return rows

    def describe(self):
        """One line for a table's heading: the network and the settings that make it."""
        what = {"ideal": "latency and bandwidth factors 1, no cross traffic",
                "smpi": "SimGrid 3.32's default factors (11.6x latency, 0.94 bandwidth from 64 KiB), cross traffic"}
        text = what.get(self.name) if self.source is None else (self.description or escape(self.source))
        return f"{self.name} ({text})"


def table_text(table):
    return ";".join(f"{above}:{factor!r}" for above, factor in table)


IDEAL = Network("ideal", "", ((0, 1.0),), ((0, 1.0),), False)
SMPI = Network("smpi", "", SMPI_LAT_FACTOR, SMPI_BW_FACTOR, True)


# The calibrations shipped with ARShim (tools/simulate/networks/ in the source tree, <datadir>/arshim/networks/
# installed, two directories up from this package): `--network edr` for tools/simulate/networks/edr.toml.
SHIPPED_DIRS = (os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "simulate", "networks"),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "networks"))


def shipped(name):
    """The shipped calibration file `name` names (a bare word), or None."""
    if not name.replace("-", "").replace("_", "").isalnum():
        return None
    return next((p for p in (os.path.join(d, name + ".toml") for d in SHIPPED_DIRS) if os.path.isfile(p)), None)


def network(value):
    """The network `--network VALUE` names: ideal, smpi, a shipped calibration's name (edr, rig) or a calibration
    file."""
    if value == "ideal":
        return IDEAL
    if value == "smpi":
        return SMPI
    return read_calibration(shipped(value) or value)


def read_calibration(path):
    where = f"--network {escape(path)}"
    try:
        text = files.read_text(path, MAX_FILE_BYTES)
    except files.InputError as e:
        raise NetworkError(f"--network {e} (give ideal, smpi or a calibration file, docs/scale.md)") from None
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as e:
        raise NetworkError(f"{where}: not TOML ({escape(str(e).splitlines()[0] if str(e) else type(e).__name__, 160)})"
                           ) from None
    unknown = [k for k in data if k not in FILE_KEYS]
    if unknown:
        raise NetworkError(f"{where}: unknown key {escape(unknown[0], 60)!r}; allowed: {', '.join(FILE_KEYS)}")

    def number(key, value, low=0.0, low_open=False, high=math.inf):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
                value < low or (low_open and value == low) or value > high:
            bound = f"above {low:g}" if low_open else f"at least {low:g}"
            raise NetworkError(f"{where}: key {key}: {escape(repr(value), 60)} is not a number {bound}"
                               + (f" and at most {high:g}" if high != math.inf else ""))
        return float(value)

    def sections(key, width, what):
        value = data.get(key, [])
        if not isinstance(value, list) or len(value) > MAX_SECTIONS:
            raise NetworkError(f"{where}: key {key}: a list of at most {MAX_SECTIONS} sections [{what}]")
        rows = []
        for row in value:
            if not isinstance(row, list) or len(row) != width:
                raise NetworkError(f"{where}: key {key}: every section is [{what}]")
            above = number(key, row[0], high=MAX_BYTES)
            if above != int(above) or (rows and above <= rows[-1][0]):
                raise NetworkError(f"{where}: key {key}: section bounds are whole byte counts in ascending order")
            if width == 2:
                rows.append((int(above), number(key, row[1], low_open=True, low=0.0)))
            else:
                rows.append((int(above), number(key, row[1], high=1.0), number(key, row[2], high=1.0)))
        return rows

    lat = sections("lat_factor", 2, "above bytes, factor")
    bw = sections("bw_factor", 2, "above bytes, factor")
    if not lat and not bw:
        raise NetworkError(f"{where}: needs lat_factor or bw_factor (lists of [above bytes, factor])")
    overheads = {k: sections(k, 3, "above bytes, seconds, seconds per byte") for k in ("os", "or", "ois")}
    crosstraffic = data.get("crosstraffic", True)
    if not isinstance(crosstraffic, bool):
        raise NetworkError(f"{where}: key crosstraffic: true or false")
    rates = {}
    for key in ("copy_bytes_per_s", "reduce_bytes_per_s"):
        if key in data:
            rates[key] = number(key, data[key], low=0.0, low_open=True)
    name = data.get("name", os.path.splitext(os.path.basename(path))[0])
    description = data.get("description", "")
    for key, value in (("name", name), ("description", description)):
        if not isinstance(value, str) or len(value) > (40 if key == "name" else 400) or \
                any(ord(c) < 32 for c in value) or (key == "name" and (not value or value in NAMES)):
            raise NetworkError(f"{where}: key {key}: one line of text"
                               + (" (at most 40 characters, not ideal or smpi)" if key == "name" else ""))
    platform = data.get("platform", {})
    if not isinstance(platform, dict):
        raise NetworkError(f"{where}: key platform: a table of {', '.join(PLATFORM_KEYS)}")
    values = {}
    for key, value in platform.items():
        if key not in PLATFORM_KEYS:
            raise NetworkError(f"{where}: unknown key platform.{escape(key, 60)}; allowed: {', '.join(PLATFORM_KEYS)}")
        high = 1.0 if key == "bandwidth_efficiency" else 1e9
        values[key] = f"{number('platform.' + key, value, low=0.0, low_open=True, high=high):g}"
    return Network(name, description, lat or ((0, 1.0),), bw or ((0, 1.0),), crosstraffic, overheads["os"],
                   overheads["or"], overheads["ois"], rates.get("copy_bytes_per_s"), rates.get("reduce_bytes_per_s"),
                   values, source=path)
