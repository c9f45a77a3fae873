"""One QUIC connection speaking HTTP/3 through qh3: its streams, what ended each, and how it is opened.

Every stream ends as exactly one outcome: a response (by status), `stream_reset` (RESET_STREAM from the server,
by its error code), `goaway` (at or above an HTTP/3 GOAWAY's stream id: never processed, so the engine sends it
again), `reset` or `protocol_error` (the connection closed under it), or `timeout`. Each connection's handshake
must negotiate QUIC v1 and ALPN h3 (`Conn._shaken`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from dataclasses import dataclass
from typing import Any

from qh3.asyncio.protocol import QuicConnectionProtocol
from qh3.h3.connection import ErrorCode, H3Connection
from qh3.h3.events import DataReceived, GoawayReceived, H3Event, HeadersReceived, StreamReset
from qh3.quic.configuration import QuicConfiguration
from qh3.quic.connection import QuicConnection
from qh3.quic.events import ConnectionTerminated, HandshakeCompleted, QuicEvent
from qh3.quic.packet import QuicProtocolVersion
from qh3.tls import CipherSuite

from ..driver import now
from ..record.outcomes import (CONNECT_TIMEOUT, GOAWAY, HTTP_5XX, PROTOCOL_ERROR, RESET, STREAM_RESET, TLS_ERROR,
                               kind_of_error, kind_of_status, tls_reason)
from ..record.result import StreamTally
from ..target import Target

ALPN = "h3"
QUIC_V1 = QuicProtocolVersion.VERSION_1
CRYPTO_ERROR = 0x100
"""QUIC's CRYPTO_ERROR range (0x100 + the TLS alert): a handshake the TLS layer refused."""
CLEAN_CLOSE = (0, ErrorCode.H3_NO_ERROR)
"""A connection closed with no error: its streams in flight were cut off (`reset`), not malformed."""


class Refused(Exception):
    """A connection that could not be opened: the outcome of the streams that waited for it, and why (`own`:
    the client's own error, EMFILE and the like, or a tls_error's reason, as `Engine._record` takes them)."""

    def __init__(self, kind: int, reason: str, own: str | None = None) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason
        self.own = own if own is not None else (tls_reason(reason) if kind == TLS_ERROR else None)


@dataclass
class Stream:
    """One request on a connection, until it ends: `end` gets its outcome kind."""

    end: asyncio.Future[int]
    status: int = 0
    nbytes: int = 0
    t_first: float = 0.0
    body: bytearray | None = None
    """The answer's body and header fields, kept only when asked for (a journey's step reads them)."""
    fields: list[tuple[bytes, bytes]] | None = None


