"""Judging and printing what `arshim cluster verify` measured, without side effects: the TCP references, the NIC
byte counters against the allreduce's traffic, the probe's timings against the link bound."""
import re
import statistics


def ring_bound_bytes(hosts, n, reps):
    """Bytes a ring/Rabenseifner allreduce of n bytes moves per host each way, reps times: 2(H-1)/H x n."""
    return 2 * (hosts - 1) * n * reps // hosts


def reference_lines(seconds, n, limit, mtu, hosts, ring):
    """The plain-TCP references: seconds for n bytes both ways h0<->h1 (None: not measured), and over 3+ hosts the
    ring's seconds (ring: "" not run for 2 hosts, "none" not measured)."""
    out = []
    if seconds is None:
        out.append("verify: TCP reference h0<->h1: not measured (the transfer did not run)")
    else:
        out.append(f"verify: TCP reference h0<->h1: {n} B each way at once over one plain TCP connection in "
                   f"{seconds * 1e3:.1f} ms = {seconds / (n * 8 / limit):.3f} x the link bound at MTU {mtu} "
                   "(headers and acknowledgements share the link)")
    if ring == "none":
        out.append(f"verify: TCP ring reference over {hosts} hosts: not measured (the transfer did not run)")
    elif ring:
        bound = 2 * (hosts - 1) / hosts * n * 8 / limit
        out.append(f"verify: TCP ring reference over {hosts} hosts: each host sends 2(h-1)/h x {n} B to the next "
                   f"while it receives as much, in {float(ring) * 1e3:.1f} ms = {float(ring) / bound:.3f} x the "
                   f"allreduce bound of {n} B")
    return out


def ring_seconds(outputs):
    """tcp_probe.py ring's output of every host (one time per round) -> the median over the rounds of the slowest
    host's seconds."""
    rows = [[float(t) for t in text.split()] for text in outputs]
    return statistics.median(max(r[k] for r in rows) for k in range(min(map(len, rows))))


def parse_counters(text):
    """`cat tx_bytes rx_bytes` -> (tx, rx)."""
    tx, rx = text.split()
    return int(tx), int(rx)


def traffic_lines(flavor, names, before, after, n, reps):
    """(lines, failures): each host's NIC must have sent and received more than half of what a ring allreduce
    moves (any allreduce moves more than that); shared memory between hosts would leave the counters near zero."""
    hosts = len(before)
    need = (hosts - 1) * n * reps // hosts
    bound = ring_bound_bytes(hosts, n, reps)
    lines, failures = [], 0
    for i, ((tx0, rx0), (tx1, rx1)) in enumerate(zip(before, after)):
        tx, rx = tx1 - tx0, rx1 - rx0
        verdict = "ok"
        if tx < need or rx < need:
            verdict, failures = "FAILED", failures + 1
        lines.append(f"  {flavor}: {names.host(i)} NIC tx {tx:11d} B rx {rx:11d} B = {tx / max(1, bound):.2f} / "
                     f"{rx / max(1, bound):.2f} x the ring bound {bound} B: {verdict}")
    return lines, failures


def probe_lines(flavor, out):
    """The probe's own report (rank and probe lines), its point-to-point line aside."""
    return [f"  {flavor}: {line}" for line in out.splitlines()
            if re.match(r"(rank|probe)", line) and not line.startswith("probe: point-to-point")]


def node_split_ok(out):
    return any(line.startswith("probe: node split matches hosts") for line in out.splitlines())


def allreduce_seconds(out):
    for line in out.splitlines():
        m = re.match(r"probe: allreduce .* seconds=([0-9.e+-]*)", line)
        if m and m.group(1):
            return float(m.group(1))
    return None


def timing_lines(flavor, seconds, n, reps, hosts, limit):
    """(lines, failed): the probe's allreduce time against the link bound; faster than 0.9 x the bound means the
    traffic is not shaped."""
    per_host_bits = reps * 2 * (hosts - 1) / hosts * n * 8
    bound = per_host_bits / limit
    lines = [f"  {flavor}: {reps} x {n} B allreduce took {seconds * 1e3:.1f} ms; link bound {bound * 1e3:.1f} ms "
             f"(effective {per_host_bits / seconds / 1e9:.2f} Gbit/s per host of {limit / 1e9:g})"]
    if seconds < 0.9 * bound:
        lines.append(f"verify: {flavor}: FAILED: faster than the link allows: traffic is not shaped")
        return lines, True
    return lines, False


def p2p_line(flavor, out, limit):
    """The library's point-to-point floor among one rank per host (cluster_probe.c section 3): a reference, not a
    check. None if the probe printed none."""
    for line in out.splitlines():
        m = re.fullmatch(r"probe: point-to-point hosts=([0-9]*) bytes=([0-9]*) stream_seconds=([0-9.]*) "
                         r"steps_seconds=([0-9.]*)", line)
        if m:
            h, n, stream, steps = int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4))
            bound = 2 * (h - 1) / h * n * 8 / limit
            return (f"  {flavor}: point-to-point among one rank per host, the bound's bytes: one stream "
                    f"{stream * 1e3:.1f} ms = {stream / bound:.3f} x the bound, {2 * (h - 1)} blocking ring steps "
                    f"{steps * 1e3:.1f} ms = {steps / bound:.3f} x")
    return None
