"""docker-py at the lab's edge: its errors become loadcmp's, in one table.

docker-py raises its own errors (`docker.errors.*`), requests' (a connection refused,
reset or timed out), urllib3's (a stream cut short), ssl's (wrapped by requests) and the
socket's own (a log or exec stream it reads from the socket itself).
Every call the lab makes to docker-py runs inside `engine_errors`, which turns them
into the lab's own errors by `engine_error_table` (the nearest class of the error in the
table wins), so that no caller knows docker-py's classes and a user sees one line:
the engine's own words for a request it refused, "stopped answering" for an engine
gone mid-command (DockerUnavailable), a NotOnEngine for a container or image it lacks.
Anything else is no engine's error and goes through unchanged (a bug shows as one).
docker-py is imported when the table is first needed, not when the lab is.

Its types come from `types-docker`; where they are wider than what the lab gets back (a container's name, an
exec's output, a stats stream, the events' times), `name_of`, `id_of`, `output_of`, `demuxed_of`, `stream_of`,
`stats_of` and `oom_events` say what it is, once.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import BuildError, DockerUnavailable, LabError, LoadcmpError, NotOnEngine

if TYPE_CHECKING:
    from docker.models.containers import Container, ExecResult
    from docker.models.resource import Model

Words = Callable[[BaseException, str], str]
"""An error of docker-py's and the engine's name ('' when unknown) -> the message of loadcmp's error."""


def said(e: BaseException, _: str = "") -> str:
    """What the engine said (an APIError's explanation), on one line."""
    return " ".join(str(getattr(e, "explanation", None) or e).split())


def _its_words(e: BaseException, _: str = "") -> str:
    return why(e)


def _build_words(e: BaseException, _: str = "") -> str:
    return " ".join(str(getattr(e, "msg", e)).split())  # a BuildError's msg


def _unreadable(e: BaseException, at: str) -> str:
    return f"the Docker engine{_at(at)} sent an answer docker-py could not read ({why(e)})"


def lost(e: BaseException, at: str) -> str:
    """An engine gone mid-command: its connection refused, reset or timed out."""
    return f"the Docker engine{_at(at)} stopped answering ({why(e)})"


def _at(engine: str) -> str:
    return f" at {engine}" if engine else ""


@functools.cache
def engine_error_table() -> dict[type[BaseException], tuple[type[LabError], Words]]:
    """docker-py's, requests' and urllib3's error classes -> loadcmp's error and its words."""
    import docker.errors
    import docker.utils.socket
    import requests.exceptions as rq
    import urllib3.exceptions as u3

    return {
        docker.errors.NotFound: (NotOnEngine, said),
        docker.errors.APIError: (LabError, said),
        docker.errors.BuildError: (BuildError, _build_words),
        docker.errors.StreamParseError: (LabError, _unreadable),
        docker.errors.DockerException: (LabError, _its_words),
        rq.ConnectionError: (DockerUnavailable, lost),
        rq.Timeout: (DockerUnavailable, lost),
        rq.ChunkedEncodingError: (DockerUnavailable, lost),
        u3.ProtocolError: (DockerUnavailable, lost),
        u3.ReadTimeoutError: (DockerUnavailable, lost),
        docker.utils.socket.SocketError: (DockerUnavailable, lost),  # a stream read from the socket itself
        ConnectionError: (DockerUnavailable, lost),  # (as are these: docker-py reads logs' and execs' sockets raw)
        TimeoutError: (DockerUnavailable, lost),
        rq.RequestException: (LabError, _its_words),
    }


def engine_error(e: BaseException, engine: str = "") -> LabError | None:
    """loadcmp's error for an error docker-py (or requests, urllib3 under it) raised, by the nearest of its
    classes in the table; None for any other error. `engine`: the engine's name for the messages."""
    if isinstance(e, LoadcmpError):
        return None
    table = engine_error_table()
    row = next((table[c] for c in type(e).__mro__ if c in table), None)
    if row is None:
        return None
    cls, words = row
    return cls(words(e, engine))


@contextlib.contextmanager
def engine_errors(engine: str = "") -> Iterator[None]:
    """Around calls to docker-py: what they raise comes out as loadcmp's error (`engine_error`), the
    original kept as its cause; anything else unchanged."""
    try:
        yield
    except LoadcmpError as e:
        named = _named(e, engine)
        if named is None:
            raise
        raise named from e.__cause__
    except Exception as e:  # only the table's are translated; the rest is re-raised as it was
        mapped = engine_error(e, engine)
        if mapped is None:
            raise
        raise mapped from e


