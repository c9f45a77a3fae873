"""A small site with sessions over HTTP/2 (the `h2` package, on `h2server.H2Server`'s thread), for journeys over h2
and h2c:

    POST /login      user=NAME: a 302 to /home that sets the cookie sid=uNAME
    GET  /home       200 with that cookie, its body gzip-encoded: "hello uNAME" and a form whose nonce is the
                     session's (`n-uNAME`); 403 without the cookie
    POST /comment    nonce=...: with the session's cookie and its nonce, a 303 to /home?posted (kept in `comments`);
                     403 otherwise
    GET  /hop/N      after `hop_ms`, a 302 to /hop/N-1 (/hop/0: 200): a step whose redirects take N x hop_ms

With `goaway_every` N, every N-th request of a connection is left unprocessed: a GOAWAY(NO_ERROR) naming the
stream before it, then a close (`unprocessed` counts them), as nginx's `keepalive_requests` ends a connection;
`goaway_code` gives that GOAWAY an error code.
"""

from __future__ import annotations

import gzip
import ssl
from urllib.parse import parse_qs

import h2.events
from helpers.h2server import H2Conn, H2Server


class H2Site(H2Server):
    """The site, started with `start()` (over TLS with an `ssl_context` offering h2, else h2c)."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None, goaway_every: int = 0, goaway_code: int = 0,
                 hop_ms: int = 300) -> None:
        super().__init__("site", ssl_context, SiteConn)
        self.goaway_every, self.goaway_code, self.hop_ms = goaway_every, goaway_code, hop_ms
        self.unprocessed = 0
        self.users: set[str] = set()
        self.comments: list[str] = []
        self.statuses: dict[int, int] = {}


class SiteConn(H2Conn):
    """One connection of the site: `H2Conn`'s, each request answered once its stream ends (its body read)."""

    def __init__(self, server: H2Server) -> None:
        super().__init__(server)
        assert isinstance(server, H2Site)
        self.site = server
        self.asked: dict[int, tuple[dict[bytes, bytes], bytearray]] = {}
        self.seen = 0
        receive = self.h2.receive_data
        self.h2.receive_data = lambda data: self._take(receive(data))  # type: ignore[method-assign]

    def _take(self, events: list[h2.events.Event]) -> list[h2.events.Event]:
        """The events `H2Conn.data_received` goes on with, their requests' fields and bodies kept first."""
        for ev in events:
            if isinstance(ev, h2.events.RequestReceived):
                self.asked[ev.stream_id] = (dict(ev.headers), bytearray())
            elif isinstance(ev, h2.events.DataReceived) and ev.stream_id in self.asked:
                self.asked[ev.stream_id][1].extend(ev.data)
            if getattr(ev, "stream_ended", None) is not None and ev.stream_id in self.asked and not self.done:
                self._site(ev.stream_id, *self.asked.pop(ev.stream_id))
        return events

    def _request(self, sid: int) -> None:
        """Answered at its stream's end (`_site`), not at its headers."""

    def _flush(self) -> None:
        if not self.transport.is_closing():
            self.transport.write(self.h2.data_to_send())

    def _site(self, sid: int, fields: dict[bytes, bytes], body: bytearray) -> None:
        self.seen += 1
        if self.site.goaway_every and self.seen % self.site.goaway_every == 0:
            self.site.unprocessed += 1
            self.h2.close_connection(self.site.goaway_code, last_stream_id=sid - 2)
            self.done = True
            return
        path, method = fields.get(b":path", b"/").decode(), fields.get(b":method", b"GET")
        sess = fields.get(b"cookie", b"").decode().partition("sid=")[2].split(";")[0]
        form = {k: v[0] for k, v in parse_qs(bytes(body).decode()).items()}
        if path.startswith("/hop/"):
            n = int(path[5:])
            head = [(b"location", f"/hop/{n - 1}".encode())] if n else []
            self.site.loop.call_later(self.site.hop_ms / 1000, self._later, sid, 302 if n else 200, head)
        elif path == "/login" and method == b"POST":
            self.site.users.add(form.get("user", "?"))
            cookie = f"sid=u{form.get('user')}; Path=/".encode()
            self._reply(sid, 302, [(b"location", b"/home"), (b"set-cookie", cookie)])
        elif path.startswith("/home"):
            page = f'hello {sess}\n<form><input name="nonce" value="n-{sess}"></form>\n'.encode()
            self._reply(sid, 200 if sess else 403, [(b"content-encoding", b"gzip")], gzip.compress(page))
        elif path == "/comment" and method == b"POST" and sess and form.get("nonce") == f"n-{sess}":
            self.site.comments.append(form.get("text", ""))
            self._reply(sid, 303, [(b"location", b"/home?posted")])
        else:
            self._reply(sid, 403 if path == "/comment" else 404, [])

    def _later(self, sid: int, status: int, head: list[tuple[bytes, bytes]]) -> None:
        try:
            self._reply(sid, status, head)
        except Exception:  # noqa: BLE001 - a test server: the client gave the stream up (its timeout)
            return
        self._flush()

    def _reply(self, sid: int, status: int, head: list[tuple[bytes, bytes]], body: bytes = b"") -> None:
        self.site.statuses[status] = self.site.statuses.get(status, 0) + 1
        self.site.answered += 1
        self.h2.send_headers(sid, [(b":status", str(status).encode()), *head], end_stream=not body)
        if body:
            self.h2.send_data(sid, body, end_stream=True)
