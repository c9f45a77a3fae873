"""A finished measurement: per-second buckets and the totals of a load; mergeable.

Kept apart from the recorder that fills them: readers of stored results, the
workers' merge and the summaries need only these; and what the compiled loop hands
the recorder of a second (`Tally`).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any, Literal

from .histogram import Histogram
from .journeytally import JourneyTally
from .outcomes import KINDS
from .saturation import ClientUse
from ...trace.rows import TraceRows

StoppedBy = Literal["time", "requests"]
"""What ended a load: its time (the window closed, or a stop) or its -n requests, all answered."""

PHASES = ("connect", "handshake", "write", "wait", "read")
"""A response's phases, as hey prints them: opening the connection (new ones only), its TLS handshake (0 over
plain http; the pure-Python loop times it within connect), writing the request, waiting for the first byte of
the answer, reading the rest of it."""


@dataclass
class TlsTally:
    """What the handshakes of one https load did: counted in C by the compiled loop (`_ctls.pyx`) or per
    connection by the pure-Python one; merged across workers by adding."""

    full: int = 0
    """Handshakes of counted requests that ran in full."""
    resumed: int = 0
    """Handshakes that resumed a saved session (`--tls-resume`)."""
    seen: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """(version, cipher, ALPN) as OpenSSL names them -> how many handshakes negotiated it."""
    errors: dict[str, int] = field(default_factory=dict)
    """tls_error's reasons ("certificate verify failed", "alert handshake failure", ...) -> count."""

    def add(self, full: int, resumed: int, seen: dict[tuple[str, str, str], int]) -> None:
        self.full += full
        self.resumed += resumed
        for k, n in seen.items():
            self.seen[k] = self.seen.get(k, 0) + n

    def error(self, reason: str) -> None:
        self.errors[reason] = self.errors.get(reason, 0) + 1

    @classmethod
    def merge(cls, parts: list[TlsTally | None]) -> TlsTally | None:
        """None when no part ran over https."""
        got = [p for p in parts if p is not None]
        if not got:
            return None
        out = cls()
        for p in got:
            out.add(p.full, p.resumed, p.seen)
            for k, n in p.errors.items():
                out.errors[k] = out.errors.get(k, 0) + n
        return out


@dataclass
class StreamTally:
    """What the streams of one h2, h2c or h3 load did, beside their outcomes: counted in C by the compiled h2
    engine (`_ch2.pyx`) or per event by the Python ones (`h2py`, `h3`); merged across workers by adding."""

    protocol: str = ""
    """The protocol negotiated: "h2" (ALPN over TLS), "h2c" (prior knowledge) or "h3"."""
    connections: int = 0
    """Connections opened (a new one after each GOAWAY)."""
    streams: int = 0
    """Streams started in the window, those the outcomes count (a warm-up's are not)."""
    goaways: int = 0
    """GOAWAY frames received."""
    goaway_unprocessed: int = 0
    """Streams a GOAWAY left unprocessed (h2: above its last-stream-id; h3: at or above its stream id)."""
    retried: int = 0
    """Of those, how many the client sent again on a new connection: a graceful GOAWAY's, the request counted once
    (the rest end as `goaway` failures)."""
    resets: dict[str, int] = field(default_factory=dict)
    """RST_STREAM frames received, by error-code name ("REFUSED_STREAM", "CANCEL", ...; outcome `stream_reset`)."""
    max_concurrent: int = 0
    """The server's SETTINGS_MAX_CONCURRENT_STREAMS as last seen (0: it sent none, no limit)."""
    max_per_connection: int = 0
    """The most requests one connection served (to its GOAWAY or to the end of the load)."""
    pure_python: bool = False
    """The pure-Python `h2` package ran the streams (`h2py`), not the compiled engine: client-bound wherever it
    runs (`saturation.PURE_H2`)."""

    def add(self, o: StreamTally) -> None:
        self.protocol = self.protocol or o.protocol
        self.connections += o.connections
        self.streams += o.streams
        self.goaways += o.goaways
        self.goaway_unprocessed += o.goaway_unprocessed
        self.retried += o.retried
        for k, n in o.resets.items():
            self.resets[k] = self.resets.get(k, 0) + n
        self.max_concurrent = max(self.max_concurrent, o.max_concurrent)
        self.max_per_connection = max(self.max_per_connection, o.max_per_connection)
        self.pure_python = self.pure_python or o.pure_python

    def reset(self, code: str) -> None:
        self.resets[code] = self.resets.get(code, 0) + 1

    @classmethod
    def merge(cls, parts: list[StreamTally | None]) -> StreamTally | None:
        """None when no part ran streams (an h1 load)."""
        got = [p for p in parts if p is not None]
        if not got:
            return None
        out = cls()
        for p in got:
            out.add(p)
        return out


