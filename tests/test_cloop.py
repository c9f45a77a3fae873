"""The compiled closed loop (loadcmp/load/h1/_cloop.pyx, _chttp.h, _ctally.pyx): its response
reader at the edges, its counting against the recorder's, the same outcomes as the
pure-Python loop against misbehaving servers, and how the loop is chosen. The engine tests run on both
loops too (conftest's loop_path)."""

from __future__ import annotations

import json
import math
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.load.core.compiled import PURE_ENV
from loadcmp.load.h1.loops import cloop_module
from loadcmp.load.engines import engine_path
from loadcmp.load.record.histogram import MAX_BUCKET, Histogram
from loadcmp.load.driver import LoadSpec
from loadcmp.load.record.outcomes import KINDS, OK
from loadcmp.load.record.recorder import PHASES, Recorder
from loadcmp.load.schedules import Closed
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.target import make_target
from loadcmp.load.run.workers import run_load

COMPLETE, BAD, CUT = 1, -1, 0


@pytest.fixture(scope="module")
def creader():
    if cloop_module() is None:
        pytest.skip("the compiled loop is not built here")
    from loadcmp.load.core import _cbase

    return _cbase.parse


def every_split(data: bytes) -> list[list[bytes]]:
    """`data` cut in two at every place, and byte by byte."""
    return [[data[:i], data[i:]] for i in range(1, len(data))] + [[data[i:i + 1] for i in range(len(data))]]


CHUNKED = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
           b"5\r\nhello\r\nA;name=value\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n")


def test_chunked_is_read_to_its_end_however_it_is_cut(creader):
    for chunks in every_split(CHUNKED):
        assert creader(chunks) == (COMPLETE, 200, 1, 0), chunks
    assert creader([CHUNKED[:-2]]) == (CUT, 200, 1, 0)  # no empty line after the trailer: cut short


@pytest.mark.parametrize("bad", [
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # no hex size
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXY0\r\n\r\n",  # no CRLF after the data
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n",  # a size past 2**63
    b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",  # ambiguous framing
    b"HTTP/1.1 2x0 Bogus\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
    b"SSH-2.0-OpenSSH_9.2\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n",  # a TLS hello
])
def test_garbage_is_bad_at_once(creader, bad):
    assert creader([bad])[0] == BAD
    assert creader([bad[:7], bad[7:]])[0] == BAD


