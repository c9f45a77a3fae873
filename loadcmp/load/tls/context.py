"""https for both engines: one SSL context per load, and a handshake before it.

Certificates are verified by default (the system's CAs, or `SSL_CERT_FILE`, or the
target's `cafile`: `--cacert`, or a run's own CA under `--tls`);
`--insecure` skips the check for a test server with a self-signed certificate,
as curl -k and hey's default do. A certificate that does not verify, or a
server that does not speak TLS at all, is found by one handshake before any
load and said in one line, instead of a run where every request failed.
"""

from __future__ import annotations

import socket
import ssl

from ... import protocols
from ...errors import UsageError, WrongProtocol
from ..target import Target


def context(target: Target) -> ssl.SSLContext | None:
    """The client context for `target` (None for plain http). ALPN offers what its protocol's row offers over TCP:
    http/1.1, and h2 first for an h2 load (whose server must then choose h2: `probe`, and the h2 engines, stop the
    load when it does not)."""
    if target.scheme != "https":
        return None
    try:
        ctx = ssl.create_default_context(cafile=target.cafile)
    except (OSError, ssl.SSLError) as e:
        why = getattr(e, "strerror", None) or e
        raise UsageError(f"cannot read CA certificates from {target.cafile}: {why}") from None
    if target.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(list(protocols.get(target.proto).tcp_alpn))  # h2 first, then http/1.1: the server says
    return ctx


def probe(target: Target, timeout: float) -> None:
    """One TLS handshake with the server; a UsageError when its certificate does
    not verify or it does not speak TLS. A server that cannot be reached is left
    to the load, which counts and names what happens to each request."""
    ctx = context(target)
    if ctx is None:
        return
    try:
        raw = socket.create_connection((target.host, target.port), timeout=timeout)
    except OSError:
        return  # refused, unreachable, no answer: the load counts it for every request
    try:
        with ctx.wrap_socket(raw, server_hostname=target.host) as conn:
            alpn = conn.selected_alpn_protocol()
    except ssl.SSLCertVerificationError as e:
        raise UsageError(f"the certificate of {target.host}:{target.port} did not verify ({e.verify_message}); "
                         "pass --insecure to skip the check for a test server") from None
    except ssl.SSLError as e:
        raise UsageError(f"{target.host}:{target.port} did not complete a TLS handshake ({e.reason or e}): "
                         f"is it an http:// server?") from None
    except TimeoutError:
        raise UsageError(f"{target.host}:{target.port} did not complete a TLS handshake within {timeout:g} s "
                         "(--timeout): is it an http:// server?") from None
    except OSError:
        return
    finally:
        raw.close()
    row = protocols.get(target.proto)
    if row.alpn_checked and alpn != row.alpn[0]:
        raise WrongProtocol(f"{target.url} negotiated {alpn or 'no protocol'} by ALPN, not {row.alpn[0]}: the server "
                            f"does not speak {row.words} there (loadcmp does not fall back to another protocol)")
