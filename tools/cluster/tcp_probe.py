#!/usr/bin/env python3
"""The emulated cluster's plain-TCP probes (`arshim cluster verify`, tools/cluster/arshim-cluster).

  tcp_probe.py serve PORT rtt|stream [BYTES]          on one virtual host
  tcp_probe.py connect HOST PORT rtt|stream [BYTES]   on another; prints the result
  tcp_probe.py ring INDEX HOSTS PORT NEXT BYTES       on every host of a ring, host INDEX of HOSTS; NEXT is the
                                                      address of host INDEX+1 (mod HOSTS); prints one time per round

rtt:    2000 one-byte ping-pongs; prints the median round trip in microseconds.
stream: both sides send BYTES to each other at once over the one connection (what an allreduce between two hosts
        does), three times; prints the median seconds. The rig's shaper counts every frame with its headers and the
        acknowledgements share the link, so this is what a library's transfer can be held against
        (docs/cluster.md "The rig's TCP reference").
ring:   every host sends 2(HOSTS-1)/HOSTS x BYTES to the next host and receives as much from the previous one, all
        at once (the bytes a ring allreduce of BYTES moves per host, what the link bound counts), three rounds; each
        host prints its seconds per round, and the slowest host of a round is the ring's time.

Every wait is bounded (a peer that never comes or stalls ends the probe with a message, never hangs verify)."""
import socket
import sys
import threading
import time

ACCEPT_TIMEOUT_S = 20
IO_TIMEOUT_S = 120
STREAM_REPEATS = 3
RTT_ROUNDS = 2000


def accepted(port):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(1)
    listener.settimeout(ACCEPT_TIMEOUT_S)
    conn, _ = listener.accept()
    listener.close()
    return conn


def connected(argv):
    """The probe's connection: accepted (serve) or made (connect), with bounded waits."""
    if argv[0] == "serve":
        conn = accepted(int(argv[1]))
    else:
        deadline = time.monotonic() + ACCEPT_TIMEOUT_S
        while True:
            try:
                conn = socket.create_connection((argv[1], int(argv[2])), timeout=IO_TIMEOUT_S)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    conn.settimeout(IO_TIMEOUT_S)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def rtt(conn, serving):
    if serving:
        while True:
            b = conn.recv(1)
            if not b:
                return
            conn.sendall(b)
    times = []
    for _ in range(RTT_ROUNDS):
        t0 = time.perf_counter()
        conn.sendall(b"x")
        if not conn.recv(1):
            sys.exit("tcp_probe: the peer closed the connection")
        times.append(time.perf_counter() - t0)
    times.sort()
    print(f"{times[len(times) // 2] * 1e6:.0f}")


def send_exactly(conn, n):
    view, left = memoryview(bytearray(1 << 20)), n
    while left > 0:
        left -= conn.send(view[:min(len(view), left)])


def receive_exactly(conn, n):
    buf, left = bytearray(1 << 20), n
    while left > 0:
        got = conn.recv_into(buf, min(len(buf), left))
        if got == 0:
            raise OSError("the peer closed the connection early")
        left -= got


def timed_exchange(outgoing, incoming, n):
    """Seconds to send n bytes on `outgoing` while n arrive on `incoming` (another thread); a failed receive fails
    the probe (an exception in the thread alone would leave a time that measured nothing)."""
    failure = []

    def receive():
        try:
            receive_exactly(incoming, n)
        except OSError as e:
            failure.append(e)

    t0 = time.perf_counter()
    receiver = threading.Thread(target=receive)
    receiver.start()
    send_exactly(outgoing, n)
    receiver.join()
    if failure:
        raise failure[0]
    return time.perf_counter() - t0


def stream(conn, serving, n):
    times = []
    for _ in range(STREAM_REPEATS):
        conn.sendall(b"s")  # both sides start within a round trip of each other
        conn.recv(1)
        times.append(timed_exchange(conn, conn, n))
    if not serving:
        print(sorted(times)[len(times) // 2])


def ring(index, hosts, port, next_host, n):
    """One ring round per repeat; a token passed around the ring starts each round (skew: one round trip per hop)."""
    from_previous = [None]
    acceptor = threading.Thread(target=lambda: from_previous.__setitem__(0, accepted(port)))
    acceptor.start()
    to_next = connected(["connect", next_host, str(port)])
    acceptor.join(ACCEPT_TIMEOUT_S + 1)
    incoming = from_previous[0]
    if incoming is None:
        sys.exit("tcp_probe: the previous host of the ring never connected")
    incoming.settimeout(IO_TIMEOUT_S)
    share = 2 * (hosts - 1) * n // hosts
    times = []
    for _ in range(STREAM_REPEATS):
        if index == 0:
            to_next.sendall(b"s")
        if incoming.recv(1) != b"s":
            sys.exit("tcp_probe: the ring's start token did not arrive")
        if index != 0:
            to_next.sendall(b"s")
        times.append(timed_exchange(to_next, incoming, share))
    print(" ".join(f"{t:.6f}" for t in times))
    to_next.close()
    incoming.close()


def main(argv):
    if argv and argv[0] == "ring":
        try:
            index, hosts, port, next_host, n = int(argv[1]), int(argv[2]), int(argv[3]), argv[4], int(argv[5])
            ring(index, hosts, port, next_host, n)
        except (OSError, ValueError, IndexError) as e:
            sys.exit(f"tcp_probe: {e}")
        return
    if len(argv) < 3 or argv[0] not in ("serve", "connect"):
        sys.exit(__doc__)
    serving = argv[0] == "serve"
    mode_at = 2 if serving else 3
    mode = argv[mode_at] if len(argv) > mode_at else ""
    if mode not in ("rtt", "stream"):
        sys.exit(f"tcp_probe: unknown mode '{mode}' (rtt, stream)")
    try:
        conn = connected(argv)
        if mode == "rtt":
            rtt(conn, serving)
        else:
            stream(conn, serving, int(argv[mode_at + 1]))
        conn.close()
    except (OSError, ValueError, IndexError) as e:
        sys.exit(f"tcp_probe: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
