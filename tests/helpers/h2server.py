"""An in-process HTTP/2 server built on the `h2` package, over TLS (ALPN h2) or in cleartext (h2c), whose
`how` misbehaves on purpose, for the h2 engines' accounting tests:

ok          answers every stream 200
refuse      RST_STREAM(REFUSED_STREAM) on every third stream, answers the rest
refuse:0x1a the same with RST_STREAM's code 0x1a, one RFC 9113 does not name
every:N     answers N streams on a connection, then a GOAWAY naming the N-th and a close (nginx's
            keepalive_requests): streams sent past it are unprocessed
low         waits for 4 streams, answers the first, then a GOAWAY(NO_ERROR) naming the first and a close
low:0x2     the same with the GOAWAY's error code 0x2 (INTERNAL_ERROR): its unprocessed streams are failures
graceful    waits for 4 streams, sends a GOAWAY naming the second, then still answers the first two and closes
            (nginx's graceful GOAWAY): the two above are unprocessed, the two below ok
stall       never answers every third stream (the client times it out and cancels it)
none        a GOAWAY(NO_ERROR) naming no stream at a connection's first request, and a close: it processes nothing
none:MS     the same, MS ms after the connection's first request
late:MS     the first connection as none:MS, every later one answered
cut         answers the first 2 streams of a connection, then closes it under the streams in flight
h1          speaks HTTP/1.1 only (TLS: ALPN http/1.1; cleartext: an HTTP/1.1 400 to the preface)

Every answer's status is the path's when it is one (`/404`: 404), else 200; `paths` counts the answers by path.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Callable

import h2.config
import h2.connection
import h2.errors
import h2.events
import hyperframe.frame

BODY = b"hello over h2\n"


class H2Server:
    def __init__(self, how: str, ssl_context: ssl.SSLContext | None = None,
                 conn: Callable[[H2Server], asyncio.Protocol] | None = None) -> None:
        self.how, self.ssl, self.conn = how, ssl_context, conn
        """`conn`: another server's connections on this one's thread (h2site's)."""
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self.answered = 0
        self.connections = 0
        self.received = 0
        """The request bodies' bytes read (DATA frames)."""
        self.paths: dict[bytes, int] = {}
        self.arrived: list[tuple[float, bytes]] = []
        """Each request's arrival (the loop's clock, its path), in order."""
        self.traceparents: list[str] = []
        """--trace: each request's traceparent header field, as it came."""
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> H2Server:
        self._thread.start()
        self._ready.wait(5)
        return self

    def url(self, path: str = "/") -> str:
        return f"{'https' if self.ssl else 'http'}://127.0.0.1:{self.port}{path}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        factory = (lambda: H1Only()) if self.how == "h1" else (lambda: (self.conn or H2Conn)(self))
        server = self.loop.run_until_complete(
            self.loop.create_server(factory, "127.0.0.1", 0, backlog=1024, ssl=self.ssl))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()
        server.close()
        self.loop.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


class H1Only(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert isinstance(self.transport, asyncio.Transport)
        self.transport.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        self.transport.close()


class H2Conn(asyncio.Protocol):
    def __init__(self, server: H2Server) -> None:
        self.server = server
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
        self.served = 0
        self.waiting: list[int] = []
        self.path: dict[int, bytes] = {}
        self.done = False
        self.first = server.connections == 0
        server.connections += 1

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.h2.initiate_connection()
        transport.write(self.h2.data_to_send())

    def data_received(self, data: bytes) -> None:
        if self.done:
            return
        try:
            events = self.h2.receive_data(data)
        except Exception:  # noqa: BLE001 - a test server: a broken peer just loses its connection
            self.transport.close()
            return
        for ev in events:
            if isinstance(ev, h2.events.RequestReceived):
                self.path[ev.stream_id] = dict(ev.headers).get(b":path", b"/")
                self.server.traceparents += [v.decode() for k, v in ev.headers if k == b"traceparent"]
                self.server.arrived.append((self.server.loop.time(), self.path[ev.stream_id]))
                self._request(ev.stream_id)
            elif isinstance(ev, h2.events.DataReceived):
                self.server.received += len(ev.data)
                self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if self.done:
                break
        if not self.transport.is_closing():
            self.transport.write(self.h2.data_to_send())
            if self.done:
                self.transport.close()

    def _answer(self, sid: int) -> None:
        path = self.path.pop(sid, b"/")
        status = path[1:] if path[1:].isdigit() and len(path) == 4 else b"200"
        self.h2.send_headers(sid, [(b":status", status), (b"content-length", str(len(BODY)).encode())])
        self.h2.send_data(sid, BODY, end_stream=True)
        self.served += 1
        self.server.answered += 1
        self.server.paths[path] = self.server.paths.get(path, 0) + 1

    def _request(self, sid: int) -> None:
        how = self.server.how
        if how.startswith("refuse") and (sid // 2) % 3 == 2:
            self.h2.reset_stream(sid, int(how[7:], 16) if ":" in how else h2.errors.ErrorCodes.REFUSED_STREAM)
        elif how == "stall" and (sid // 2) % 3 == 2:
            pass
        elif how.startswith("every:"):
            self._answer(sid)
            if self.served == int(how.split(":")[1]):
                self.h2.close_connection(last_stream_id=sid)
                self.done = True
        elif how.startswith("low"):
            self.waiting.append(sid)
            if len(self.waiting) == 4:
                self._answer(self.waiting[0])
                self.h2.close_connection(int(how[4:], 16) if ":" in how else 0, last_stream_id=self.waiting[0])
                self.done = True
        elif how == "graceful":
            self.waiting.append(sid)
            if len(self.waiting) == 4:
                self._graceful(*self.waiting[:2])
        elif how.startswith("none") or (how.startswith("late") and self.first):
            self._away(sid, how)
        elif how == "cut" and self.served == 2:
            self.transport.write(self.h2.data_to_send())
            self.transport.abort()
            self.done = True
        else:
            self._answer(sid)

    def _away(self, sid: int, how: str) -> None:
        """`none`, `late`: a GOAWAY(NO_ERROR) naming no stream at the first request, or after the pause `how`
        names, then a close; every stream is unprocessed."""
        self.waiting.append(sid)
        if len(self.waiting) > 1:
            return
        if ":" not in how:
            self.h2.close_connection(0, last_stream_id=0)
            self.done = True
            return
        self.server.loop.call_later(int(how.split(":")[1]) / 1000, self._away_now)

    def _away_now(self) -> None:
        if self.transport.is_closing():
            return
        self.h2.close_connection(0, last_stream_id=0)
        self.transport.write(self.h2.data_to_send())
        self.transport.close()
        self.done = True

    def _graceful(self, *below: int) -> None:
        """A GOAWAY naming the last of `below`, then their answers after it: framed by hand, as the `h2`
        package's server allows no HEADERS once it sent a GOAWAY."""
        self.transport.write(self.h2.data_to_send())
        goaway = hyperframe.frame.GoAwayFrame(0, last_stream_id=below[-1], error_code=0)
        self.transport.write(goaway.serialize())
        for sid in below:
            self._answer(sid)
        self.done = True
