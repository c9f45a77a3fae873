"""Is the client the bottleneck? The judgement, its thresholds, and the advice.

A load process is one event loop on one thread. When that thread is busy all
the time, the requests/s measured is what the *client* can send, not what the
server can serve, and a comparison of two servers then compares the client
with itself. The driver samples the loop's own thread once a second
(`driver.Engine._ticker`, from /proc/thread-self/schedstat: `thread_times`):

* busy: the share of the second the thread was on a CPU plus the share it was
  runnable but waiting for one (another process on its core: a starved client
  is as much the bottleneck as a saturated one). Measured on this kind of
  machine, client pinned to CPU 0 and nginx to CPU 1, 5 s each
  (`loadcmp bench URL -c C -t 5s --client-cpus 0 --json`): a client bound by
  the server used 31 % (/info.php, c=100) and 80-81 % (/index.html with
  keep-alive, c=50/500, nginx at 100 % of its core); one bound by itself used
  98-99 % (/index.html without keep-alive, c=10/100/1000, nginx at 20-50 %). 90 %
  sits between the two. The median over the seconds of the window is judged, so
  that the connect storm of the first second does not decide alone.
* lag: the median over the seconds of the worst delay of a 50 ms timer. A loop
  that keeps up answers within a few ms (1-14 ms in the runs above, up to
  c=1000 with keep-alive); at c=1000 without keep-alive it was 120-170 ms and
  at c=5000 about 900 ms: each pass over the ready callbacks then takes that
  long, so latencies include the client's own queueing. 100 ms is the line.

Either one makes a measurement client-bound. The advice says how much capacity
the client had (from its CPU cost per request) and what would give it more.
"""

from __future__ import annotations

import resource
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ...records import LoadSummary

CPU_BOUND_PCT = 90.0
"""Median per-second busy share of one load thread (on a CPU or waiting for one; 100 = one core)
from which it is client-bound."""
LAG_BOUND_MS = 100.0
"""Median per-second worst event-loop lag from which the client is the bottleneck."""


class SampledSecond(Protocol):
    """A second of the recorder, as far as the client's load goes (`recorder.Second`)."""

    client_cpu: float | None
    client_wait: float | None
    loop_lag_ms: float | None


@dataclass(frozen=True)
class ClientSample:
    """One sample of the load thread, over about a second (`driver.Engine._ticker`)."""

    cpu_pct: float
    """On a CPU (100 = one core)."""
    wait_pct: float
    """Runnable but waiting for a CPU (something else ran on its core)."""
    lag_ms: float
    """The worst delay of the 50 ms lag probe."""
    cpu_s: float
    """CPU seconds used since the previous sample."""


@dataclass(frozen=True)
class ClientUse:
    """What one load process spent during the measured window; a merged result keeps one per process."""

    worker: int
    cpu_pct: float | None
    """Median of the per-second share on a CPU (100 = one core); None: no second measured."""
    wait_pct: float | None
    """Median of the per-second share runnable but waiting for a CPU."""
    lag_ms: float | None
    """Median of the per-second worst event-loop lag."""
    cpu_s: float
    """CPU seconds the process used inside the window."""

    @classmethod
    def of(cls, worker: int, seconds: Sequence[SampledSecond], cpu_s: float) -> ClientUse:
        """From one load process's measured seconds (medians over them)."""
        cpus = [x.client_cpu for x in seconds if x.client_cpu is not None]
        waits = [x.client_wait for x in seconds if x.client_wait is not None]
        lags = [x.loop_lag_ms for x in seconds if x.loop_lag_ms is not None]
        return cls(worker, _median(cpus), _median(waits), _median(lags), cpu_s)

    @property
    def busy_pct(self) -> float | None:
        """On a CPU or waiting for one: the share of the time the loop could not wait for the server."""
        return None if self.cpu_pct is None else self.cpu_pct + (self.wait_pct or 0.0)


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


PURE_H2 = ("the pure-Python h2 fallback (the `h2` package) sent the streams: client-bound wherever it runs "
           "(build the compiled engine: libnghttp2-dev, then make setup)")
"""Why an h2 load the compiled engine did not run is client-bound whatever its figures say."""


