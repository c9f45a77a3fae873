"""Clients that behave like people (`load.pacing`): think time, a paced upload, a paced download, slowloris, on both
HTTP/1 closed loops against an in-process server; and the values refused in one line. Times are compared as ratios
to what the rate or the think asks, never as absolute times."""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import UsageError
from loadcmp.load.driver import LoadSpec
from loadcmp.load.pacing import Pacing, pacing_of, pacing_problems, parse_byterate, parse_think
from loadcmp.load.record.recorder import Result
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.run.workers import run_load
from loadcmp.load.schedules import Closed
from loadcmp.load.target import PLAIN, TlsOptions, make_target

HEADER_TIMEOUT_S = 0.5
"""The server's time for a request's head, as Apache's RequestReadTimeout and nginx's client_header_timeout."""
KEEPALIVE_TIMEOUT_S = 0.03
"""How long `/brief` keeps a connection idle after its answer."""


class PageServer:
    """HTTP/1.1 on 127.0.0.1 in a thread: `/big?n=N` answers N bytes, a POST reads its body first, anything else
    answers 2 bytes (`/brief` then closes the connection once idle KEEPALIVE_TIMEOUT_S); a head not read within
    HEADER_TIMEOUT_S gets a 408 and the connection closed. Over https with `ssl_context`."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.ssl = ssl_context
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> PageServer:
        self._thread.start()
        self._ready.wait(5)
        return self

    def url(self, path: str) -> str:
        return f"{'https' if self.ssl else 'http'}://127.0.0.1:{self.port}{path}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=1024,
                                                                        ssl=self.ssl))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEADER_TIMEOUT_S)
                except TimeoutError:
                    writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    await writer.drain()
                    break
                line, *fields = head.decode().split("\r\n")
                length = next((int(f.split(":")[1]) for f in fields if f.lower().startswith("content-length:")), 0)
                if length:
                    await reader.readexactly(length)
                path = line.split(" ")[1]
                body = b"x" * int(path.split("n=")[1]) if path.startswith("/big") else b"ok"
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
                if path == "/brief":  # a keep-alive timeout shorter than the client's think
                    await asyncio.sleep(KEEPALIVE_TIMEOUT_S)
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


@pytest.fixture(scope="module")
def pages() -> Iterator[PageServer]:
    s = PageServer().start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def tls_pages(tls_cert: tuple[Path, Path]) -> Iterator[PageServer]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(*tls_cert)
    s = PageServer(ctx).start()
    yield s
    s.stop()


def load(url: str, pacing: Pacing | None, clients: int = 4, duration: float = 1.2, method: str = "GET",
         body: str | None = None, timeout: float = 10.0) -> Result:
    tls = TlsOptions(True, None, 0.0) if url.startswith("https") else PLAIN  # the tests' self-signed certificate
    target = make_target(url, method=method, body=body, keepalive=True, tls=tls)
    return run_load(LoadSpec(target, Closed(clients), duration, timeout=timeout, pacing=pacing))


def accounted(result: Result) -> dict:
    return accounted_doc(dict(result_doc(result)))


def accounted_doc(doc: dict) -> dict:
    assert check_invariant(doc), doc
    return doc


# --- the values ------------------------------------------------------------------------------------------------

def test_think_and_rates_parse() -> None:
    assert parse_think("2s") == (2.0, 0.0)
    assert parse_think("2s±500ms") == (2.0, 0.5)
    assert parse_think("2s+-500ms") == (2.0, 0.5)
    assert parse_byterate("2kbit", "--read-rate") == 250.0
    assert parse_byterate("10kB/s", "--read-rate") == 10000.0
    assert parse_byterate("64KiB/s", "--read-rate") == 65536.0
    p = Pacing("2s±500ms", "slowloris", "1mbit")
    assert p.describe() == {"think": "2s±500ms", "think_s": 2.0, "think_jitter_s": 0.5, "send_rate": "slowloris",
                            "send_bytes_per_s": 4.0, "read_rate": "1mbit", "read_bytes_per_s": 125000.0}
    assert p.words() == "think 2s±500ms, send as slowloris (8 bytes every 2 s), read at 1mbit"
    assert p.send_step() == (8, 2.0)
    assert pacing_of(None, None, None) is None


def test_jitter_is_seeded_and_bounded() -> None:
    p = Pacing("1s±250ms")
    draws = [p.think_delay(p.rng(3)) for _ in range(5)]
    assert draws == [p.think_delay(p.rng(3)) for _ in range(5)]  # a run repeats its draws
    rng = p.rng(0)
    many = [p.think_delay(rng) for _ in range(2000)]
    assert min(many) >= 0.75 and max(many) <= 1.25 and max(many) - min(many) > 0.4


@pytest.mark.parametrize("bad", ["0", "-5kbit", "banana", "0kB/s", "10 apples/s", ""])
def test_bad_rates_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="--read-rate"):
        Pacing(read_rate=bad)


def test_think_where_it_has_no_meaning() -> None:
    with pytest.raises(UsageError, match="closed loop"):
        Pacing("1s").refuse("rate", "h1")
    from loadcmp.traffic.source import JourneyTraffic, ReplayTraffic, Source

    assert "closed loop" in pacing_problems("1s", None, None, "closed", "fast", {"h1"}, ReplayTraffic)[0]
    assert pacing_problems(None, "2kbit", None, "closed", "fast", {"h1"}, ReplayTraffic) == []
    assert pacing_problems(None, "2kbit", None, "closed", "fast", {"h1"}, JourneyTraffic) == [
        "--journey: its engine runs no client behaviour (send at 2kbit)"]
    assert pacing_problems("1s", None, None, "closed", "fast", {"h1"}, Source) == []
    assert pacing_problems(None, None, "2kbit", "closed", "fast", {"h1", "h2"}) == [
        "--proto h2 takes no --read-rate: one h2 connection carries all its streams, and the h2 engine does not pace "
        "its reads; --proto h1 runs it"]
    assert pacing_problems("1s", None, None, "closed", "fast", {"h1", "h2", "h2c", "h3"}) == []
    assert pacing_problems("2s", "2kbit", "1mbit", "closed", "fast", {"h1"}) == []


@pytest.mark.parametrize("args", [
    ["--read-rate", "0"], ["--read-rate", "-1kbit"], ["--send-rate", "fast"], ["--think", "2s±3s"],
    ["--think", "1s", "--schedule", "rate", "--rate", "10"], ["--think", "1s", "--schedule", "ramp"],
    ["--think", "1s", "--proto", "h2", "--schedule", "rate", "--rate", "10"],
    ["--read-rate", "1mbit", "--engine", "aiohttp"],
])
def test_cli_refuses_in_one_line(args: list[str]) -> None:
    res = CliRunner().invoke(cli, ["bench", "https://127.0.0.1:9/", "-t", "1", *args])
    assert res.exit_code == 2, res.output
    assert len(res.output.strip().splitlines()) == 1, res.output


# --- the engines ---------------------------------------------------------------------------------------------

@pytest.mark.usefixtures("loop_path")
def test_think_lowers_the_rate_by_the_expected_factor(pages: PageServer) -> None:
    """Each client's cycle is its latency plus its think: the rate falls by that factor, and the latency does not
    take the think in."""
    clients, think = 4, 0.1
    fast = load(pages.url("/ok"), None, clients)
    slow = load(pages.url("/ok"), Pacing(f"{think}s±20ms"), clients)
    fast_doc, slow_doc = accounted(fast), accounted(slow)
    cycle = clients / fast_doc["rps"]  # one request's time, client and server, without a think
    expected = fast_doc["rps"] * cycle / (cycle + think)
    assert 0.75 < slow_doc["rps"] / expected < 1.25, (slow_doc["rps"], expected)
    assert slow_doc["latency_ms"]["p50"] / 1000 < think / 2  # the think is not in the latency


@pytest.mark.usefixtures("loop_path")
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_connection_closed_during_the_think_is_opened_again_after_it(scheme: str, request) -> None:  # type: ignore[no-untyped-def]
    """The server's keep-alive timeout ends the connection mid-think (over https with its close_notify): the client
    connects again when its think ends, and the rate is the think's as on a kept connection, with no failure."""
    pages = request.getfixturevalue("pages" if scheme == "http" else "tls_pages")
    clients, think = 4, 0.1
    kept = accounted(load(pages.url("/ok"), Pacing(f"{think}s"), clients))
    closed = accounted(load(pages.url("/brief"), Pacing(f"{think}s"), clients))
    assert not closed["failed"] and closed["ok"] >= clients, closed
    assert 0.75 < closed["rps"] / kept["rps"] < 1.25, (closed["rps"], kept["rps"])


