"""Finding HTTP/3 before an h3 load, as a browser does: Alt-Svc over TCP, then one QUIC handshake.

`discover` makes one https request over TCP, whose answer must advertise h3 (`Alt-Svc: h3=":PORT"`): the
port it names is the one loaded. `probe` makes one QUIC handshake there, which must negotiate QUIC v1 and
ALPN h3 (`quic_handshake`: what it negotiated, as the primer stores it). Either refuses a server that does
not speak HTTP/3 in one line (UsageError), before any load: bench and the primer call both.
"""

from __future__ import annotations

import asyncio
import http.client
import socket
import ssl
from dataclasses import replace

from ...errors import UsageError
from ..tls import context as tls
from .conn import ALPN, Conn, Refused, open_conn, quic_config, udp_address
from ..record.outcomes import CONNECT_TIMEOUT, TLS_ERROR
from ..record.result import StreamTally
from ..target import Target


def alt_svc_port(header: str, host: str) -> int | None:
    """The UDP port an Alt-Svc header advertises HTTP/3 on (`h3=":443"; ma=86400`), None when it names no
    h3 on this host (draft versions like h3-29 are not HTTP/3 v1)."""
    for entry in header.split(","):
        proto, _, rest = entry.strip().partition("=")
        if proto.strip() != ALPN:
            continue
        authority = rest.split(";", 1)[0].strip().strip('"')
        alt_host, _, port = authority.rpartition(":")
        if alt_host.strip("[]") in ("", host) and port.isdigit() and 1 <= int(port) <= 65535:
            return int(port)
    return None


def discover(target: Target, timeout: float) -> Target:
    """Alt-Svc discovery, as a browser finds HTTP/3: one https request over TCP, whose answer must advertise h3;
    the target with the port it advertises (the same one on Caddy). One-line UsageErrors otherwise."""
    where = f"{target.host}:{target.port}"
    conn = http.client.HTTPSConnection(target.host, target.port, timeout=timeout, context=tls.context(target))
    try:
        conn.request("GET", target.path, headers={"Connection": "close"})
        resp = conn.getresponse()
        header = resp.getheader("alt-svc") or ""
        resp.read()
    except ssl.SSLCertVerificationError as e:
        raise UsageError(f"the certificate of {where} did not verify ({e.verify_message}); pass --insecure "
                         "to skip the check for a test server") from None
    except (OSError, http.client.HTTPException) as e:
        raise UsageError(f"{where} gave no https answer over TCP to read its Alt-Svc from ({e or type(e).__name__})"
                         ": --proto h3 finds HTTP/3 as browsers do") from None
    finally:
        conn.close()
    port = alt_svc_port(header, target.host)
    if port is None:
        said = f"Alt-Svc: {header}" if header else "no Alt-Svc header"
        raise UsageError(f"{where} does not advertise HTTP/3: its https answer has {said}, no h3 on this host "
                         "(--proto h3 needs a server that speaks it)")
    return replace(target, port=port)


def probe(target: Target, timeout: float) -> str:
    """One QUIC handshake before the load, which must negotiate QUIC v1 and ALPN h3: what it negotiated
    ("QUIC v1, h3, TLSv1.3 TLS_AES_128_GCM_SHA256"), or a one-line UsageError."""
    return said(quic_handshake(target, timeout))


def said(seen: tuple[str, str, str]) -> str:
    """A QUIC handshake's (version, cipher, ALPN) in words: "QUIC v1, h3, TLSv1.3 TLS_AES_128_GCM_SHA256"."""
    version, cipher, alpn = seen
    return f"QUIC v1, {alpn}, {version} {cipher}"


def quic_handshake(target: Target, timeout: float) -> tuple[str, str, str]:
    """One QUIC handshake, which must negotiate QUIC v1 and ALPN h3: its (TLS version, cipher, ALPN), or a
    one-line UsageError."""

    async def shake() -> Conn:
        infos = await asyncio.get_running_loop().getaddrinfo(target.host, target.port, type=socket.SOCK_DGRAM)
        return await open_conn(udp_address(infos), quic_config(target), StreamTally(), timeout)

    async def once() -> tuple[str, str, str]:
        conn = await shake()
        seen = conn.seen
        conn.abort()
        return seen

    where = f"{target.host}:{target.port}"
    try:
        version, cipher, alpn = asyncio.run(once())
    except Refused as e:
        if e.kind == CONNECT_TIMEOUT:
            raise UsageError(f"{where} did not answer QUIC on UDP within {timeout:g} s: it does not speak HTTP/3 "
                             "there") from None
        if e.kind == TLS_ERROR and "certificate" in e.reason:
            raise UsageError(f"the certificate of {where} did not verify over QUIC ({e.reason}); pass --insecure "
                             "to skip the check for a test server") from None
        raise UsageError(f"{where} does not speak HTTP/3 over QUIC v1: {e.reason}") from None
    return version, cipher, alpn
