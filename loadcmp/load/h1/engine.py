"""The fast engine: uvloop + asyncio.Protocol + httptools, HTTP/1.x, http and https.

Requests are encoded once; responses are parsed by httptools (Content-Length,
chunked, read-to-close). Three paths, one per kind of client:

* closed loop, with or without keep-alive: the compiled loop (`compiled.py`, `_cloop.pyx`;
  over https `_ctls.pyx`, OpenSSL from C), no transports, no Python per request;
* where it is not built (over https: built without OpenSSL's headers), TLS runs over uvloop's
  transports: with keep-alive (and over https, also without it) the next request is written
  straight from the protocol callback
  (`_answered_then_send_next`), with no coroutine switch in between; without keep-alive
  `rawclient.RawClient`, one socket driven from the loop's reader and writer callbacks;
* everything else (ramp, rate): one small coroutine per request (`request`).

h2 and h2c are another engine's (`h2.engine.H2Engine`), under the same `--engine fast`.

Deadlines are not timers: one sweeper expires every slot ten times a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

from .loops import make_cloop
from .conn import CONNECTING, IDLE, NAN, WAITING, Conn, Slot
from ..driver import BACKOFF_S, LiveFn, LoadSpec, now
from ..record.outcomes import CONNECT_TIMEOUT, HTTP_5XX, kind_of_error
from ... import protocols
from ...errors import UsageError
from ..tls import context as tls
from ..core.host import TracedLoop
from . import paced
from .rawclient import RawClient
from ..schedules import Closed
from ..traced import Traced

Failure = tuple[int, str | None]
"""A connection that could not be opened: its kind, and the client's own error if any."""


