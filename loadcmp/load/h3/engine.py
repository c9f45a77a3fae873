"""The HTTP/3 engine: `-c` QUIC connections, each carrying `Target.streams` requests at once, through qh3.

qh3 (a maintained fork of aioquic) keeps aioquic's sans-I/O API but runs packet protection, TLS (rustls)
and QPACK in native code, and its wheels carry all of it: a request costs the client tens of µs of CPU
where aioquic's Python TLS and packet layer cost several times that, and this engine is client-bound long
before Caddy is. Everything above the library is here: the requests (one page, or a load's `Pages`: a mix,
a replay), their connections, and the tally; one connection's streams are `conn.Conn`'s.

A request a GOAWAY left unprocessed (RFC 9114 §5.2: at or above the stream id it names, so the server never
saw it) is sent again on a new connection, as browsers do: it is counted once, as what its last send got, and
each resend in `streams.retried`; only one left unprocessed `SENDS` times in a row (`record.outcomes`) ends as
`goaway`. A stream reset and a connection closed under its streams stay failures.
"""

from __future__ import annotations

import asyncio
import math
import socket
from dataclasses import dataclass
from typing import Any

from ..driver import BACKOFF_S, Engine, now
from ..traced import Traced
from ..record.outcomes import CONNECT_TIMEOUT, GOAWAY, HTTP_5XX, SENDS, TIMEOUT
from ..record.result import StreamTally
from ..schedules import Closed
from ..target import Target
from .conn import ALPN, Conn, Refused, Stream, open_conn, quic_config, udp_address

UNSENT = -1
"""`_until_processed`: the window closed while the request's connection opened; it never went out."""


@dataclass
class Slot:
    """One of the load's `-c` connections, as its clients see it: the one open now (a new one after a GOAWAY
    or a close), the handshake under way that they all wait for, and how many of their requests are out."""

    conn: Conn | None = None
    opening: asyncio.Task[Conn] | None = None
    inflight: int = 0


@dataclass
class Sending:
    """One request on its way: the connection and stream its last send went out on, and its marks."""

    t_sent: float
    t_connect: float = math.nan
    conn: Conn | None = None
    sid: int = -1
    stream: Stream | None = None
    sends: int = 0


Fields = list[tuple[bytes, bytes]]
"""A request's HTTP/3 header fields, as qh3 takes them."""


def request_fields(target: Target) -> tuple[Fields, bytes]:
    """A request's HTTP/3 header fields (HTTP/2's rules: lower-case names, no connection-specific fields) and
    its body."""
    return target.h2_headers(), target.body


