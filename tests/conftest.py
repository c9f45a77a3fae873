"""Shared fixtures: a misbehaving in-process HTTP server, a simulated load, Docker availability."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trustme

from loadcmp.load.record.outcomes import KINDS
from loadcmp.load.record.recorder import Recorder, Result

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


class FaultyServer:
    """An asyncio HTTP/1.1 server on 127.0.0.1 whose paths misbehave on purpose.

    /ok /chunked /close (read-to-close) /500 /404 /reset (RST mid-response)
    /stall (never answers) /slow?ms=N /malformed /stall-after=T (answers /ok,
    but stalls every request from T seconds after start); /mixed answers 200,
    201, 404, 503 in turn; /split?ms=N sends the head at once and the body N ms later;
    for the compiled loop's response reader: /pieces (chunked, cut across many
    writes), /204, /interim (a 100 Continue first), /cut (a body short of its
    length, then a FIN), /garbage (not HTTP at all)
    """

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.ssl = ssl_context
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self.requests = 0
        self.traceparents: list[str] = []
        """--trace: each request's traceparent header, as it came."""
        self.started = time.monotonic()
        self.stall_from: float | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> FaultyServer:
        self._thread.start()
        self._ready.wait(5)
        return self

    def url(self, path: str) -> str:
        return f"{'https' if self.ssl else 'http'}://127.0.0.1:{self.port}{path}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=4096, limit=65536, ssl=self.ssl)
        )
        self.port = self.server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()
        self.loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests += 1
                self.traceparents += [h[13:].decode() for h in head.split(b"\r\n")
                                      if h.lower().startswith(b"traceparent: ")]
                line = head.split(b"\r\n", 1)[0].decode()
                path = line.split(" ")[1]
                keep = b"connection: close" not in head.lower()
                if not await self._respond(path, writer, keep):
                    break
                if not keep:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            if not writer.is_closing():
                writer.close()

    async def _respond(self, path: str, w: asyncio.StreamWriter, keep: bool) -> bool:
        conn = b"keep-alive" if keep else b"close"
        if self.stall_from is not None and time.monotonic() >= self.stall_from:
            await asyncio.sleep(3600)
        if path.startswith("/ok"):
            w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: " + conn + b"\r\n\r\nhello")
        elif path == "/mixed":
            status = (b"200 OK", b"201 Created", b"404 Not Found", b"503 Unavailable")[self.requests % 4]
            w.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 2\r\nConnection: " + conn + b"\r\n\r\nhi")
        elif path.startswith("/split"):
            w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: " + conn + b"\r\n\r\n")
            await w.drain()
            await asyncio.sleep(int(path.split("ms=")[1]) / 1000)
            w.write(b"body")
        elif path == "/chunked":
            w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: " + conn
                    + b"\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        elif path == "/close":
            w.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the end")
            await w.drain()
            return False
        elif path == "/500":
            w.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: " + conn + b"\r\n\r\noops")
        elif path == "/404":
            w.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: " + conn + b"\r\n\r\n")
        elif path == "/reset":
            w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
            await w.drain()
            sock = w.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            w.transport.abort()
            return False
        elif path == "/stall":
            await asyncio.sleep(3600)
        elif path.startswith("/slow"):
            ms = int(path.split("ms=")[1]) if "ms=" in path else 100
            await asyncio.sleep(ms / 1000)
            w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: " + conn + b"\r\n\r\nslow")
        elif path == "/pieces":
            for piece in (b"HTTP/1.1 200 OK\r\nTransfer-", b"Encoding: chunked\r\nConnection: ", conn,
                          b"\r\n\r", b"\n5\r", b"\nhel", b"lo\r\n1", b"0;ext=1\r\n0123456789abcdef",
                          b"\r\n0\r\nX-Trailer: 1\r\n", b"\r\n"):
                w.write(piece)
                await w.drain()
                await asyncio.sleep(0.002)
        elif path == "/204":
            w.write(b"HTTP/1.1 204 No Content\r\nConnection: " + conn + b"\r\n\r\n")
        elif path == "/interim":
            w.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: " + conn
                    + b"\r\n\r\nok")
        elif path == "/cut":
            w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
            await w.drain()
            return False
        elif path == "/garbage":
            w.write(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
            await w.drain()
            return False
        elif path == "/malformed":
            w.write(b"HTTP/1.1 2x0 Bogus\r\nContent-Length: nope\r\n\r\n")
            await w.drain()
            return False
        else:
            w.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        await w.drain()
        return True

    def stop(self) -> None:
        async def shutdown() -> None:
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


@pytest.fixture(scope="module")
def faulty() -> Iterator[FaultyServer]:
    s = FaultyServer().start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (cert, key)."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


@pytest.fixture(scope="module")
def tls_faulty(tls_cert: tuple[Path, Path]) -> Iterator[FaultyServer]:
    """The faulty server over https, with the self-signed certificate of `tls_cert`."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(*tls_cert)
    s = FaultyServer(ctx).start()
    yield s
    s.stop()


@pytest.fixture(params=["compiled", "python"])
def loop_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test on both closed loops: the compiled one and the pure-Python fallback
    (LOADCMP_PURE_PYTHON=1, also in the processes it starts)."""
    from loadcmp.load.core.compiled import PURE_ENV
    from loadcmp.load.h1.loops import cloop_module

    monkeypatch.setenv(PURE_ENV, "1" if request.param == "python" else "0")
    if request.param == "compiled" and cloop_module() is None:
        pytest.skip("the compiled loop is not built here (loadcmp/load/h1/_cloop.pyx)")
    return str(request.param)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The two loops differ only for the fast engine: a test run on aiohttp runs
    once, not once per loop."""
    keep = []
    for item in items:
        params = getattr(item, "callspec", None)
        p = params.params if params is not None else {}
        if p.get("loop_path") == "python" and p.get("engine") == "aiohttp":
            config.hook.pytest_deselected(items=[item])
            continue
        keep.append(item)
    items[:] = keep


@pytest.fixture()
def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def simulated_load(seed: int, t0: float = 100.0, duration: float = 5.0) -> Result:
    rnd = random.Random(seed)
    rec = Recorder(t0, duration)
    inflight = []
    t = t0 - 1.0
    while t < t0 + duration:
        t += rnd.random() * 0.01
        if rec.start(t):
            inflight.append(t)
        if inflight and rnd.random() < 0.9:
            s = inflight.pop(0)
            rec.done(rnd.randrange(len(KINDS)), s, s, t, 100)
        rec.tick(t)
    return rec.close()


@pytest.fixture()
def simulate() -> Callable[..., Result]:
    """simulate(seed): a recorder fed random requests and outcomes, reproducible, no server."""
    return simulated_load


def docker_ok() -> bool:
    try:
        import docker

        docker.from_env(timeout=5).ping()
        return True
    except Exception:  # noqa: BLE001 — any failure means no engine here
        return False


@pytest.fixture(scope="session")
def docker_client():  # type: ignore[no-untyped-def]
    if not docker_ok():
        pytest.fail("the Docker tests need a Docker engine: run `make setup` as root")
    from loadcmp.lab import dockerhost

    return dockerhost.docker_client()


@pytest.fixture(scope="session")
def images(docker_client):  # type: ignore[no-untyped-def]
    from loadcmp.lab.images import build_images
    from loadcmp.lab.stacks import catalog

    return build_images(docker_client, [i for s in catalog() for i in s.images])


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def fast_server() -> Iterator[int]:
    """tests/helpers/fastserver.py (its /count says how many requests it saw), on the
    last CPU when there are several: the clients under test run on CPU 0."""
    cpus = os.cpu_count() or 1
    pin = (lambda: os.sched_setaffinity(0, {cpus - 1})) if cpus > 1 else None
    p = subprocess.Popen([sys.executable, str(ROOT / "tests" / "helpers" / "fastserver.py")], stdout=subprocess.PIPE,
                         text=True, preexec_fn=pin)
    try:
        assert p.stdout is not None
        yield int(p.stdout.readline())
    finally:
        p.kill()
        p.wait()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    """A test CA (ECDSA) for the in-process https, h2 and h3 servers; each module gets its own."""
    return trustme.CA(key_type=trustme.KeyType.ECDSA)


@pytest.fixture(scope="module")
def cafile(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> str:
    """That CA's certificate as a file, as `--cacert` takes it."""
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)
