"""The conditions seen, measured before the window through a probe proxy: a sibling of the load's proxy in the
same toxiproxy-server, with the same toxics, to a small TCP server of our own (`Probe`).

Measured at low load and whatever the load's protocol (https, h2): the round trip as one byte sent and one
answered over a connection already open (the median of `PINGS`), and, when a rate is asked, the rate of a
transfer of about `TRANSFER_S` at that rate, each way, its round trip taken off.
"""

from __future__ import annotations

import socket
import socketserver
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .conditions import NetSpec

PINGS = 7
TRANSFER_S = 1.0
"""The transfer measured lasts about this long at the rate asked (at least 32 KB)."""
_CHUNK = 64 * 1024


class _Handler(socketserver.BaseRequestHandler):
    """`P` -> `P`; `D<n>\\n` -> n bytes; `U<n>\\n` then n bytes -> `K`."""

    def handle(self) -> None:
        s = self.request
        f = s.makefile("rb")
        while (c := f.read(1)):
            if c == b"P":
                s.sendall(b"P")
            elif c in (b"D", b"U"):
                n = int(f.readline())
                if c == b"D":
                    block = b"x" * _CHUNK
                    while n > 0:
                        s.sendall(block[:n])
                        n -= min(n, _CHUNK)
                else:
                    while n > 0:
                        n -= len(f.read(min(n, _CHUNK)) or b"") or n
                    s.sendall(b"K")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextmanager
def probe_server() -> Iterator[tuple[str, int]]:
    """The probe's own server on 127.0.0.1, for as long as the block runs; its address."""
    srv = _Server(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, name="loadcmp-net-probe", daemon=True)
    t.start()
    try:
        yield ("127.0.0.1", int(srv.server_address[1]))
    finally:
        srv.shutdown()
        srv.server_close()


@dataclass(frozen=True)
class Seen:
    """The conditions measured through the probe proxy."""

    rtt_s: float
    """Median round trip of one byte each way."""
    rtt_spread_s: float
    """Highest minus lowest of those round trips (what jitter gives)."""
    rate_bps: float | None
    """Downstream bits per second of the transfer (None: no rate asked)."""
    rate_up_bps: float | None


def _recv_exact(s: socket.socket, n: int) -> None:
    while n > 0:
        got = s.recv(min(n, _CHUNK))
        if not got:
            raise OSError("the probe's connection closed")
        n -= len(got)


def _size(bps: float) -> int:
    return max(32 * 1024, int(bps / 8 * TRANSFER_S))


def measure(spec: NetSpec, port: int) -> Seen:
    """Measure the path through the probe proxy on 127.0.0.1:`port` (OSError if it does not carry)."""
    budget = 10.0 + 4 * spec.rtt_s * PINGS + sum(3 * _size(r) * 8 / r for r in (spec.rate_bps, spec.rate_up_bps) if r)
    with socket.create_connection(("127.0.0.1", port), timeout=budget) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rtts = []
        for _ in range(PINGS + 1):
            t0 = time.perf_counter()
            s.sendall(b"P")
            _recv_exact(s, 1)
            rtts.append(time.perf_counter() - t0)
        rtts = rtts[1:]  # the first carries the proxy's connect to the probe's server
        rtt = statistics.median(rtts)
        down = up = None
        if spec.rate_bps:
            n = _size(spec.rate_bps)
            t0 = time.perf_counter()
            s.sendall(b"D%d\n" % n)
            _recv_exact(s, n)
            down = n * 8 / max(1e-6, time.perf_counter() - t0 - rtt)
        if spec.rate_up_bps:
            n = _size(spec.rate_up_bps)
            t0 = time.perf_counter()
            s.sendall(b"U%d\n" % n + b"y" * n)
            _recv_exact(s, 1)
            up = n * 8 / max(1e-6, time.perf_counter() - t0 - rtt)
    return Seen(rtt, max(rtts) - min(rtts), down, up)
