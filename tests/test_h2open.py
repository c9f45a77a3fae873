"""The open schedules over HTTP/2 (the compiled loop, `_ch2.H2Loop.start_open`): a rate holds its rate and a replay
its log's order and timing, over h2 and h2c, against the in-process h2 servers; every arrival is accounted for
(`ok + failures + unfinished == started`, the drops among the failures, as the h1 rate loop counts them), a graceful
GOAWAY's unprocessed streams are retried, and the `h2` package's fallback refuses an open schedule in one line."""

from __future__ import annotations

import ssl
from array import array
from collections.abc import Iterator

import pytest
import trustme
from helpers.h2server import H2Server

from loadcmp.errors import UsageError
from loadcmp.load.core.compiled import PURE_ENV
from loadcmp.load import engines
from loadcmp.load.driver import LoadSpec
from loadcmp.load.h2.loops import h2_module
from loadcmp.load.pageset import Pages
from loadcmp.load.record.result import Result
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.run.workers import run_load
from loadcmp.load.schedules import Rate, Replay, Schedule
from loadcmp.load.target import TlsOptions, make_target

pytestmark = pytest.mark.skipif(h2_module() is None, reason="the compiled h2 engine is not built here")


@pytest.fixture(params=["h2", "h2c"])
def proto(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(request: pytest.FixtureRequest, ca: trustme.CA, proto: str) -> Iterator[H2Server]:
    """A server answering as the test's `how` parameter says (else "ok"), over TLS for h2."""
    ctx = None
    if proto == "h2":
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1").configure_cert(ctx)
        ctx.set_alpn_protocols(["h2"])
    s = H2Server(getattr(request, "param", "ok"), ctx).start()
    yield s
    s.stop()


def _load(server: H2Server, proto: str, cafile: str, schedule: Schedule, streams: int = 4, duration: float = 2.0,
          pages: Pages | None = None, timeout: float = 3.0) -> tuple[dict, Result]:
    target = make_target(server.url("/"), proto=proto, streams=streams,
                         tls=TlsOptions(cafile=cafile if proto == "h2" else None))
    r = run_load(LoadSpec(target, schedule, duration, warmup=0.5, timeout=timeout, pages=pages))
    doc = result_doc(r)
    assert check_invariant(doc), doc
    return dict(doc), r


def test_a_rate_holds_its_rate_over_streams(server, proto, cafile):
    doc, r = _load(server, proto, cafile, Rate(200.0, 2), streams=8)
    assert 0.95 <= doc["started"] / (200 * 2.0) <= 1.05, doc["started"]
    assert doc["dropped"] == 0 and doc["failed"] == 0 and doc["ok"] >= doc["started"] - 8, (doc["failures"], doc)
    assert r.streams is not None and r.streams.connections == 2, r.streams  # -c opened at the start, kept


@pytest.mark.parametrize("server", ["stall"], indirect=True)
def test_arrivals_beyond_every_free_stream_are_dropped_and_counted(server, proto, cafile):
    """A third of the streams never answered: they hold 1 x 2 streams, so arrivals find none free and are dropped
    (among the failures, as the h1 rate loop counts them), never queued; the answered ones still go at once."""
    doc, _ = _load(server, proto, cafile, Rate(100.0, 1), streams=2, timeout=1.0)
    assert doc["dropped"] > 0 and doc["ok"] > 0, doc
    assert doc["failures"]["dropped"] == doc["dropped"], doc["failures"]
    assert 0.95 <= doc["started"] / (100 * 2.0) <= 1.05, doc["started"]


@pytest.mark.parametrize("server", ["every:5"], indirect=True)
def test_a_graceful_goaways_unprocessed_streams_are_retried_at_a_rate(server, proto, cafile):
    doc, r = _load(server, proto, cafile, Rate(100.0, 2), streams=8)
    st = r.streams
    assert st is not None and st.goaways > 25, st
    failures = {k: n for k, n in doc["failures"].items() if n}
    assert set(failures) <= {"dropped"}, failures  # none is `goaway` (a drop: the slow server's new handshakes)
    assert 0 <= st.goaway_unprocessed - st.retried <= 2 * 8, st  # owed at the close at most: never sent again
    assert 0.95 <= doc["started"] / (100 * 2.0) <= 1.05, doc["started"]


def test_a_replay_keeps_its_logs_order_and_timing(server, proto, cafile):
    """Forty requests 50 ms apart over three pages: the server gets them in the log's order, spread over the
    log's span."""
    paths = ("/a", "/b", "/c")
    targets = tuple(make_target(server.url(p), proto=proto, tls=TlsOptions(cafile=cafile if proto == "h2" else None))
                    for p in paths)
    order = array("I", [(i * 7) % 3 for i in range(40)])
    dues = array("d", [0.6 + 0.05 * i for i in range(40)])  # after the 0.5 s warm-up: every one counted
    pages = Pages(targets, paths, order)
    doc, _ = _load(server, proto, cafile, Replay(dues, 2), duration=2.5, pages=pages)
    assert doc["started"] == doc["ok"] == 40, doc
    got = server.arrived
    assert [p.decode() for _, p in got] == [paths[k] for k in order], got
    span = got[-1][0] - got[0][0]
    assert 0.9 <= span / (dues[-1] - dues[0]) <= 1.1, span
    gaps = sorted(b[0] - a[0] for a, b in zip(got, got[1:], strict=False))
    assert 0.5 <= gaps[len(gaps) // 2] / 0.05 <= 1.5, gaps  # the median gap is the log's


def test_the_h2_packages_fallback_refuses_an_open_schedule_in_one_line(monkeypatch):
    monkeypatch.setenv(PURE_ENV, "1")
    for proto in ("h2", "h2c"):  # said by the registry the spec's check reads, so before anything starts
        err = engines.problem(proto, "fast", "rate")
        assert err is not None and "\n" not in err and "closed loop only" in err, err
        assert engines.problem(proto, "fast", "closed") is None
    target = make_target("http://127.0.0.1:9/", proto="h2c", streams=2)
    with pytest.raises(UsageError) as e:  # and by the engine's maker, for a spec built in code
        engines.make_engine(LoadSpec(target, Rate(10.0, 1), 1.0))
    assert "closed loop only" in str(e.value), e.value
    monkeypatch.delenv(PURE_ENV)
    assert engines.problem("h2c", "fast", "rate") is None  # the compiled loop runs it here
