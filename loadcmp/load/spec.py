"""What an engine is given (`LoadSpec`) and what it says once a second (`Live`).

Kept apart from the driver that runs them: workers pickle a spec to their process, and the
live page and the terminal read `Live` without the engines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .pacing import Pacing
from .pageset import Pages
from .record.recorder import Second
from .record.saturation import CPU_BOUND_PCT, LAG_BOUND_MS
from .schedules import Schedule
from .target import Target

DEFAULT_TIMEOUT = 10.0
"""Per-request timeout (connect + response) unless --timeout says otherwise."""


class OwnEngine(Protocol):
    """What `LoadSpec.traffic` is: a plan that makes its own engine and says what it sends (picklable: workers
    get it). The engine is `driver.Engine`, which imports this module: it is named `object` here, and
    `engines.make_engine` says which it is."""

    def engine(self, spec: LoadSpec, live: LiveFn | None = None) -> object: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class LoadSpec:
    """Everything one engine needs; picklable, so workers get their share."""

    target: Target
    schedule: Schedule
    duration: float
    warmup: float = 0.0
    timeout: float = DEFAULT_TIMEOUT
    engine: str = "fast"
    traffic: OwnEngine | None = None
    """A traffic source that brings its own engine, as the traffic package planned it (journeys:
    `traffic.sessions.JourneyPlan`): its `engine(spec, live)` makes the engine (`engines.make_engine`)."""
    spread_sources: bool = False
    """Bind client sockets to 127.0.0.2.. so more than ~28000 connections fit."""
    worker_index: int = 0
    live_seconds: bool = False
    """Hand each closed second to the live callback (`Live.closed`): only when a live page watches
    (`wants_seconds`), so nobody builds and pickles them every second for nothing."""
    pages: Pages | None = None
    """Several pages (a mix, a replayed log): what each request sends, in a sequence prepared beforehand, and
    each page recorded on its own; None: every request is `target`'s, recorded as the load's only."""
    trace: float = 0.0
    """--trace: the share of requests that carry a traceparent header and are kept as rows (`--trace-sample`,
    docs/tracing.md); 0: none."""
    pacing: Pacing | None = None
    """How each client behaves (`--think`, `--send-rate`, `--read-rate`); None: as fast as it can."""


@dataclass
class Live:
    """What the live line shows; one per engine per second."""

    elapsed: float
    ok: int
    failed: int
    inflight: int
    rps: float
    measuring: bool
    worker: int = 0
    client_cpu: float | None = None
    """This second's busy share of the load thread (on a CPU or waiting for one); several: the busiest."""
    lag_ms: float | None = None
    """This second's worst event-loop lag."""
    requests: int | None = None
    """-n: the requests to send in all (the live line shows ok + failed of them)."""
    closed: tuple[tuple[int, Second], ...] = ()
    """The window's seconds closed since the last Live, by index: the same objects the Result keeps, which
    `summary.second_row` turns into timeline.parquet's rows (the live page's per-second records)."""
    warmup: float = 0.0
    """The load's warm-up in seconds (`LoadSpec.warmup`): the live page draws the seconds before the window."""
    warmup_started: int = 0
    """The requests started in the warm-up so far (`Recorder.warmup_started`): the live page's warm-up seconds."""

    def client_text(self) -> tuple[str, bool]:
        """'client busy 97%' and whether that says the client is the bottleneck."""
        if self.client_cpu is None:
            return "", False
        hot = self.client_cpu >= CPU_BOUND_PCT or (self.lag_ms or 0.0) >= LAG_BOUND_MS
        text = f"client busy {self.client_cpu:3.0f}%"
        if (self.lag_ms or 0.0) >= LAG_BOUND_MS:
            text += f", loop lag {self.lag_ms:,.0f} ms"
        return text + (" (at its limit)" if hot else ""), hot


LiveFn = Callable[[Live], None]


def wants_seconds(live: LiveFn | None) -> bool:
    """A live callback that draws the window's seconds says so (`cli.live.tee` does); the terminal's line
    does not need them."""
    return bool(getattr(live, "wants_seconds", False))