@dataclass
class PageSecond:
    """One page's requests that ended in one second (a load of several pages, `pages.Pages`)."""

    counts: list[int] = field(default_factory=lambda: [0] * len(KINDS))
    """Outcomes by kind: the pages' counts add up to their second's."""
    bytes: int = 0
    expected: int = 0
    """Requests that ended with a status expected of them (replay: the log's)."""
    as_expected: int = 0
    """Of those, the ones answered with it."""
    lat: Any = field(default_factory=lambda: array("d"))
    lat_h: Histogram = field(default_factory=Histogram)

    def fold(self) -> None:
        if len(self.lat):
            self.lat_h = self.lat_h.merge(Histogram.of(self.lat))
            self.lat = array("d")

    def add(self, o: PageSecond) -> None:
        """Add `o`'s figures to this page's (`o` folded)."""
        self.fold()
        o.fold()
        self.counts = [a + b for a, b in zip(self.counts, o.counts, strict=True)]
        self.bytes += o.bytes
        self.expected += o.expected
        self.as_expected += o.as_expected
        self.lat_h = self.lat_h.merge(o.lat_h)


@dataclass
class Second:
    """One second of the measured window (by completion time)."""

    counts: list[int] = field(default_factory=lambda: [0] * len(KINDS))
    """Outcomes that ended in this second, by kind."""
    started: int = 0
    """Requests started (and counted) in this second."""
    dropped: int = 0
    """Requests the rate schedule could not start in this second."""
    bytes: int = 0
    """Bytes received in this second's completed requests."""
    inflight: int = 0
    """Requests in flight when the second was closed (a sample)."""
    lat: Any = field(default_factory=lambda: array("d"))
    """Raw latencies from the intended start; folded away at the end of the second."""
    svc: Any = field(default_factory=lambda: array("d"))
    """Raw service times (from the actual send) when they differ from `lat`."""
    lat_h: Histogram = field(default_factory=Histogram)
    svc_h: Histogram | None = None
    client_cpu: float | None = None
    """The load thread's CPU % over this second (100 = one core)."""
    client_wait: float | None = None
    """% of this second the load thread was runnable but waited for a CPU."""
    loop_lag_ms: float | None = None
    """Largest event-loop lag seen in this second."""
    pages: list[PageSecond] = field(default_factory=list)
    """A load of several pages: each page's share of this second, by page index; empty: one page."""

    def fold(self) -> None:
        """Turn the raw arrays into histograms (bounded memory)."""
        for p in self.pages:
            p.fold()
        if len(self.lat):
            self.lat_h = self.lat_h.merge(Histogram.of(self.lat))
            self.lat = array("d")
        if len(self.svc):
            h = Histogram.of(self.svc)
            self.svc_h = h if self.svc_h is None else self.svc_h.merge(h)
            self.svc = array("d")

    def merge(self, o: Second) -> Second:
        self.fold()
        o.fold()
        out = Second(
            [a + b for a, b in zip(self.counts, o.counts, strict=True)],
            self.started + o.started,
            self.dropped + o.dropped,
            self.bytes + o.bytes,
            self.inflight + o.inflight,
        )
        out.lat_h = self.lat_h.merge(o.lat_h)
        if self.svc_h is not None or o.svc_h is not None:
            out.svc_h = (self.svc_h or Histogram()).merge(o.svc_h or Histogram())
        cpus = [c for c in (self.client_cpu, o.client_cpu) if c is not None]
        out.client_cpu = sum(cpus) if cpus else None
        waits = [c for c in (self.client_wait, o.client_wait) if c is not None]
        out.client_wait = sum(waits) if waits else None
        lags = [c for c in (self.loop_lag_ms, o.loop_lag_ms) if c is not None]
        out.loop_lag_ms = max(lags) if lags else None
        out.pages = _merged_pages(self.pages, o.pages)
        return out


