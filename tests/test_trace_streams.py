"""--trace over h2 and h2c, on both h2 engines (compiled over libnghttp2, and the `h2` package), and over h3: a
traceparent header field on each traced stream reaches the server, and each traced stream has its row, its stream
id in it."""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterator

import pytest
import trustme

from helpers.h2server import H2Server
from helpers.h3server import H3Server
from loadcmp.load.core.compiled import PURE_ENV
from loadcmp.load.driver import LoadSpec
from loadcmp.load.h2.loops import h2_module
from loadcmp.load.run.workers import run_load
from loadcmp.load.schedules import Closed, Rate
from loadcmp.load.target import TlsOptions, make_target

HEADER = re.compile(r"^00-([0-9a-f]{16})([0-9a-f]{16})-([0-9a-f]{16})-01$")


@pytest.fixture(params=["compiled", "python"])
def h2_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(PURE_ENV, "1" if request.param == "python" else "0")
    if request.param == "compiled" and h2_module() is None:
        pytest.skip("the compiled h2 engine is not built here (loadcmp/load/h2/_ch2.pyx)")
    return str(request.param)


@pytest.fixture(scope="module")
def servers(ca: trustme.CA) -> Iterator[dict[str, H2Server]]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    ctx.set_alpn_protocols(["h2"])
    out = {"h2c": H2Server("ok").start(), "h2": H2Server("ok", ctx).start()}
    yield out
    for s in out.values():
        s.stop()


@pytest.mark.parametrize("proto", ["h2", "h2c"])
@pytest.mark.parametrize("share", [1.0, 0.5])
def test_each_traced_stream_carries_the_header_and_has_its_row(servers, cafile, h2_path, proto, share):
    server = servers[proto]
    before = len(server.traceparents)
    target = make_target(server.url("/"), proto=proto, streams=4, tls=TlsOptions(cafile=cafile if proto == "h2"
                                                                                  else None))
    r = run_load(LoadSpec(target, Closed(2), 0.6, trace=share))
    seen = server.traceparents[before:]
    assert seen and all(HEADER.match(v) for v in seen) and len(set(seen)) == len(seen)
    rows = r.traced
    assert rows is not None
    counts = rows.counts()
    assert counts.get("ok", 0) == r.counts()["ok"] if share == 1.0 else 0 < counts.get("ok", 0) < r.counts()["ok"]
    assert counts.get("unfinished", 0) <= r.unfinished
    ids = {f"{rows.nonce[p]:016x}{s:016x}" for p, s in zip(rows.cols["part"].tolist(), rows.cols["seq"].tolist(),
                                                           strict=True)}
    assert ids <= {HEADER.match(v)[1] + HEADER.match(v)[2] for v in seen}  # type: ignore[index]
    ok = rows.cols["kind"] == 0
    assert (rows.cols["stream"][ok] % 2 == 1).all() and (rows.cols["conn"][ok] >= 1).all()
    assert set(rows.cols["proto"].tolist()) == {2}  # h2


@pytest.fixture(scope="module")
def h3(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[H3Server]:
    s = H3Server(ca, tmp_path_factory.mktemp("h3")).start()
    yield s
    s.stop()


@pytest.mark.parametrize("sched", [Closed(2), Rate(100.0, 20)])
def test_h3_carries_the_header_and_keeps_its_rows(h3, cafile, sched):
    before = len(h3.traceparents)
    target = make_target(h3.url("/ok"), tls=TlsOptions(cafile=cafile), proto="h3", streams=4)
    r = run_load(LoadSpec(target, sched, 0.8, timeout=3.0, trace=1.0))
    seen = h3.traceparents[before:]
    assert seen and all(HEADER.match(v) for v in seen) and len(set(seen)) == len(seen)
    rows = r.traced
    assert rows is not None
    assert rows.counts().get("ok", 0) == r.counts()["ok"] > 0
    assert rows.counts().get("unfinished", 0) == r.unfinished
    ok = rows.cols["kind"] == 0
    assert (rows.cols["stream"][ok] % 4 == 0).all() and (rows.cols["conn"][ok] >= 1).all()
    assert set(rows.cols["proto"].tolist()) == {3}  # h3
