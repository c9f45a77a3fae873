"""How requests are sent: the fast engine (uvloop + httptools) and the aiohttp one.

One `Engine` runs one schedule in one process against one target and feeds a
`Recorder`. The fast engine speaks HTTP/1.x itself: requests are encoded once,
responses are parsed by httptools (Content-Length, chunked, read-to-close).
In the closed loop with keep-alive the next request is written straight from
the protocol callback, with no coroutine switch in between, which is what
keeps it near wrk's speed. Everything else runs one small coroutine per client.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import resource
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httptools

from ..errors import LoadError, UsageError
from .recorder import (
    CONNECT_REFUSED,
    CONNECT_TIMEOUT,
    HTTP_4XX,
    HTTP_5XX,
    OK,
    PROTOCOL_ERROR,
    RESET,
    TIMEOUT,
    Recorder,
    Result,
)
from .schedules import Closed, Ramp, Rate, Schedule

now = time.monotonic
"""CLOCK_MONOTONIC: shared by all processes, so workers line up their seconds."""

DEFAULT_TIMEOUT = 10.0
"""Per-request timeout (connect + response) unless --timeout says otherwise."""


@dataclass(frozen=True)
class Target:
    """What to request, validated and pre-encoded."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    http10: bool = False
    keepalive: bool = False

    def encode(self) -> bytes:
        """The request as sent by the fast engine, every time the same bytes."""
        version = "HTTP/1.0" if self.http10 else "HTTP/1.1"
        names = {k.lower() for k, _ in self.headers}
        lines = [f"{self.method} {self.path} {version}"]
        if "host" not in names:
            default = 443 if self.scheme == "https" else 80
            lines.append(f"Host: {self.host}" + (f":{self.port}" if self.port != default else ""))
        if "user-agent" not in names:
            lines.append("User-Agent: loadcmp")
        if "connection" not in names:
            lines.append("Connection: " + ("keep-alive" if self.keepalive else "close"))
        if self.body and "content-length" not in names:
            lines.append(f"Content-Length: {len(self.body)}")
        lines += [f"{k}: {v}" for k, v in self.headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body


def make_target(
    url: str,
    *,
    method: str = "GET",
    headers: list[str] | tuple[str, ...] = (),
    body: str | bytes | None = None,
    http10: bool = False,
    keepalive: bool = False,
    resolve: bool = True,
) -> Target:
    """Validate a URL and options into a Target; one-line UsageErrors."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"bad URL {url!r}: give an http:// or https:// URL with a host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UsageError(f"bad URL {url!r}: the port is not a number in 1..65535") from None
    host = parts.hostname
    if resolve:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            raise UsageError(f"cannot resolve host {host!r} of {url}") from None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    hdrs: list[tuple[str, str]] = []
    for h in headers:
        if ":" not in h or not h.split(":", 1)[0].strip() or any(c in h for c in "\r\n"):
            raise UsageError(f"bad header {h!r}: use -H 'Name: value'")
        k, v = h.split(":", 1)
        if any(c.isspace() for c in k.strip()):
            raise UsageError(f"bad header {h!r}: the name has spaces")
        hdrs.append((k.strip(), v.strip()))
    m = method.upper()
    if not m.isalpha():
        raise UsageError(f"bad method {method!r}")
    data = body.encode() if isinstance(body, str) else (body or b"")
    return Target(url, parts.scheme, host, port, path, m, tuple(hdrs), data, http10, keepalive)


@dataclass(frozen=True)
class LoadSpec:
    """Everything one engine needs; picklable, so workers get their share."""

    target: Target
    schedule: Schedule
    duration: float
    warmup: float = 0.0
    timeout: float = DEFAULT_TIMEOUT
    engine: str = "fast"
    spread_sources: bool = False
    """Bind client sockets to 127.0.0.2.. so more than ~28000 connections fit."""
    worker_index: int = 0


@dataclass
class Live:
    """What the live line shows; one per engine per second."""

    elapsed: float
    ok: int
    failed: int
    inflight: int
    rps: float
    measuring: bool
    worker: int = 0


LiveFn = Callable[[Live], None]


def raise_nofile(needed: int) -> int:
    """Raise the soft open-file limit to the hard one; fail clearly if short."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, needed)
    if soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if needed > soft:
        raise LoadError(
            f"{needed - 64} clients need about {needed} open files in one process; this machine allows {soft}: "
            f"use --workers {-(-needed // max(1, soft - 64)) + 0} or fewer clients"
        )
    return soft


def kind_of_status(status: int) -> int:
    if status >= 500:
        return HTTP_5XX
    if status >= 400:
        return HTTP_4XX
    return OK


def kind_of_oserror(e: BaseException) -> tuple[int, str | None]:
    """Map a socket error to an outcome kind, and name it if it is the client's fault."""
    if isinstance(e, ConnectionRefusedError):
        return CONNECT_REFUSED, None
    if isinstance(e, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
        return RESET, None
    if isinstance(e, (TimeoutError, asyncio.TimeoutError)):
        return CONNECT_TIMEOUT, None
    if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE, errno.EADDRNOTAVAIL, errno.ENOBUFS):
        return CONNECT_REFUSED, errno.errorcode.get(e.errno or 0, "OSError")
    if isinstance(e, OSError) and e.errno in (errno.ETIMEDOUT,):
        return CONNECT_TIMEOUT, None
    if isinstance(e, OSError) and e.errno in (errno.ECONNRESET, errno.EPIPE):
        return RESET, None
    return RESET, type(e).__name__


class Framing:
    """httptools callback shared by both connection kinds: does the response say
    how long it is? If not, its body ends when the server closes."""

    __slots__ = ("framed",)

    def on_header(self, name: bytes, value: bytes) -> None:
        n = len(name)
        if n == 14 or n == 17:  # only then can it be one of the two names
            low = name.lower()
            if low == b"content-length" or low == b"transfer-encoding":
                self.framed = True


class Conn(Framing, asyncio.Protocol):
    """One client connection of the fast engine; one request at a time."""

    __slots__ = (
        "engine", "transport", "parser", "on_done", "active", "nbytes", "status",
        "headers_done", "closed", "closed_fut", "is_head", "ka_ok",
        "t_int", "t_sent", "counted",
    )

    def __init__(self, engine: FastEngine) -> None:
        self.engine = engine
        self.transport: Any = None
        self.parser = httptools.HttpResponseParser(self)
        self.on_done: Callable[[Conn, int], None] | None = None
        self.active = False
        self.nbytes = 0
        self.status = 0
        self.framed = False
        self.headers_done = False
        self.closed = False
        self.closed_fut: asyncio.Future[None] | None = None
        self.is_head = engine.is_head
        self.ka_ok = True
        self.t_int = 0.0
        self.t_sent = 0.0
        self.counted = False

    # asyncio.Protocol
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.engine.conns.add(self)

    def data_received(self, data: bytes) -> None:
        self.nbytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.ka_ok = False
            self._finish(PROTOCOL_ERROR)
            self.transport.abort()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.engine.conns.discard(self)
        if self.active:
            if exc is None and self.headers_done and not self.framed and self.status:
                self._finish(kind_of_status(self.status))  # read-to-close body ended
            else:
                self._finish(RESET)
        if self.closed_fut is not None and not self.closed_fut.done():
            self.closed_fut.set_result(None)

    # httptools callbacks
    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.status = self.parser.get_status_code()
        if self.is_head or self.status in (204, 304):
            self.framed = True
            self.on_message_complete()

    def on_message_complete(self) -> None:
        if self.active:
            self.ka_ok = self.parser.should_keep_alive()
            self._finish(kind_of_status(self.status))

    # ours
    def send(self, request: bytes) -> None:
        self.active = True
        self.nbytes = 0
        self.status = 0
        self.framed = False
        self.headers_done = False
        self.transport.write(request)

    def _finish(self, kind: int) -> None:
        if not self.active:
            return
        self.active = False
        if self.on_done is not None:
            self.on_done(self, kind)


class Engine:
    """Drives a schedule; subclasses say how one request is sent."""

    name = "base"

    def __init__(self, spec: LoadSpec, live: LiveFn | None = None) -> None:
        self.spec = spec
        self.target = spec.target
        self.timeout = spec.timeout
        self.live = live
        self.running = False
        self.stopping: asyncio.Event | None = None
        self.rec: Recorder | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.is_head = spec.target.method == "HEAD"
        self.t_load0 = 0.0
        self._cpu_prev = 0.0
        self._wall_prev = 0.0
        self._lag_max = 0.0
        self.lags: list[float] = []
        self.cpus: list[float] = []

    # --- to be provided -------------------------------------------------------
    async def request(self, t_int: float, counted: bool, state: Any) -> Any:
        """Send one request intended to start at t_int; record it if counted;
        return the connection state to reuse (keep-alive) or None."""
        raise NotImplementedError

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    def abort_all(self) -> None:
        pass

    def release(self, state: Any) -> None:
        """A client's state will not be used again."""

    # --- the run ------------------------------------------------------------------
    async def run(self, t_load0: float, stop: asyncio.Event | None = None) -> Result:
        """Load from t_load0 (warm-up first), measure `duration`, then stop."""
        spec = self.spec
        self.t_load0 = t_load0
        t0 = t_load0 + spec.warmup
        self.rec = Recorder(t0, spec.duration)
        self.stopping = stop or asyncio.Event()
        await self.open()
        await asyncio.sleep(max(0.0, t_load0 - now() - 0.002))
        while now() < t_load0:  # the loop's timers are only ms-exact; the window must not start early
            await asyncio.sleep(0)
        self.running = True
        self._cpu_prev, self._wall_prev = _cpu_time(), now()
        ticker = asyncio.ensure_future(self._ticker(t0))
        lagger = asyncio.ensure_future(self._lag_probe())
        self._start_schedule()
        end = t0 + spec.duration
        interrupted = False
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), timeout=max(0.0, end - now()))
            interrupted = True
        t_stop = now()
        self.running = False
        measured = max(0.0, min(spec.duration, t_stop - t0))
        result = self.rec.close(measured if interrupted else None)
        result.interrupted = interrupted
        ticker.cancel()
        lagger.cancel()
        for t in list(self.tasks):
            t.cancel()
        self.abort_all()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=2.0)
        await self.close()
        result.warnings.extend(self._saturation_warnings())
        if result.client_errors:
            errs = ", ".join(f"{k} x{v}" for k, v in result.client_errors.items())
            result.warnings.append(f"client-side socket errors (counted as connect_refused): {errs}")
        return result

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)

    def _start_schedule(self) -> None:
        sched = self.spec.schedule
        if isinstance(sched, Closed):
            self._start_closed(sched.clients)
        elif isinstance(sched, Ramp):
            for u in range(sched.users):
                self._spawn(self._ramp_user(sched, u))
        elif isinstance(sched, Rate):
            self._spawn(self._rate_loop(sched))

    def _start_closed(self, clients: int) -> None:
        for _ in range(clients):
            self._spawn(self._closed_client())

    async def _closed_client(self) -> None:
        state = None
        rec = self.rec
        assert rec is not None
        while self.running:
            t = now()
            state = await self.request(t, rec.start(t), state)

    async def _ramp_user(self, sched: Ramp, user: int) -> None:
        rec = self.rec
        assert rec is not None
        due = self.t_load0 + sched.start_offset(user)
        state = None
        while self.running:
            delay = due - now()
            if delay > 0:
                await asyncio.sleep(delay)
            if not self.running:
                return
            state = await self.request(due, rec.start(due), state)
            due = self.t_load0 + sched.next_due(due - self.t_load0, now() - self.t_load0)

    async def _rate_loop(self, sched: Rate) -> None:
        rec = self.rec
        assert rec is not None
        k = 0
        idle: list[Any] = []
        inflight = [0]

        async def one(due: float) -> None:
            state = idle.pop() if idle else None
            if state is not None and hasattr(state, "task"):
                state.task = None  # a new task sends on this slot
            try:
                state = await self.request(due, rec.start(due), state)
            finally:
                inflight[0] -= 1
            if state is not None and self.running and getattr(state, "conn", None) is not None:
                idle.append(state)
            else:
                self.release(state)

        while self.running:
            t = now()
            n_due = sched.count_before(t - self.t_load0 + 1e-9)
            while k < n_due:
                due = self.t_load0 + sched.due(k)
                k += 1
                if inflight[0] < sched.max_inflight:
                    inflight[0] += 1
                    self._spawn(one(due))
                else:
                    rec.drop(due)
            nxt = self.t_load0 + sched.due(k)
            await asyncio.sleep(max(0.0005, nxt - now()))

    async def _lag_probe(self) -> None:
        step = 0.05
        while True:
            t = now()
            await asyncio.sleep(step)
            lag = now() - t - step
            if lag > self._lag_max:
                self._lag_max = lag

    async def _ticker(self, t0: float) -> None:
        rec = self.rec
        assert rec is not None
        nxt = self.t_load0 + 1.0
        prev_ok = 0
        while True:
            await asyncio.sleep(max(0.0, nxt - now()))
            t = now()
            cpu = _cpu_time()
            cpu_pct = 100.0 * (cpu - self._cpu_prev) / max(1e-6, t - self._wall_prev)
            self._cpu_prev, self._wall_prev = cpu, t
            lag_ms = self._lag_max * 1000
            self._lag_max = 0.0
            measuring = t > t0
            if measuring:
                self.cpus.append(cpu_pct)
                self.lags.append(lag_ms)
            rec.tick(t, cpu_pct, lag_ms)
            if self.live is not None:
                ok = fails = 0
                for s in rec.seconds:
                    ok += s.counts[OK]
                    fails += sum(s.counts) - s.counts[OK]
                last = rec.seconds[min(max(int(t - t0) - 1, 0), rec.nsec - 1)].counts[OK] if measuring else 0
                self.live(Live(t - t0, ok, fails + rec.dropped, rec.inflight, float(last if measuring else ok - prev_ok), measuring, self.spec.worker_index))
                prev_ok = ok
            nxt += 1.0

    def _saturation_warnings(self) -> list[str]:
        out = []
        if self.cpus:
            busy = sorted(self.cpus)[len(self.cpus) // 2]
            if busy >= 90:
                out.append(
                    f"client saturated: worker {self.spec.worker_index} used {busy:.0f}% of a core (median), "
                    "so the client may have limited the rate; add --workers or a CPU"
                )
        if self.lags:
            worst = sorted(self.lags)[int(len(self.lags) * 0.9)]
            if worst >= 100:
                out.append(
                    f"client event loop lagged {worst:.0f} ms (p90 per second) in worker {self.spec.worker_index}: "
                    "latencies include client delay"
                )
        return out


def _cpu_time() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Slot:
    """One client's place in the fast engine: its connection and its deadline.

    A single sweeper checks every slot ten times a second instead of arming a
    timer per request, which costs more than the request itself at wrk speed.
    """

    __slots__ = ("task", "conn", "deadline", "phase", "timed_out")

    IDLE, CONNECTING, WAITING, DRAINING = 0, 1, 2, 3

    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None
        self.conn: Conn | None = None
        self.deadline = 0.0
        self.phase = 0
        self.timed_out = False

    def expire(self) -> None:
        """The deadline passed: cancel the connect, or time the request out."""
        self.timed_out = True
        phase, self.phase = self.phase, Slot.IDLE
        if phase == Slot.CONNECTING:
            if self.task is not None:
                self.task.cancel()
        else:
            conn = self.conn
            if conn is not None and conn.active:
                conn.ka_ok = False
                conn._finish(TIMEOUT)
                conn.transport.abort()


class RawClient:
    """webbench's loop without transports: one non-blocking socket per request,
    driven straight from the event loop's reader/writer callbacks.

    A new connection per request is the default mode and the most expensive
    one for a Python client; skipping asyncio's transport, protocol, future and
    coroutine per request makes it about a quarter faster. Same outcome kinds,
    same recorder, same sweeper as the other paths.
    """

    __slots__ = (
        "engine", "loop", "sock", "fd", "parser", "t", "t_sent", "counted", "nbytes", "status", "head",
        "headers_done", "phase", "deadline", "timed_out", "task",
    )

    def __init__(self, engine: FastEngine) -> None:
        self.engine = engine
        self.loop = asyncio.get_running_loop()
        self.sock: socket.socket | None = None
        self.fd = -1
        self.parser: Any = None
        self.t = self.t_sent = self.deadline = 0.0
        self.counted = False
        self.nbytes = self.status = 0
        self.head = b""
        self.headers_done = self.timed_out = False
        self.phase = Slot.IDLE
        self.task = None

    def start(self) -> None:
        eng = self.engine
        if not eng.running:
            return
        rec = eng.rec
        assert rec is not None
        t = now()
        self.t = t
        self.counted = rec.start(t)
        self.nbytes = self.status = 0
        self.head = b""
        self.headers_done = False
        self.parser = httptools.HttpResponseParser(self)
        try:
            sock = socket.socket(eng.family, socket.SOCK_STREAM)
        except OSError as e:
            self._failed(e)
            return
        sock.setblocking(False)
        self.sock = sock
        self.fd = sock.fileno()
        self.deadline = t + eng.timeout
        try:
            local = eng._local_addr()
            if local is not None:
                sock.bind(local)
            err = sock.connect_ex(eng.sockaddr)
        except OSError as e:
            self._failed(e)
            return
        if err == 0:
            self._send()
        elif err == errno.EINPROGRESS:
            # On loopback the handshake has mostly completed by now: try to send
            # at once and wait for writability only if the socket says so.
            if not self._send(early=True):
                self.phase = Slot.CONNECTING
                self.loop.add_writer(self.fd, self._connected)
        else:
            self._failed(OSError(err, errno.errorcode.get(err, "connect")))

    def _connected(self) -> None:
        self.loop.remove_writer(self.fd)
        sock = self.sock
        assert sock is not None
        err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self._failed(OSError(err, errno.errorcode.get(err, "connect")))
            return
        self._send()

    def _send(self, early: bool = False) -> bool:
        """Write the request; False (early only) when the connection is not up yet."""
        sock = self.sock
        assert sock is not None
        self.t_sent = now()
        try:
            req = self.engine.req
            if sock.send(req) != len(req):  # only a body larger than the socket buffer does this
                raise OSError(errno.ENOBUFS, "the request did not fit the socket buffer")
        except BlockingIOError:
            if early:
                return False
            self._failed(OSError(errno.EAGAIN, "socket not writable after connect"))
            return True
        except OSError as e:
            if early and e.errno == errno.ENOTCONN:
                return False
            self._failed(e)
            return True
        self.phase = Slot.WAITING
        self.loop.add_reader(self.fd, self._readable)
        return True

    def _readable(self) -> None:
        sock = self.sock
        if sock is None:
            return
        try:
            data = sock.recv(262144)
        except BlockingIOError:
            return
        except OSError:
            self._end(RESET)
            return
        if not data:
            if self.phase == Slot.DRAINING:
                self._end(-1)
            elif self.headers_done and self.status and not self._framed():
                self._end(kind_of_status(self.status))  # a read-to-close body ended
            else:
                self._end(RESET)
            return
        if self.phase == Slot.DRAINING:
            return
        if not self.headers_done:
            self.head += data
        self.nbytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._end(PROTOCOL_ERROR)

    # httptools callbacks
    def _framed(self) -> bool:
        """Did the response say how long it is? Asked only at an early EOF, so
        the common path pays for no header callback at all."""
        head = self.head.split(b"\r\n\r\n", 1)[0].lower()
        return b"\ncontent-length:" in head or b"\ntransfer-encoding:" in head

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.status = self.parser.get_status_code()
        if self.engine.is_head or self.status in (204, 304):
            self._end(kind_of_status(self.status))

    def on_message_complete(self) -> None:
        if self.parser.should_keep_alive():
            self._end(kind_of_status(self.status))
        else:
            self._record(kind_of_status(self.status))
            self.phase = Slot.DRAINING  # let the server close first, as webbench reads to EOF
            self.deadline = now() + 1.0

    # endings
    def _failed(self, e: BaseException) -> None:
        kind, name = kind_of_oserror(e)
        if name and self.counted and self.engine.rec is not None:
            self.engine.rec.client_error(name)
        self._end(kind, t_sent=self.t, retry_later=bool(name) or kind == CONNECT_REFUSED)

    def expire(self) -> None:
        if self.phase == Slot.CONNECTING:
            self._end(CONNECT_TIMEOUT, t_sent=self.t)
        elif self.phase == Slot.WAITING:
            self._end(TIMEOUT)
        elif self.phase == Slot.DRAINING:
            self._end(-1)  # answered, but the server kept the connection open: close it ourselves

    def close(self) -> None:
        sock = self.sock
        if sock is None:
            return
        self.sock = None
        if self.phase == Slot.CONNECTING:
            self.loop.remove_writer(self.fd)
        elif self.phase in (Slot.WAITING, Slot.DRAINING):
            self.loop.remove_reader(self.fd)
        self.phase = Slot.IDLE
        sock.close()

    def _record(self, kind: int, t_sent: float | None = None) -> None:
        rec = self.engine.rec
        if self.counted and rec is not None:
            rec.done(kind, self.t, self.t_sent if t_sent is None else t_sent, now(), self.nbytes)
        self.counted = False

    def _end(self, kind: int, t_sent: float | None = None, retry_later: bool = False) -> None:
        """Close, record (kind -1: already recorded), and start the next request."""
        if self.sock is None and self.phase == Slot.IDLE and t_sent is None:
            return
        self.close()
        if kind >= 0:
            self._record(kind, t_sent)
        if not self.engine.running:
            return
        if retry_later:
            self.loop.call_later(0.001, self.start)  # refused at once: do not spin the stack
        else:
            self.start()


class FastEngine(Engine):
    """uvloop + asyncio.Protocol + httptools: the default."""

    name = "fast"

    def __init__(self, spec: LoadSpec, live: LiveFn | None = None) -> None:
        super().__init__(spec, live)
        if spec.target.scheme != "http":
            raise UsageError("the fast engine speaks plain http only; use --engine aiohttp for https")
        self.req = spec.target.encode()
        self.conns: set[Conn] = set()
        self.slots: set[Slot] = set()
        self.host = spec.target.host
        self.port = spec.target.port
        self._src = 0
        self.raw: list[RawClient] = []
        info = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)[0]
        self.family, self.sockaddr = info[0], info[4]

    async def open(self) -> None:
        self._spawn(self._sweeper())

    async def _sweeper(self) -> None:
        """Time out what has run past its deadline (0.1 s resolution)."""
        while True:
            await asyncio.sleep(0.1)
            t = now()
            for slot in list(self.slots):
                if slot.phase and slot.deadline < t:
                    slot.expire()

    def _local_addr(self) -> tuple[str, int] | None:
        if not self.spec.spread_sources:
            return None
        self._src += 1
        return (f"127.0.{(self._src // 250) % 250}.{2 + self._src % 250}", 0)

    def abort_all(self) -> None:
        for c in list(self.conns):
            with contextlib.suppress(Exception):
                c.transport.abort()
        for r in self.raw:
            with contextlib.suppress(Exception):
                r.close()

    def _start_closed(self, clients: int) -> None:
        if self.target.keepalive:
            for _ in range(clients):
                self._spawn(self._ka_client())
        else:
            for _ in range(clients):
                r = RawClient(self)
                self.raw.append(r)
                self.slots.add(r)  # type: ignore[arg-type]
                r.start()

    async def _connect(self, slot: Slot) -> Conn | tuple[int, str | None]:
        """Open a connection for `slot`, or return the failure's kind and, when
        the client itself was at fault (EMFILE ...), the error's name."""
        if slot.task is None:
            slot.task = asyncio.current_task()
        slot.timed_out = False
        slot.deadline = now() + self.timeout
        slot.phase = Slot.CONNECTING
        try:
            _, conn = await asyncio.get_running_loop().create_connection(
                lambda: Conn(self), self.host, self.port, local_addr=self._local_addr()
            )
        except asyncio.CancelledError:
            slot.phase = Slot.IDLE
            if slot.timed_out and self.running:
                return CONNECT_TIMEOUT, None
            raise
        except OSError as e:
            slot.phase = Slot.IDLE
            return kind_of_oserror(e)
        slot.phase = Slot.IDLE
        slot.conn = conn
        return conn

    async def _connect_failed(self, failure: tuple[int, str | None], counted: bool, t_int: float,
                              t_sent: float) -> None:
        """Record a connection that could not be opened; back off a little when
        the fault is the client's, so that it does not spin."""
        kind, name = failure
        rec = self.rec
        assert rec is not None
        if counted:
            if name:
                rec.client_error(name)
            rec.done(kind, t_int, t_sent, now(), 0)
        if name:
            await asyncio.sleep(0.01)

    # closed loop + keep-alive: the callback path -------------------------------
    async def _ka_client(self) -> None:
        """Connects (and reconnects); the requests go from the callback."""
        loop = asyncio.get_running_loop()
        rec = self.rec
        assert rec is not None
        slot = Slot()
        self.slots.add(slot)
        try:
            while self.running:
                t = now()
                counted = rec.start(t)
                got = await self._connect(slot)
                if isinstance(got, tuple):
                    await self._connect_failed(got, counted, t, t)
                    continue
                conn = got
                conn.closed_fut = loop.create_future()
                conn.on_done = lambda c, k, slot=slot: self._ka_done(slot, c, k)
                self._ka_send(slot, conn, t, counted)
                await conn.closed_fut
        finally:
            self.slots.discard(slot)

    def _ka_send(self, slot: Slot, conn: Conn, t: float, counted: bool) -> None:
        conn.t_int = t
        conn.counted = counted
        slot.deadline = t + self.timeout
        slot.phase = Slot.WAITING
        conn.send(self.req)

    def _ka_done(self, slot: Slot, conn: Conn, kind: int) -> None:
        t = now()
        slot.phase = Slot.IDLE
        rec = self.rec
        assert rec is not None
        if conn.counted:
            rec.done(kind, conn.t_int, conn.t_int, t, conn.nbytes)
        if self.running and conn.ka_ok and kind <= HTTP_5XX and not conn.closed:
            self._ka_send(slot, conn, t, rec.start(t))
        elif not conn.closed:
            conn.transport.close()

    # one request, any schedule --------------------------------------------------
    async def request(self, t_int: float, counted: bool, state: Any) -> Any:
        """Returns the slot (keeping its connection when it may be reused)."""
        loop = asyncio.get_running_loop()
        rec = self.rec
        assert rec is not None
        slot: Slot
        if state is None:
            slot = Slot()
            self.slots.add(slot)
        else:
            slot = state
        t_sent = now()
        conn = slot.conn if slot.conn is not None and not slot.conn.closed else None
        if conn is None:
            got = await self._connect(slot)
            if isinstance(got, tuple):
                slot.conn = None
                await self._connect_failed(got, counted, t_int, t_sent)
                return slot
            conn = got
        fut: asyncio.Future[int] = loop.create_future()
        def answered(c: Conn, kind: int) -> None:
            if not fut.done():
                fut.set_result(kind)

        conn.on_done = answered
        t_sent = now()  # service time starts when the request goes out on an open connection
        slot.deadline = t_sent + self.timeout
        slot.phase = Slot.WAITING
        slot.timed_out = False
        conn.send(self.req)
        kind = await fut
        slot.phase = Slot.IDLE
        if counted:
            rec.done(kind, t_int, t_sent, now(), conn.nbytes)
        if self.target.keepalive and kind <= HTTP_5XX and conn.ka_ok and not conn.closed:
            return slot
        if not conn.closed:
            conn.transport.close()
        slot.conn = None
        return slot

    def release(self, state: Any) -> None:
        if state is not None:
            self.slots.discard(state)