class Conn(QuicConnectionProtocol):
    """One QUIC connection speaking HTTP/3: the streams waiting for their answers, and what ended them."""

    def __init__(self, quic: QuicConnection, tally: StreamTally) -> None:
        super().__init__(quic)
        self.h3 = H3Connection(quic)
        self.tally = tally
        self.streams: dict[int, Stream] = {}
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """The handshake's end: None when it negotiated h3 over QUIC v1, else `Refused`."""
        self.seen: tuple[str, str, str] = ("", "", "")
        self.resumed = False
        self.goaway: int | None = None
        """The stream id of the server's GOAWAY: streams at or above it were never processed."""
        self.gone = False
        self.served = 0
        self.no = 0
        """Its number among the load's connections (requests.parquet's conn), set by whoever opened it."""
        self.room = asyncio.Event()
        self._flush: asyncio.Handle | None = None
        self.udp: asyncio.BaseTransport

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.udp = transport

    def abort(self) -> None:
        """Close now: CONNECTION_CLOSE sent if the connection was up, the socket closed."""
        if not self.gone:
            self.gone = True
            self.close()
        self.udp.close()

    @property
    def takes_streams(self) -> bool:
        """May a new request go out on this connection (no GOAWAY, not closed)?"""
        return self.goaway is None and not self.gone

    def datagram_received(self, data: bytes | str, addr: Any) -> None:
        super().datagram_received(data, addr)
        self.room.set()  # the server's MAX_STREAMS came with it, if any

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, HandshakeCompleted):
            self._shaken(event)
        elif isinstance(event, ConnectionTerminated):
            self._terminated(event)
            return
        for ev in self.h3.handle_event(event):
            self._h3_event(ev)

    def _shaken(self, event: HandshakeCompleted) -> None:
        version = self._quic._version  # qh3 has no public accessor for the version negotiated
        cipher = self._quic.get_cipher()
        suite = f"TLS_{CipherSuite(cipher).name}" if cipher is not None else ""
        self.seen = ("TLSv1.3", suite, event.alpn_protocol or "")
        self.resumed = event.session_resumed
        self.tally.max_concurrent = self._quic.max_concurrent_bidi_streams  # its initial_max_streams_bidi
        if event.alpn_protocol != ALPN or version != QUIC_V1:
            why = f"the handshake negotiated ALPN {event.alpn_protocol or 'none'} over QUIC version {version:#x}"
            self._fail_ready(Refused(PROTOCOL_ERROR, why))
            self.close()
        elif not self.ready.done():
            self.ready.set_result(None)

    def _fail_ready(self, why: Refused) -> None:
        if not self.ready.done():
            self.ready.set_exception(why)
            self.ready.exception()  # retrieved here: a connect that timed out first never awaits it

    def _terminated(self, event: ConnectionTerminated) -> None:
        self.gone = True
        code, phrase = event.error_code, event.reason_phrase
        if not self.ready.done():
            crypto = CRYPTO_ERROR <= code < CRYPTO_ERROR + 0x100
            self._fail_ready(Refused(TLS_ERROR, phrase or f"alert {code - CRYPTO_ERROR}") if crypto
                             else Refused(RESET, phrase or f"connection closed ({code:#x})"))
        kind = RESET if code in CLEAN_CLOSE else PROTOCOL_ERROR
        for stream in self.streams.values():
            if not stream.end.done():
                stream.end.set_result(kind)
        self.streams.clear()
        self.room.set()
        asyncio.get_running_loop().call_soon(self.udp.close)  # its datagrams are done with

    def _h3_event(self, ev: H3Event) -> None:
        if isinstance(ev, GoawayReceived):
            self._goaway(ev.stream_id)
            return
        stream = self.streams.get(getattr(ev, "stream_id", -1))
        if stream is None:
            return
        if isinstance(ev, HeadersReceived):
            if not stream.status:
                stream.t_first = now()
                stream.status = int(dict(ev.headers).get(b":status", b"0"))
            stream.nbytes += sum(len(k) + len(v) for k, v in ev.headers)
            if stream.fields is not None:
                stream.fields += ev.headers
            if ev.stream_ended:
                self._end(ev.stream_id, kind_of_status(stream.status) if stream.status else PROTOCOL_ERROR)
        elif isinstance(ev, DataReceived):
            stream.nbytes += len(ev.data)
            if stream.body is not None:
                stream.body += ev.data
            if ev.stream_ended:
                self._end(ev.stream_id, kind_of_status(stream.status) if stream.status else PROTOCOL_ERROR)
        elif isinstance(ev, StreamReset):
            try:
                code = ErrorCode(ev.error_code).name
            except ValueError:
                code = f"{ev.error_code:#x}"
            self.tally.reset(code)
            self._end(ev.stream_id, STREAM_RESET)

    def _goaway(self, stream_id: int) -> None:
        self.tally.goaways += 1
        self.goaway = stream_id if self.goaway is None else min(self.goaway, stream_id)
        for sid in [s for s in self.streams if s >= stream_id]:  # the engine counts the window's as unprocessed
            self._end(sid, GOAWAY)
        self.room.set()

    def _end(self, sid: int, kind: int) -> None:
        stream = self.streams.pop(sid)
        if not stream.end.done():
            stream.end.set_result(kind)
        if kind <= HTTP_5XX:
            self.served += 1
            self.tally.max_per_connection = max(self.tally.max_per_connection, self.served)
        if self.goaway is not None and not self.streams and not self.gone:
            self.close()  # drained after a GOAWAY: the next request opens a new connection

    async def send(self, headers: list[tuple[bytes, bytes]], body: bytes, counted: bool = True, keep: bool = False
                   ) -> tuple[int, Stream]:
        """One request on a new stream, once the server's stream limit allows it; Refused when the connection
        went away (or said GOAWAY) while it waited. The tally counts it when the outcomes do (`counted`); the
        answer's fields and body are kept when asked (`keep`)."""
        quic = self._quic
        while quic.get_next_available_stream_id() // 4 >= quic.max_concurrent_bidi_streams:
            self.room.clear()
            await self.room.wait()
            if not self.takes_streams:
                raise Refused(GOAWAY if self.goaway is not None else RESET, "the connection ended")
        sid = quic.get_next_available_stream_id()
        stream = Stream(asyncio.get_running_loop().create_future(), body=bytearray() if keep else None,
                        fields=[] if keep else None)
        self.streams[sid] = stream
        self.h3.send_headers(sid, headers, end_stream=not body)
        if body:
            self.h3.send_data(sid, body, end_stream=True)
        self.tally.streams += counted
        if self._flush is None:  # one flush for every stream written in this pass of the loop
            self._flush = asyncio.get_running_loop().call_soon(self._flush_now)
        return sid, stream

    def _flush_now(self) -> None:
        self._flush = None
        self.transmit()

    def cancel(self, sid: int) -> None:
        """A stream given up (its timeout): the server is told to stop, and its answer is ignored."""
        if self.streams.pop(sid, None) is not None and not self.gone:
            self._quic.reset_stream(sid, ErrorCode.H3_REQUEST_CANCELLED)
            self._quic.stop_stream(sid, ErrorCode.H3_REQUEST_CANCELLED)
            self.transmit()


