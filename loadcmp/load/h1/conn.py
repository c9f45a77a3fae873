"""One HTTP/1.x connection of the fast engine, and the client slot it lives in.

`Conn` is an asyncio.Protocol fed straight into httptools: it sends one request
at a time and calls `on_done(conn, kind)` when the response is complete or the
connection failed. `Slot` is a client's place: its connection, its deadline,
and the task that opens its connection; one sweeper expires them all.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any

import httptools

from . import paced
from ..pacing import Pacing
from ..record.outcomes import PROTOCOL_ERROR, RESET, TIMEOUT, kind_of_status
from ..record.recorder import Began

now = time.monotonic
NAN = math.nan

IDLE, CONNECTING, WAITING, DRAINING = 0, 1, 2, 3
"""A slot's (or raw client's) phase; a non-zero phase has a deadline."""


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
        "open_conns", "transport", "parser", "on_done", "active", "nbytes", "status",
        "headers_done", "closed", "closed_fut", "is_head", "reusable",
        "t_intended", "counted", "req", "t_connect", "t_sent", "t_written", "t_first", "t_rx", "pacing", "token",
        "seq", "no",
    )

    def __init__(self, open_conns: set[Conn], is_head: bool, pacing: Pacing | None = None) -> None:
        self.open_conns = open_conns
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
        self.is_head = is_head
        self.reusable = True
        """The last response allows another request on this connection (keep-alive)."""
        self.t_intended = 0.0
        self.counted = False
        self.req = 0
        """The request's index among the load's pages' (`Engine.next_request`)."""
        self.seq = -1
        """--trace: the request's sequence number when it carries the header, else -1."""
        self.no = 0
        """Its number among the engine's connections (requests.parquet's conn)."""
        self.t_connect = NAN
        """When this connection's connect began, until its first request is recorded (then NaN: reused)."""
        self.t_sent = self.t_written = self.t_first = 0.0
        self.t_rx = 0.0
        """While `data_received` runs: when the data came (a response that ends in it ended then)."""
        self.pacing = pacing if pacing is not None and pacing.paced_io else None
        """A paced write or read (`paced`); None: at once, as a machine."""
        self.token = 0
        """The request a paced write belongs to (`paced.trickle`)."""

    # asyncio.Protocol
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.open_conns.add(self)

    def data_received(self, data: bytes) -> None:
        if self.pacing is not None and self.pacing.read_bps:
            paced.hold(self, data, self.pacing)  # handed to `take` at --read-rate
            return
        self.take(data)

    def take(self, data: bytes) -> None:
        """Data read, given to the parser."""
        self.t_rx = t = now()  # one clock read serves the first byte and the end of most answers
        if not self.t_first:
            self.t_first = t
        self.nbytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.reusable = False
            self._finish(PROTOCOL_ERROR)
            self.transport.abort()
        self.t_rx = 0.0

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.open_conns.discard(self)
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
        head = self.is_head  # (ending it may send the next request, which sets its own)
        if head or self.status in (204, 304):
            self.framed = True
            self.on_message_complete()
            if head:  # httptools still awaits the body the head announced: the next answer, a fresh parser
                self.parser = httptools.HttpResponseParser(self)

    def on_message_complete(self) -> None:
        if self.active:
            self.reusable = self.parser.should_keep_alive()
            self._finish(kind_of_status(self.status))

    # ours
    def send(self, request: bytes, t_sent: float) -> None:
        """Write the request; `t_sent` is the caller's clock read of just now (one less on the hot path)."""
        self.active = True
        self.nbytes = 0
        self.status = 0
        self.framed = False
        self.headers_done = False
        self.t_first = 0.0
        self.t_sent = t_sent
        if self.pacing is not None and self.pacing.send_bps:
            paced.trickle(self, request, self.pacing)  # --send-rate: written a chunk at a time
            return
        self.transport.write(request)
        self.t_written = now()

    def began(self) -> Began:
        """When the phases of the answer that just ended began; the next one is on a reused connection."""
        b = self.t_connect, self.t_sent, self.t_written, self.t_first or now()
        self.t_connect = NAN
        return b

    def _finish(self, kind: int) -> None:
        if not self.active:
            return
        self.active = False
        if self.on_done is not None:
            self.on_done(self, kind)

    def timed_out(self) -> None:
        """The deadline passed with the request unanswered."""
        if self.active:
            self.reusable = False
            self._finish(TIMEOUT)
            self.transport.abort()


class Slot:
    """One client's place in the fast engine: its connection and its deadline.

    A single sweeper checks every slot ten times a second instead of arming a
    timer per request, which costs more than the request itself at wrk speed.
    """

    __slots__ = ("task", "conn", "deadline", "phase", "timed_out", "user")

    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None
        """The task opening this slot's connection (cancelled at the deadline)."""
        self.conn: Conn | None = None
        self.deadline = 0.0
        self.phase = IDLE
        self.timed_out = False
        self.user: list[bool] | None = None
        """The user of a closed client's callback path (`Recorder.user`); None: its task's (`driver.USER`)."""

    def expire(self) -> None:
        """The deadline passed: cancel the connect, or time the request out."""
        self.timed_out = True
        phase, self.phase = self.phase, IDLE
        if phase == CONNECTING:
            if self.task is not None:
                self.task.cancel()
        elif self.conn is not None:
            self.conn.timed_out()
