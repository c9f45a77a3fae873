"""The protocols a load speaks, as one table: what each one is, needs and allows.

A protocol is a row (`Protocol`), found by the name users type (`get`). The stacks' checks, the
spec's, the primer, the engines and the report read what they need from its row instead of
comparing names: its scheme, transport, ALPN, whether it needs TLS or refuses it, whether it
multiplexes streams, and which schedules, engines and traffic sources it runs with. Each
refusal is worded here once. Adding a protocol is a row here (`register`), an engine that
sends it (`loadcmp.load.engines`) and the stacks' data that serve it.

This module is in the kernel: it imports nothing of loadcmp but `errors`, so `lab` and `load`
both read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .errors import UsageError

Tls = Literal["either", "required", "refused"]
"""Whether a protocol runs over TLS: either way (h1), only over it (h2, h3), or only without it (h2c)."""

SOURCES = ("page", "mix", "replay", "journeys")
"""The traffic sources a run can have: one page, a weighted mix, an access log replayed, user journeys."""


@dataclass(frozen=True)
class Protocol:
    """One protocol: what it is and what it runs with."""

    name: str
    """What users type (`--proto h2`) and what results are labelled with (`nginx[h2]`)."""
    words: str
    """The protocol in words, for messages and the report."""
    transport: Literal["tcp", "udp"]
    tls: Tls
    alpn: tuple[str, ...]
    """What the client offers in its TLS handshake, in order (empty: no TLS, or none offered)."""
    multiplexed: bool
    """Several requests in flight on one connection (`-m/--streams`); -c stays the connections."""
    schedules: tuple[str, ...] | None = None
    """The schedules it runs on (None: every one)."""
    engines: tuple[str, ...] = ("fast",)
    """The `--engine` values that send it."""
    sources: tuple[str, ...] = SOURCES
    """The traffic sources it carries."""
    http1: bool = False
    """Requests are HTTP/1.x messages (`--http10`, `--tls-resume` and pipelining's rules apply)."""
    behaviours: tuple[str, ...] = ()
    """The client behaviours its engine runs (`load.pacing`: `--think`, `--send-rate`, `--read-rate`)."""
    behaviours_not: tuple[tuple[str, str], ...] = ()
    """Why it runs no such behaviour, by flag (`behaviour_error`'s words; unsaid: its engine runs none)."""

    @property
    def alpn_checked(self) -> bool:
        """The server must choose it by ALPN in a TLS handshake over TCP (h2): a load that got another stops in one
        line. HTTP/1.x is what a server speaks when it chooses none, h2c is spoken by prior knowledge on a plain
        port, h3 is found by Alt-Svc and chosen in its QUIC handshake."""
        return not self.http1 and self.transport == "tcp" and bool(self.alpn)

    @property
    def tcp_alpn(self) -> tuple[str, ...]:
        """What a client offers by ALPN in a TLS handshake over TCP for it: its own offer, else HTTP/1.1 (h3's
        server is found over HTTP/1.1, by Alt-Svc)."""
        return self.alpn if self.transport == "tcp" and self.alpn else ("http/1.1",)

    @property
    def schemes(self) -> tuple[str, ...]:
        """The URL schemes it runs under."""
        return {"either": ("http", "https"), "required": ("https",), "refused": ("http",)}[self.tls]

    def scheme_error(self, scheme: str, url: str) -> str | None:
        """A URL this protocol cannot run under, in one line; None: it can."""
        if scheme in self.schemes:
            return None
        if self.tls == "required":
            hint = _plain() if self.transport == "tcp" else f"{self.words} runs over QUIC, which is always encrypted"
            return f"--proto {self.name} needs an https:// URL; {url} is plain http ({hint})"
        return f"--proto {self.name} runs over plain http only; {url} is https ({_over_tls()})"

    def tls_error(self, label: str, tls: bool) -> str | None:
        """A run's `--tls` (or its absence) that this protocol refuses, in one line; None: fine."""
        if self.tls == "required" and not tls:
            return f"--proto {self.name}: {self.words} runs over TLS only; add --tls (tls = true) for {label}"
        if self.tls == "refused" and tls:
            return (f"--proto {self.name}: {self.words} is on a plain port; {label} runs --tls "
                    f"({_over_tls()})")
        return None

    def option_error(self, flag: str) -> str | None:
        """An option (`--http10`, `--tls-resume`) this protocol does not take, in one line; None: it takes it.
        `--tls-resume` is TLS over TCP's: h1's and h2's new connections resume a saved session."""
        if self.http1 or (flag == "--tls-resume" and self.transport == "tcp" and self.tls == "required"):
            return None
        if flag == "--tls-resume" and self.tls == "refused":
            return f"--proto {self.name} takes no --tls-resume: {self.words} runs without TLS"
        return (f"--proto {self.name} takes no {flag}: that is HTTP/1's (an {self.name} connection shakes hands "
                "once and carries many streams)")

    def unspoken_error(self, who: str, speakers: list[str]) -> str:
        """A label (`who`) whose stack does not speak this protocol, in one line naming the stacks that do."""
        those = f"the stacks that do: {', '.join(speakers)}" if speakers else "no stack does"
        return f"--proto {self.name}: {who} does not speak {self.words}; {those}"

    def run_error(self, engine: str, schedule: str, flag: str = "") -> str | None:
        """An engine or a schedule this protocol does not run with, in one line; None: it does. `flag`: the flag
        that asked for the schedule, where it is not `--schedule` (a replay's is `--replay-speed Nx`)."""
        wrong = ([flag or f"--schedule {schedule}"] if self.schedules is not None and schedule not in self.schedules
                 else []) + ([f"--engine {engine}"] if engine not in self.engines else [])
        if not wrong:
            return None
        if self.schedules is None:
            own = "QUIC engine" if self.transport == "udp" else "engine"
            return f"--proto {self.name} runs its own {own} (every schedule), not {' nor '.join(wrong)}"
        *more, last = self.schedules
        loops = (f"the {'/'.join(self.engines)} engine's " +
                 (f"{', '.join(more)} and {last} schedules" if more else f"{last} loop"))
        shape = " (-c connections, -m streams each)" if self.multiplexed else ""
        return f"--proto {self.name} runs {loops}{shape}, not {' nor '.join(wrong)}"

    def net_error(self) -> str | None:
        """`--net` on this protocol, refused in one line where its transport is not TCP (Toxiproxy carries TCP)."""
        if self.transport == "tcp":
            return None
        return f"--proto {self.name} takes no --net: {self.words} runs over UDP, and the --net proxy carries TCP only"

    def behaviour_error(self, flag: str) -> str | None:
        """A client behaviour (`--think`, `--send-rate`, `--read-rate`) this protocol's engine does not run, in one
        line; None: it runs it."""
        if flag in self.behaviours:
            return None
        runs = [p.name for p in _TABLE.values() if flag in p.behaviours]
        why = dict(self.behaviours_not).get(flag, "its engine runs no client behaviour")
        who = " or ".join(filter(None, (", ".join(runs[:-1]), runs[-1]))) if runs else ""
        return f"--proto {self.name} takes no {flag}: {why}" + (f"; --proto {who} runs it" if who else "")

    def source_error(self, flag: str) -> str | None:
        """A traffic source (given as its flag, `--mix`) this protocol does not carry, in one line."""
        source = {"--page": "page", "--mix": "mix", "--replay": "replay", "--journey": "journeys"}.get(flag, flag)
        if source in self.sources:
            return None
        over = " or ".join(f"{p.words} (--proto {p.name})" for p in carriers(source))
        return (f"{flag} runs over {over}: the {self.name} engine does not carry {flag}; "
                f"drop --proto {self.name} or {flag}")


_TABLE: dict[str, Protocol] = {}


def register(proto: Protocol) -> Protocol:
    """Add a row (a new protocol, or a test's made-up one); its name must be new."""
    if proto.name in _TABLE:
        raise ValueError(f"protocol {proto.name} is registered already")
    _TABLE[proto.name] = proto
    return proto


def unregister(name: str) -> None:
    """Drop a row (a test's made-up protocol, after the test)."""
    _TABLE.pop(name, None)


H1 = register(Protocol("h1", "HTTP/1.1", "tcp", "either", ("http/1.1",), False,
                       engines=("fast", "aiohttp"), http1=True,
                       behaviours=("--think", "--send-rate", "--read-rate")))
_SLOWLORIS_H1 = ("--send-rate", "HTTP/2 and HTTP/3 frame a connection's streams together, and a request trickled "
                                 "to the server (slowloris) is HTTP/1's attack")
_READ_H2 = ("--read-rate", "one h2 connection carries all its streams, and the h2 engine does not pace its reads")
_READ_H3 = ("--read-rate", "QUIC runs over UDP, where a small receive buffer drops the server's datagrams instead of "
                           "holding it back")
H2 = register(Protocol("h2", "h2 (HTTP/2 over TLS)", "tcp", "required", ("h2", "http/1.1"), True,
                       schedules=("closed", "rate", "replay"), sources=("page", "mix", "replay", "journeys"),
                       behaviours=("--think",), behaviours_not=(_SLOWLORIS_H1, _READ_H2)))
H2C = register(Protocol("h2c", "h2c (cleartext HTTP/2)", "tcp", "refused", (), True,
                        schedules=("closed", "rate", "replay"), sources=("page", "mix", "replay", "journeys"),
                        behaviours=("--think",), behaviours_not=(_SLOWLORIS_H1, _READ_H2)))
H3 = register(Protocol("h3", "h3 (HTTP/3)", "udp", "required", ("h3",), True, behaviours=("--think",),
                       behaviours_not=(_SLOWLORIS_H1, _READ_H3)))
DEFAULT = H1.name
"""The protocol of a run that names none."""


def names() -> tuple[str, ...]:
    """Every protocol's name, in the table's order."""
    return tuple(_TABLE)


def get(name: str) -> Protocol:
    """The row of a protocol by name; UsageError naming the known ones."""
    try:
        return _TABLE[name]
    except KeyError:
        raise UsageError(unknown_error([name]) or name) from None


def find(name: str) -> Protocol | None:
    """The row of a protocol a stored result names; None for a name this table does not hold (a made-up one)."""
    return _TABLE.get(name)


def unknown_error(given: Iterable[str]) -> str | None:
    """The names given that are no protocol, in one line; None: each is one."""
    bad = [x for x in given if x not in _TABLE]
    return f"unknown protocol {', '.join(bad)}: use one of {', '.join(_TABLE)}" if bad else None


def stack_problems(said: Sequence[str], tls_part: str | None) -> list[str]:
    """What is wrong with the protocols a stack says it speaks (its stack.toml's `protocols`), one line each.
    `tls_part`: the part that serves https, when the stack does not list it (those over TLS only need it)."""
    out = [wrong] if (wrong := unknown_error(said)) else []
    if said and not out and DEFAULT not in said:
        out.append(f"protocols must include {DEFAULT} (readiness, the primer and status pages speak it)")
    tls_only = [x for x in said if x in _TABLE and _TABLE[x].tls == "required"]
    if tls_only and tls_part is not None:
        out.append(f"{', '.join(tls_only)} run over TLS only: list the part {tls_part!r} too")
    return out


def carriers(source: str) -> list[Protocol]:
    """The protocols that carry a traffic source."""
    return [p for p in _TABLE.values() if source in p.sources]


def streams_error(streams: int, protos: set[str] | tuple[str, ...]) -> str | None:
    """-m/--streams out of range, or above 1 for protocols that carry one request per connection."""
    if streams < 1:
        return f"-m/--streams must be at least 1, got {streams}"
    if streams > 1 and not any(get(x).multiplexed for x in protos):
        multi = [p.name for p in _TABLE.values() if p.multiplexed]
        return (f"-m/--streams {streams}: HTTP/1.1 has one request in flight per connection (pipelining is not "
                f"offered); streams are for --proto {', '.join(multi[:-1])} or {multi[-1]}")
    return None


def _plain() -> str:
    """The protocols that run over plain http only, as a hint."""
    return "use --proto " + (" or ".join(p.name for p in _TABLE.values() if p.tls == "refused") or DEFAULT)


def _over_tls() -> str:
    """The protocols that run over TLS, as a hint."""
    return "use --proto " + " or ".join(p.name for p in _TABLE.values() if p.tls == "required")


def asked_of(doc: Mapping[str, Any], label: str, trial: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The protocol a label of a stored run asked for and the one its server negotiated ("": not said), as
    run.json's `servers` keep them; a bench's, as its trial's result keeps it (`proto`); an older run's label
    without them: its spec's one protocol, or the one its name carries (`nginx[h2]`), else HTTP/1.1. The one
    reader of a label's protocol: `--json` rows, the report and the catalog's cells all ask it."""
    info = (doc.get("servers") or {}).get(label) or {}
    spec = doc.get("spec") or {}
    asked = info.get("proto") or ((trial or {}).get("result") or {}).get("proto")
    if not asked:
        own = list((spec.get("variant_protos") or {}).get(label) or spec.get("protos") or [])
        asked = own[0] if len(own) == 1 else next((p for p in own if f"[{p}]" in label), DEFAULT)
    return str(asked), str(info.get("negotiated") or "")
