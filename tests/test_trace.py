"""--trace on the client's side (docs/tracing.md): the traceparent header reaches the server from every HTTP/1 loop
(compiled and pure-Python, http and https), its ids are unique and well formed, the share sampled is drawn the same
way every run, and the rows kept match what the recorder counted."""

from __future__ import annotations

import math
import re

import pytest

from loadcmp.errors import UsageError
from loadcmp.load.driver import LoadSpec
from loadcmp.load.record.recorder import Result
from loadcmp.load.run.workers import run_load
from loadcmp.load.schedules import Closed, Rate
from loadcmp.load.target import TlsOptions, make_target
from loadcmp.trace import ids
from loadcmp.store.traceparts import add_requests
from loadcmp.trace.rows import TraceRows

pytestmark = pytest.mark.usefixtures("loop_path")  # both closed loops (conftest)

HEADER = re.compile(r"^00-([0-9a-f]{16})([0-9a-f]{16})-([0-9a-f]{16})-01$")


def traced(url: str, share: float = 1.0, sched=Closed(4), keepalive: bool = True, duration: float = 0.6,
           warmup: float = 0.0, workers: int = 1, tls: TlsOptions | None = None) -> Result:
    target = make_target(url, keepalive=keepalive, **({"tls": tls} if tls else {}))
    spec = LoadSpec(target, sched, duration, warmup=warmup, trace=share)
    return run_load(spec, workers=workers)


def rows_of(r: Result) -> TraceRows:
    assert r.traced is not None
    return r.traced


def check_ids(seen: list[str]) -> None:
    """Well formed, unique, the parent the trace-id's second half."""
    assert seen
    for v in seen:
        m = HEADER.match(v)
        assert m, v
        assert m[2] == m[3]
    assert len(set(seen)) == len(seen)


@pytest.mark.parametrize("keepalive", [True, False])
def test_every_request_carries_the_header_and_has_its_row(faulty, keepalive):
    before = len(faulty.traceparents)
    r = traced(faulty.url("/ok"), keepalive=keepalive)
    seen = faulty.traceparents[before:]
    check_ids(seen)
    rows = rows_of(r)
    counts = r.counts()
    assert rows.counts().get("ok", 0) == counts["ok"] > 0
    assert rows.counts().get("unfinished", 0) == r.unfinished
    assert len(rows) == r.started - r.dropped
    assert all(ids.parse_id(i)[1] >= 0 for i in ids_of(rows))
    sent = {ids.parse_traceparent(v)[0] for v in seen}  # type: ignore[index]
    assert set(ids_of(rows)) <= sent  # every row's request reached the server with its id
    assert (rows.cols["latency_ms"][rows.cols["kind"] == 0] > 0).all()
    if not keepalive:
        assert not math.isnan(float(rows.cols["connect_ms"][0]))


def ids_of(rows: TraceRows) -> list[str]:
    return [ids.format_id(rows.nonce[p], s) for p, s in zip(rows.cols["part"].tolist(), rows.cols["seq"].tolist(),
                                                            strict=True)]


@pytest.mark.parametrize("keepalive", [True, False])
def test_https_carries_the_header(tls_faulty, tls_cert, keepalive):
    before = len(tls_faulty.traceparents)
    r = traced(tls_faulty.url("/ok"), tls=TlsOptions(cafile=str(tls_cert[0])), keepalive=keepalive)
    check_ids(tls_faulty.traceparents[before:])
    assert rows_of(r).counts().get("ok") == r.counts()["ok"] > 0
    assert set(rows_of(r).cols["proto"].tolist()) == {1}  # h1-tls


def test_failures_and_unfinished_are_rows_too(faulty):
    r = traced(faulty.url("/mixed"), duration=0.5)
    got = rows_of(r).counts()
    counts = r.counts()
    for kind in ("ok", "http_4xx", "http_5xx"):
        assert got.get(kind, 0) == counts[kind]
    r = traced(faulty.url("/stall"), duration=0.3)
    assert rows_of(r).counts() == {"unfinished": r.unfinished} and r.unfinished == 4


