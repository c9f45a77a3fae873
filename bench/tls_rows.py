"""The https rows of the benchmark (bench/compare.py): the same nginx, pinned the same way, serving https.

The stack's TLS part with its defaults (an ECDSA P-256 certificate issued by a CA made for this run, TLS 1.2
and 1.3, a session cache and tickets on) in a second deployment of the same stack with the same pinning. At
each level, in rounds of A B (C), then (C) B A:

- keep-alive: wrk against `loadcmp bench --keepalive --cacert CA`, and `h2load --h1` beside them;
- a new connection per request: ab (a full handshake each time; ab does not resume) against
  `loadcmp bench --tls-resume 0 --cacert CA` (a full handshake each time too).

wrk, ab and h2load do not verify the server's certificate; loadcmp verifies the chain against the run's CA
once and then checks that each connection's leaf is the same certificate.

Client CPU per request is given two ways for loadcmp: its load thread's inside the measured window (what the
engine spends on the load, `client_cpu_us`), and its whole process's (user + system from start to exit, as wrk,
ab and h2load are measured: the interpreter's start-up, about 1 s of CPU, and the probe included). The bar
"CPU per request <= ab's" compares the load thread's with ab's whole process (ab starts in milliseconds).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from common import PY, Run, alternate, measured, median, pinned, run_ab, run_wrk

from loadcmp.lab import containers as lab, planning
from loadcmp.lab.certs import RunCA
from loadcmp.lab.model import Stack


class Ours(NamedTuple):
    """One `loadcmp bench` over https: the run, its whole process's CPU per request (us), its handshakes'
    counts and their mean time (ms)."""

    run: Run
    process_us: float
    full: int
    resumed: int
    handshake_ms: float


def run_h2load(url: str, c: int, t: int) -> Run:
    """`h2load --h1`: HTTP/1.1 over TLS, keep-alive, one thread; its succeeded requests over its own time."""
    out, cpu, b0, b1 = measured(pinned(["h2load", "--h1", "-t1", f"-c{c}", f"-D{t}", url]), check=True)
    secs = float(re.search(r"finished in ([\d.]+)s", out).group(1))  # type: ignore[union-attr]
    done = int(re.search(r"(\d+) succeeded", out).group(1))  # type: ignore[union-attr]
    return Run(done / secs, 1e6 * cpu / max(1, done), b0, b1)


def run_ours(url: str, c: int, t: int, cafile: str, keepalive: bool) -> Ours:
    """`loadcmp bench` over https, verifying against `cafile`: keep-alive, or a full handshake per request."""
    cmd = [PY, "-m", "loadcmp", "bench", url, "-c", str(c), "-t", str(t), "--warmup", "0", "--json",
           "--client-cpus", "0", "--cacert", cafile] + (["-k"] if keepalive else ["--tls-resume", "0"])
    out, cpu, b0, b1 = measured(pinned(cmd), check=True, env={**os.environ, "LOADCMP_PURE_PYTHON": "0"})
    doc = json.loads(out)
    tls = doc.get("tls") or {}
    hs = (doc.get("phases_ms") or {}).get("handshake") or {}
    run = Run(doc["completions_per_s"], doc.get("client_cpu_us") or float("nan"), b0, b1)
    return Ours(run, 1e6 * cpu / max(1, doc["completed"]), tls.get("full", 0), tls.get("resumed", 0),
                hs.get("mean", float("nan")))


class TlsRow(NamedTuple):
    """One https level and mode: the reference's rate, loadcmp's and h2load's ratios (median, and each
    round's), and the CPU per request (us) of each."""

    c: int
    mode: str
    ref: str
    ref_rps: float
    ratios: list[float]
    ref_cpu: float
    thread_cpu: float
    process_cpu: float
    h2load: list[float] | None
    h2load_cpu: float | None

    @property
    def ratio(self) -> float:
        return median(self.ratios)


