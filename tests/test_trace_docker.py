"""--trace's server side in real containers: each stack started with the trace on writes a line per traced request,
the trial reads them in its containers (and empties the files), and the join matches every answered request.

The client's rows here come from a small loop that sends the traceparent itself (keep-alive, several threads)
and writes requests.parquet with the contract's columns; the engines' own rows join the same way.
"""

from __future__ import annotations

import http.client
import secrets
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from loadcmp.lab import containers, planning, render, stacks
from loadcmp.observe.tracelogs import read_trace_lines
from loadcmp.records import TrialRecord
from loadcmp.store import traceparts
from loadcmp.sweep.tracing import join_trial

pytestmark = pytest.mark.docker


def send(port: int, page: str, n: int, threads: int) -> list[dict]:
    """n requests from `threads` keep-alive clients, each with a traceparent; their client rows."""
    rows: list[dict] = []

    def worker(w: int) -> None:
        nonce = secrets.token_hex(8)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for i in range(1, n // threads + 1):
            tid = f"{nonce}{i:016x}"
            t0 = time.time()
            c.request("GET", page, headers={"traceparent": f"00-{tid}-{i:016x}-01"})
            r = c.getresponse()
            size = len(r.read())
            rows.append({"trace_id": tid, "worker": w, "t": t0, "ms": (time.time() - t0) * 1000, "status": r.status,
                         "bytes": size})

    ts = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return rows


def write_requests(folder: Path, label: str, rows: list[dict]) -> None:
    n = len(rows)
    nan = np.full(n, np.nan, "float32")
    pq.write_table(pa.table({
        "trace_id": [r["trace_id"] for r in rows], "label": [label] * n, "level": np.full(n, 8, "int32"),
        "trial": np.ones(n, "int16"), "worker": np.array([r["worker"] for r in rows], "int16"),
        "t_intended": [r["t"] for r in rows], "t_start": [r["t"] for r in rows], "connect_ms": nan,
        "handshake_ms": nan, "write_ms": nan, "wait_ms": nan, "read_ms": nan,
        "latency_ms": np.array([r["ms"] for r in rows], "float32"),
        "status": np.array([r["status"] for r in rows], "int16"), "kind": ["ok"] * n,
        "bytes": np.array([r["bytes"] for r in rows], "int32"), "conn": np.zeros(n, "int32"), "proto": ["h1"] * n,
        "stream": np.zeros(n, "int32")}), folder / traceparts.REQUESTS)


def traced_trial(stack_name: str, folder: Path, n: int = 400, threads: int = 8, page: str = "/sleep.php?ms=1",
                 **sets: object) -> traceparts.TrialMatch:
    """One stack up with its trace logs on, n traced requests to `page`, its lines read and joined."""
    stack = stacks.catalog().get(stack_name)
    dep = containers.up(planning.plan_deployment(stack, overrides={render.TRACE: True, **sets}))
    try:
        t0 = time.time()
        rows = send(dep.port, page, n, threads)
        got = read_trace_lines(dep)
        again = read_trace_lines(dep, wait=0)  # the files were emptied: a kept server's next trial starts clean
    finally:
        dep.stop()
    assert again.lines == [], len(again.lines)
    write_requests(folder, stack_name, rows)
    record = TrialRecord(server=stack_name, level=8, trial=1, stack=stack_name, keepalive=True, status="ok",
                         reason=None, page="/sleep.php", window_start=t0, result={})  # type: ignore[typeddict-item]
    assert join_trial(folder, record, time.time() - t0, got) == []
    (match,) = traceparts.read_matches(folder)
    return match


@pytest.mark.parametrize("stack", ["nginx", "apache-prefork", "apache-event", "caddy", "lighttpd", "nginx-apache"])
def test_every_answered_traced_request_is_matched(stack: str, tmp_path: Path, images) -> None:
    match = traced_trial(stack, tmp_path)
    assert match["answered"] == 400 and match["matched"] == 400, match
    parts = traceparts.read_parts(tmp_path)
    assert parts is not None and len(parts) == 400
    held = parts["server_ms"] + parts["upstream_wait_ms"] + parts["upstream_ms"]
    assert (held >= 0.9).mean() > 0.9  # the page sleeps 1 ms: the servers' parts hold it


@pytest.mark.parametrize("children", [2, 16])
def test_the_fpm_queue_holds_p99_when_php_fpm_has_too_few_workers(children: int, tmp_path: Path, images) -> None:
    """/sleep.php?ms=20 at 16 clients on nginx: with 2 php-fpm workers most of p99 waits in php-fpm's socket
    queue; with 16 it does not."""
    from loadcmp.trace.breakdown import shares

    traced_trial("nginx", tmp_path, n=160, threads=16, page="/sleep.php?ms=20",
                 **{"fpm.pm": "static", "fpm.max_children": children})
    parts = traceparts.read_parts(tmp_path)
    assert parts is not None
    queue = shares(parts, parts["latency_ms"].astype(float), 0.99)["upstream_wait"]
    assert queue > 0.5 if children == 2 else queue < 0.2, queue