@pytest.mark.usefixtures("loop_path")
def test_read_rate_makes_a_response_take_size_over_rate(pages: PageServer) -> None:
    size, rate = 300_000, 1_000_000  # 0.3 s a response
    r = load(pages.url(f"/big?n={size}"), Pacing(read_rate=f"{rate // 1000}kB/s"), clients=2, duration=1.5)
    doc = accounted(r)
    assert doc["ok"] >= 2 and not doc["failed"], doc
    assert 0.75 < (doc["latency_ms"]["p50"] / 1000) / (size / rate) < 1.25, doc["latency_ms"]


@pytest.mark.usefixtures("loop_path")
def test_send_rate_makes_an_upload_take_size_over_rate(pages: PageServer) -> None:
    size, rate = 20_000, 50_000  # 0.4 s a request
    r = load(pages.url("/up"), Pacing(send_rate="400kbit"), clients=2, duration=1.5, method="POST", body="y" * size)
    doc = accounted(r)
    assert doc["ok"] >= 2 and not doc["failed"], doc
    assert 0.75 < (doc["latency_ms"]["p50"] / 1000) / (size / rate) < 1.25, doc["latency_ms"]


@pytest.mark.usefixtures("loop_path")
def test_slowloris_gets_the_servers_timeout_named(pages: PageServer) -> None:
    """The head trickled 8 bytes every 2 s never ends before the server's header timeout: its 408 (or its close)
    is each request's outcome, named, and every request is accounted for."""
    r = load(pages.url("/ok"), Pacing(send_rate="slowloris"), clients=3, duration=2.0)
    doc = accounted(r)
    assert doc["ok"] == 0 and doc["failed"] >= 3, doc
    assert set(k for k, n in doc["failures"].items() if n) <= {"http_4xx", "reset"}, doc["failures"]
    assert doc["status_codes"].get("408", 0) >= 1, doc


