"""webbench's loop without transports: the fast engine's closed loop without keep-alive.

One non-blocking socket per request, driven straight from the event loop's
reader/writer callbacks: no transport, protocol, future or coroutine per
request. A new connection per request is the default mode and the most
expensive one for a Python client; this path makes it about a quarter faster.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from typing import Any, Protocol

import httptools

from .conn import CONNECTING, DRAINING, IDLE, WAITING
from ..driver import now
from ..record.outcomes import (
    CONNECT_REFUSED,
    CONNECT_TIMEOUT,
    HTTP_5XX,
    PROTOCOL_ERROR,
    RESET,
    TIMEOUT,
    kind_of_error,
    kind_of_status,
)
from ..record.recorder import Began, Recorder
from ...trace.rows import Tracer


class RawHost(Protocol):
    """What a raw client needs from its engine (`h1.engine.FastEngine`)."""

    running: bool
    rec: Recorder | None
    timeout: float
    is_head: bool
    family: int
    sockaddr: Any
    request_list: tuple[bytes, ...]
    head_list: tuple[bool, ...]
    tracer: Tracer | None

    def count_start(self, t: float) -> bool: ...

    def next_request(self) -> int: ...

    def local_addr(self) -> tuple[str, int] | None: ...

    def may_start(self, t: float) -> bool: ...

    def _record(self, counted: bool, kind: int, t_intended: float, t_sent: float, nbytes: int = 0,
                client_error: str | None = None, status: int = 0, began: Began | None = None, req: int = 0) -> bool: ...

    def conn_number(self) -> int: ...

    def traced_end(self, seq: int, kind: int, t: float, t_intended: float, status: int, nbytes: int,
                   marks: tuple[float, ...] | None, counted: bool) -> None: ...


class RawClient:
    """One closed-loop client: connect, send, read to the end, close, again.

    Same outcome kinds, same recorder, same sweeper (`expire`) as the other paths.
    """

    __slots__ = (
        "engine", "loop", "sock", "fd", "parser", "t_intended", "t_sent", "t_written", "t_first", "counted", "nbytes",
        "status", "req", "head", "headers_done", "phase", "deadline", "user", "seq",
    )

    def __init__(self, engine: RawHost) -> None:
        self.engine = engine
        self.loop = asyncio.get_running_loop()
        self.sock: socket.socket | None = None
        self.fd = -1
        self.parser: Any = None
        self.t_intended = self.t_sent = self.t_written = self.t_first = self.deadline = 0.0
        """The request's start (its connect's too), its send, the end of the write, the answer's first byte."""
        self.counted = False
        self.nbytes = self.status = self.req = 0
        self.head = b""
        self.headers_done = False
        self.phase = IDLE
        self.user = engine.rec.user() if engine.rec is not None else None
        """This client's user (`Recorder.user`): marked when an answer comes in the window."""
        self.seq = -1
        """--trace: the request's sequence number when it carries the header, else -1."""

    def start(self) -> None:
        eng = self.engine
        t = now()
        if not eng.may_start(t):
            return
        self.t_intended = t
        self.counted = eng.count_start(t)
        self.req = eng.next_request()
        self.t_first = 0.0
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
        if eng.tracer is not None:
            self._trace(eng.tracer, t)
        try:
            local = eng.local_addr()
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
                self.phase = CONNECTING
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
            req = self.engine.request_list[self.req]
            if self.seq >= 0 and self.engine.tracer is not None:
                req = self.engine.tracer.request(req, self.seq)
            if sock.send(req) != len(req):  # only a body larger than the socket buffer does this
                raise OSError(errno.ENOBUFS, "the request did not fit the socket buffer")
            self.t_written = now()
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
        self.phase = WAITING
        self.loop.add_reader(self.fd, self._readable)
        return True

    def _readable(self) -> None:
        sock = self.sock
        while sock is not None:
            try:
                data = sock.recv(262144)
            except BlockingIOError:
                return
            except OSError:
                self._end(RESET)
                return
            if not data:
                if self.phase == DRAINING:
                    self._end(-1)
                elif self.headers_done and self.status and not self._framed():
                    self._end(kind_of_status(self.status))  # a read-to-close body ended
                else:
                    self._end(RESET)
                return
            if self.phase == DRAINING:
                return
            if not self.t_first:
                self.t_first = now()
            if not self.headers_done:
                self.head += data
            self.nbytes += len(data)
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserError:
                self._end(PROTOCOL_ERROR)
                return
            if self.sock is not sock:
                return  # ended, and the next request is on a new socket
            # Read on until the socket has no more. When an RST comes with the data
            # (POLLERR), uvloop calls the reader one last time and then drops it:
            # only reading now sees the reset, or the server's close after a
            # complete answer (which usually is there already: one wake-up less).

    # httptools callbacks
    def _framed(self) -> bool:
        """Did the response say how long it is? Asked only at an early EOF, so
        the common path pays for no header callback at all."""
        head = self.head.split(b"\r\n\r\n", 1)[0].lower()
        return b"\ncontent-length:" in head or b"\ntransfer-encoding:" in head

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.status = self.parser.get_status_code()
        if self.engine.head_list[self.req] or self.status in (204, 304):
            self._end(kind_of_status(self.status))

    def on_message_complete(self) -> None:
        if self.parser.should_keep_alive():
            self._end(kind_of_status(self.status))
        else:
            counted, self.counted = self.counted, False
            marks = self._marks()
            self.engine._record(counted, kind_of_status(self.status), self.t_intended, self.t_sent, self.nbytes,
                                None, self.status, marks, self.req)
            self._traced(kind_of_status(self.status), (*marks, now()), counted)
            self._heard(counted, kind_of_status(self.status))
            self.phase = DRAINING  # let the server close first, as webbench reads to EOF
            self.deadline = now() + 1.0

    def _heard(self, counted: bool, kind: int) -> None:
        rec = self.engine.rec
        if counted and rec is not None:
            rec.heard(self.user, kind, now())

    def _marks(self) -> Began:
        """The answer's phases; the connect began with the request."""
        return self.t_intended, self.t_sent, self.t_written, self.t_first or now()

    # endings
    def _failed(self, e: BaseException) -> None:
        kind, client_error = kind_of_error(e)
        self._end(kind, t_sent=self.t_intended, client_error=client_error)

    def expire(self) -> None:
        """The sweeper found the deadline passed."""
        if self.phase == CONNECTING:
            self._end(CONNECT_TIMEOUT, t_sent=self.t_intended)
        elif self.phase == WAITING:
            self._end(TIMEOUT)
        elif self.phase == DRAINING:
            self._end(-1)  # answered, but the server kept the connection open: close it ourselves

    def abandon(self) -> None:
        """The load has ended: close, taking back a request still connecting (never sent)."""
        if self.phase == CONNECTING and self.sock is not None:
            rec = self.engine.rec
            assert rec is not None
            counted, self.counted = self.counted, False
            rec.unsent(self.t_intended, counted)
            if self.seq >= 0 and self.engine.tracer is not None:  # never sent: no row
                self.engine.tracer.open.pop(self.seq, None)
        self.close()

    def close(self) -> None:
        sock = self.sock
        if sock is None:
            return
        self.sock = None
        if self.phase == CONNECTING:
            self.loop.remove_writer(self.fd)
        elif self.phase in (WAITING, DRAINING):
            self.loop.remove_reader(self.fd)
        self.phase = IDLE
        sock.close()

    def _end(self, kind: int, t_sent: float | None = None, client_error: str | None = None) -> None:
        """Close, record (kind -1: already recorded), and start the next request;
        a little later when the connection was refused at once, not to spin the stack."""
        if self.sock is None and self.phase == IDLE and t_sent is None:
            return
        self.close()
        later = kind == CONNECT_REFUSED
        if kind >= 0:
            counted, self.counted = self.counted, False
            answered = kind <= HTTP_5XX
            marks = self._marks() if answered else None
            later = self.engine._record(counted, kind, self.t_intended, self.t_sent if t_sent is None else t_sent,
                                        self.nbytes, client_error, self.status if answered else 0,
                                        marks, self.req) or later
            self._traced(kind, (*marks, now()) if marks is not None else None, counted)
            self._heard(counted, kind)
        if not self.engine.running:
            return
        if later:
            self.loop.call_later(0.001, self.start)
        else:
            self.start()

    # --trace: the header on this path too (the compiled loop writes its own in C) -------------------------
    def _trace(self, tracer: Tracer, t: float) -> None:
        """The request's number when it is traced (and counted), its row opened; its connect begins now."""
        self.seq = tracer.take() if self.counted else -1
        if self.seq >= 0:
            tracer.sent(self.seq, self.t_intended, t, self.engine.conn_number())

    def _traced(self, kind: int, marks: tuple[float, ...] | None, counted: bool) -> None:
        if self.seq >= 0:
            self.engine.traced_end(self.seq, kind, now(), self.t_intended, self.status, self.nbytes, marks, counted)
            self.seq = -1
