"""What to request: a validated URL and options, encoded once into request bytes.

Everything a user can get wrong about the target (scheme, port, host, header
syntax, method) is refused here with a one-line UsageError, before any load.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from .. import protocols
from ..errors import UsageError


@dataclass(frozen=True)
class TlsOptions:
    """How an https load trusts the server and shakes hands: one value, as a user gives them together
    (`--insecure`, `--cacert`, `--tls-resume`)."""

    insecure: bool = False
    """Do not verify the server's certificate (a test server's self-signed one)."""
    cafile: str | None = None
    """Verify against this CA file, not the system's."""
    resume: float = 0.0
    """The share of new connections that resume a TLS session."""


PLAIN = TlsOptions()
"""The default: the system's CAs, every handshake a full one."""


@dataclass(frozen=True)
class Target:
    """What to request, validated and pre-encoded."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    http10: bool = False
    keepalive: bool = False
    insecure: bool = False
    """https: do not verify the server's certificate (a test server's self-signed one)."""
    cafile: str | None = None
    """https: verify against this CA file, not the system's."""
    tls_resume: float = 0.0
    """The share of new connections that resume a TLS session."""
    proto: str = protocols.DEFAULT
    """The protocol asked for, a row of `loadcmp.protocols`: h1 (HTTP/1.x), h2 (over TLS, by ALPN), h2c (cleartext,
    by prior knowledge) or h3 (QUIC); the engine stops with one line when the server negotiates another."""
    streams: int = 1
    """Requests in flight per connection (h2load's -m): h2, h2c and h3 only, bounded by the server's
    SETTINGS_MAX_CONCURRENT_STREAMS; -c stays the number of connections."""

    def encode(self) -> bytes:
        """The request as sent by the fast engine, every time the same bytes: what the user
        gave, and only the headers HTTP needs besides (no User-Agent, as wrk: nginx spends ~2 %
        of its time per request on one, its browser checks; `-H 'User-Agent: ...'` adds it)."""
        version = "HTTP/1.0" if self.http10 else "HTTP/1.1"
        names = {k.lower() for k, _ in self.headers}
        lines = [f"{self.method} {self.path} {version}"]
        if "host" not in names:
            default = 443 if self.scheme == "https" else 80
            lines.append(f"Host: {self.host}" + (f":{self.port}" if self.port != default else ""))
        # HTTP/1.1 keeps the connection unless told otherwise: a `Connection: keep-alive` there
        # is a header the server parses on every request for nothing (wrk sends none)
        if "connection" not in names and not (self.keepalive and not self.http10):
            lines.append("Connection: " + ("keep-alive" if self.keepalive else "close"))
        if self.body and "content-length" not in names:
            lines.append(f"Content-Length: {len(self.body)}")
        lines += [f"{k}: {v}" for k, v in self.headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body

    def h2_headers(self) -> list[tuple[bytes, bytes]]:
        """The request's HTTP/2 header fields, sent by both h2 engines: the pseudo-headers, then the user's with
        lower-case names (a Host header becomes :authority; Connection and the other hop-by-hop fields, which
        HTTP/2 forbids, are left out)."""
        default = 443 if self.scheme == "https" else 80
        authority = self.host + (f":{self.port}" if self.port != default else "")
        out = [(b":method", self.method.encode()), (b":path", self.path.encode()),
               (b":scheme", self.scheme.encode()), (b":authority", authority.encode())]
        for k, v in self.headers:
            name = k.lower()
            if name == "host":
                out[3] = (b":authority", v.encode("latin-1"))
            elif name not in HOP_BY_HOP:
                out.append((name.encode("latin-1"), v.encode("latin-1")))
        return out


def make_target(
    url: str,
    *,
    method: str = "GET",
    headers: list[str] | tuple[str, ...] = (),
    body: str | bytes | None = None,
    http10: bool = False,
    keepalive: bool = False,
    resolve: bool = True,
    tls: TlsOptions = PLAIN,
    proto: str = protocols.DEFAULT,
    streams: int = 1,
) -> Target:
    """Validate a URL and options into a Target; one-line UsageErrors."""
    insecure, cafile, tls_resume = tls.insecure, tls.cafile, tls.resume
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"bad URL {url!r}: give an http:// or https:// URL with a host")
    try:
        port = parts.port if parts.port is not None else (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise UsageError(f"bad URL {url!r}: the port is not a number in 1..65535")
    host = parts.hostname
    if resolve:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            raise UsageError(f"cannot resolve host {host!r} of {url}") from None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    hdrs: list[tuple[str, str]] = []
    for h in headers:
        if ":" not in h or not h.split(":", 1)[0].strip() or any(c in h for c in "\r\n"):
            raise UsageError(f"bad header {h!r}: use -H 'Name: value'")
        k, v = h.split(":", 1)
        if any(c.isspace() for c in k.strip()):
            raise UsageError(f"bad header {h!r}: the name has spaces")
        hdrs.append((k.strip(), v.strip()))
    m = method.upper()
    if not m.isalpha():
        raise UsageError(f"bad method {method!r}")
    data = body.encode() if isinstance(body, str) else (body or b"")
    if insecure and parts.scheme != "https":
        raise UsageError(f"--insecure is for https URLs; {url} is plain http")
    if (wrong := resume_share_error(tls_resume)) is not None:
        raise UsageError(wrong)
    row = protocols.get(proto)
    if (wrong := protocols.streams_error(streams, (proto,)) or row.scheme_error(parts.scheme, url)) is not None:
        raise UsageError(wrong)
    flag = "--http10" if http10 else "--tls-resume" if tls_resume else None
    if flag and (wrong := row.option_error(flag)) is not None:
        raise UsageError(wrong)
    return Target(url, parts.scheme, host, port, path, m, tuple(hdrs), data, http10, keepalive, insecure, cafile,
                  tls_resume, proto, streams)


def resume_share_error(share: float) -> str | None:
    """--tls-resume outside 0..1, in one line; None: a share."""
    return None if 0.0 <= share <= 1.0 else f"--tls-resume must be between 0 and 1, not {share:g}"


HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"})
"""Header fields HTTP/2 forbids (RFC 9113 8.2.2): never sent by the h2 engines."""
