"""Outcome kinds: every way a started request can end, and what maps to which.

A kind is a small int (an index into `KINDS`) because the recorder counts one
per request in a list; the names are what users and the store see. Socket
errors map to kinds through one table (`ERROR_KINDS`); an error the client
itself caused (out of file descriptors, ports, buffers) is also named, so that
it is reported as the client's fault and not blamed on the server.
"""

from __future__ import annotations

import errno
import ssl

from ...records import FAIL_KINDS as FAIL_KINDS  # re-exported: the load's readers count failures by these names
from ...records import OUTCOME_KINDS

KINDS: tuple[str, ...] = OUTCOME_KINDS
"""Every way a started request can end (besides `unfinished`), in storage order: the names are a stored
contract, so they live in the kernel (`records`), where a stack's causes can name them too."""
(OK, HTTP_4XX, HTTP_5XX, CONNECT_REFUSED, CONNECT_TIMEOUT, RESET, TIMEOUT, PROTOCOL_ERROR, TLS_ERROR, STREAM_RESET,
 GOAWAY) = range(len(KINDS))
RESPONSE_KINDS = (OK, HTTP_4XX, HTTP_5XX)
"""Kinds with a complete response, hence a latency (all kinds <= HTTP_5XX)."""

SENDS = 8
"""How often one request is sent (h2, h2c, h3) before a graceful GOAWAY that leaves it unprocessed again is its
outcome (`goaway`): a server that says GOAWAY to every stream is not retried until the request's timeout."""

ERROR_KINDS: dict[type[BaseException], int] = {
    ConnectionRefusedError: CONNECT_REFUSED,
    ConnectionResetError: RESET,
    BrokenPipeError: RESET,
    ConnectionAbortedError: RESET,
    TimeoutError: CONNECT_TIMEOUT,  # also asyncio.TimeoutError, and OSError(ETIMEDOUT, ...)
}
"""Socket error -> kind. `OSError(errno, ...)` builds the subclass, so the errnos
ECONNREFUSED, ECONNRESET, EPIPE, ECONNABORTED and ETIMEDOUT land here too."""

CLIENT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.EADDRNOTAVAIL, errno.ENOBUFS})
"""The client ran out of something: counted as connect_refused, and named."""


def kind_of_status(status: int) -> int:
    """An HTTP status's kind: 5xx, 4xx, anything else is a success."""
    if status >= 500:
        return HTTP_5XX
    if status >= 400:
        return HTTP_4XX
    return OK


def kind_of_error(e: BaseException) -> tuple[int, str | None]:
    """A socket error's kind, and its name when the client itself was at fault
    (or when the error is not a known socket error: worth seeing, not hiding);
    a TLS error's is tls_error and its reason (`tls_reason`)."""
    if isinstance(e, ssl.SSLError):
        return TLS_ERROR, tls_reason(e.reason or type(e).__name__)
    for cls in type(e).__mro__:
        kind = ERROR_KINDS.get(cls)
        if kind is not None:
            return kind, None
    if isinstance(e, OSError) and e.errno in CLIENT_ERRNOS:
        return CONNECT_REFUSED, errno.errorcode[e.errno]
    return RESET, type(e).__name__


TLS_PREFIXES = ("sslv3 ", "tlsv13 ", "tlsv1 ")
"""OpenSSL's names of alerts begin with the protocol that defined them; the reason is the rest."""


def tls_reason(reason: str) -> str:
    """A TLS failure's reason as tls_errors counts it, the same from OpenSSL in C ("sslv3 alert handshake
    failure") and from Python's ssl ("SSLV3_ALERT_HANDSHAKE_FAILURE"): "alert handshake failure"; an EOF where
    the handshake should be is "eof during handshake"."""
    r = reason.lower().replace("_", " ")
    if "eof" in r:
        return "eof during handshake"
    for p in TLS_PREFIXES:
        if r.startswith(p):
            return r[len(p):]
    return r
