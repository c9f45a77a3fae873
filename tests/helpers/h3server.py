"""An in-process HTTP/3 server for tests (qh3), in a thread with its own event loop, beside an https server
over TCP on the same port number that advertises it by Alt-Svc, as Caddy does.

    GET /ok              200 with a short body
    GET /missing         404
    GET /other           200 (a mix's second page)
    POST /login          user=NAME: a 302 to /home that sets the cookie sid=uNAME
    GET /home            200 "hello uNAME" with that cookie, 403 without
    GET /hop/N           after `hop_ms`, a 302 to /hop/N-1 (/hop/0: 200): a step whose redirects take N x hop_ms
    GET /reset           the stream reset (RESET_STREAM, H3_INTERNAL_ERROR): no answer
    GET /goaway          200, but every `goaway_every`-th request of a connection is answered by a GOAWAY
                         naming its own stream: it and every later stream are never processed
    GET /goaway-all      a GOAWAY naming its own stream, on every connection (a server shutting down): none answered

`alpn` other than h3 makes a QUIC server that does not speak HTTP/3; `quic=False` none at all (only TCP);
`alt_svc` is the Alt-Svc header the TCP side sends ("" for none; `{port}` is the server's port).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from urllib.parse import parse_qs
from typing import Any

import trustme
from qh3.asyncio import serve
from qh3.asyncio.protocol import QuicConnectionProtocol
from qh3.h3.connection import ErrorCode, FrameType, H3Connection, encode_frame
from qh3.h3.events import DataReceived, HeadersReceived
from qh3.quic.configuration import QuicConfiguration
from qh3.quic.events import QuicEvent

from qh3._hazmat import encode_uint_var

BODY = b"hello over h3\n"


class _H3(QuicConnectionProtocol):
    server: H3Server

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.seen = 0
        self.goaway: int | None = None
        self.asked: dict[int, tuple[dict[bytes, bytes], bytearray]] = {}

    def quic_event_received(self, event: QuicEvent) -> None:
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived | DataReceived) and not ev.stream_id % 4:
                self._take(ev)
        self.transmit()

    def _take(self, ev: HeadersReceived | DataReceived) -> None:
        """A request's fields and body as they come; answered once its stream ends."""
        if isinstance(ev, HeadersReceived):
            self.asked[ev.stream_id] = (dict(ev.headers), bytearray())
            self.server.traceparents += [v.decode() for k, v in ev.headers if k == b"traceparent"]
        elif ev.stream_id in self.asked:
            self.asked[ev.stream_id][1].extend(ev.data)
        if ev.stream_ended and ev.stream_id in self.asked:
            fields, body = self.asked.pop(ev.stream_id)
            if not self._session(ev.stream_id, fields, bytes(body)):
                self._answer(ev.stream_id, fields.get(b":path", b"/"))

    def _session(self, sid: int, fields: dict[bytes, bytes], body: bytes) -> bool:
        """The pages of a journey: /login (POST user=NAME: a cookie, then a redirect home) and /home."""
        path = fields.get(b":path", b"/")
        if path == b"/login" and fields.get(b":method") == b"POST":
            user = parse_qs(body.decode()).get("user", ["?"])[0]
            self.h3.send_headers(sid, [(b":status", b"302"), (b"location", b"/home"),
                                       (b"set-cookie", f"sid=u{user}; Path=/".encode())], end_stream=True)
            return True
        if path.startswith(b"/hop/"):
            n = int(path[5:])
            head = [(b":status", b"302"), (b"location", b"/hop/%d" % (n - 1))] if n else [(b":status", b"200")]
            self._loop.call_later(self.server.hop_ms / 1000, self._later, sid, head)
            return True
        if path == b"/home":
            sid_cookie = fields.get(b"cookie", b"").decode().partition("sid=")[2].split(";")[0]
            said = f"hello {sid_cookie}\n".encode()
            self.h3.send_headers(sid, [(b":status", b"200" if sid_cookie else b"403")])
            self.h3.send_data(sid, said, end_stream=True)
            return True
        return False

    def _later(self, sid: int, head: list[tuple[bytes, bytes]]) -> None:
        try:
            self.h3.send_headers(sid, head, end_stream=True)
        except Exception:  # noqa: BLE001 - a test server: the client gave the stream up (its timeout)
            return
        self.transmit()

    def _answer(self, sid: int, path: bytes) -> None:
        self.seen += 1
        self.server.requests += 1
        if self.goaway is not None and sid >= self.goaway:
            return  # above the GOAWAY: never processed
        if path == b"/reset":
            self._quic.reset_stream(sid, ErrorCode.H3_INTERNAL_ERROR)
            return
        if path == b"/goaway-all" or path == b"/goaway" and self.seen % self.server.goaway_every == 0:
            self.goaway = sid
            control = self.h3._local_control_stream_id
            assert control is not None
            self._quic.send_stream_data(control, encode_frame(FrameType.GOAWAY, encode_uint_var(sid)))
            return
        status = b"404" if path == b"/missing" else b"200"
        self.server.answered[status.decode()] = self.server.answered.get(status.decode(), 0) + 1
        self.h3.send_headers(sid, [(b":status", status), (b"content-length", str(len(BODY)).encode())])
        self.h3.send_data(sid, BODY, end_stream=True)