class Connections:
    """A load's QUIC connections, one per `Slot`, for the engine that drives them (its window, its recorder):
    each request sent on its slot's connection until the server processes it."""

    def __init__(self, engine: Engine[Any]) -> None:
        self.engine = engine
        self.slots: list[Slot] = []
        self.opened = 0
        """The connections opened (each one's `Conn.no`)."""

    async def open(self) -> None:
        """The server's UDP address, the QUIC configuration, and the tally the recorder reports."""
        engine, target = self.engine, self.engine.target
        self.cfg = quic_config(target)
        infos = await asyncio.get_running_loop().getaddrinfo(target.host, target.port, type=socket.SOCK_DGRAM)
        self.addr = udp_address(infos)
        self.tally = StreamTally(protocol=ALPN)
        assert engine.rec is not None
        engine.rec.streams = self.tally

    def close(self) -> None:
        for slot in self.slots:
            if slot.conn is not None:
                slot.conn.abort()

    def abort_all(self) -> None:
        for slot in self.slots:
            if slot.opening is not None:
                slot.opening.cancel()
            if slot.conn is not None:
                slot.conn.abort()

    def new_slot(self) -> Slot:
        slot = Slot()
        self.slots.append(slot)
        return slot

    async def conn(self, slot: Slot, counted: bool) -> tuple[Conn, bool]:
        """The slot's connection, a new one when it has none that takes streams; True: this request opened it."""
        conn = slot.conn
        if conn is not None and conn.takes_streams:
            return conn, False
        first = slot.opening is None
        if first:
            slot.opening = asyncio.ensure_future(open_conn(self.addr, self.cfg, self.tally, self.engine.timeout))
        task = slot.opening
        assert task is not None
        try:
            conn = await asyncio.shield(task)
        finally:
            if slot.opening is task and task.done():
                slot.opening = None
        slot.conn = conn
        rec = self.engine.rec
        if first:
            self.opened += 1
            conn.no = self.opened
        if first and counted and rec is not None:
            rec.add_tls(int(not conn.resumed), int(conn.resumed), {conn.seen: 1})
        return conn, first

    async def until_processed(self, slot: Slot, fields: Fields, body: bytes, counted: bool, s: Sending,
                              keep: bool = False) -> int:
        """Send a request until the server processes it: after a GOAWAY that left it unprocessed, again on the
        slot's next connection, at most `SENDS` times. A counted request's sends that a GOAWAY left unprocessed in
        the window are `streams.goaway_unprocessed`, its resends `streams.retried` (a warm-up's are neither). Its
        outcome kind; UNSENT when the window closed while its first connection opened. `keep`: its answer's fields
        and body."""
        for _ in range(SENDS):
            t0 = now()
            conn, opened = await self.conn(slot, counted)
            s.conn, s.t_connect = conn, t0 if opened else math.nan
            if not self.engine.window_open(now()):  # the window closed while it connected
                if s.sends:
                    return GOAWAY  # sent, never processed: the recorder leaves it unfinished
                assert self.engine.rec is not None
                self.engine.rec.unsent(s.t_sent, counted)  # t_sent: still the intended start
                return UNSENT
            t_sent = now()
            try:
                s.sid, s.stream = await conn.send(fields, body, counted and not s.sends, keep)
            except Refused as e:
                if e.kind != GOAWAY:
                    raise
                continue  # the connection said GOAWAY while this request waited for a stream: never sent
            s.t_sent = t_sent
            if s.sends and counted:
                self.tally.retried += 1
            s.sends += 1
            kind = await s.stream.end
            if kind != GOAWAY:
                return kind
            if counted and self.engine.window_open(now()):  # the window's own, as h2 counts them
                self.tally.goaway_unprocessed += 1
        return GOAWAY

    async def timed(self, slot: Slot, fields: Fields, body: bytes, counted: bool, s: Sending,
                    keep: bool = False, within: float | None = None) -> tuple[int, str | None]:
        """`until_processed` within the engine's timeout (or `within` seconds: what a journey's step has left): the
        outcome kind, and the client's own error if any (`Engine._record`'s). A request the load's end cancels
        before it went out is taken back."""
        try:
            async with asyncio.timeout(self.engine.timeout if within is None else max(within, 0.0)):
                return await self.until_processed(slot, fields, body, counted, s, keep), None
        except TimeoutError:
            if s.sends and s.conn is not None:
                s.conn.cancel(s.sid)
            return (TIMEOUT if s.sends else CONNECT_TIMEOUT), None
        except Refused as e:
            return e.kind, e.own
        except asyncio.CancelledError:
            if not s.sends and self.engine.rec is not None:
                self.engine.rec.unsent(s.t_sent, counted)
            raise