class FastEngine(Traced[Slot]):
    """uvloop + asyncio.Protocol + httptools: the default."""

    name = "fast"
    carries_warmup = True

    def __init__(self, spec: LoadSpec, live: LiveFn | None = None) -> None:
        if not protocols.get(spec.target.proto).http1:  # never another protocol than the one asked for
            raise UsageError(f"--proto {spec.target.proto}: the fast engine's HTTP/1.x loops do not speak it")
        super().__init__(spec, live)
        self.ssl = tls.context(spec.target)
        """https: TLS over uvloop's transports (the connect phase then includes the handshake)."""
        self.request_list = spec.pages.encoded() if spec.pages is not None else (spec.target.encode(),)
        """Each request's bytes, by index (`Engine.next_request`): the load's one, or its pages'."""
        self.head_list = tuple(b.startswith(b"HEAD ") for b in self.request_list)
        """Each request's answer is a head alone (HEAD): a replayed log mixes HEAD with GET."""
        self.conns: set[Conn] = set()
        self.slots: set[Slot | RawClient] = set()
        self.host = spec.target.host
        self.port = spec.target.port
        self._sources_used = 0
        self.raw: list[RawClient] = []
        self.cloop: TracedLoop | None = None
        """The compiled closed loop, when it runs (`compiled.make_cloop`)."""
        self.pacing = spec.pacing
        """How each client behaves (`load.pacing`); None: as fast as it can."""
        self.think_rng = spec.pacing.rng(spec.worker_index) if spec.pacing and spec.pacing.think_s else None
        """--think: the pure-Python closed loop's draws of its pauses; None: no think time."""
        info = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)[0]
        self.family: int = info[0]
        self.sockaddr: Any = info[4]
        self._nconn = 0

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

    def local_addr(self) -> tuple[str, int] | None:
        """The next source address when spreading them (None: the kernel picks)."""
        if not self.spec.spread_sources:
            return None
        self._sources_used += 1
        return (f"127.0.{(self._sources_used // 250) % 250}.{2 + self._sources_used % 250}", 0)

    def abort_all(self) -> None:
        """Close every connection with a FIN, not a reset: a request written just
        before the close is then still read by the server, which counts it as
        loadcmp does (unfinished); a reset would throw it away unread."""
        for c in list(self.conns):
            with contextlib.suppress(Exception):
                c.transport.close()
        for r in self.raw:
            with contextlib.suppress(Exception):
                r.abandon()
        if self.cloop is not None:
            self.cloop.abort()
            if self.tracer is not None:
                self.tracer.c_rows = self.cloop.trace_rows()

    def settle(self) -> None:
        if self.cloop is not None:
            self.cloop.flush()

    def start_closed(self, schedule: Closed) -> None:
        cloop = make_cloop(self, schedule.connections, asyncio.get_running_loop())
        if cloop is not None:
            self.cloop = cloop
            cloop.start()
        elif self.target.keepalive or self.ssl is not None or self.pacing is not None:  # TLS, a behaviour: transports
            for _ in range(schedule.connections):
                self._spawn(self._keepalive_client())
        else:
            for _ in range(schedule.connections):
                r = RawClient(self)
                self.raw.append(r)
                self.slots.add(r)
                r.start()

    async def _connect(self, slot: Slot) -> Conn | Failure:
        """Open a connection for `slot`, or say why it could not be opened."""
        slot.task = asyncio.current_task()
        slot.timed_out = False
        t_connect = now()
        slot.deadline = t_connect + self.timeout
        slot.phase = CONNECTING
        try:
            conn = await self._open()
        except asyncio.CancelledError:
            slot.phase = IDLE
            if slot.timed_out and self.running:
                return CONNECT_TIMEOUT, None
            raise
        except OSError as e:
            slot.phase = IDLE
            return kind_of_error(e)
        slot.phase = IDLE
        slot.conn = conn
        conn.t_connect = t_connect
        conn.no = self.conn_number()
        return conn

    async def _open(self) -> Conn:
        """A connection (--read-rate: on a socket whose receive buffer was made small before connecting)."""
        loop = asyncio.get_running_loop()
        hostname = self.host if self.ssl is not None else None
        if self.pacing is not None and self.pacing.read_bps:
            sock = await paced.slow_socket(self.family, self.sockaddr, self.local_addr(), self.pacing)
            _, conn = await loop.create_connection(lambda: Conn(self.conns, self.is_head, self.pacing), sock=sock,
                                                   ssl=self.ssl, server_hostname=hostname)
            return conn
        _, conn = await loop.create_connection(
            lambda: Conn(self.conns, self.is_head, self.pacing), self.host, self.port, local_addr=self.local_addr(),
            ssl=self.ssl, server_hostname=hostname,
        )
        return conn

    async def _connect_for(self, slot: Slot, t_intended: float, counted: bool, t_sent: float,
                           req: int = 0) -> Conn | None:
        """A new connection for one request, or None when the request ended without one: its
        failure recorded (with the back-off after a refusal), or taken back because the window
        closed while it connected. Both closed loops and every schedule go through here."""
        rec = self.rec
        assert rec is not None
        try:
            got = await self._connect(slot)
        except asyncio.CancelledError:
            rec.unsent(t_intended, counted)  # the load ended while it connected
            raise
        if isinstance(got, tuple):
            slot.conn = None
            if self._record(counted, got[0], t_intended, t_sent, client_error=got[1], req=req):
                await asyncio.sleep(BACKOFF_S)
            return None
        if self._taken_back(slot, got, t_intended, counted):
            return None
        if counted and self.ssl is not None and now() >= rec.t0:  # not a warm-up's handshake
            self._handshake_seen(got.transport)
        return got

    def _taken_back(self, slot: Slot, conn: Conn, t_intended: float, counted: bool) -> bool:
        """Connected after the window closed: the request is never sent, and counts as not started."""
        if self.window_open(now()):
            return False
        assert self.rec is not None
        self.rec.unsent(t_intended, counted)
        conn.transport.close()
        slot.conn = None
        return True

    # closed loop + keep-alive: the callback path -------------------------------
    async def _keepalive_client(self) -> None:
        """Connects (and reconnects); the requests go from the callback."""
        loop = asyncio.get_running_loop()
        rec = self.rec
        assert rec is not None
        slot = Slot()
        slot.user = rec.user()
        self.slots.add(slot)
        try:
            while self.may_start(t := now()):
                counted = self.count_start(t)
                req = self.next_request()
                conn = await self._connect_for(slot, t, counted, t, req)
                if conn is None:
                    if self.window_open(now()):
                        continue  # failed: connect again
                    break
                conn.closed_fut = loop.create_future()
                conn.on_done = lambda c, k, slot=slot: self._answered_then_send_next(slot, c, k)
                self._send_on_open_connection(slot, conn, t, counted, now(), req)
                await conn.closed_fut
                if self.think_rng is not None:  # --think: before the next connect too, until the think's end
                    await asyncio.sleep(max(0.0, slot.deadline - now()))
        finally:
            self.slots.discard(slot)

    def _send_on_open_connection(self, slot: Slot, conn: Conn, t: float, counted: bool, t_sent: float,
                                 req: int) -> None:
        conn.t_intended = t
        conn.counted = counted
        conn.req = req
        conn.is_head = self.head_list[req]
        slot.deadline = t + self.timeout
        slot.phase = WAITING
        conn.send(self._payload(conn, req, t, counted, t_sent), t_sent)

    def _answered_then_send_next(self, slot: Slot, conn: Conn, kind: int) -> None:
        # The hottest path: the recorder is called inline, not through `_record`, with the
        # clock read when the data came (`t_rx`) when the answer ended in it.
        t = conn.t_rx or now()
        slot.phase = IDLE
        rec = self.rec
        assert rec is not None
        marks = conn.t_connect, conn.t_sent, conn.t_written, conn.t_first or t, t
        conn.t_connect = NAN  # also after a warm-up request: the next one is on a reused connection
        if conn.counted:
            if self.cursor is None:
                rec.done(kind, conn.t_intended, conn.t_intended, t, conn.nbytes, conn.status, marks)
            else:
                rec.done(kind, conn.t_intended, conn.t_intended, t, conn.nbytes, conn.status, marks,
                         *self.page_of(conn.req))
            rec.heard(slot.user, kind, t)
        if conn.seq >= 0:
            self._traced_end(conn, kind, t, marks, conn.counted)
        if self.think_rng is not None:
            self._think(slot, conn, conn.reusable and kind <= HTTP_5XX and not conn.closed)
        elif self.may_start(t) and conn.reusable and kind <= HTTP_5XX and not conn.closed:
            self._send_on_open_connection(slot, conn, t, self.count_start(t), t, self.next_request())
        elif not conn.closed:
            conn.transport.close()

    def _think(self, slot: Slot, conn: Conn, keep: bool) -> None:
        """--think: the kept connection idles, then sends the next request (its latency runs from then); one not
        kept is closed, and its client connects again at the think's end (`slot.deadline`: idle, no sweeper's)."""
        assert self.pacing is not None and self.think_rng is not None
        delay = self.pacing.think_delay(self.think_rng)
        slot.deadline = now() + delay
        if keep:
            asyncio.get_running_loop().call_later(delay, self._thought, slot, conn)
        elif not conn.closed:
            conn.transport.close()

    def _thought(self, slot: Slot, conn: Conn) -> None:
        if conn.closed or conn.active:  # the server closed it meanwhile: its client connects again
            return
        t = now()
        if self.may_start(t):
            self._send_on_open_connection(slot, conn, t, self.count_start(t), t, self.next_request())
        else:
            conn.transport.close()

    # one request, any schedule --------------------------------------------------
    async def request(self, t_intended: float, counted: bool, state: Slot | None) -> Slot:
        """Returns the slot (keeping its connection when it may be reused)."""
        loop = asyncio.get_running_loop()
        if state is None:
            slot = Slot()
            self.slots.add(slot)
        else:
            slot = state
        t_sent = now()
        conn = slot.conn if slot.conn is not None and not slot.conn.closed else None
        req = self.next_request()
        if conn is None:
            conn = await self._connect_for(slot, t_intended, counted, t_sent, req)
            if conn is None:
                return slot
        elif self._taken_back(slot, conn, t_intended, counted):
            return slot
        fut: asyncio.Future[int] = loop.create_future()

        def answered(c: Conn, kind: int) -> None:
            if not fut.done():
                fut.set_result(kind)

        conn.on_done = answered
        t_sent = now()  # service time starts when the request goes out on an open connection
        slot.deadline = t_sent + self.timeout
        slot.phase = WAITING
        slot.timed_out = False
        conn.is_head = self.head_list[req]
        conn.send(self._payload(conn, req, t_intended, counted, t_sent), t_sent)
        kind = await fut
        slot.phase = IDLE
        began = conn.began()
        self._record(counted, kind, t_intended, t_sent, conn.nbytes, None, conn.status, began, req)
        if conn.seq >= 0:
            self._traced_end(conn, kind, now(), (*began, now()), counted)
        if self.target.keepalive and kind <= HTTP_5XX and conn.reusable and not conn.closed:
            return slot
        if not conn.closed:
            conn.transport.close()
        slot.conn = None
        return slot

    def reusable(self, state: Slot | None) -> bool:
        return state is not None and state.conn is not None

    def release(self, state: Slot | None) -> None:
        if state is not None:
            self.slots.discard(state)

    # --trace: the header on the pure-Python paths (the compiled loop writes its own in C) ----------------------
    def _payload(self, conn: Conn, req: int, t_intended: float, counted: bool, t_sent: float) -> bytes:
        """Request `req`'s bytes; traced (drawn, and counted): with its traceparent header, its row opened."""
        tracer = self.tracer
        conn.seq = seq = tracer.take() if tracer is not None and counted else -1
        if seq < 0 or tracer is None:
            return self.request_list[req]
        tracer.sent(seq, t_intended, t_sent if conn.t_connect != conn.t_connect else conn.t_connect, conn.no)
        return tracer.request(self.request_list[req], seq)

    def _traced_end(self, conn: Conn, kind: int, t: float, marks: tuple[float, ...], counted: bool) -> None:
        self.traced_end(conn.seq, kind, t, conn.t_intended, conn.status, conn.nbytes, marks, counted)
        conn.seq = -1

    def traced_end(self, seq: int, kind: int, t: float, t_intended: float, status: int, nbytes: int,
                   marks: tuple[float, ...] | None, counted: bool) -> None:
        """Traced request `seq` ended at `t`: its row, when the recorder counted it (else it stays unfinished)."""
        rec, tracer = self.rec, self.tracer
        assert rec is not None and tracer is not None
        kept = counted and not rec.closed and t < rec.end and (t_intended >= rec.t0 or t >= rec.t0)
        tracer.ended(seq, kind, t, status, nbytes, marks if kind <= HTTP_5XX else None, kept)

    def conn_number(self) -> int:
        """A new connection's number among this engine's (requests.parquet's conn)."""
        self._nconn += 1
        return self._nconn
