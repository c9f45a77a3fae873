"""The pure-Python h2 fallback: the `h2` package over asyncio's transports, where the compiled h2 engine
(`_ch2.pyx`, over libnghttp2) was not built, or LOADCMP_PURE_PYTHON=1 asks for it.

It keeps the compiled loop's contract (`host.Loop` of an `host.H2Host`; -c connections each with -m streams in
flight; the same outcomes: `stream_reset` for RST_STREAM, a stream above a GOAWAY's last-stream-id retried
after a graceful one (timed from its first start, `goaway` once sent `SENDS` times) and `goaway` after one with an
error code, while those at or below it are still read to their end; `reset` for a connection cut under its
streams; a new connection after a GOAWAY), but runs Python for every frame: the `h2` package is orders of
magnitude slower than nghttp2 by its maintainer's account, so every load it runs is flagged client-bound
(`StreamTally.pure_python`, `saturation.PURE_H2`). With `--think` each connection's -m clients idle between an
answer and their next request (`Thinkers`), as the compiled loop's slots do.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import ssl
from dataclasses import dataclass
from typing import Any, cast

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from ...errors import WrongProtocol
from ...protocols import H2
from ..driver import BACKOFF_S, now
from ..core.host import H2Host
from ..pageset import Cursor
from ..record.outcomes import (CONNECT_TIMEOUT, GOAWAY, HTTP_5XX, PROTOCOL_ERROR, RESET, SENDS, STREAM_RESET,
                               TIMEOUT, kind_of_error, kind_of_status)
from ..record.result import StreamTally
from ...trace.rows import Tracer

NAN = math.nan
TICK_S = 0.05


@dataclass
class Stream:
    """One request in flight: its times, bytes and status."""

    t_intended: float
    counted: bool
    req: int = 0
    """The request it sends, by index (`H2Clients.requests`; a load of pages walks their sequence)."""
    sends: int = 1
    """How often its request was sent, this send included (a graceful GOAWAY's resends: at most `SENDS`)."""
    t_counted: float = NAN
    """When its start was counted (its -n ticket's second); `t_intended` is its request's first (a resend's
    latency holds the wait). NaN: `t_intended`."""
    t_connect: float = NAN
    t_sent: float = NAN
    t_first: float = NAN
    status: int = 0
    nbytes: int = 0
    code: str = ""
    """RST_STREAM's error code, by name."""
    seq: int = -1
    """--trace: its number in the trial when it carries the header, else -1."""

    def __post_init__(self) -> None:
        if math.isnan(self.t_counted):
            self.t_counted = self.t_intended


def code_name(code: int) -> str:
    """An HTTP/2 error code's name as RFC 9113 (and nghttp2) spell it: "REFUSED_STREAM"."""
    try:
        return h2.errors.ErrorCodes(code).name
    except ValueError:
        return f"0x{code:x}"


def preface_ok(head: bytes) -> bool:
    """Whether the first bytes an h2c server sent can start its preface, a SETTINGS frame: type 4, no ACK,
    stream 0, a length in whole 6-byte settings within the default frame size (as `_ch2.h`'s h2_preface_ok)."""
    size = int.from_bytes(head[:3], "big") if len(head) >= 3 else 0
    if (len(head) >= 3 and (size % 6 or size > 16384)) or head[3:4] not in (b"", b"\x04") or head[4:5] and head[4] & 1:
        return False
    return len(head) < 9 or int.from_bytes(head[5:9], "big") & 0x7FFFFFFF == 0


def not_h2c(url: str, got: bytes) -> WrongProtocol:
    """The refusal of a server that answered an h2c preface with no SETTINGS frame (`got`: its first bytes, b""
    for a close): what came back is named escaped and cut short, one readable line whatever the bytes were."""
    line, how = got.split(b"\r\n", 1)[0][:40], "an h2c connection (HTTP/2 by prior knowledge)"
    if got.startswith(b"HTTP/"):
        what = f"answered {how} in HTTP/1.x ({repr(line)[1:]})"
    elif got:
        what = f"answered {how} with {repr(got[:32])[1:]}{'...' if len(got) > 32 else ''}, not a SETTINGS frame"
    else:
        what = f"closed {how} before any HTTP/2 SETTINGS frame"
    return WrongProtocol(f"{url} {what}: the server does not speak cleartext HTTP/2 there (loadcmp does not fall "
                         "back to another protocol)")


class GracefulH2(h2.connection.H2Connection):
    """The `h2` package's client, still reading after a GOAWAY: the package closes its state machine on one,
    and then raises on the answers to the streams at or below its last-stream-id, which servers (nginx) still
    send; nghttp2 reads them, and so must the fallback, or each answered stream would count as an error."""

    def _receive_goaway_frame(self, frame: Any) -> tuple[list[Any], list[h2.events.Event]]:
        was = self.state_machine.state
        got = super()._receive_goaway_frame(frame)
        if was != h2.connection.ConnectionState.CLOSED:
            self.state_machine.state = was  # streams above last-stream-id are never sent: `fill` stops at one
        return got


class Thinkers:
    """--think: how many of one of the -c connections' -m clients idle in their think (kept from `fill` until they
    wake), and the wake-up of the task that opens their next connection when the server closed the last one."""

    def __init__(self) -> None:
        self.n = 0
        self.woke = asyncio.Event()


class H2Proto(asyncio.Protocol):
    """One connection: its h2 state machine and the streams it keeps in flight."""

    def __init__(self, owner: H2Clients, first: Stream, idle: Thinkers | None = None) -> None:
        self.owner, self.first, self.idle = owner, first, idle if idle is not None else Thinkers()
        self.h2 = GracefulH2(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.streams: dict[int, Stream] = {}
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.goaway: int | None = None
        self.served = 0
        self.first_read = True
        self.no = 0
        """Its number among the loop's connections (requests.parquet's conn), once connected."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = t = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's
        o = self.owner
        o.nconn += 1
        self.no = o.nconn
        sslobj = transport.get_extra_info("ssl_object")
        if sslobj is not None and sslobj.selected_alpn_protocol() != H2.alpn[0]:
            got = sslobj.selected_alpn_protocol() or "no protocol"
            o.engine.crashed(WrongProtocol(f"{o.url} negotiated {got} by ALPN, not h2: the server does not speak "
                                           "HTTP/2 there (loadcmp does not fall back to another protocol)"))
            t.abort()
            return
        if sslobj is not None and self.first.counted:
            o.engine._handshake_seen(t)
        self.h2.initiate_connection()
        self.h2.update_settings({h2.settings.SettingCodes.ENABLE_PUSH: 0,
                                 h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: (1 << 30) - 1})
        self.h2.increment_flow_control_window((1 << 30) - 1 - 65535)
        self.first.t_sent = now()
        self._submit(self.first)
        self.fill()

    def _submit(self, s: Stream) -> None:
        sid = self.h2.get_next_available_stream_id()
        s.t_sent = now() if math.isnan(s.t_sent) else s.t_sent
        headers, body = self.owner.requests[s.req]
        if (tracer := self.owner.engine.tracer) is not None and s.counted:
            headers = self.owner.traced(tracer, s, headers, self.no, sid)
        self.h2.send_headers(sid, headers, end_stream=not body)
        if body:
            self.h2.send_data(sid, body, end_stream=True)
        self.streams[sid] = s
        self.owner.tally.streams += s.counted  # the window's streams, as the outcomes count them

    def fill(self) -> None:
        """Keep `m` streams in flight (fewer when the server allows fewer), none after a GOAWAY; then write."""
        o = self.owner
        limit = min(o.m - self.idle.n, self.h2.remote_settings.max_concurrent_streams)
        while self.goaway is None and len(self.streams) < limit and o.engine.may_start(t := now()):
            self._submit(o.new_stream(t))
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(self.h2.data_to_send())
            if not self.streams and (self.goaway is not None or self.idle.n < o.m):
                self.transport.close()  # a GOAWAY's last stream done, or none may start: a new connection, or none

    def _think(self) -> None:
        """--think: a stream was answered, and its client idles before its next request (its connection kept)."""
        if (pacing := self.owner.pacing) is not None and (rng := self.owner.think_rng) is not None:
            self.idle.n += 1
            asyncio.get_running_loop().call_later(pacing.think_delay(rng), self._woke)

    def _woke(self) -> None:
        """A think's end: the next request now on this connection if it is open, else on the next one."""
        self.idle.n -= 1
        self.idle.woke.set()
        if self.transport is not None and not self.transport.is_closing() and not self.closed.done():
            self.fill()

    def data_received(self, data: bytes) -> None:
        o = self.owner
        t = now()
        if self.first_read and o.h2c and not preface_ok(data):
            o.engine.crashed(not_h2c(o.url, data[:64]))
            self.first_read = False
            return
        self.first_read = False
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.end_all(PROTOCOL_ERROR, t)
            if self.transport is not None:
                self.transport.close()
            return
        for ev in events:
            self._event(ev, t)
        self.fill()

    def _event(self, ev: Any, t: float) -> None:
        o, sid = self.owner, getattr(ev, "stream_id", 0)
        s = self.streams.get(sid) if sid else None
        if isinstance(ev, h2.events.ResponseReceived) and s is not None:
            s.t_first = t
            s.status = int(dict(ev.headers).get(b":status", b"0"))
            s.nbytes += sum(len(k) + len(v) for k, v in ev.headers)
        elif isinstance(ev, h2.events.DataReceived) and s is not None:
            s.nbytes += len(ev.data)
            self.h2.acknowledge_received_data(ev.flow_controlled_length, sid)
        elif isinstance(ev, h2.events.StreamEnded) and s is not None:
            del self.streams[sid]
            self.served += 1
            o.record(s, kind_of_status(s.status), t, s.status)
            self._think()
        elif isinstance(ev, h2.events.StreamReset) and s is not None:
            del self.streams[sid]
            if ev.remote_reset:
                s.code = code_name(ev.error_code)
                o.record(s, STREAM_RESET, t, 0)
                self._think()
            else:  # the package reset it for the server's error (flow control): an outcome, never unfinished
                o.record(s, PROTOCOL_ERROR, t, 0)
        elif isinstance(ev, h2.events.ConnectionTerminated):
            o.tally.goaways += 1
            self.goaway = ev.last_stream_id if ev.last_stream_id is not None else 0
            for k in [k for k in self.streams if k > self.goaway]:
                o.unprocessed(self.streams.pop(k), int(ev.error_code or 0), t)
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            o.spoke = True
            got = ev.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
            if got is not None:
                o.tally.max_concurrent = got.new_value

    def expire(self, t: float) -> None:
        """Streams past their deadline: timeout, and RST_STREAM(CANCEL) to the server."""
        for sid, s in list(self.streams.items()):
            if s.t_intended + self.owner.timeout < t:
                del self.streams[sid]
                self.owner.record(s, TIMEOUT, t, 0)
                with contextlib.suppress(h2.exceptions.ProtocolError):
                    self.h2.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        self.fill()

    def end_all(self, kind: int, t: float) -> None:
        for s in self.streams.values():
            self.owner.record(s, kind, t, 0)
        self.streams.clear()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.first_read and self.owner.h2c and not self.owner.spoke:
            self.first_read = False  # closed before a byte, and no connection ever had SETTINGS: not HTTP/2
            self.owner.engine.crashed(not_h2c(self.owner.url, b""))
        self.end_all(RESET, now())
        self.owner.tally.max_per_connection = max(self.owner.tally.max_per_connection, self.served)
        if not self.closed.done():
            self.closed.set_result(None)


class H2Clients:
    """-c connections of the fallback, each reopened when it ends; the compiled engine's interface."""

    def __init__(self, engine: H2Host, connections: int) -> None:
        t, rec = engine.target, engine.rec
        assert rec is not None  # the load has begun: its loop is built in the closed schedule's start
        self.engine, self.rec, self.n, self.m, self.timeout = engine, rec, connections, t.streams, engine.timeout
        self.url, self.h2c = t.url, t.scheme == "http"  # h2c: HTTP/2 on a plain port
        pages = engine.spec.pages
        self.requests = [(p.h2_headers(), p.body) for p in (pages.targets if pages is not None else (t,))]
        """Each request's header fields and body, by index."""
        self.cursor = Cursor(pages) if pages is not None else None
        self.tally = StreamTally(protocol=t.proto, pure_python=True)
        self.owed: list[tuple[float, int, Stream]] = []
        """The streams a graceful GOAWAY left unprocessed, their requests to send again: a heap by first intended
        start, the oldest first (as `_ch2.h`'s h2_owe), then by when they were owed."""
        self.owing = itertools.count()
        self.spoke = False
        """A SETTINGS came on some connection: a close before one later is a reset, not a server without h2c."""
        self.protos: set[H2Proto] = set()
        self.tasks: list[asyncio.Task[None]] = []
        self.nconn = 0
        p = engine.spec.pacing
        self.pacing = p if p is not None and p.think_s > 0 else None
        """--think: each client idles between an answer and its next request (`Thinkers`); None: no think."""
        self.think_rng = p.rng(engine.spec.worker_index) if p is not None else None

    def start(self) -> None:
        self.rec.streams = StreamTally(protocol=self.tally.protocol, pure_python=True)
        self.tasks = [asyncio.ensure_future(self._client()) for _ in range(self.n)]
        self.tasks.append(asyncio.ensure_future(self._sweeper()))

    def new_stream(self, t: float) -> Stream:
        """A stream started at `t`: counted by the recorder, and as sent in place of an unprocessed one."""
        counted = self.rec.start(t)
        if self.owed and counted:  # a graceful GOAWAY left it unprocessed: sent again as it was, from its first start
            self.tally.retried += 1
            was = heapq.heappop(self.owed)[2]
            return Stream(was.t_intended, counted, was.req, was.sends + 1, t)
        return Stream(t, counted, self.cursor.next() if self.cursor is not None else 0)

    def unprocessed(self, s: Stream, code: int, t: float) -> None:
        """A stream a GOAWAY left unprocessed: retried after a graceful one (NO_ERROR), as `_ch2conn` does (its
        start taken back with its -n ticket); a `goaway` failure after one with an error code, or once sent `SENDS`
        times."""
        if code != h2.errors.ErrorCodes.NO_ERROR or not s.counted or t >= self.rec.end or s.sends >= SENDS:
            self.record(s, GOAWAY, t, 0)
            return
        s.counted = False
        self.rec.unsent(s.t_counted, True)
        if s.seq >= 0 and (tracer := self.engine.tracer) is not None:  # never processed: no row, sent again
            tracer.open.pop(s.seq, None)
        self.tally.goaway_unprocessed += 1
        self.tally.streams -= 1
        heapq.heappush(self.owed, (s.t_intended, next(self.owing), s))

    def record(self, s: Stream, kind: int, t: float, status: int) -> None:
        if not s.counted:
            return
        s.counted = False
        if t < self.rec.end:  # the tally counts what the outcomes count: a counted stream ended in the window
            if kind == STREAM_RESET:
                self.tally.reset(s.code)
            elif kind == GOAWAY:
                self.tally.goaway_unprocessed += 1
        page, expect = (self.cursor.page_of[s.req], self.cursor.expect[s.req]) if self.cursor is not None else (-1, 0)
        marks = (s.t_connect, s.t_sent, s.t_sent, s.t_first, t) if kind <= HTTP_5XX else None
        self.rec.done(kind, s.t_intended, s.t_intended, t, s.nbytes, status, marks, page, expect)
        if s.seq >= 0 and (tracer := self.engine.tracer) is not None:
            tracer.ended(s.seq, kind, t, status, s.nbytes, marks, not self.rec.closed and t < self.rec.end)

    @staticmethod
    def traced(tracer: Tracer, s: Stream, headers: list[tuple[bytes, bytes]], conn: int, sid: int
               ) -> list[tuple[bytes, bytes]]:
        """--trace: a counted stream's header fields, with traceparent when it is drawn (its row opened)."""
        s.seq = tracer.take()
        if s.seq < 0:
            return headers
        tracer.sent(s.seq, s.t_intended, s.t_sent if math.isnan(s.t_connect) else s.t_connect, conn, sid)
        return [*headers, (b"traceparent", tracer.ids.value(s.seq).encode())]

    def trace_rows(self) -> bytes:
        """The rows kept in C (none here: this loop's go to the engine's tracer as they end)."""
        return b""

    async def _client(self) -> None:
        loop = asyncio.get_running_loop()
        e, idle = self.engine, Thinkers()
        while e.may_start(t := now()):
            first = self.new_stream(t)
            first.t_connect = t
            self.tally.connections += 1
            try:
                _, proto = await asyncio.wait_for(loop.create_connection(
                    lambda first=first: H2Proto(self, first, idle), e.host, e.port, ssl=e.ssl,
                    server_hostname=e.host if e.ssl is not None else None), self.timeout)
            except (OSError, ssl.SSLError, asyncio.TimeoutError) as err:
                kind, name = (CONNECT_TIMEOUT, None) if isinstance(err, asyncio.TimeoutError) else kind_of_error(err)
                if first.counted and name is not None:
                    self.rec.client_error(name)
                self.record(first, kind, now(), 0)
                await asyncio.sleep(BACKOFF_S if name is not None else 0.001)
                continue
            except asyncio.CancelledError:
                self.rec.unsent(first.t_counted, first.counted)
                raise
            self.protos.add(proto)
            await proto.closed
            self.protos.discard(proto)
            while idle.n >= self.m:  # --think: every client of it idles; the first to wake opens the next one
                idle.woke.clear()
                await idle.woke.wait()

    async def _sweeper(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            t = now()
            for p in list(self.protos):
                p.expire(t)

    def flush(self) -> None:
        st = self.rec.streams
        if st is None or self.rec.closed:
            return
        for p in self.protos:
            self.tally.max_per_connection = max(self.tally.max_per_connection, p.served)
        st.add(self.tally)
        st.max_concurrent = self.tally.max_concurrent
        self.tally = StreamTally(protocol=self.tally.protocol, pure_python=True, max_concurrent=st.max_concurrent,
                                 max_per_connection=st.max_per_connection)

    def abort(self) -> None:
        for task in self.tasks:
            task.cancel()
        for p in list(self.protos):
            if p.transport is not None:
                p.transport.close()