def test_lengths_closes_and_bodiless_answers(creader):
    assert creader([b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", b"lo"]) == (COMPLETE, 200, 1, 0)
    assert creader([b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"]) == (CUT, 200, 1, 0)
    got = creader([b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nConnection: close\r\n\r\n"])
    assert got == (COMPLETE, 404, 0, 0)
    # no length: the body ends when the server closes (read-to-close), which the reader sees as an EOF
    got = creader([b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread until", b" the end"])
    assert got == (COMPLETE, 200, 0, 0)
    assert creader([b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"]) == (COMPLETE, 200, 1, 0)
    for status in (204, 304):
        assert creader([b"HTTP/1.1 %d X\r\nContent-Length: 10\r\n\r\n" % status]) == (COMPLETE, status, 1, 1)
    assert creader([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"], head=True) == (COMPLETE, 200, 1, 1)
    # bare LF line ends; an interim 100 before the answer; a head cut mid-line is cut short, not bad
    assert creader([b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok"]) == (COMPLETE, 200, 1, 0)
    assert creader([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"])[:2] == (1, 201)
    assert creader([b"HTTP/1.1 200 OK\r\nContent-Len"])[0] == CUT
    long_header = b"X-Big: " + b"a" * 100_000 + b"\r\n"
    pieces = [b"HTTP/1.1 200 OK\r\n", long_header[:5000], long_header[5000:], b"Content-Length: 0\r\n\r\n"]
    assert creader(pieces)[0] == 1
    assert creader([b"HTTP/1.1 200 OK\r\nX: " + b"a" * 300_000])[0] == BAD  # a line past 256 KiB


def load(url: str, clients: int = 3, duration: float = 1.0, timeout: float = 10.0, keepalive: bool = False):
    return run_load(LoadSpec(make_target(url, keepalive=keepalive), Closed(clients), duration, timeout=timeout))


@pytest.mark.parametrize("keepalive", [False, True], ids=["new-connection", "keep-alive"])
@pytest.mark.parametrize("path, kind", [("/pieces", "ok"), ("/close", "ok"), ("/204", "ok"), ("/interim", "ok"),
                                        ("/chunked", "ok"), ("/500", "http_5xx"), ("/cut", "reset"),
                                        ("/garbage", "protocol_error"), ("/malformed", "protocol_error")])
def test_both_loops_end_each_answer_the_same_way(faulty, loop_path, path, kind, keepalive):
    """With keep-alive the connection is kept after a complete answer (an error page too) and
    opened again after the server closed it (/close) or after a failure."""
    r = load(faulty.url(path), keepalive=keepalive)
    counts = r.counts()
    assert counts[kind] > 0 and not {k: v for k, v in counts.items() if k != kind and v}, (loop_path, counts)
    assert check_invariant(result_doc(r))
    opened = r.phases["connect"].count
    if keepalive and kind in ("ok", "http_5xx") and path != "/close":
        assert opened == 3, (loop_path, opened, counts)  # one connection per client, kept to the end
    elif kind in ("ok", "http_5xx"):
        assert opened == counts[kind], (loop_path, opened, counts)


@pytest.mark.parametrize("keepalive", [False, True], ids=["new-connection", "keep-alive"])
def test_both_loops_record_status_codes_and_phases(faulty, loop_path, keepalive):
    r = load(faulty.url("/ok"), keepalive=keepalive)
    ok = r.counts()["ok"]
    assert ok > 50 and r.status_codes == {200: ok}, r.status_codes
    for name in ("connect", "write", "wait", "read"):
        h = r.phases[name]
        want = 3 if keepalive and name == "connect" else ok  # the connect phase: only where one was opened
        assert h.count == want and 0 <= h.min_s <= h.max_s < 1.0, (name, h.count, h.min_s, h.max_s)


def test_the_window_and_the_count_hold_on_both_loops(fast_server, loop_path):
    """-n and no -n, with a warm-up: what the server saw is exactly what was accounted."""
    import urllib.request

    def seen() -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{fast_server}/count", timeout=10) as f:
            return int(f.read())

    before = seen()
    r = run_load(LoadSpec(make_target(f"http://127.0.0.1:{fast_server}/"), Closed(20), 1.0, warmup=0.3))
    doc = result_doc(r)
    assert check_invariant(doc) and doc["warmup_requests"] > 0
    assert seen() - before == doc["started"] + doc["warmup_requests"], doc


def test_which_loop_runs(monkeypatch):
    monkeypatch.setenv(PURE_ENV, "1")
    assert cloop_module() is None and engine_path("fast") == "python"
    monkeypatch.setenv(PURE_ENV, "0")
    built = cloop_module() is not None
    assert engine_path("fast") == ("compiled" if built else "python")  # with or without keep-alive
    assert engine_path("fast", closed=False) == engine_path("fast", https=False, closed=False) == "python"
    assert engine_path("aiohttp") == engine_path("aiohttp", https=True) == "python"
    tls_built = cloop_module(https=True) is not None
    assert engine_path("fast", https=True) == ("compiled" if tls_built else "python")  # OpenSSL's headers were there


def test_a_build_of_older_sources_runs_the_python_loop(monkeypatch):
    """An editable install not built again still imports: the digests of the sources it was built from
    (`BUILT_FROM`) tell it apart from a build of the sources beside it."""
    mod = cloop_module()
    if mod is None:
        pytest.skip("the compiled loop is not built here")
    built = dict(item.rsplit(":", 1) for item in mod.BUILT_FROM.split())
    assert {"h1/_cloop.pyx", "h1/_cloop.pxd", "h1/_chttp.h", "core/_cbuilt.pxi", "core/_cbase.pxd"} <= set(built), \
        built  # each by its path under loadcmp/load: its room's, and the core's it builds on
    one_source_changed = mod.BUILT_FROM.replace(built["h1/_cloop.pyx"], "0" * 16)
    monkeypatch.setattr(mod, "BUILT_FROM", one_source_changed)
    assert cloop_module() is None and engine_path("fast") == "python"
    monkeypatch.setattr(mod, "BUILT_FROM", "")  # built before modules said what they were built from
    assert cloop_module() is None
    monkeypatch.undo()
    assert cloop_module() is mod


def test_a_source_that_is_not_there_is_not_held_against_a_build(tmp_path):
    """An install without the sources: what cannot be compared runs; what differs does not."""
    import hashlib

    from loadcmp.load.core.compiled import _same_sources

    (tmp_path / "a.pyx").write_bytes(b"x = 1\n")
    digest = hashlib.sha256(b"x = 1\n").hexdigest()[:16]
    assert _same_sources(str(tmp_path), f"a.pyx:{digest} gone.h:{'1' * 16}")
    assert not _same_sources(str(tmp_path), f"a.pyx:{'2' * 16}")


def test_the_install_built_the_compiled_loop():
    """With a C compiler on the machine, the normal install must have built it."""
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler: the pure-Python loop is what runs here")
    assert cloop_module() is not None, "pip install -e . did not build loadcmp/load/h1/_cloop.pyx"
    import sysconfig

    from loadcmp.load.h2.loops import h2_module

    include = [sysconfig.get_config_var("INCLUDEDIR") or "", "/usr/include", "/usr/local/include"]
    if any(os.path.isfile(os.path.join(d, "openssl", "ssl.h")) for d in include if d):
        assert cloop_module(https=True) is not None, "OpenSSL's headers are here: _ctls.pyx must be built and current"
        if any(os.path.isfile(os.path.join(d, "nghttp2", "nghttp2.h")) for d in include if d):
            assert h2_module() is not None, "nghttp2's headers are here: _ch2.pyx must be built and current"


@pytest.mark.parametrize("flags", [[], ["-k"]], ids=["new-connection", "keep-alive"])
def test_bench_json_says_which_loop_ran(faulty, loop_path, flags):
    res = CliRunner().invoke(cli, ["bench", faulty.url("/ok"), "-c", "2", "-t", "0.5", "--json", *flags])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["engine_path"] == loop_path
    res = CliRunner().invoke(cli, ["bench", faulty.url("/ok"), "--schedule", "rate", "--rate", "50", "-t", "0.5",
                                   "--json", *flags])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["engine_path"] == "python"  # a coroutine per request


@pytest.fixture(scope="module")
def ctally():
    if cloop_module() is None:
        pytest.skip("the compiled loop is not built here")
    from loadcmp.load.core import _ctally

    return _ctally.tally


def _requests(n: int, t0: float, seed: int = 7) -> list[tuple]:
    """Random requests around a 3 s window from t0: warm-up ones, ends after the window,
    every kind and status, reused connections (no connect phase): (kind, status, t_intended,
    t_sent, t_end, nbytes, (connect, handshake, write, wait, read)), by their start (http: a handshake of 0
    with each connect)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in np.sort(t0 + rng.uniform(-0.5, 3.0, n)).tolist():
        kind = int(rng.integers(0, len(KINDS)))
        sent = t if rng.random() < 0.5 else t + 0.001
        write, wait, read = rng.uniform(0, 0.01, 3).tolist()
        connect = float("nan") if rng.random() < 0.3 else float(rng.uniform(0, 0.001))
        status = int(rng.choice([200, 204, 404, 503])) if kind <= 2 else 0
        out.append((kind, status, t, sent, sent + write + wait + read, int(rng.integers(0, 5000)),
                    (connect, connect * 0.0, write, wait, read)))
    return out


def test_counted_in_c_as_the_recorder_counts(ctally):
    """The compiled loop counts in C (`_ctally`) what `Recorder.start` and `done` count, request
    by request, with starts and ends interleaved as they happen and handed over at any moment."""
    t0 = 100.0
    reqs = _requests(5000, t0)
    one, c = Recorder(t0, 3.0), Recorder(t0, 3.0)
    counted = [one.start(r[2]) for r in reqs]
    ends = sorted((r for r, n in zip(reqs, counted, strict=True) if n), key=lambda r: r[4])
    for kind, status, t, sent, end, nbytes, (connect, _, write, wait, _) in ends:
        one.done(kind, t, sent, end, nbytes, status, (sent - connect, sent, sent + write, sent + write + wait, end))
    ticks = [(t0 - 0.5 + 0.3 * k, None) for k in range(13)]  # the driver's settle() mid-second, warm-up too
    timed = sorted([(r[2], r[2]) for r in reqs] + [(r[4], r) for r in ends] + ticks, key=lambda e: e[0])
    assert ctally(c, [ev for _, ev in timed]) == [int(n) for n in counted]
    a, b = one.close(), c.close()
    assert a.counts() == b.counts() and a.unfinished == b.unfinished > 0 and a.started == b.started
    assert a.warmup_requests == b.warmup_requests > 0
    assert [(s.counts, s.bytes, s.started) for s in a.seconds] == [(s.counts, s.bytes, s.started) for s in b.seconds]
    assert a.status_codes == b.status_codes and sum(a.status_codes.values()) == a.latency().count
    for ha, hb in ((a.latency(), b.latency()), (a.service(), b.service())):  # the same values: the same buckets
        assert ha.idx.tolist() == hb.idx.tolist() and ha.cnt.tolist() == hb.cnt.tolist()
        assert (ha.min_s, ha.max_s) == (hb.min_s, hb.max_s) and ha.stdev == pytest.approx(hb.stdev, rel=1e-9)
    for p in PHASES:  # done() takes the phases from marks: the same but for rounding
        ha, hb = a.phases[p], b.phases[p]
        assert ha.count == hb.count and (ha.min_s, ha.max_s) == pytest.approx((hb.min_s, hb.max_s), rel=1e-6)
        assert ha.mean == pytest.approx(hb.mean, rel=1e-6) and ha.stdev == pytest.approx(hb.stdev, rel=1e-6)
        for q in (50, 90, 99):
            assert ha.percentile(q) == pytest.approx(hb.percentile(q), rel=0.011), (p, q)
    assert a.phases["connect"].count < a.phases["read"].count == a.latency().count  # reused connections: no connect


def test_c_takes_the_requests_tickets(ctally):
    """-n: warm-up requests need no ticket, the N after it take one each, and the load is
    spent when the last of them is handed over."""
    rec = Recorder(10.0, 5.0, requests=3)
    spent = []
    rec.on_spent = lambda: spent.append(True)
    ends = [(OK, 200, t, t, t + 0.1, 10, (0.0, 0.0, 0.0, 0.05, 0.05)) for t in (10.1, 10.2, 10.3)]
    assert ctally(rec, [9.5, 10.1, 10.2, 10.3, 10.4, *ends]) == [0, 1, 1, 1, -1]
    assert spent == [True] and rec.started == 3 and rec.inflight == 0 and rec.warmup_started == 1
    assert rec.close().stopped_by == "requests"


def test_edge_values_fall_in_the_same_buckets_in_c_and_python(ctally):
    """Below 1 us, and longer than the last bucket (6.6 hours): C's dense count and numpy agree."""
    durations = [0.0, 1e-7, 1e-6, 0.5, 3e4]
    c = Recorder(0.0, 1e5)
    ends = [(OK, 200, 1.0, 1.0, 1.0 + d, 1, (0.0, 0.0, 0.0, 0.0, 0.0)) for d in durations]
    ctally(c, [1.0] * len(durations) + ends)
    got, want = c.close().latency(), Histogram.of(durations)
    assert got.idx.tolist() == want.idx.tolist() and got.cnt.tolist() == want.cnt.tolist()
    assert want.idx.tolist()[0] == 0 and want.idx.tolist()[-1] == MAX_BUCKET
    assert Histogram.of([math.inf]).idx.tolist() == [MAX_BUCKET]  # not a wrapped-around int32
    assert Histogram.of([math.nan]).idx.tolist() == [0]