def test_a_share_is_drawn_the_same_in_every_run_and_within_its_bounds():
    n, share = 20000, 0.1
    a, b = ids.Ids(share), ids.Ids(share)
    drawn = [a.take() for _ in range(n)]
    assert drawn == [b.take() for _ in range(n)]
    k = sum(d >= 0 for d in drawn)
    sd = math.sqrt(n * share * (1 - share))
    assert abs(k - n * share) < 4 * sd
    assert a.nonce != b.nonce  # a nonce per trial and worker


def test_a_sampled_load_sends_the_drawn_share(faulty):
    before = len(faulty.traceparents)
    r = traced(faulty.url("/ok"), share=0.25, duration=0.8)
    seen = faulty.traceparents[before:]
    check_ids(seen)
    seqs = {int(HEADER.match(v)[2], 16) for v in seen}  # type: ignore[index]
    assert seqs and all(ids.Ids(0.25).sampled(s) for s in seqs)
    total = r.started + r.warmup_requests
    assert abs(len(seen) - 0.25 * total) < 4 * math.sqrt(total * 0.25 * 0.75) + 5


def test_workers_and_trials_never_share_an_id(faulty):
    r = traced(faulty.url("/ok"), workers=2)
    rows = rows_of(r)
    assert len(set(rows.nonce)) == 2
    assert len(set(ids_of(rows))) == len(rows)


def test_a_rate_traces_through_the_coroutine_path(faulty):
    before = len(faulty.traceparents)
    r = traced(faulty.url("/ok"), sched=Rate(200.0, 64), duration=0.5)
    check_ids(faulty.traceparents[before:])
    assert rows_of(r).counts().get("ok") == r.counts()["ok"] > 0


def test_requests_parquet_has_the_documented_columns(faulty, tmp_path):
    import pyarrow.parquet as pq

    r = traced(faulty.url("/ok"))
    add_requests(tmp_path, rows_of(r), "nginx", 4, 1)
    size = add_requests(tmp_path, rows_of(r), "nginx", 4, 2)
    t = pq.read_table(tmp_path / "requests.parquet")
    assert t.column_names == ["trace_id", "label", "level", "trial", "worker", "t_intended", "t_start", "connect_ms",
                              "handshake_ms", "write_ms", "wait_ms", "read_ms", "latency_ms", "status", "kind",
                              "bytes", "conn", "proto", "stream"]
    assert t.num_rows == 2 * len(rows_of(r)) and size > 0
    assert set(t.column("trial").to_pylist()) == {1, 2}
    assert all(len(i) == 32 for i in t.column("trace_id").to_pylist())


def test_a_share_out_of_bounds_is_refused():
    for bad in (0.0, 2.0, -1.0):
        with pytest.raises(UsageError):
            ids.check_share(bad)
    ids.check_share(1.0)


def test_an_id_formats_and_parses_back():
    trace_id = ids.format_id(0xABC, 42)
    assert ids.parse_id(trace_id) == (0xABC, 42)
    assert ids.parse_traceparent(ids.traceparent(0xABC, 42)) == (trace_id, f"{42:016x}")
    assert ids.parse_traceparent("nonsense") is None


def test_a_refused_connect_is_a_row_too(refused_port):
    r = traced(f"http://127.0.0.1:{refused_port}/", keepalive=False, duration=0.3)
    assert rows_of(r).counts().get("connect_refused", 0) == r.counts()["connect_refused"] > 0
    assert (rows_of(r).cols["status"] == 0).all()


def test_the_aiohttp_engine_carries_the_header(faulty):
    before = len(faulty.traceparents)
    spec = LoadSpec(make_target(faulty.url("/ok"), keepalive=True), Closed(2), 0.8, engine="aiohttp", trace=1.0)
    r = run_load(spec)
    check_ids(faulty.traceparents[before:])
    assert rows_of(r).counts().get("ok") == r.counts()["ok"] > 0