def _merged_pages(a: list[PageSecond], b: list[PageSecond]) -> list[PageSecond]:
    out = [PageSecond() for _ in range(max(len(a), len(b)))]
    for part in (a, b):
        for acc, p in zip(out, part, strict=False):
            acc.add(p)
    return out



@dataclass
class Tally:
    """Counted requests that ended in one second of the window, summed by the compiled loop
    (`_ctally.h`): what `Recorder.done` would have recorded of each of them."""

    second: int
    """The window's second they ended in."""
    counts: list[int]
    """How many ended as each kind (`KINDS`)."""
    nbytes: int
    lat: Histogram
    """Latency from the intended start, of those with a response."""
    svc: Histogram | None
    """Service time (from the send), of those sent later than intended; None: none was."""
    status_codes: dict[int, int]
    phases: list[Histogram]
    """Each of `PHASES`, of those with a response that had the phase."""
    last_end: float
    pages: list[PageSecond] | None = None
    """A load of several pages: each page's share of them, by page index."""
    page_status: list[dict[int, int]] | None = None
    """Each page's responses by exact status code."""


@dataclass
class Result:
    """A finished measurement: per-second rows plus totals; mergeable."""

    seconds: list[Second]
    started: int
    dropped: int
    unfinished: int
    duration_s: float
    client_errors: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    client_use: list[ClientUse] = field(default_factory=list)
    """One per load process: its CPU and event-loop lag (`saturation`)."""
    start_s: float = 0.0
    """How long starting the clients took (a closed loop without keep-alive connects them all at once)."""
    teardown_s: float = 0.0
    """From the window's close until every connection was closed and the engine was done."""
    stopped_by: StoppedBy = "time"
    began: float = 0.0
    """-n: when the first counted request started (CLOCK_MONOTONIC, shared by the workers)."""
    ended: float = 0.0
    """-n: when the last counted request ended."""
    warmup_requests: int = 0
    """Requests started during the warm-up (not counted; a server saw them too)."""
    warmup_carried: int = 0
    """Requests begun in the warm-up and counted in the window: ended in it, or held at its close (in `started`,
    not in `warmup_requests`)."""
    status_codes: dict[int, int] = field(default_factory=dict)
    """Responses by exact status code."""
    phases: dict[str, Histogram] = field(default_factory=dict)
    """Each of `PHASES`' durations over the responses (connect: those that opened a connection)."""
    lost: list[str] = field(default_factory=list)
    """Shares of the load whose worker died or left: what is missing, in words (the load is partial)."""
    tls: TlsTally | None = None
    """https: the handshakes and TLS failures; None over plain http."""
    streams: StreamTally | None = None
    """h2, h2c, h3: the connections, streams, GOAWAYs and RST_STREAMs; None for h1."""
    pages: tuple[str, ...] = ()
    """A load of several pages: their names, by the index `Second.pages` keeps them by; empty: one page."""
    page_status: list[dict[int, int]] = field(default_factory=list)
    """Each page's responses by exact status code, by page index."""
    journeys: JourneyTally | None = None
    """--journey: each journey's completions and each step's tally; None for a load of pages."""
    users_unanswered: int | None = None
    """The users (a closed loop's clients, a ramp's users) that got no answer at all in the window: each request
    they sent in it, or held into it from the warm-up, failed or was still in flight at the close. None: the
    engine does not follow its users (a rate, h2, h3)."""
    traced: TraceRows | None = None
    """--trace: one row per traced request (`trace.rows`), written to requests.parquet; None: not traced."""

    @classmethod
    def merge(cls, parts: list[Result]) -> Result:
        """Merge the results of workers that measured the same window."""
        n = max(len(p.seconds) for p in parts)
        secs: list[Second] = []
        for i in range(n):
            acc = Second()
            for p in parts:
                if i < len(p.seconds):
                    acc = acc.merge(p.seconds[i])
            secs.append(acc)
        errs: dict[str, int] = {}
        for p in parts:
            for k, v in p.client_errors.items():
                errs[k] = errs.get(k, 0) + v
        # all workers sent their share of -n: the load took from the first start to the last end;
        # one of them stopped by time: the window, as without -n
        by_requests = all(p.stopped_by == "requests" for p in parts)
        began, ended = min(p.began for p in parts), max(p.ended for p in parts)
        return cls(
            secs,
            sum(p.started for p in parts),
            sum(p.dropped for p in parts),
            sum(p.unfinished for p in parts),
            ended - began if by_requests else max(p.duration_s for p in parts),
            errs,
            [w for p in parts for w in p.warnings],
            any(p.interrupted for p in parts),
            [u for p in parts for u in p.client_use],
            max(p.start_s for p in parts),
            max(p.teardown_s for p in parts),
            "requests" if by_requests else "time",
            began,
            ended,
            sum(p.warmup_requests for p in parts),
            sum(p.warmup_carried for p in parts),
            _add_counts([p.status_codes for p in parts]),
            {ph: _merged([p.phases.get(ph, Histogram()) for p in parts]) for ph in PHASES},
            [w for p in parts for w in p.lost],
            TlsTally.merge([p.tls for p in parts]),
            StreamTally.merge([p.streams for p in parts]),
            next((p.pages for p in parts if p.pages), ()),
            [_add_counts([p.page_status[j] for p in parts if j < len(p.page_status)])
             for j in range(max(len(p.page_status) for p in parts))],
            JourneyTally.merge([p.journeys for p in parts]),
            None if all(p.users_unanswered is None for p in parts)
            else sum(p.users_unanswered or 0 for p in parts),
            TraceRows.merge([p.traced for p in parts]),
        )

    def counts(self) -> dict[str, int]:
        tot = [0] * len(KINDS)
        for s in self.seconds:
            for k, v in enumerate(s.counts):
                tot[k] += v
        return dict(zip(KINDS, tot, strict=True))

    def page_seconds(self, page: int) -> list[PageSecond]:
        """Page `page`'s share of each second (folded)."""
        out = []
        for s in self.seconds:
            p = s.pages[page] if page < len(s.pages) else PageSecond()
            p.fold()
            out.append(p)
        return out

    def page_latency(self, page: int) -> Histogram:
        """Page `page`'s latency over the window."""
        h = Histogram()
        for p in self.page_seconds(page):
            h = h.merge(p.lat_h)
        return h

    def latency(self) -> Histogram:
        h = Histogram()
        for s in self.seconds:
            h = h.merge(s.lat_h)
        return h

    def service(self) -> Histogram:
        h = Histogram()
        for s in self.seconds:
            h = h.merge(s.svc_h if s.svc_h is not None else s.lat_h)
        return h


def _add_counts(parts: list[dict[int, int]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for p in parts:
        for k, v in p.items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items()))


def _merged(hs: list[Histogram]) -> Histogram:
    h = Histogram()
    for x in hs:
        h = h.merge(x)
    return h