@pytest.mark.parametrize("keepalive", [True, False])
def test_think_over_https_runs_in_the_loop_asked_at_the_thinks_rate(tls_faulty, loop_path: str,  # type: ignore[no-untyped-def]
                                                                     keepalive: bool) -> None:
    """Over https a think runs in the compiled TLS loop (`_ctls.TLSLoop`, a `_cthink.ThinkLoop`), as over http: each
    client asks once a think, on its kept connection (-k) or on a new one, shaken hands again, after each think; the
    think is not in the latency, and every request is accounted for."""
    clients, think = 8, 0.1
    args = [tls_faulty.url("/ok"), "--insecure", "-c", str(clients), "-t", "1.5", "--warmup", "0.3",
            "--think", f"{think}s±20ms", "--json", "-k" if keepalive else "--no-keepalive"]
    res = CliRunner().invoke(cli, ["bench", *args])
    assert res.exit_code == 0, res.output
    doc = accounted_doc(json.loads(res.stdout))
    assert doc["engine_path"] == loop_path, doc["engine_path"]
    assert doc["ok"] >= clients and not doc["failed"], doc
    assert 0.7 < doc["rps"] / (clients / think) < 1.2, doc["rps"]
    assert doc["latency_ms"]["p50"] / 1000 < think / 2  # the think is not in the latency


@pytest.mark.usefixtures("loop_path")
def test_over_https_each_behaviour_is_accounted(tls_faulty) -> None:  # type: ignore[no-untyped-def]
    """Over https a think runs in the loop asked (compiled: `_ctls.TLSLoop`), a paced write or read on the Python
    loop's transports (`h1/paced.py`) whichever loop is asked."""
    target = make_target(tls_faulty.url("/ok"), keepalive=True, tls=TlsOptions(True, None, 0.0))
    for pacing, most in ((Pacing("200ms"), 3 * 2 / 0.2), (Pacing(send_rate="2kbit", read_rate="2kbit"), None),
                         (Pacing("200ms", read_rate="2kbit"), None)):
        doc = accounted(run_load(LoadSpec(target, Closed(3), 1.0, pacing=pacing)))
        assert doc["ok"] >= 3 and not doc["failed"], doc
        assert most is None or doc["started"] <= most + 3, doc


# --- experiment files and run specs -----------------------------------------------------------------------------

def test_an_experiment_file_carries_them_and_says_a_bad_one_at_its_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from loadcmp.errors import ConfigError
    from loadcmp.experiment.spec import RunSpec, load_experiment, validate

    good = tmp_path / "people.toml"
    good.write_text('servers = ["nginx"]\nkeepalive = true\nthink = "2s±500ms"\nsend_rate = "slowloris"\n'
                    'read_rate = "10kB/s"\n')
    spec = validate(RunSpec.of(load_experiment(good)[0]))
    assert (spec.think, spec.send_rate, spec.read_rate) == ("2s±500ms", "slowloris", "10kB/s")
    assert {"think": "2s±500ms", "send_rate": "slowloris", "read_rate": "10kB/s"}.items() <= spec.to_dict().items()
    bad = tmp_path / "bad.toml"
    bad.write_text('servers = ["nginx"]\nread_rate = "0"\nthink = 5\n')
    with pytest.raises(ConfigError) as e:
        load_experiment(bad)
    joined = "\n".join(e.value.messages)
    assert "bad.toml:2" in joined and "--read-rate" in joined and "bad.toml:3" in joined, joined
    with pytest.raises(UsageError, match="closed loop"):
        validate(RunSpec(servers=("nginx",), schedule="rate", rate=10.0, think="1s"))
