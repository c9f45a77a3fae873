"""The HTTP/2 rows of the benchmark (bench/compare.py): the same nginx, pinned the same way, serving h2 over TLS
(ALPN) and h2c (prior knowledge), loaded by h2load and by `loadcmp bench --proto h2|h2c -m M` in rounds of
A B, then B A: `-c 50 -m 10` and `-c 1000 -m 1`.

The stack is deployed as the plain and https rows deploy it, and its rendered front config gets `http2` on its
listen line (over TLS: h2 by ALPN; in cleartext: h2c by prior knowledge only), unless the stack's own data
already says it. h2load does not verify the server's certificate; loadcmp verifies it against the run's CA.

Client CPU per request: h2load's whole process (user + system, start to exit); loadcmp's load thread inside
the measured window (`client_cpu_us`), and its whole process (the interpreter's start-up included).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from common import PY, Run, alternate, free_port, measured, median, pinned

from loadcmp.lab import containers as lab, planning
from loadcmp.lab.certs import RunCA
from loadcmp.lab.model import Stack
from loadcmp.lab.render import DeploymentPlan

SETTINGS = ((50, 10), (1000, 1))
"""(-c connections, -m streams each), as the issue asks: h2load's usual and one stream on many connections."""


def run_h2load(url: str, c: int, m: int, t: int) -> Run:
    """h2load, one thread: its succeeded requests over its own time (h2c by prior knowledge for http://)."""
    out, cpu, b0, b1 = measured(pinned(["h2load", "-t1", f"-c{c}", f"-m{m}", f"-D{t}", url]), check=True)
    secs = float(re.search(r"finished in ([\d.]+)s", out).group(1))  # type: ignore[union-attr]
    done = int(re.search(r"(\d+) succeeded", out).group(1))  # type: ignore[union-attr]
    return Run(done / secs, 1e6 * cpu / max(1, done), b0, b1)


class Ours(NamedTuple):
    run: Run
    process_us: float
    proto: str
    goaways: int


def run_ours(url: str, proto: str, c: int, m: int, t: int, cafile: str | None) -> Ours:
    """`loadcmp bench --proto P -m M`, the compiled h2 engine."""
    cmd = [PY, "-m", "loadcmp", "bench", url, "--proto", proto, "-m", str(m), "-c", str(c), "-t", str(t),
           "--warmup", "0", "--json", "--client-cpus", "0"] + (["--cacert", cafile] if cafile else [])
    out, cpu, b0, b1 = measured(pinned(cmd), check=True, env={**os.environ, "LOADCMP_PURE_PYTHON": "0"})
    doc = json.loads(out)
    st = doc.get("streams") or {}
    run = Run(doc["completions_per_s"], doc.get("client_cpu_us") or float("nan"), b0, b1)
    return Ours(run, 1e6 * cpu / max(1, doc["completed"]), st.get("protocol", "?"), st.get("goaways", 0))


class H2Row(NamedTuple):
    proto: str
    c: int
    m: int
    ref_rps: float
    ratios: list[float]
    ref_cpu: float
    thread_cpu: float
    process_cpu: float


def one_h2_level(url: str, proto: str, c: int, m: int, t: int, rounds: int, cafile: str | None) -> H2Row:
    runners: dict[str, Callable[[], Any]] = {"h2load": lambda: run_h2load(url, c, m, t),
                                             "ours": lambda: run_ours(url, proto, c, m, t, cafile)}
    got = alternate(rounds, runners)
    ref: list[Run] = got["h2load"]
    ours: list[Ours] = got["ours"]
    row = H2Row(proto, c, m, median([r.rps for r in ref]),
                [o.run.rps / r.rps for o, r in zip(ours, ref, strict=True)],
                median([r.cpu_us for r in ref]), median([o.run.cpu_us for o in ours]),
                median([o.process_us for o in ours]))
    rs = row.ratios
    print(f"{proto:<3} c={c:<5} m={m:<3} h2load {row.ref_rps:9.0f} req/s   loadcmp "
          f"{median([o.run.rps for o in ours]):9.0f} ({median(rs):.2f}x, {min(rs):.2f}-{max(rs):.2f}, rounds "
          f"{' '.join(f'{x:.2f}' for x in rs)}); negotiated {', '.join(sorted({o.proto for o in ours}))}, "
          f"GOAWAYs {sum(o.goaways for o in ours)}", flush=True)
    print(f"        client CPU per request: h2load {row.ref_cpu:.1f} us (whole process), loadcmp {row.thread_cpu:.1f} "
          f"us (its load thread, in the window) / {row.process_cpu:.1f} us (whole process); CPU busy, client / server: "
          f"with h2load {median([x.client_busy for x in ref]):.0f} / {median([x.server_busy for x in ref]):.0f} %, "
          f"with loadcmp {median([o.run.client_busy for o in ours]):.0f} / "
          f"{median([o.run.server_busy for o in ours]):.0f} %", flush=True)
    return row


LISTEN = re.compile(r"^(\s*listen\s+)(\S+):(\d+)(?![^;\n]*\bhttp2\b)( ssl)?([^;\n]*);$", re.M)
"""A rendered front config's listen line (nginx's syntax) that does not speak http2 yet."""


def speaking_h2(plan: DeploymentPlan, h2c_port: int | None) -> DeploymentPlan:
    """The plan with `http2` on its front role's listen line (over TLS: h2 by ALPN), or with a second listen line
    on `h2c_port` speaking h2c (nginx's cleartext h2 is prior knowledge only: the lab's readiness check, in
    HTTP/1.1, keeps the first)."""
    front = plan.stack.front.name
    for r in plan.rendered:
        if r.role.name == front:
            for name, text in r.files.items():
                if h2c_port is None:
                    r.files[name] = LISTEN.sub(r"\1\2:\3\4 http2\5;", text)
                else:
                    r.files[name] = LISTEN.sub(rf"\1\2:\3\4\5;\n\1\2:{h2c_port} http2\5;", text)
    return plan


def h2_rows(stack: Stack, overrides: dict[str, Any], tmp: Path, t: int, rounds: int, page: str) -> list[H2Row]:
    """Both protocols' deployments (h2 with a certificate of a CA made here), each setting in rounds."""
    rows = []
    for proto in ("h2", "h2c"):
        ca = RunCA(tmp) if proto == "h2" else None
        h2c_port = None if ca else free_port()
        plan = speaking_h2(planning.plan_deployment(stack, cpus="1", overrides=overrides, tls=ca), h2c_port)
        with lab.up(plan) as dep:
            url = f"{'https' if ca else 'http'}://127.0.0.1:{h2c_port or dep.port}{page}"
            print(f"\nserver: the same nginx stack serving {proto} on CPU 1 at {url}\n", flush=True)
            rows += [one_h2_level(url, proto, c, m, t, rounds, ca.cafile if ca else None) for c, m in SETTINGS]
    return rows


def print_h2_ratios(rows: list[H2Row]) -> None:
    print("\nh2 ratios to h2load (the median of the rounds'):")
    for row in rows:
        print(f"  {row.proto:<3} -c {row.c:<5} -m {row.m:<3}: loadcmp {median(row.ratios):.2f}x   CPU per request "
              f"h2load {row.ref_cpu:.1f} us, loadcmp {row.thread_cpu:.1f} us (load thread) / {row.process_cpu:.1f} us "
              "(whole process)")
