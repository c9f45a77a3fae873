"""--think over the multiplexed protocols (`load.pacing`): each of a connection's -m streams idles between its answer
and its next request, on h2 and h2c (the compiled loop, `_ch2link.pyx`, and the `h2` package's fallback) and h3
(qh3), against in-process servers. The rate is about c x m / (think + latency), a ratio never an absolute time; the
connections stay open while their streams idle; every request is accounted for. The paced write and read that these
protocols refuse are refused in one line, with the reason."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest
import trustme
from click.testing import CliRunner
from helpers.h2server import H2Server
from helpers.h3server import H3Server

from loadcmp.cli import cli
from loadcmp.load.driver import LoadSpec
from loadcmp.load.pacing import Pacing
from loadcmp.load.record.recorder import Result
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.run.workers import run_load
from loadcmp.load.schedules import Closed
from loadcmp.load.target import TlsOptions, make_target

from loadcmp.load.core.compiled import PURE_ENV
from loadcmp.load.h2.loops import h2_module

CLIENTS, STREAMS, THINK = 3, 4, 0.1


def _context(ca: trustme.CA) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    ctx.set_alpn_protocols(["h2"])
    return ctx


@pytest.fixture(params=["compiled", "python"])
def h2_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each h2 test on both h2 engines: the compiled one and the `h2` package (LOADCMP_PURE_PYTHON=1)."""
    monkeypatch.setenv(PURE_ENV, "1" if request.param == "python" else "0")
    if request.param == "compiled" and h2_module() is None:
        pytest.skip("the compiled h2 engine is not built here (loadcmp/load/h2/_ch2.pyx)")
    return str(request.param)


@pytest.fixture(scope="module")
def h2_servers(ca: trustme.CA) -> Iterator[dict[tuple[str, str], H2Server]]:
    out = {(proto, how): H2Server(how, _context(ca) if proto == "h2" else None).start()
           for proto in ("h2", "h2c") for how in ("ok", "every:5")}
    yield out
    for s in out.values():
        s.stop()


@pytest.fixture(scope="module")
def h3(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[H3Server]:
    s = H3Server(ca, tmp_path_factory.mktemp("h3")).start()
    yield s
    s.stop()


def _load(url: str, proto: str, cafile: str, think: str | None) -> Result:
    target = make_target(url, proto=proto, streams=STREAMS, tls=TlsOptions(cafile=cafile if proto != "h2c" else None))
    return run_load(LoadSpec(target, Closed(CLIENTS), 1.5, timeout=3.0, pacing=Pacing(think) if think else None))


def _thought(r: Result) -> dict:
    """The load's summary, accounted for, its rate c x m / (think + latency) within a quarter, and the think not in
    its latency."""
    doc = result_doc(r)
    assert check_invariant(doc) and doc["ok"] > CLIENTS * STREAMS, doc
    p50 = doc["latency_ms"]["p50"] / 1000
    expected = CLIENTS * STREAMS / (THINK + p50)
    assert 0.75 < doc["started"] / doc["duration_s"] / expected < 1.25, (doc["started"], doc["duration_s"], expected)
    assert p50 < THINK / 2, doc["latency_ms"]
    return doc


@pytest.mark.parametrize("proto", ["h2", "h2c"])
def test_each_stream_thinks_on_its_kept_connection(h2_servers, cafile, h2_path, proto):
    fast = result_doc(_load(h2_servers[(proto, "ok")].url("/"), proto, cafile, None))
    r = _load(h2_servers[(proto, "ok")].url("/"), proto, cafile, f"{THINK}s±20ms")
    doc = _thought(r)
    assert doc["failed"] == 0 and doc["started"] < fast["started"] / 2, (doc, fast["started"])
    assert r.streams is not None and r.streams.connections == CLIENTS, r.streams  # kept open while they idle


@pytest.mark.parametrize("proto", ["h2", "h2c"])
def test_a_connection_gone_while_its_streams_think_is_opened_again(h2_servers, cafile, h2_path, proto):
    """The server ends each connection after 5 answers (a GOAWAY, a close), mostly while its streams think: the
    first to wake opens a new one, and the rate is still the think's."""
    r = _load(h2_servers[(proto, "every:5")].url("/"), proto, cafile, f"{THINK}s")
    doc = _thought(r)
    assert r.streams is not None and r.streams.connections >= doc["ok"] // 5, r.streams
    assert set(k for k, n in doc["failures"].items() if n) <= {"reset"}, doc["failures"]  # a close racing a send


def test_each_h3_stream_thinks(h3, cafile):
    r = _load(h3.url("/ok"), "h3", cafile, f"{THINK}s")
    doc = _thought(r)
    assert doc["failed"] == 0 and doc["streams"]["connections"] == CLIENTS, doc["streams"]


@pytest.mark.parametrize("args, reason", [
    (["--proto", "h2", "--read-rate", "1mbit"], "does not pace its reads"),
    (["--proto", "h3", "--read-rate", "1mbit"], "QUIC runs over UDP"),
    (["--proto", "h2", "--send-rate", "slowloris"], "slowloris"),
    (["--proto", "h3", "--send-rate", "2kbit"], "slowloris"),
])
def test_a_paced_write_or_read_is_refused_with_its_reason(args, reason):
    res = CliRunner().invoke(cli, ["bench", "https://127.0.0.1:9/", "-t", "1", *args])
    assert res.exit_code == 2 and reason in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
