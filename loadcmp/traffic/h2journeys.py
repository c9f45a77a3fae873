"""Journeys over HTTP/2: h2 (over TLS, ALPN h2) and h2c (cleartext, by prior knowledge). Each virtual user has
an HTTP/2 connection of its own (the `h2` package over the load's event loop) and its own cookie jar; each step
and each of its redirects is one stream, its answer read as the aiohttp session reads it over HTTP/1.1 (`hops`).

A user sends one stream at a time and thinks between steps, so the package's cost per frame is not what limits
such a load; it is judged client-bound as any Python path is, by the load thread's CPU and lag
(`load.record.saturation`), not by the blanket rule of the h2 engine's fallback. A connection the server ended
(GOAWAY, a close) is opened again at the user's next stream; a stream a graceful GOAWAY (NO_ERROR) left
unprocessed is sent again on the new one, as browsers do (`streams.retried`, at most `SENDS` times in all), and
a `goaway` failure after one with an error code (RFC 9113 §6.8, `record.outcomes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass, field
from typing import Any, cast

import h2.config
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from ..errors import WrongProtocol
from ..load.driver import LiveFn, LoadSpec, now
from ..load.h2.h2py import GracefulH2, code_name, not_h2c, preface_ok
from ..load.record.outcomes import (CONNECT_TIMEOUT, GOAWAY, HTTP_5XX, PROTOCOL_ERROR, RESET, SENDS, STREAM_RESET,
                                   TIMEOUT, kind_of_error, kind_of_status)
from ..load.record.result import StreamTally
from ..load.tls import context as tls
from .hops import Fields, HopEngine, Reply, User
from .sessions import JourneyPlan

WINDOW = (1 << 30) - 1
"""The receive window the client offers (a page of any size in one go), as the h2 engines offer it."""


@dataclass
class Stream:
    """One request on a connection until it ends (`end` gets its outcome kind), and what came back (`got`)."""

    end: asyncio.Future[int]
    got: Reply = field(default_factory=lambda: Reply(0))
    chunks: list[bytes] = field(default_factory=list)


class Conn(asyncio.Protocol):
    """One user's HTTP/2 connection: its state machine, the stream it has out, and what ended it."""

    def __init__(self, engine: H2JourneyEngine) -> None:
        self.engine = engine
        self.h2 = GracefulH2(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.streams: dict[int, Stream] = {}
        self.transport: asyncio.Transport | None = None
        self.goaway: int | None = None
        """The last-stream-id of the server's GOAWAY: streams above it were never processed."""
        self.graceful = True
        self.gone = False
        self.served = 0
        self.first_read = True

    @property
    def takes_streams(self) -> bool:
        """May a new request go out on this connection (no GOAWAY, not closed)?"""
        return self.goaway is None and not self.gone

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = t = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's
        sslobj = t.get_extra_info("ssl_object")
        if sslobj is not None and sslobj.selected_alpn_protocol() != "h2":
            got = sslobj.selected_alpn_protocol() or "no protocol"
            self.engine.crashed(WrongProtocol(f"{self.engine.base} negotiated {got} by ALPN, not h2: the server "
                                              "does not speak HTTP/2 there (loadcmp does not fall back to another "
                                              "protocol)"))
            self.gone = True
            t.abort()
            return
        self.h2.initiate_connection()
        self.h2.update_settings({h2.settings.SettingCodes.ENABLE_PUSH: 0,
                                 h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: WINDOW})
        self.h2.increment_flow_control_window(WINDOW - 65535)
        t.write(self.h2.data_to_send())

    def send(self, fields: Fields, body: bytes, counted: bool) -> tuple[int, Stream]:
        """One request on a new stream (the tally counts it when the outcomes do: `counted`)."""
        sid = self.h2.get_next_available_stream_id()
        stream = Stream(asyncio.get_running_loop().create_future())
        self.streams[sid] = stream
        self.h2.send_headers(sid, fields, end_stream=not body)
        size = self.h2.max_outbound_frame_size
        for at in range(0, len(body), size):
            self.h2.send_data(sid, body[at:at + size], end_stream=at + size >= len(body))
        self.engine.stream_tally.streams += counted
        self._write()
        return sid, stream

    def cancel(self, sid: int) -> None:
        """A stream given up (its timeout): RST_STREAM(CANCEL) to the server, its answer ignored."""
        if self.streams.pop(sid, None) is not None and not self.gone:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self.h2.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
            self._write()

    def abort(self) -> None:
        self.gone = True
        if self.transport is not None:
            self.transport.abort()

    def _write(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(self.h2.data_to_send())
            if self.goaway is not None and not self.streams:
                self.transport.close()  # drained after a GOAWAY: the next stream opens a new connection

    def data_received(self, data: bytes) -> None:
        if self.first_read and self.engine.h2c and not preface_ok(data):
            self.engine.crashed(not_h2c(self.engine.base, data[:64]))
            self.abort()
            return
        self.first_read, self.engine.spoke = False, True
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self._end_all(PROTOCOL_ERROR)
            self.abort()
            return
        for ev in events:
            self._event(ev)
        self._write()

    def _event(self, ev: Any) -> None:
        sid = getattr(ev, "stream_id", 0)
        s = self.streams.get(sid) if sid else None
        if isinstance(ev, h2.events.ResponseReceived) and s is not None:
            r = s.got
            r.t_first, r.fields = now(), [(bytes(k), bytes(v)) for k, v in ev.headers]
            r.status = int(dict(r.fields).get(b":status", b"0"))
            r.nbytes += sum(len(k) + len(v) for k, v in ev.headers)
        elif isinstance(ev, h2.events.DataReceived) and s is not None:
            s.got.nbytes += len(ev.data)
            s.chunks.append(ev.data)
            self.h2.acknowledge_received_data(ev.flow_controlled_length, sid)
        elif isinstance(ev, h2.events.StreamEnded) and s is not None:
            self.served += 1
            self.engine.stream_tally.max_per_connection = max(self.engine.stream_tally.max_per_connection,
                                                             self.served)
            self._end(sid, kind_of_status(s.got.status) if s.got.status else PROTOCOL_ERROR)
        elif isinstance(ev, h2.events.StreamReset) and s is not None:
            if ev.remote_reset:
                self.engine.stream_tally.reset(code_name(ev.error_code))
            self._end(sid, STREAM_RESET if ev.remote_reset else PROTOCOL_ERROR)
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self._goaway(ev.last_stream_id or 0, int(ev.error_code or 0))
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            got = ev.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
            if got is not None:
                self.engine.stream_tally.max_concurrent = got.new_value

    def _goaway(self, last: int, code: int) -> None:
        tally = self.engine.stream_tally
        tally.goaways += 1
        self.goaway = last if self.goaway is None else min(self.goaway, last)
        self.graceful = code == h2.errors.ErrorCodes.NO_ERROR
        for sid in [k for k in self.streams if k > last]:
            tally.goaway_unprocessed += 1
            self._end(sid, GOAWAY)

    def _end(self, sid: int, kind: int) -> None:
        stream = self.streams.pop(sid)
        if not stream.end.done():
            stream.end.set_result(kind)

    def _end_all(self, kind: int) -> None:
        for sid in list(self.streams):
            self._end(sid, kind)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.first_read and self.engine.h2c and not self.gone and not self.engine.spoke:
            self.engine.crashed(not_h2c(self.engine.base, b""))  # closed before its SETTINGS: not HTTP/2
        self.gone = True
        self._end_all(RESET)


@dataclass
class Line:
    """A user's way to the server: the connection open now (a new one after a GOAWAY or a close)."""

    conn: Conn | None = None


@dataclass(frozen=True)
class H2JourneyPlan(JourneyPlan):
    """A journey plan whose users walk over h2 or h2c (`JourneyTraffic.plan` hands it to an h2 or h2c load)."""

    def engine(self, spec: LoadSpec, live: LiveFn | None = None) -> H2JourneyEngine:
        return H2JourneyEngine(spec, live, self)


class H2JourneyEngine(HopEngine[Line]):
    """The journey engine with its users' steps over HTTP/2: `-c` users, one connection each."""

    name = "journey-h2"

    def __init__(self, spec: LoadSpec, live: LiveFn | None, plan: JourneyPlan) -> None:
        super().__init__(spec, live, plan)
        self.h2c = self.target.scheme == "http"
        self.lines: list[Line] = []
        self.spoke = False
        """Some connection's server spoke HTTP/2: a close before a byte later is a reset, not a server without h2c."""

    async def open(self) -> None:
        await super().open()
        self.ssl = tls.context(self.target)
        self.stream_tally = StreamTally(protocol=self.target.proto)
        assert self.rec is not None
        self.rec.streams = self.stream_tally

    async def close(self) -> None:
        self.abort_all()

    def abort_all(self) -> None:
        for line in self.lines:
            if line.conn is not None:
                line.conn.abort()

    def _new_session(self) -> User[Line]:
        self.lines.append(Line())
        return User(self.lines[-1], self._jar())

    async def _conn(self, line: Line, counted: bool, trace: dict[str, float]) -> Conn:
        """The user's connection, a new one when it has none that takes streams (its handshake counted with the
        request that opened it); OSError or ssl.SSLError when none could be opened."""
        if line.conn is not None and line.conn.takes_streams:
            return line.conn
        trace.setdefault("t_connect", now())
        transport, conn = await asyncio.get_running_loop().create_connection(
            lambda: Conn(self), self.target.host, self.target.port, ssl=self.ssl,
            server_hostname=self.target.host if self.ssl is not None else None)
        self.stream_tally.connections += 1
        if counted and not conn.gone:
            self._handshake_seen(transport)
        line.conn = conn
        return conn

    async def _hop(self, user: User[Line], fields: Fields, body: bytes, t: float, within: float, counted: bool,
                   first: bool) -> Reply:
        trace: dict[str, float] = {}
        sent: tuple[Conn, int] | None = None
        try:
            async with asyncio.timeout(max(within, 0.0)):
                for sends in range(SENDS):
                    conn = await self._conn(user.via, counted, trace)
                    if not sends and not self.window_open(now()):  # the window closed while it connected
                        return self._unsent(user, t, counted, first, trace)
                    trace["t_sent"] = trace["t_written"] = now()
                    sent = (conn, (got := conn.send(fields, body, counted and not sends))[0])
                    self.stream_tally.retried += sends > 0
                    kind = await got[1].end
                    if kind != GOAWAY or not conn.graceful:
                        return self._reply(kind, got[1], trace)
                return Reply(GOAWAY, trace=trace)
        except TimeoutError:
            if sent is not None:
                sent[0].cancel(sent[1])
            return Reply(TIMEOUT if sent is not None else CONNECT_TIMEOUT, trace=trace)
        except (OSError, ssl.SSLError) as e:
            kind, own = kind_of_error(e)
            return Reply(kind, own, trace=trace)
        except asyncio.CancelledError:
            if sent is None:
                self._unsent(user, t, counted, first, trace)
            raise

    def _unsent(self, user: User[Line], t: float, counted: bool, first: bool, trace: dict[str, float]) -> Reply:
        """A step's request that never went out (the window closed, or the load ended, while it connected) is taken
        back by the recorder, its traced row too; a redirect's was never counted."""
        if first and self.rec is not None:
            self.rec.unsent(t, counted)
            self._trace_drop(user.seq)
        return Reply(RESET, trace=trace)

    @staticmethod
    def _reply(kind: int, s: Stream, trace: dict[str, float]) -> Reply:
        if not s.got.status or kind > HTTP_5XX:
            return Reply(kind, trace=trace)
        s.got.kind, s.got.body, s.got.trace = kind, b"".join(s.chunks), trace
        return s.got