def udp_address(infos: list[Any]) -> tuple[str, int]:
    """The first address `getaddrinfo` gave, as a UDP socket takes it."""
    host, port = infos[0][4][:2]
    return str(host), int(port)


def quic_config(target: Target) -> QuicConfiguration:
    """The client's QUIC configuration: QUIC v1, ALPN h3, the certificate checked against the target's CA (or
    the system's; none with --insecure). qh3 completes no handshake without `server_name`."""
    logging.getLogger("quic").setLevel(logging.ERROR)  # qh3 warns of every close by the server: an outcome here
    cfg = QuicConfiguration(is_client=True, alpn_protocols=[ALPN], server_name=target.host,
                            supported_versions=[QUIC_V1])
    if target.insecure:
        cfg.verify_mode = ssl.CERT_NONE
    elif target.cafile:
        cfg.load_verify_locations(cafile=target.cafile)
    return cfg


async def open_conn(addr: tuple[str, int], cfg: QuicConfiguration, tally: StreamTally, timeout: float) -> Conn:
    """A new QUIC connection on a UDP socket of its own, its handshake done within `timeout` and checked;
    Refused otherwise."""
    loop = asyncio.get_running_loop()
    family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    try:
        _, conn = await loop.create_datagram_endpoint(lambda: Conn(QuicConnection(configuration=cfg), tally),
                                                      family=family, remote_addr=None, local_addr=None)
    except OSError as e:
        kind, own = kind_of_error(e)
        raise Refused(kind, str(e), own) from None
    try:
        conn.connect(addr)
        await asyncio.wait_for(conn.ready, timeout)
    except TimeoutError:
        conn.abort()
        raise Refused(CONNECT_TIMEOUT, f"no QUIC handshake within {timeout:g} s") from None
    except BaseException:
        conn.abort()
        raise
    tally.connections += 1
    return conn
