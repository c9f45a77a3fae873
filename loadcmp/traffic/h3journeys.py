"""Journeys over HTTP/3: each virtual user on a QUIC connection of its own (`load.h3`'s `Connections`, a new one
after a GOAWAY), with its own cookie jar, each step's answer read as the aiohttp session reads it over HTTP/1.1:
its cookies kept, its redirects followed (at most `MAX_REDIRECTS`), its body decoded (gzip, deflate) for the
step's extracts. Imported only when journeys run over h3 (it imports qh3).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urljoin, urlsplit

from ..load.driver import LiveFn, LoadSpec
from ..load.h3.engine import UNSENT, Connections, Fields, Sending, Slot
from ..load.record.outcomes import PROTOCOL_ERROR, RESET, kind_of_status
from ..load.target import HOP_BY_HOP
from .journeys import Step, fill
from .sessions import Answer, JourneyEngine, JourneyPlan

if TYPE_CHECKING:
    from aiohttp import CookieJar

MAX_REDIRECTS = 10
"""As aiohttp's sessions follow them over HTTP/1.1; one more is a failed step (`protocol_error`)."""
REDIRECTS = (301, 302, 303, 307, 308)
ASKED = [(b"user-agent", b"loadcmp"), (b"accept", b"*/*"), (b"accept-encoding", b"gzip, deflate")]
"""The fields an aiohttp session sends on each request over HTTP/1.1, sent alike here."""


@dataclass
class H3User:
    """A virtual user over h3: its connection's slot and its cookie jar (cleared before each journey)."""

    slot: Slot
    cookie_jar: CookieJar

    async def close(self) -> None:
        """Its connection is the engine's to close, with the others'."""


@dataclass
class Hop:
    """One request of a step (the step's own, or a redirect's): where, how and what."""

    method: str
    path: str
    body: bytes
    headers: list[tuple[str, str]]


def first_hop(step: Step, values: dict[str, str]) -> Hop:
    """A step's request with its variables filled: form fields url-encoded, text as it is (aiohttp's types)."""
    headers = [(k.lower(), fill(v, values)) for k, v in step.headers]
    body = b""
    if isinstance(step.body, tuple):
        body = urlencode([(k, fill(v, values)) for k, v in step.body]).encode()
        kind = "application/x-www-form-urlencoded"
    elif step.body is not None:
        body, kind = fill(step.body, values).encode(), "application/octet-stream"
    if body and not any(k == "content-type" for k, _ in headers):
        headers.append(("content-type", kind))
    return Hop(step.method, fill(step.path, values), body, headers)


def decoded(body: bytes, encoding: str) -> str:
    """An answer's body as text, undone from its content-encoding (gzip, deflate)."""
    try:
        if encoding == "gzip":
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            body = zlib.decompress(body) if body[:1] == b"\x78" else zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error:
        pass
    return body.decode("utf-8", "replace")


@dataclass(frozen=True)
class H3JourneyPlan(JourneyPlan):
    """A journey plan whose users walk over HTTP/3 (`JourneyTraffic.plan` hands it to an h3 load)."""

    def engine(self, spec: LoadSpec, live: LiveFn | None = None) -> H3JourneyEngine:
        return H3JourneyEngine(spec, live, self)


class H3JourneyEngine(JourneyEngine):
    """The journey engine with its users' steps over HTTP/3: `-c` users, one QUIC connection each."""

    name = "journey-h3"

    def __init__(self, spec: LoadSpec, live: LiveFn | None, plan: JourneyPlan) -> None:
        super().__init__(spec, live, plan)
        self.authority = self.base.split("://", 1)[1].encode()

    async def open(self) -> None:
        import aiohttp
        from yarl import URL

        self.aiohttp, self.url = aiohttp, URL
        self.h3 = Connections(self)
        await self.h3.open()

    async def close(self) -> None:
        self.h3.close()

    def abort_all(self) -> None:
        self.h3.abort_all()

    def _new_session(self) -> H3User:
        return H3User(self.h3.new_slot(), self.aiohttp.CookieJar(unsafe=True))

    def _fields(self, user: H3User, hop: Hop) -> Fields:
        out = [(b":method", hop.method.encode()), (b":scheme", b"https"), (b":authority", self.authority),
               (b":path", hop.path.encode())]
        named = {k for k, _ in hop.headers}
        out += [(k, v) for k, v in ASKED if k.decode() not in named]
        cookies = user.cookie_jar.filter_cookies(self.url(self.base + hop.path))
        if cookies:
            out.append((b"cookie", "; ".join(f"{m.key}={m.coded_value}" for m in cookies.values()).encode()))
        out += [(k.encode(), v.encode()) for k, v in hop.headers if k not in HOP_BY_HOP and k != "host"]
        return out

    async def _send(self, session: H3User, step: Step, values: dict[str, str], t: float, counted: bool) -> Answer:
        """A step's request and its redirects, the way `sessions.send` takes them over HTTP/1.1."""
        hop, nbytes, trace = first_hop(step, values), 0, {}
        for n in range(MAX_REDIRECTS + 1):
            s = Sending(t)
            kind, own = await self.h3.timed(session.slot, self._fields(session, hop), hop.body, counted and not n, s,
                                            keep=True)
            if not n:
                trace = {"t_connect": s.t_connect, "t_sent": s.t_sent, "t_written": s.t_sent}
            stream = s.stream
            if kind == UNSENT or stream is None or not stream.status or stream.fields is None:
                return Answer(RESET if kind == UNSENT else kind, client_error=own, trace=trace)
            nbytes += stream.nbytes
            got = {k.decode(): v.decode("latin-1") for k, v in stream.fields}
            self._keep_cookies(session, hop, [v.decode("latin-1") for k, v in stream.fields if k == b"set-cookie"])
            where = got.get("location")
            if stream.status not in REDIRECTS or not where:
                text = decoded(bytes(stream.body or b""), got.get("content-encoding", ""))
                return Answer(kind_of_status(stream.status), stream.status, text, nbytes, None, trace, stream.t_first)
            hop = self._redirected(hop, stream.status, where)
        return Answer(PROTOCOL_ERROR, trace=trace)  # more redirects than aiohttp follows

    def _keep_cookies(self, user: H3User, hop: Hop, said: list[str]) -> None:
        for line in said:
            try:
                user.cookie_jar.update_cookies(SimpleCookie(line), self.url(self.base + hop.path))
            except CookieError:
                continue  # a cookie the jar cannot read is dropped, as aiohttp's parser drops it

    def _redirected(self, hop: Hop, status: int, where: str) -> Hop:
        """The request a redirect asks for, on the same server (a load goes to its target only): a 303, or a
        301/302 after a POST, becomes a GET without a body, as browsers and aiohttp do."""
        parts = urlsplit(urljoin(self.base + hop.path, where))
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if status == 303 or status in (301, 302) and hop.method == "POST":
            kept = [(k, v) for k, v in hop.headers if k not in ("content-type", "content-length")]
            return Hop("GET" if hop.method != "HEAD" else "HEAD", path, b"", kept)
        return Hop(hop.method, path, hop.body, hop.headers)