def bound_reason(uses: list[ClientUse]) -> str | None:
    """Why the client limited the measurement, or None when nothing says it did."""
    reasons = []

    def who(u: ClientUse) -> str:
        return "the client" if len(uses) == 1 else f"client process {u.worker} (of {len(uses)})"

    busy = [u for u in uses if (u.busy_pct or 0.0) >= CPU_BOUND_PCT]
    b = max(busy, key=lambda u: u.busy_pct or 0.0) if busy else None
    if b is not None:
        text = f"{who(b)} was busy {b.busy_pct:.0f}% of the time"
        if (b.wait_pct or 0.0) >= 5:
            text += (f", {b.cpu_pct:.0f}% on its CPU and {b.wait_pct:.0f}% waiting for it "
                     "(something else ran on its core)")
        reasons.append(text)
    lag = [u for u in uses if (u.lag_ms or 0.0) >= LAG_BOUND_MS]
    if lag:
        w = max(lag, key=lambda u: u.lag_ms or 0.0)
        whose = "its" if w is b else ("the client's" if len(uses) == 1 else f"{who(w)}: its")
        reasons.append(f"{whose} event loop lagged {w.lag_ms:,.0f} ms")
    if not reasons:
        return None
    return ("; ".join(reasons) + f" (medians per second; client-bound from {CPU_BOUND_PCT:.0f}% busy "
            f"or {LAG_BOUND_MS:.0f} ms lag)")


def peak_busy(uses: list[ClientUse]) -> float | None:
    """The busiest load process's median busy share (on a CPU or waiting for one)."""
    vals = [b for u in uses if (b := u.busy_pct) is not None]
    return max(vals) if vals else None


def peak_wait(uses: list[ClientUse]) -> float | None:
    vals = [u.wait_pct for u in uses if u.wait_pct is not None]
    return max(vals) if vals else None


def peak_lag(uses: list[ClientUse]) -> float | None:
    vals = [u.lag_ms for u in uses if u.lag_ms is not None]
    return max(vals) if vals else None


def cost_us(uses: list[ClientUse], requests: int) -> float | None:
    """CPU microseconds the client spent per request that ended in the window."""
    if requests <= 0:
        return None
    return sum(u.cpu_s for u in uses) / requests * 1e6


@dataclass(frozen=True)
class Machine:
    """What the advice needs to know about where the client runs."""

    cpus: int
    """CPUs of this machine."""
    server_cpus: int | None
    """CPUs of this machine the server is pinned to (None: not pinned, shares all; 0: it runs on another)."""
    workers: int
    """Load processes used."""
    keepalive: bool


def advice(cost: float | None, m: Machine, lagging: bool = False) -> str:
    """How much the client could send, and what would let it send more."""
    parts = []
    if cost:
        ceiling = m.workers * 1e6 / cost
        parts.append(f"the client spent {cost:,.0f} µs of CPU per request, so {m.workers} load process"
                     f"{'es' if m.workers > 1 else ''} can send at most ~{ceiling:,.0f} req/s: "
                     "the server may be able to serve more than was measured")
    free = m.cpus - m.workers - (m.server_cpus or 0)
    if m.server_cpus is None:
        parts.append("if this machine has cores the server does not use, add load processes there "
                     f"(--workers N --client-cpus LIST; {m.cpus} CPUs here)")
    elif free > 0:
        parts.append(f"give it {free} more core{'s' if free > 1 else ''} with --workers {m.workers + free} "
                     "(and --client-cpus naming cores the server does not use)")
    else:
        parts.append("no core is free on this machine (the server needs its own): the client needs "
                     "another machine's cores")
    if not m.keepalive:
        parts.append("keep connections alive (--keepalive) if the experiment allows it: a new connection "
                     "per request costs the client most of its CPU")
    if lagging:
        parts.append("or use fewer clients: with this many, each pass of the event loop takes long enough "
                     "to delay every request")
    return "; ".join(parts) + "."


def add_advice(doc: LoadSummary, m: Machine) -> LoadSummary:
    """Put the advice into a client-bound summary (`client_advice`)."""
    if doc.get("client_bound"):
        lagging = (doc.get("client_lag_ms") or 0.0) >= LAG_BOUND_MS
        doc["client_advice"] = advice(doc.get("client_cpu_us"), m, lagging)
    return doc


def thread_times() -> tuple[float, float]:
    """(seconds on a CPU, seconds waiting for one) of the calling thread: the
    event loop's own, not the sampler's or an in-process test server's."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            run_ns, wait_ns, _ = f.read().split()
        return int(run_ns) / 1e9, int(wait_ns) / 1e9
    except (OSError, ValueError):  # not Linux: the process's CPU, no wait
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime, 0.0
