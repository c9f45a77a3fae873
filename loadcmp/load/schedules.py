"""When requests start: the closed loop, the JMeter-style ramp, the open rate, a replayed log's times.

Pure data and arithmetic, no I/O: the engine asks a schedule when the next
request of a client is due and does the sending itself. All times are offsets
in seconds from the start of the load (warm-up included). A schedule says how
many connections it may hold open (`connections`) and which loop drives it
(`start(driver)`), so no caller needs to ask which kind it is.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from dataclasses import dataclass
from typing import Protocol

from ..errors import UsageError
from ..records import ScheduleDoc, ScheduleKind


class Driver(Protocol):
    """What runs a schedule (the engine's driver): one loop per kind."""

    def start_closed(self, schedule: Closed) -> None: ...

    def start_ramp(self, schedule: Ramp) -> None: ...

    def start_rate(self, schedule: Rate | Replay) -> None: ...


@dataclass(frozen=True)
class Closed:
    """webbench: N clients, each sending its next request as soon as the last ended;
    with `requests` (ab and hey -n), they stop once that many have been started."""

    clients: int

    kind: ScheduleKind = "closed"
    requests: int | None = None
    """Requests to send in all (this part's share when split); None: until the time is up."""
    first_client: int = 0
    """Index of this part's first client in the whole load when split (journeys number their users from it)."""

    @property
    def connections(self) -> int:
        """At most this many connections open at once: a client never waits
        for a request it cannot get, so no more clients than requests."""
        return self.clients if self.requests is None else min(self.clients, self.requests)

    def start(self, driver: Driver) -> None:
        driver.start_closed(self)

    def split(self, n: int) -> list[Closed]:
        """Clients split evenly; requests in proportion to them, exactly (10 over
        three equal parts: 4 + 3 + 3), so the parts end at about the same time
        and none has more clients than requests. Each part knows its first client's
        index, so a number per client stays unique across the parts."""
        clients = _split(self.connections, n)
        shares = None if self.requests is None else _shares(self.requests, clients)
        out: list[Closed] = []
        first = self.first_client
        for i, c in enumerate(clients):
            out.append(Closed(c, requests=None if shares is None else shares[i], first_client=first))
            first += c
        return out

    def describe(self) -> ScheduleDoc:
        out = ScheduleDoc(kind=self.kind, clients=self.clients)
        if self.requests is not None:
            out["requests"] = self.requests
        return out


@dataclass(frozen=True)
class Ramp:
    """JMeter thread group: users started evenly over `ramp_up`, each sending
    one request every `pace` seconds, start to start; a late one goes at once."""

    users: int
    ramp_up: float
    pace: float

    kind: ScheduleKind = "ramp"
    first_user: int = 0
    """Index of this part's first user when split across workers."""
    total_users: int = 0
    """Users in the whole schedule (0: same as `users`)."""

    @property
    def connections(self) -> int:
        """At most this many connections open at once."""
        return self.users

    def start(self, driver: Driver) -> None:
        driver.start_ramp(self)

    def start_offset(self, user: int) -> float:
        """When user number `user` (0-based, of this part) starts."""
        total = self.total_users or self.users
        return (self.first_user + user) * self.ramp_up / total

    def users_by(self, t: float) -> int:
        """How many of the whole schedule's users have started `t` seconds after the load began."""
        total = self.total_users or self.users
        return total if t >= self.ramp_up else min(total, math.floor(t * total / self.ramp_up) + 1)

    def next_due(self, last_due: float, now: float) -> float:
        """The next intended start after one due at `last_due` that ended at `now`."""
        nxt = last_due + self.pace
        return nxt if nxt > now else now

    def split(self, n: int) -> list[Ramp]:
        out, first = [], 0
        total = self.total_users or self.users
        for c in _split(self.users, n):
            out.append(Ramp(c, self.ramp_up, self.pace, "ramp", self.first_user + first, total))
            first += c
        return out

    def peak_rate(self) -> float:
        return (self.total_users or self.users) / self.pace

    def describe(self) -> ScheduleDoc:
        return ScheduleDoc(kind=self.kind, users=self.total_users or self.users, ramp_up_s=self.ramp_up,
                           pace_s=self.pace)


@dataclass(frozen=True)
class Rate:
    """wrk2 / k6 constant arrival rate: `rate` requests per second whatever the
    responses; at most `max_inflight` at once, the rest is dropped, not queued."""

    rate: float
    max_inflight: int

    kind: ScheduleKind = "rate"
    phase: float = 0.0
    """Offset of this part's first request (workers interleave their ticks)."""

    @property
    def connections(self) -> int:
        """At most this many connections open at once."""
        return self.max_inflight

    def start(self, driver: Driver) -> None:
        driver.start_rate(self)

    def due(self, k: int) -> float:
        """Intended start of the k-th request (0-based)."""
        return self.phase + k / self.rate

    def count_before(self, t: float) -> int:
        """How many requests are due strictly before offset t."""
        if t <= self.phase:
            return 0
        return math.ceil((t - self.phase) * self.rate)

    def split(self, n: int) -> list[Rate]:
        if n <= 1:
            return [self]
        per = self.rate / n
        return [Rate(per, max(1, c), "rate", i / self.rate) for i, c in enumerate(_split(self.max_inflight, n))]

    def describe(self) -> ScheduleDoc:
        return ScheduleDoc(kind=self.kind, rate=self.rate, max_inflight=self.max_inflight)


@dataclass(frozen=True)
class Replay:
    """An access log replayed at its own timing (divided by its speed): an open schedule as `Rate`, each
    request due at its own time whatever the responses (latency from that time: coordinated omission
    corrected); at most `max_inflight` at once, the rest dropped and counted, never queued."""

    dues: array
    """array('d'): the whole log's due times, seconds from the load's start, in order (not decreasing)."""
    max_inflight: int

    kind: ScheduleKind = "replay"
    offset: int = 0
    step: int = 1
    """This part's requests: positions offset, offset + step, ... of `dues` (as `Pages.share` deals them)."""

    def __post_init__(self) -> None:
        if not len(self.dues):
            raise UsageError("a replay needs at least one request")

    @property
    def connections(self) -> int:
        """At most this many connections open at once."""
        return self.max_inflight

    @property
    def total(self) -> int:
        """How many requests this part sends in all."""
        return max(0, (len(self.dues) - self.offset + self.step - 1) // self.step)

    def start(self, driver: Driver) -> None:
        driver.start_rate(self)

    def due(self, k: int) -> float:
        """Intended start of this part's k-th request (0-based); after its last: never."""
        i = self.offset + k * self.step
        return self.dues[i] if i < len(self.dues) else math.inf

    def count_before(self, t: float) -> int:
        """How many of this part's requests are due strictly before offset t."""
        below = bisect_left(self.dues, t)  # positions 0..below-1 of the whole log
        return 0 if below <= self.offset else min(self.total, (below - self.offset + self.step - 1) // self.step)

    def split(self, n: int) -> list[Replay]:
        """Every n-th request to each part, from its own: the deal `Pages.share` makes of the pages."""
        if n <= 1:
            return [self]
        return [Replay(self.dues, max(1, c), "replay", self.offset + i * self.step, self.step * n)
                for i, c in enumerate(_split(self.max_inflight, n))]

    def span(self) -> float:
        """Seconds from the load's start to the last request's due time."""
        return float(self.dues[-1])

    def mean_rate(self) -> float:
        """The log's requests per second at this speed, over its span (one request: 1/s)."""
        span = self.span() - self.dues[0]
        return (len(self.dues) - 1) / span if span > 0 else 1.0

    def describe(self) -> ScheduleDoc:
        return ScheduleDoc(kind=self.kind, rate=round(self.mean_rate(), 3), max_inflight=self.max_inflight)


Schedule = Closed | Ramp | Rate | Replay


def _split(total: int, n: int) -> list[int]:
    """Split `total` into n near-equal positive parts (fewer if total < n)."""
    n = max(1, min(n, total))
    base, extra = divmod(total, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def _shares(total: int, weights: list[int]) -> list[int]:
    """`total` split in proportion to `weights`, exactly: the largest remainders
    get the units left over (ties: the first parts)."""
    whole = sum(weights)
    out = [total * w // whole for w in weights]
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


REQUEST_SLACK_S = 2.0
"""Beyond twice the timeout, what one request may take at worst: the sweeper's
tenth of a second, a back-off, and reading a closing server to its end (1 s)."""


def time_cap(requests: int, clients: int, timeout: float) -> float:
    """The time limit of `-n` without `-t`: as long as the N requests would take
    if every one ran into its timeout (a connect, then the answer, each up to
    `timeout`), plus a round for uneven shares between workers. A load that
    works ends by its count first, even against a server that never answers."""
    rounds = math.ceil(requests / max(1, min(clients, requests))) + 1
    return float(rounds * (2 * timeout + REQUEST_SLACK_S))


def make_schedule(
    kind: str,
    clients: int,
    *,
    requests: int | None = None,
    ramp_up: float | None = None,
    pace: float | None = None,
    rate: float | None = None,
    max_inflight: int | None = None,
) -> Schedule:
    """Build a schedule from CLI-level values, refusing combinations that make no sense."""
    if clients < 1:
        raise UsageError(f"bad concurrency {clients}: clients must be >= 1")
    if requests is not None and kind != "closed":
        raise UsageError(f"-n/--requests needs --schedule closed: the {kind} schedule says when requests start")
    if requests is not None and requests < 1:
        raise UsageError(f"bad -n/--requests {requests}: must be at least 1")
    if kind == "closed":
        if rate is not None:
            raise UsageError("--rate needs --schedule rate (the closed loop sends as fast as responses come)")
        if pace is not None or ramp_up is not None:
            raise UsageError("--pace and --ramp-up need --schedule ramp")
        return Closed(clients, requests=requests)
    if kind == "ramp":
        if rate is not None:
            raise UsageError("--rate needs --schedule rate, not ramp")
        p = 5.0 if pace is None else pace
        r = 0.0 if ramp_up is None else ramp_up
        if p <= 0:
            raise UsageError("--pace must be positive")
        if r < 0:
            raise UsageError("--ramp-up must be zero or more")
        return Ramp(clients, r, p)
    if kind == "rate":
        if rate is None or not math.isfinite(rate) or rate <= 0:
            raise UsageError("--schedule rate needs --rate R (a finite number of requests per second, > 0)")
        if pace is not None or ramp_up is not None:
            raise UsageError("--pace and --ramp-up need --schedule ramp")
        mi = max_inflight if max_inflight is not None else clients
        if mi < 1:
            raise UsageError("--max-inflight must be >= 1")
        return Rate(float(rate), mi)
    raise UsageError(f"unknown schedule {kind!r}: use closed, ramp or rate")