class H3Engine(Traced[Slot]):
    """HTTP/3 over QUIC: the closed loop runs `-m` clients on each of `-c` connections; the ramp and the rate
    put each request on the least busy of at most `-c` connections."""

    name = "h3"

    async def open(self) -> None:
        self.h3 = Connections(self)
        await self.h3.open()
        pages = self.spec.pages
        self.requests = [request_fields(t) for t in (pages.targets if pages is not None else (self.target,))]
        """Each request's fields by its index (`next_request`), encoded once."""

    async def close(self) -> None:
        self.h3.close()

    def abort_all(self) -> None:
        self.h3.abort_all()

    def start_closed(self, schedule: Closed) -> None:
        p = self.spec.pacing
        self.think = (p, p.rng(self.spec.worker_index)) if p is not None and p.think_s > 0 else None
        """--think: each client idles between an answer and its next request (on its connection, kept open)."""
        for _ in range(schedule.connections):
            slot = self.h3.new_slot()
            for _ in range(self.target.streams):
                self._spawn(self._stream_client(slot))

    async def _stream_client(self, slot: Slot) -> None:
        rec = self.rec
        assert rec is not None
        while self.may_start(t := now()):
            await self.request(t, rec.start(t), slot)
            if self.think is not None:  # its next request's latency runs from the think's end
                await asyncio.sleep(self.think[0].think_delay(self.think[1]))

    def _least_busy(self) -> Slot:
        """The ramp's and the rate's request: the connection with the fewest requests out, a new one while
        every open one has some and fewer than -c are open."""
        free = min(self.h3.slots, key=lambda s: s.inflight, default=None)
        if free is None or free.inflight and len(self.h3.slots) < self.spec.schedule.connections:
            free = self.h3.new_slot()
        return free

    async def request(self, t_intended: float, counted: bool, state: Slot | None) -> Slot | None:
        slot = state if state is not None else self._least_busy()
        req = self.next_request()
        s = Sending(t_intended)
        slot.inflight += 1
        fields, body = self.requests[req]
        seq = self._trace_take(counted, t_intended)
        if seq >= 0:
            fields = [*fields, self._trace_field(seq)]
        try:
            kind, reason = await self.h3.timed(slot, fields, body, counted, s)
        finally:
            slot.inflight -= 1
        if kind == UNSENT:
            self._trace_row(seq, s, kind, 0, 0, None, False)
            return state
        stream = s.stream
        status = stream.status if stream is not None and kind <= HTTP_5XX else 0
        began = (s.t_connect, s.t_sent, s.t_sent, stream.t_first) if status and stream is not None else None
        nbytes = stream.nbytes if stream is not None else 0
        if self._record(counted, kind, t_intended, s.t_sent, nbytes, reason, status, began, req):
            await asyncio.sleep(BACKOFF_S)
        self._trace_row(seq, s, kind, status, nbytes, None if began is None else (*began, now()), counted)
        return state

    # --trace: the header as a field of its own, a row a traced request ---------------------------------------
    def _trace_take(self, counted: bool, t_intended: float) -> int:
        """A counted request's number when it is traced (its row opened: unfinished unless it ends), else -1."""
        tracer = self.tracer
        seq = tracer.take() if tracer is not None and counted else -1
        if seq >= 0 and tracer is not None:
            tracer.sent(seq, t_intended, t_intended, 0)
        return seq

    def _trace_field(self, seq: int) -> tuple[bytes, bytes]:
        assert self.tracer is not None
        return b"traceparent", self.tracer.ids.value(seq).encode()

    def _trace_row(self, seq: int, s: Sending, kind: int, status: int, nbytes: int,
                   marks: tuple[float, ...] | None, counted: bool) -> None:
        """Traced request `seq`'s row, when the recorder counted it (else unfinished; never sent: none)."""
        rec, tracer = self.rec, self.tracer
        if seq < 0 or tracer is None or rec is None:
            return
        if kind == UNSENT:
            tracer.open.pop(seq, None)
            return
        t = now()
        t_start = s.t_sent if math.isnan(s.t_connect) else s.t_connect
        if seq in tracer.open:  # now that it went out: where it began, on which connection and stream
            tracer.sent(seq, tracer.open[seq][0], t_start, s.conn.no if s.conn is not None else 0, max(s.sid, 0))
        tracer.ended(seq, kind, t, status, nbytes, marks, counted and not rec.closed and t < rec.end)
