"""The engine registry (loadcmp/load/engines.py): each engine says which protocols it sends under which
--engine name, and what a load runs, the path shown and the problems said are derived from it. Adding a
protocol is a row, an engine and the stacks' data: a made-up one runs here from a spec to a stored result."""

from __future__ import annotations

import asyncio
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from loadcmp import protocols
from loadcmp.errors import UsageError
from loadcmp.experiment.protos import engine_problems
from loadcmp.load import engines
from loadcmp.load.driver import Engine, LoadSpec, now
from loadcmp.load.record.outcomes import OK, PROTOCOL_ERROR
from loadcmp.load.schedules import Closed, Ramp
from loadcmp.load.target import make_target

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def test_the_table_and_the_registry_agree_on_who_sends_what():
    for name in protocols.names():
        senders = {e for e in engines.names() if engines.find(e, name) is not None}
        assert senders == set(protocols.get(name).engines), name
    assert engines.names() == ("fast", "aiohttp")


def test_the_engine_of_each_protocol_is_the_registrys():
    assert engines.find("fast", "h1") is engines.FAST and engines.find("aiohttp", "h1") is engines.AIOHTTP
    assert engines.find("fast", "h2") is engines.find("fast", "h2c") is engines.H2
    assert engines.find("fast", "h3") is engines.H3 and engines.find("aiohttp", "h2") is None
    with pytest.raises(ValueError, match="--engine fast sends h1 already"):
        engines.register(engines.EngineKind("fast", ("h1",), engines.FAST.make))


def test_what_does_not_run_is_said_in_the_tables_words():
    target = make_target("https://127.0.0.1:1/", resolve=False, proto="h2")
    spec = LoadSpec(target, Ramp(2, 1.0, 1.0), 1.0)
    with pytest.raises(UsageError) as e:
        engines.make_engine(spec)
    assert str(e.value) == protocols.H2.run_error("fast", "ramp")
    with pytest.raises(UsageError, match="unknown engine 'nope': use fast or aiohttp"):
        engines.make_engine(replace(spec, engine="nope"))
    assert engine_problems(["h1", "h2", "h2c"], "fast", "ramp") == [protocols.H2.run_error("fast", "ramp"),
                                                                   protocols.H2C.run_error("fast", "ramp")]
    assert engine_problems(["h3"], "aiohttp", "closed") == [protocols.H3.run_error("aiohttp", "closed")]
    assert engine_problems(["h1", "h3"], "fast", "rate") == []
    assert engine_problems(["h1"], "nope", "closed") == []  # the spec's own check names an unknown engine


def test_the_path_shown_is_the_engines():
    assert engines.engine_path("aiohttp") == engines.engine_path("fast", proto="h3") == "python"
    assert engines.engine_path("fast", closed=False) == "python"  # ramp and rate: a coroutine per request


# A made-up protocol: a line "ping" answered "pong", over TCP on 127.0.0.1 -------------------------------


class PingHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for line in self.rfile:
            self.wfile.write(b"pong\n" if line == b"ping\n" else b"what?\n")


class PingEngine(Engine[Stream]):
    """The toy engine: one request is a line sent and a line read back, on a connection kept open."""

    name = "ping"

    def __init__(self, spec: LoadSpec, live=None) -> None:
        super().__init__(spec, live)
        self.writers: list[asyncio.StreamWriter] = []

    async def request(self, t_intended: float, counted: bool, state: Stream | None) -> Stream:
        if state is None:
            state = await asyncio.open_connection(self.target.host, self.target.port)
            self.writers.append(state[1])
        reader, writer = state
        t_sent = now()
        writer.write(b"ping\n")
        line = await reader.readline()
        self._record(counted, OK if line == b"pong\n" else PROTOCOL_ERROR, t_intended, t_sent, len(line),
                     status=200)
        return state

    def abort_all(self) -> None:
        for w in self.writers:
            w.close()


@pytest.fixture
def ping_server() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), PingHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def ping_protocol() -> Iterator[protocols.Protocol]:
    """A row and an engine, registered by the test alone, and taken back after it."""
    row = protocols.register(protocols.Protocol("ping", "ping (a line protocol of this test's)", "tcp", "refused",
                                                (), False, sources=("page",)))
    kind = engines.register(engines.EngineKind("fast", (row.name,), PingEngine))
    try:
        yield row
    finally:
        engines.unregister(kind)
        protocols.unregister(row.name)


def test_a_made_up_protocol_runs_from_a_spec_to_a_stored_result(ping_server, ping_protocol, tmp_path: Path):
    from loadcmp import __version__
    from loadcmp.lab.provenance import machine_info
    from loadcmp.load.record.summary import result_doc, timeline_rows
    from loadcmp.load.run.workers import run_load
    from loadcmp.records import SpecDoc
    from loadcmp.store.reader import load_results
    from loadcmp.store.writer import new_run_doc, save_bench

    url = f"http://127.0.0.1:{ping_server}/"
    target = make_target(url, proto=ping_protocol.name)  # the target's own checks read the made-up row
    spec = LoadSpec(target, Closed(2), 0.5, warmup=0.1)
    assert engine_problems([ping_protocol.name], spec.engine, spec.schedule.kind) == []
    result = run_load(spec)
    path = engines.engine_path(spec.engine, True, False, target.proto)
    doc = result_doc(result, {"url": url, "engine": spec.engine, "engine_path": path, "proto": target.proto})
    assert doc["ok"] > 10 and doc["failures"].get("protocol_error", 0) == 0, doc
    run_spec = SpecDoc(servers=[f"127.0.0.1:{ping_server}"], levels=[2], duration=spec.duration,
                       warmup=spec.warmup, timeout=spec.timeout, page="/", schedule="closed", keepalive=[True],
                       engine=spec.engine, workers=1, url=url)
    run = new_run_doc("bench", f"bench {url}", run_spec, machine_info(), __version__)
    folder = save_bench(tmp_path, run, doc, (result.latency().to_dict(), result.service().to_dict()),
                        timeline_rows(result))
    stored = load_results(folder).trials
    assert len(stored) == 1 and stored[0]["result"]["ok"] == doc["ok"]
    assert stored[0]["result"]["proto"] == "ping" and stored[0]["result"]["engine_path"] == "python"


def test_the_made_up_protocol_is_gone_after_its_test():
    assert "ping" not in protocols.names() and engines.find("fast", "ping") is None
