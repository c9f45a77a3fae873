"""What happened: outcomes in per-second buckets and mergeable latency histograms.

The engine calls `start()` when a request begins and `done()` when it ends;
nothing else. Per-second buckets are folded into sparse log histograms once
their second is over, so memory stays bounded on long runs: raw latencies live
for one second at most. Recorders of several workers merge exactly
(`Result.merge`): counts add, histograms add, percentiles are read from the
merged histogram (within 0.5 %, see `Histogram`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .histogram import Histogram  # re-exported: readers of results import it from here
from .outcomes import HTTP_5XX, KINDS
from .saturation import ClientSample, ClientUse

StoppedBy = Literal["time", "requests"]
"""What ended a load: its time (the window closed, or a stop) or its -n requests, all answered."""


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

    def fold(self) -> None:
        """Turn the raw arrays into histograms (bounded memory)."""
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
        return out


class Recorder:
    """Counts one worker's requests during the measured window.

    A request counts when it *starts* inside the window [t0, t0 + duration);
    those still in flight when the window closes are `unfinished`, so
    `sum(kinds) + unfinished == started - dropped` holds by construction.
    With `requests` (-n) the window is the time limit, and the recorder says
    when the last of them has ended (`on_spent`).
    """

    def __init__(self, t0: float, duration: float, requests: int | None = None) -> None:
        self.t0 = t0
        self.duration = duration
        self.end = t0 + duration
        self.nsec = max(1, math.ceil(duration))
        self.seconds = [Second()]
        """Made as the window reaches them (`_at`): a -n load's time cap may be days long."""
        self.requests = requests
        """-n: the requests this recorder may count (the tickets); None: no limit."""
        self.on_spent: Callable[[], None] | None = None
        """Called once, when the last of `requests` has ended."""
        self.spent = False
        self.first_start = self.last_end = 0.0
        """When the first counted request started and the last one ended (-n: the span measured)."""
        self.warmup_started = 0
        self.started = 0
        self.dropped = 0
        self.inflight = 0
        self.closed = False
        self.unfinished = 0
        self.folded_upto = 0
        self.sampled_upto = 0
        self.client_errors: dict[str, int] = {}

    def second_at(self, t: float) -> Second:
        """The window's second holding `t` (the first or last for times outside it)."""
        return self._sec(t)

    def _sec(self, t: float) -> Second:
        i = int(t - self.t0)
        i = i if 0 <= i < self.nsec else (0 if i < 0 else self.nsec - 1)
        return self.seconds[i] if i < len(self.seconds) else self._at(i)

    def _at(self, i: int) -> Second:
        """Second `i` of the window (< nsec), made with those before it if need be."""
        while len(self.seconds) <= i:
            self.seconds.append(Second())
        return self.seconds[i]

    def ticket_left(self, t: float) -> bool:
        """May a request start at `t` under -n? Warm-up requests need no ticket;
        the caller takes its ticket (`start`) before it next awaits."""
        return self.requests is None or t < self.t0 or self.started < self.requests

    def start(self, t: float) -> bool:
        """A request begins at `t`; returns whether it counts."""
        if t < self.t0:
            self.warmup_started += 1
            return False
        if self.closed or t >= self.end:
            return False
        if not self.started:
            self.first_start = t
        self.started += 1
        self.inflight += 1
        self._sec(t).started += 1
        return True

    def drop(self, t: float) -> None:
        """The rate schedule wanted a request at `t` but could not start it."""
        if self.closed or t < self.t0 or t >= self.end:
            return
        self.started += 1
        self.dropped += 1
        self._sec(t).dropped += 1

    def done(self, kind: int, t_intended: float, t_sent: float, t_end: float, nbytes: int) -> None:
        """A counted request ended as `kind` at `t_end`.

        An end after the window closed is not counted even if the engine got
        to it late (a lagging loop): that request was in flight at the close,
        so it stays `unfinished`.
        """
        if self.closed or t_end >= self.end:
            return
        self.inflight -= 1
        s = self._sec(t_end)
        s.counts[kind] += 1
        s.bytes += nbytes
        if kind <= HTTP_5XX:
            s.lat.append(t_end - t_intended)
            if t_sent != t_intended:
                s.svc.append(t_end - t_sent)
        if self.requests is not None:
            self.last_end = max(self.last_end, t_end)
            if not self.inflight and self.started >= self.requests and not self.spent:
                self.spent = True
                if self.on_spent is not None:
                    self.on_spent()

    def client_error(self, name: str) -> None:
        self.client_errors[name] = self.client_errors.get(name, 0) + 1

    def tick(self, now: float, client: ClientSample | None = None) -> None:
        """Once a second: fold finished seconds, sample in-flight and the client's load.

        A tick that comes late (a lagging loop) gives its client sample to every
        second it covers, so no second of the window is left without one.
        """
        i = int(now - self.t0)
        if 0 < i <= self.nsec:
            self._at(i - 1).inflight = self.inflight
        if client is not None:
            self.sample_client(client, min(max(i, 0), self.nsec))
        for j in range(self.folded_upto, min(max(i, 0), self.nsec)):
            self._at(j).fold()
            self.folded_upto = j + 1

    def sample_client(self, c: ClientSample, upto: int) -> None:
        """The client's load for the seconds not sampled yet, up to `upto` (excluded)."""
        for j in range(self.sampled_upto, upto):
            s = self._at(j)
            s.client_cpu, s.client_wait, s.loop_lag_ms = c.cpu_pct, c.wait_pct, c.lag_ms
        self.sampled_upto = max(self.sampled_upto, upto)

    def close(self, measured_s: float | None = None) -> Result:
        """End of the window: what is still in flight is unfinished. When the -n
        requests have all ended, the load took from the first one's start to
        the last one's end, and its seconds run up to that end."""
        self.closed = True
        self.unfinished = self.inflight
        if self.spent:
            measured_s = self.last_end - self.first_start
            n = min(self.nsec, int(self.last_end - self.t0) + 1)
        else:
            n = self.nsec if measured_s is None else max(0, min(self.nsec, math.ceil(measured_s)))
        self._at(max(n, 1) - 1)
        for s in self.seconds:
            s.fold()
        return Result(
            seconds=self.seconds[: max(n, 1)],
            started=self.started,
            dropped=self.dropped,
            unfinished=self.unfinished,
            duration_s=self.duration if measured_s is None else measured_s,
            client_errors=dict(self.client_errors),
            stopped_by="requests" if self.spent else "time",
            began=self.first_start,
            ended=self.last_end,
            warmup_requests=self.warmup_started,
        )


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
        )

    def counts(self) -> dict[str, int]:
        tot = [0] * len(KINDS)
        for s in self.seconds:
            for k, v in enumerate(s.counts):
                tot[k] += v
        return dict(zip(KINDS, tot, strict=True))

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
