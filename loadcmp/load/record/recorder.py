"""What happened: outcomes in per-second buckets and mergeable latency histograms.

The engine calls `start()` when a request begins and `done()` when it ends;
nothing else. The compiled loop counts in C and hands over what it counted
instead (`add_started`, `add_tally`), to the same effect. Per-second buckets
are folded into sparse log histograms once their second is over, so memory
stays bounded on long runs: raw latencies live for one second at most.
Recorders of several workers merge exactly (`Result.merge`): counts add,
histograms add, percentiles are read from the merged histogram (within 0.5 %,
see `Histogram`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable

import numpy as np

from .histogram import Histogram
from .outcomes import HTTP_5XX
from .result import PHASES, PageSecond, Result, Second, StoppedBy, StreamTally, Tally, TlsTally
from .saturation import ClientSample

__all__ = ["PHASES", "Began", "Histogram", "Marks", "PageSecond", "Recorder", "Result", "Second", "StoppedBy",
           "StreamTally", "Tally",
           "TlsTally"]
"""Histogram, Result, Second and Tally are re-exported: readers of results and the compiled tally import them
from here."""


Marks = tuple[float, float, float, float, float]
"""When a response's phases began and ended: the connect (NaN on a reused connection), the send, the end
of the write, the first byte of the answer, the answer's end. Kept as they are, one C call a response;
the durations are taken once a second (`_fold_phases`). The pure-Python loop's connect holds its TLS
handshake (asyncio does both in one call): its handshake phase is 0 over http, not timed over https."""
Began = tuple[float, float, float, float]
"""The first four `Marks`, as an engine knows them before the end is read (`Engine._record` adds it)."""
STATUS_SLOTS = 1000
"""Status codes 0..999 are counted in a list (an index is cheaper than a dict on the hot path)."""


class Recorder:
    """Counts one worker's requests during the measured window.

    A request counts when it *starts* inside the window [t0, t0 + duration),
    or (`begin`) when it started in the warm-up and is still held when the
    window opens: it is counted in the window it ends in, or as unfinished,
    as started in the window's first second. Those still in flight when the
    window closes are `unfinished`, so `sum(kinds) + unfinished == started -
    dropped` holds by construction.
    With `requests` (-n) the window is the time limit, and the recorder says
    when the last of them has ended (`on_spent`).
    """

    def __init__(self, t0: float, duration: float, requests: int | None = None, pages: tuple[str, ...] = ()) -> None:
        self.t0 = t0
        self.pages = pages
        """A load of several pages: their names (`done`'s `page` indexes them); empty: one page."""
        self.page_status: list[dict[int, int]] = [{} for _ in pages]
        self.duration = duration
        self.end = t0 + duration
        self.nsec = max(1, math.ceil(duration))
        self.seconds = [self._second()]
        """Made as the window reaches them (`_at`): a -n load's time cap may be days long."""
        self.requests = requests
        """-n: the requests this recorder may count (the tickets); None: no limit."""
        self.on_spent: Callable[[], None] | None = None
        """Called once, when the last of `requests` has ended."""
        self.spent = False
        self.first_start = self.last_end = 0.0
        """When the first counted request started and the last one ended (-n: the span measured)."""
        self.warmup_started = 0
        self.warm_held = 0
        self.carried = 0  # warm-up requests counted in the window: ended in it, or held at its close
        """Warm-up requests begun by `begin` (or the compiled loop's, `add_warm`) and not ended yet: one that
        ends in the window is counted there (`carry`); one still held at the close is unfinished."""
        self.held = 0
        """Of the unfinished, those held from before the window opened to its close (`close`)."""
        self.users: list[list[bool]] = []
        """Each user (a closed loop's client, a ramp's user) of the pure-Python paths: whether an answer came in
        the window (`user`, `heard`)."""
        self.c_users: dict[int, tuple[int, int]] = {}
        """The compiled loops' users, by loop: (users, those answered in the window) (`users_seen`)."""
        self.started = 0
        self.dropped = 0
        self.inflight = 0
        self.closed = False
        self.unfinished = 0
        self.folded_upto = 0
        self.sampled_upto = 0
        self.client_errors: dict[str, int] = {}
        self.result: Result | None = None
        """Once closed: the result, which a request taken back (`unsent`) still corrects."""
        self.status_counts = [0] * STATUS_SLOTS
        """Responses by exact status code (hey's and oha's distribution), indexed by the code."""
        self.pm = array("d")
        """Phase `Marks`, five per response, from `done`; folded into `phase_h` once a second."""
        self.phase_h = [Histogram() for _ in PHASES]
        self.tls: TlsTally | None = None
        """https: the handshakes and TLS failures (the engine sets it before the load)."""
        self.streams: StreamTally | None = None
        """h2, h2c, h3: the streams' tally (the engine sets it before the load and fills it)."""

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
            self.seconds.append(self._second())
        return self.seconds[i]

    def _second(self) -> Second:
        return Second(pages=[PageSecond() for _ in self.pages])

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

    def begin(self, t: float) -> bool:
        """`start`, but a warm-up request counts too (without -n): one still held when the window
        opens, a user waiting in a listen backlog, is counted in the window it ends in (`done`), or
        as unfinished at the close, never left out of both."""
        if t < self.t0 and self.requests is None:
            self.warmup_started += 1
            self.warm_held += 1
            return True
        return self.start(t)

    def add_warm(self, n: int) -> None:
        """The compiled loop's warm-up requests begun (less those ended in the warm-up) since it last said."""
        if not self.closed:
            self.warm_held += n

    def carry(self) -> None:
        """A warm-up request ends in the window: it is counted there, as started in its first second."""
        self.warm_held -= 1
        self.warmup_started -= 1
        self.carried += 1
        self.started += 1
        self.inflight += 1
        self._at(0).started += 1

    def user(self) -> list[bool]:
        """A new user: its cell, marked by `heard` when an answer comes in the window."""
        cell = [False]
        self.users.append(cell)
        return cell

    def heard(self, user: list[bool] | None, kind: int, t: float) -> None:
        """A request of `user` ended at `t` as `kind`: an answer (any status) in the window marks it."""
        if user is not None and kind <= HTTP_5XX and self.t0 <= t < self.end and not self.closed:
            user[0] = True

    def users_seen(self, loop: int, users: int, answered: int) -> None:
        """A compiled loop's users so far, and how many of them had an answer in the window."""
        if not self.closed:
            self.c_users[loop] = (users, answered)

    def unsent(self, t: float, counted: bool) -> None:
        """A request started at `t` was never sent: the window closed while it
        was connecting. It is taken back, so that warm-up + ok + failed +
        unfinished is what reached the server."""
        res = self.result
        if counted and t < self.t0:  # a warm-up request `begin` counted
            if res is None or not self.held:
                self.warm_held -= 1
                self.warmup_started -= 1
                if res is not None:
                    res.warmup_requests -= 1
                return
            self.held -= 1  # the close counted it held, as started in the window's first second
            self.carried -= 1
            if res is not None:
                res.warmup_carried -= 1
            t = self.t0
        if not counted:
            if t < self.t0:
                self.warmup_started -= 1
                if res is not None:
                    res.warmup_requests -= 1
            return
        self.started -= 1
        self.inflight -= 1
        self._sec(t).started -= 1  # the result's seconds are these same objects
        if res is not None:  # closed already: it was counted as unfinished
            self.unfinished -= 1
            res.started -= 1
            res.unfinished -= 1

    def drop(self, t: float) -> None:
        """The rate schedule wanted a request at `t` but could not start it."""
        if self.closed or t < self.t0 or t >= self.end:
            return
        self.started += 1
        self.dropped += 1
        self._sec(t).dropped += 1

    def done(self, kind: int, t_intended: float, t_sent: float, t_end: float, nbytes: int, status: int = 0,
             marks: Marks | None = None, page: int = -1, expect: int = 0) -> None:
        """A counted request ended as `kind` at `t_end`, with its response's
        status and the `marks` of its phases when it had a response; recorded
        as `page` too (a load of several pages), expected to answer `expect` (0: any).

        An end after the window closed is not counted even if the engine got
        to it late (a lagging loop): that request was in flight at the close,
        so it stays `unfinished`.
        """
        if self.closed or t_end >= self.end:
            return
        if t_intended < self.t0:  # a warm-up request (`begin`)
            if t_end < self.t0:
                self.warm_held -= 1
                return
            self.carry()
        self.inflight -= 1
        s = self._sec(t_end)
        s.counts[kind] += 1
        s.bytes += nbytes
        if kind <= HTTP_5XX:
            s.lat.append(t_end - t_intended)
            if t_sent != t_intended:
                s.svc.append(t_end - t_sent)
            if 0 < status < STATUS_SLOTS:
                self.status_counts[status] += 1
            if marks is not None:
                self.pm.extend(marks)
        if page >= 0:
            self._page_done(s.pages[page], page, kind, t_end - t_intended, nbytes, status, expect)
        if self.requests is not None:
            self.last_end = max(self.last_end, t_end)
            self._maybe_spent()

    def _page_done(self, p: PageSecond, page: int, kind: int, lat: float, nbytes: int, status: int,
                   expect: int) -> None:
        p.counts[kind] += 1
        p.bytes += nbytes
        if kind <= HTTP_5XX:
            p.lat.append(lat)
            if status > 0:
                codes = self.page_status[page]
                codes[status] = codes.get(status, 0) + 1
        if expect:
            p.expected += 1
            p.as_expected += status == expect

    def _maybe_spent(self) -> None:
        n = self.requests
        if n is not None and not self.inflight and self.started >= n and not self.spent:
            self.spent = True
            if self.on_spent is not None:
                self.on_spent()

    def add_started(self, second: int, n: int, warmup: int, first: float) -> None:
        """What `start()` counts, counted by the compiled loop: `n` requests that started
        in `second` of the window (the first of them at `first` when none had before),
        and `warmup` before the window."""
        if self.closed:
            return
        self.warmup_started += warmup
        if n:
            if not self.started:
                self.first_start = first
            self.started += n
            self.inflight += n
            self._at(second).started += n

    def add_tally(self, t: Tally) -> None:
        """What `done()` records, for requests the compiled loop counted (`Tally`)."""
        if self.closed:
            return
        self.inflight -= sum(t.counts)
        s = self._at(t.second)
        for k, n in enumerate(t.counts):
            s.counts[k] += n
        s.bytes += t.nbytes
        s.lat_h = s.lat_h.merge(t.lat)
        if t.svc is not None:
            s.svc_h = t.svc if s.svc_h is None else s.svc_h.merge(t.svc)
        for code, n in t.status_codes.items():
            self.status_counts[code] += n
        self.phase_h = [h.merge(p) for h, p in zip(self.phase_h, t.phases, strict=True)]
        for acc, p in zip(s.pages, t.pages or (), strict=False):
            acc.add(p)
        for acc_codes, codes in zip(self.page_status, t.page_status or (), strict=False):
            for code, n in codes.items():
                acc_codes[code] = acc_codes.get(code, 0) + n
        if self.requests is not None:
            self.last_end = max(self.last_end, t.last_end)
            self._maybe_spent()

    def _fold_phases(self) -> None:
        if len(self.pm):
            v = np.diff(np.frombuffer(self.pm, dtype=np.float64).reshape(-1, 5), axis=1)
            self.pm = array("d")
            shake = v[:, 0] * (np.nan if self.tls is not None else 0.0)  # NaN with the connect's, else 0 or untimed
            v = np.column_stack([v[:, 0], shake, v[:, 1:]])
            for j in range(len(PHASES)):
                col = v[:, j]
                self.phase_h[j] = self.phase_h[j].merge(Histogram.of(np.maximum(col[~np.isnan(col)], 0.0)))

    @property
    def status_codes(self) -> dict[int, int]:
        """The responses by exact status code, those seen only."""
        return {code: n for code, n in enumerate(self.status_counts) if n}

    def client_error(self, name: str) -> None:
        self.client_errors[name] = self.client_errors.get(name, 0) + 1

    def tls_error(self, reason: str) -> None:
        """A counted request ended as tls_error: why (its outcome is recorded by `done`/`add_tally`)."""
        if self.tls is not None and not self.closed:
            self.tls.error(reason)

    def add_tls(self, full: int, resumed: int, seen: dict[tuple[str, str, str], int]) -> None:
        """Handshakes of counted requests, done inside the window (the compiled loop hands them over in sums)."""
        if self.tls is not None and not self.closed:
            self.tls.add(full, resumed, seen)

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
        self._fold_phases()

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
        held = self.held = max(0, self.warm_held)
        if held:  # held since the warm-up, never answered: started in the window's first second, unfinished
            self.warm_held = 0
            self.warmup_started -= held
            self.carried += held
            self.started += held
            self.inflight += held
            self._at(0).started += held
        self.unfinished = self.inflight
        if self.spent:
            measured_s = self.last_end - self.first_start
            n = min(self.nsec, int(self.last_end - self.t0) + 1)
        else:
            n = self.nsec if measured_s is None else max(0, min(self.nsec, math.ceil(measured_s)))
        self._at(max(n, 1) - 1)
        for s in self.seconds:
            s.fold()
        self._fold_phases()
        self.result = Result(
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
            warmup_carried=self.carried,
            status_codes=dict(self.status_codes),
            phases=dict(zip(PHASES, self.phase_h, strict=True)),
            tls=self.tls,
            streams=self.streams,
            pages=self.pages,
            page_status=[dict(sorted(c.items())) for c in self.page_status],
            users_unanswered=sum(not u[0] for u in self.users) + sum(n - a for n, a in self.c_users.values())
            if self.users or self.c_users else None,
        )
        return self.result