def one_tls_level(url: str, cafile: str, c: int, keepalive: bool, t: int, rounds: int, lua: str) -> TlsRow:
    """The rounds at one level and mode over https, printed as they end."""
    runners: dict[str, Callable[[], Any]] = {
        "ref": (lambda: run_wrk(url, c, t, lua)) if keepalive else (lambda: run_ab(url, c, t)),
        "ours": lambda: run_ours(url, c, t, cafile, keepalive)}
    if keepalive:
        runners["h2load"] = lambda: run_h2load(url, c, t)
    got = alternate(rounds, runners)
    ref: list[Run] = got["ref"]
    ours: list[Ours] = got["ours"]
    h2: list[Run] | None = got.get("h2load")
    row = TlsRow(c, "keep-alive" if keepalive else "new conn", "wrk" if keepalive else "ab",
                 median([r.rps for r in ref]), [o.run.rps / r.rps for o, r in zip(ours, ref, strict=True)],
                 median([r.cpu_us for r in ref]), median([o.run.cpu_us for o in ours]),
                 median([o.process_us for o in ours]),
                 [h.rps / r.rps for h, r in zip(h2, ref, strict=True)] if h2 else None,
                 median([h.cpu_us for h in h2]) if h2 else None)
    print_tls_level(row, ref, ours, h2)
    return row


def print_tls_level(row: TlsRow, ref: list[Run], ours: list[Ours], h2: list[Run] | None) -> None:
    """A level's lines: the rates and ratios, the handshakes, the CPU per request and which CPU was busy."""
    rs = row.ratios
    print(f"https c={row.c:<5} {row.mode:<10} {row.ref:>3} {row.ref_rps:9.0f} req/s   loadcmp "
          f"{median([o.run.rps for o in ours]):9.0f} ({row.ratio:.2f}x, {min(rs):.2f}-{max(rs):.2f}, rounds "
          f"{' '.join(f'{x:.2f}' for x in rs)})", flush=True)
    if h2 and row.h2load:
        print(f"        h2load --h1 {median([h.rps for h in h2]):9.0f} req/s ({median(row.h2load):.2f}x {row.ref}, "
              f"rounds {' '.join(f'{x:.2f}' for x in row.h2load)})", flush=True)
    print(f"        handshakes per loadcmp run: full {median([o.full for o in ours]):.0f}, resumed "
          f"{median([o.resumed for o in ours]):.0f}, mean handshake {median([o.handshake_ms for o in ours]):.2f} ms",
          flush=True)
    h2cpu = f", h2load {row.h2load_cpu:.1f} us" if row.h2load_cpu is not None else ""
    print(f"        client CPU per request: {row.ref} {row.ref_cpu:.1f} us (whole process), loadcmp "
          f"{row.thread_cpu:.1f} us (its load thread, in the window) / {row.process_cpu:.1f} us (whole process)"
          f"{h2cpu}; CPU busy, client / server: with {row.ref} {median([x.client_busy for x in ref]):.0f} / "
          f"{median([x.server_busy for x in ref]):.0f} %, with loadcmp "
          f"{median([o.run.client_busy for o in ours]):.0f} / {median([o.run.server_busy for o in ours]):.0f} %",
          flush=True)


def https_rows(stack: Stack, overrides: dict[str, Any], tmp: Path, levels: list[int], t: int, rounds: int,
               page: str, lua: str) -> list[TlsRow]:
    """The stack again, pinned as the plain one, serving https with a certificate of a CA made here; its rows."""
    ca = RunCA(tmp)
    plan = planning.plan_deployment(stack, cpus="1", overrides=overrides, tls=ca)
    with lab.up(plan) as dep:
        url = f"https://127.0.0.1:{dep.port}{page}"
        print(f"\nserver: the same nginx stack serving https (ECDSA P-256, TLS 1.2 and 1.3, session cache and "
              f"tickets on) on CPU 1 at {url}\n")
        return [one_tls_level(url, ca.cafile, c, keepalive, t, rounds, lua)
                for c in levels for keepalive in (True, False)]


def print_tls_ratios(rows: list[TlsRow]) -> None:
    print("\nhttps ratios (the median of the rounds'):")
    for row in rows:
        h2 = f"  h2load --h1 {median(row.h2load):.2f}x" if row.h2load else ""
        print(f"  c={row.c:<5} {row.mode:<10} vs {row.ref}: loadcmp {row.ratio:.2f}x{h2}   CPU per request "
              f"{row.ref} {row.ref_cpu:.1f} us, loadcmp {row.thread_cpu:.1f} us (load thread) / "
              f"{row.process_cpu:.1f} us (whole process)")