def _free_port() -> int:
    """A port free on 127.0.0.1 for both TCP and UDP (the https side and the QUIC side share its number)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t, \
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            t.bind(("127.0.0.1", 0))
            try:
                u.bind(("127.0.0.1", t.getsockname()[1]))
            except OSError:
                continue
            return int(t.getsockname()[1])
    raise OSError("no port free for both TCP and UDP")


class H3Server:
    """Started with `start()`, stopped with `stop()`; `port` serves UDP (QUIC) and TCP (https) alike."""

    def __init__(self, ca: trustme.CA, tmp: Any, *, alpn: str = "h3", quic: bool = True,
                 alt_svc: str = 'h3=":{port}"; ma=86400', goaway_every: int = 5) -> None:
        cert = ca.issue_cert("127.0.0.1", "localhost")
        self.certfile, self.keyfile = str(tmp / "h3cert.pem"), str(tmp / "h3key.pem")
        cert.cert_chain_pems[0].write_to_path(self.certfile)
        cert.private_key_pem.write_to_path(self.keyfile)
        self.alpn, self.quic, self.alt_svc, self.goaway_every = alpn, quic, alt_svc, goaway_every
        self.requests = 0
        self.traceparents: list[str] = []
        """--trace: each request's traceparent header field, as it came."""
        self.hop_ms = 300
        self.answered: dict[str, int] = {}
        """Responses sent, by status: what the server processed, as its access log would say."""
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def start(self) -> H3Server:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self.loop).result(10)
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._quic is not None:
                self._quic.close()
            self._tcp.close()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    async def _serve(self) -> None:
        self.port = _free_port()
        self._quic = None
        if self.quic:
            cfg = QuicConfiguration(is_client=False, alpn_protocols=[self.alpn], max_datagram_frame_size=65536)
            cfg.load_cert_chain(self.certfile, self.keyfile)
            server = self

            class Bound(_H3):
                pass

            Bound.server = server
            self._quic = await serve("127.0.0.1", self.port, configuration=cfg, create_protocol=Bound)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.certfile, self.keyfile)
        ctx.set_alpn_protocols(["http/1.1"])  # over TCP, ALPN chooses HTTP/1.1, as Caddy's does for such a client
        self._tcp = await asyncio.start_server(self._https, "127.0.0.1", self.port, ssl=ctx)

    async def _https(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The TCP side: any request gets a 200 that advertises HTTP/3 (or not)."""
        try:
            await reader.readuntil(b"\r\n\r\n")
            alt = f"Alt-Svc: {self.alt_svc.format(port=self.port)}\r\n" if self.alt_svc else ""
            writer.write(f"HTTP/1.1 200 OK\r\n{alt}Content-Length: 3\r\nConnection: close\r\n\r\nh1\n".encode())
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