def _named(e: LoadcmpError, engine: str) -> LabError | None:
    """An error mapped by an inner block that did not know the engine, mapped again naming it (an image
    looked up deep in the lab, inside a command that knows its engine); None for any other error."""
    cause = e.__cause__
    if not engine or cause is None:
        return None
    unnamed = engine_error(cause)
    if unnamed is None or type(unnamed) is not type(e) or str(unnamed) != str(e):
        return None
    return engine_error(cause, engine)


# --- an engine's errors in words ------------------------------------------------------------


def why(e: BaseException) -> str:
    """docker-py's, requests' or ssl's error in a few words on one line: a certificate that did not
    verify, else the innermost system error (`Connection refused`), else the error itself; requests'
    own text names the pool, the retries and the object ids, which say nothing to a user."""
    causes = _causes(e)
    for c in causes:
        if isinstance(c, ssl.SSLCertVerificationError):
            return f"TLS: the engine's certificate did not verify: {c.verify_message}"
        if isinstance(c, ssl.SSLError):
            return f"TLS: {_tls_refusal(c)}"
    inner = next((c for c in reversed(causes) if isinstance(c, OSError)), None)
    text = (inner.strerror or str(inner)) if inner is not None else f"{type(e).__name__}: {e}"
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:199] + "…"


def _tls_refusal(e: ssl.SSLError) -> str:
    """An engine's refusal of the handshake. Under TLS 1.3 an engine that wants a client certificate
    says so in an alert, or, as often, the client only sees the connection end first."""
    reason = str(e.reason or "")
    if "CERTIFICATE_REQUIRED" in reason or reason.startswith("UNEXPECTED_EOF") or "EOF occurred" in str(e):
        return "the engine ended the handshake: it wants a client certificate it trusts (--tlscert, --tlskey)"
    if reason.endswith(("BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN")):
        return f"the engine refused this client's certificate ({reason.lower().replace('_', ' ')})"
    return reason.lower().replace("_", " ") if reason else str(e).split(" (_ssl.c")[0]


def _causes(e: BaseException) -> list[BaseException]:
    """An error and what it wraps, outermost first: causes, contexts, urllib3's `reason`, exceptions in args."""
    out: list[BaseException] = []
    todo = [e]
    while todo and len(out) < 20:
        x = todo.pop(0)
        if any(x is y for y in out):
            continue
        out.append(x)
        todo += [c for c in (x.__cause__, x.__context__, getattr(x, "reason", None), *x.args)
                 if isinstance(c, BaseException)]
    return out


def name_of(c: Container) -> str:
    """A container's name (docker-py types it optional: every container the engine lists has one)."""
    return c.name or c.short_id


def id_of(m: Model) -> str:
    """An image's or a container's id (docker-py types it optional: every object the engine returned has one)."""
    return str(m.id)


def output_of(res: ExecResult) -> bytes:
    """What an exec run without `stream` printed (docker-py types it bytes or a stream)."""
    out = res.output
    return out if isinstance(out, bytes) else b"".join(out or ())


def demuxed_of(res: ExecResult) -> tuple[bytes | None, bytes | None]:
    """What an exec run with `demux=True` printed: its stdout and its stderr apart (None for one it left empty;
    docker-py types it as it types an exec without demux)."""
    return cast("tuple[bytes | None, bytes | None]", res.output)


def stream_of(res: ExecResult) -> Iterator[bytes]:
    """What an exec run with `stream=True` prints, as it comes."""
    out = res.output
    return iter((out,)) if isinstance(out, bytes) else out


def stats_of(c: Container) -> Iterator[dict[str, Any]]:
    """A container's stats as they come, each the engine's JSON (docker-py types it a stream or one reading)."""
    got = c.stats(stream=True, decode=True)
    return iter((got,)) if isinstance(got, dict) else got


class _Events(Protocol):
    def __call__(self, *, since: float, until: float, decode: bool,
                 filters: dict[str, str]) -> Iterable[dict[str, Any]]: ...


def oom_events(c: Container, since: float, until: float) -> int:
    """How many times the engine killed `c` for its memory between `since` and `until` (Unix seconds on the
    engine's clock, fractions kept: docker-py passes them on, though its types say whole seconds)."""
    assert c.client is not None, "a container the engine listed has its client"
    events = cast(_Events, c.client.api.events)
    oom = events(since=since, until=until, decode=True, filters={"container": id_of(c), "event": "oom"})
    return sum(1 for _ in oom)
