"""A journey step over a multiplexed protocol (h2, h2c, h3), read as the aiohttp session reads it over HTTP/1.1.

Over HTTP/1.1 aiohttp keeps a user's cookies, follows its redirects and decodes its bodies; over h2 and h3 the
journeys' own engines (`h2journeys`, `h3journeys`) send each request as one stream, and this module does the rest
for both, once: the fields aiohttp sends, the cookies kept and sent, the redirects followed (at most
`MAX_REDIRECTS`, a 303 or a POST's 301/302 as a GET), the body decoded (gzip, deflate) for the step's extracts,
and one timeout over the whole step, its redirects included (aiohttp's total timeout). An engine gives one hop's
exchange (`HopEngine._hop`: a stream until the server processed it, within the time the step has left).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING, Generic, TypeVar
from urllib.parse import urlencode, urljoin, urlsplit

from ..load.driver import LiveFn, LoadSpec, now
from ..load.record.outcomes import CONNECT_TIMEOUT, PROTOCOL_ERROR, TIMEOUT, kind_of_status
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

Fields = list[tuple[bytes, bytes]]
"""A request's or an answer's header fields (HTTP/2's rules: lower-case names, pseudo-headers first)."""
C = TypeVar("C")


@dataclass
class User(Generic[C]):
    """A virtual user: what its streams go out on (its connection, or the slot that holds it) and its cookie jar
    (cleared before each journey)."""

    via: C
    cookie_jar: CookieJar
    seq: int = -1
    """--trace: the traced number of the step it sends now (-1: none), dropped when it never goes out."""

    async def close(self) -> None:
        """Its connection is the engine's to close, with the others'."""


@dataclass
class Hop:
    """One request of a step (the step's own, or a redirect's): where, how and what."""

    method: str
    path: str
    body: bytes
    headers: list[tuple[str, str]]


@dataclass
class Reply:
    """One hop's exchange: its outcome kind, and the answer when it has one (`status` set: a response)."""

    kind: int
    own: str | None = None
    """The client's own error, as `Engine._record` takes it."""
    status: int = 0
    fields: Fields = field(default_factory=list)
    body: bytes = b""
    nbytes: int = 0
    t_first: float = 0.0
    trace: dict[str, float] = field(default_factory=dict)
    """Its marks (`t_connect` when it opened a connection, `t_sent`, `t_written`), as the recorder takes them."""


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


class HopEngine(JourneyEngine, Generic[C]):
    """The journey engine whose steps go out stream by stream (`_hop`, the protocol's); everything a step does
    beside its streams is here."""

    def __init__(self, spec: LoadSpec, live: LiveFn | None, plan: JourneyPlan) -> None:
        super().__init__(spec, live, plan)
        self.scheme, self.authority = self.base.split("://", 1)[0].encode(), self.base.split("://", 1)[1].encode()

    async def open(self) -> None:
        import aiohttp
        from yarl import URL

        self.aiohttp, self.url = aiohttp, URL

    def _jar(self) -> CookieJar:
        """A user's cookie jar, aiohttp's own (`unsafe`: the cookies of 127.0.0.1 are kept too)."""
        return self.aiohttp.CookieJar(unsafe=True)

    async def _hop(self, user: User[C], fields: Fields, body: bytes, t: float, within: float, counted: bool,
                   first: bool) -> Reply:
        """One request as a stream, sent again after a graceful GOAWAY left it unprocessed, within `within` seconds
        (`t`: the step's start; `first`: the step's own request, not a redirect's; `counted`: the recorder counts
        it)."""
        raise NotImplementedError

    def _fields(self, user: User[C], hop: Hop) -> Fields:
        out = [(b":method", hop.method.encode()), (b":scheme", self.scheme), (b":authority", self.authority),
               (b":path", hop.path.encode())]
        named = {k for k, _ in hop.headers}
        out += [(k, v) for k, v in ASKED if k.decode() not in named]
        cookies = user.cookie_jar.filter_cookies(self.url(self.base + hop.path))
        if cookies:
            out.append((b"cookie", "; ".join(f"{m.key}={m.coded_value}" for m in cookies.values()).encode()))
        out += [(k.encode(), v.encode()) for k, v in hop.headers if k not in HOP_BY_HOP and k != "host"]
        return out

    async def _send(self, session: User[C], step: Step, values: dict[str, str], t: float, counted: bool, seq: int
                    ) -> Answer:
        """A step's request and its redirects, the way `sessions.send` takes them over HTTP/1.1: all of them within
        the one timeout, each with the step's traceparent when it is traced (`seq`), as aiohttp sends it again."""
        hop, nbytes, deadline = first_hop(step, values), 0, t + self.timeout
        hop.headers += self._trace_field(seq)
        session.seq = seq
        trace: dict[str, float] = {}
        for n in range(MAX_REDIRECTS + 1):
            r = await self._hop(session, self._fields(session, hop), hop.body, t, deadline - now(), counted and not n,
                                not n)
            trace = r.trace if not n else trace
            if not r.status:  # a redirect's connect that ran out of the step's time: the step timed out
                return Answer(TIMEOUT if n and r.kind == CONNECT_TIMEOUT else r.kind, client_error=r.own, trace=trace)
            nbytes += r.nbytes
            got = {k.decode(): v.decode("latin-1") for k, v in r.fields}
            self._keep_cookies(session, hop, [v.decode("latin-1") for k, v in r.fields if k == b"set-cookie"])
            where = got.get("location")
            if r.status not in REDIRECTS or not where:
                text = decoded(r.body, got.get("content-encoding", ""))
                return Answer(kind_of_status(r.status), r.status, text, nbytes, None, trace, r.t_first)
            hop = self._redirected(hop, r.status, where)
        return Answer(PROTOCOL_ERROR, trace=trace)  # more redirects than aiohttp follows

    def _keep_cookies(self, user: User[C], hop: Hop, said: list[str]) -> None:
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