class AiohttpEngine(Engine):
    """The same schedules through aiohttp: TLS, redirects, cookies."""

    name = "aiohttp"

    async def open(self) -> None:
        import aiohttp

        self.aiohttp = aiohttp
        sched = self.spec.schedule
        limit = sched.clients if isinstance(sched, Closed) else sched.users if isinstance(sched, Ramp) else sched.max_inflight
        self.connector = aiohttp.TCPConnector(
            limit=limit, limit_per_host=0, force_close=not self.target.keepalive, ssl=False, ttl_dns_cache=3600
        )
        trace = aiohttp.TraceConfig()

        async def connected(session: Any, ctx: Any, params: Any) -> None:
            ctx.trace_request_ctx["t_sent"] = now()

        trace.on_connection_create_end.append(connected)
        trace.on_connection_reuseconn.append(connected)
        self.session = aiohttp.ClientSession(
            trace_configs=[trace],
            connector=self.connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout),
            version=aiohttp.HttpVersion10 if self.target.http10 else aiohttp.HttpVersion11,
            auto_decompress=False,
            skip_auto_headers=("User-Agent",),
            headers={"User-Agent": "loadcmp"},
        )
        self.headers = dict(self.target.headers)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.session.close(), 2.0)

    def abort_all(self) -> None:
        with contextlib.suppress(Exception):
            self.connector._close()  # drop open sockets now; close() is async

    async def request(self, t_int: float, counted: bool, state: Any) -> Any:
        aiohttp = self.aiohttp
        rec = self.rec
        assert rec is not None
        trace: dict[str, float] = {}
        nbytes = 0
        client_err = None
        try:
            async with asyncio.timeout(self.timeout):
                async with self.session.request(
                    self.target.method, self.target.url, headers=self.headers, data=self.target.body or None,
                    allow_redirects=True, trace_request_ctx=trace,
                ) as resp:
                    body = await resp.read()
                    nbytes = len(body) + sum(len(k) + len(v) + 4 for k, v in resp.raw_headers) + 17
                    kind = kind_of_status(resp.status)
        except (TimeoutError, asyncio.TimeoutError):
            kind = TIMEOUT if "t_sent" in trace else CONNECT_TIMEOUT
        except aiohttp.ClientConnectorError as e:
            kind, client_err = kind_of_oserror(e.os_error)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            kind = RESET
        except (aiohttp.ClientPayloadError, aiohttp.ClientResponseError):
            kind = PROTOCOL_ERROR
        except aiohttp.ClientError:
            kind = PROTOCOL_ERROR
        except OSError as e:
            kind, client_err = kind_of_oserror(e)
        if counted:
            if client_err:
                rec.client_error(client_err)
            rec.done(kind, t_int, trace.get("t_sent", t_int), now(), nbytes)
        if client_err:
            await asyncio.sleep(0.01)
        return None


ENGINES: dict[str, type[Engine]] = {"fast": FastEngine, "aiohttp": AiohttpEngine}


def make_engine(spec: LoadSpec, live: LiveFn | None = None) -> Engine:
    if spec.engine not in ENGINES:
        raise UsageError(f"unknown engine {spec.engine!r}: use {' or '.join(ENGINES)}")
    return ENGINES[spec.engine](spec, live)


def clients_of(schedule: Schedule) -> int:
    """How many connections a schedule may hold open at once."""
    if isinstance(schedule, Closed):
        return schedule.clients
    if isinstance(schedule, Ramp):
        return schedule.users
    return schedule.max_inflight
