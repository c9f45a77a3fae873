"""Run a load in this process or in several, and merge what they measured.

Every worker runs its share of the schedule against the same window: the
parent picks the start time on CLOCK_MONOTONIC, which all processes share, so
per-second buckets line up and merge exactly.

Each load owns one event loop for its duration (`asyncio.Runner` with uvloop),
closed before `run_load` returns. Nothing here installs a signal handler: the
command that runs the load owns SIGINT and calls `Stopper.stop()`, which is
safe from a plain signal handler at any time. Worker processes ignore SIGINT
(a terminal's Ctrl-C reaches the whole process group); the parent tells them
through an Event and they stop within a tenth of a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import multiprocessing as mp
import os
import queue
import signal
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from multiprocessing.synchronize import Event as ProcessEvent
from typing import Any, Protocol

import uvloop

from ...errors import LoadcmpError, LoadError, UsageError
from ...units import cpu_list
from ..driver import Live, LiveFn, LoadSpec, now, wants_seconds
from ..engines import make_engine
from .limits import check_nofile, conntrack_drops, conntrack_note, raise_nofile
from ..record.recorder import Recorder, Result, Second
from ..schedules import Closed, Schedule

log = logging.getLogger("loadcmp")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""What asks a load to stop and keep what it measured: Ctrl-C, `timeout` or a cancelled job, a closed terminal."""

START_DELAY = 0.3
"""Seconds between planning the start and the first request (one process)."""
SPAWN_DELAY = 2.0
"""The same when workers must be spawned first."""
SPREAD_ABOVE = 25000
"""Above this many connections to one address, spread source addresses."""
GIL_SWITCH_S = 0.0005
"""The GIL's switch interval while a load runs in this process. The compiled loop holds
the GIL but for its callbacks' ends, and another thread of the process (the server
sampler, the live display) waits this long before it asks for it, at each of its
reads: at CPython's 5 ms a sample of the server took up to a second here, at 0.5 ms
~0.1 s."""


class Stopper:
    """A stop request that a signal handler, a test or a parent can make.

    `stop()` may come at any moment, also between two loads: it sets a flag
    (which the multi-process parent and the runner poll) and, while a load runs
    in this process, wakes its loop with `call_soon_threadsafe`, which is what
    asyncio.Runner's own SIGINT handler does from a plain signal handler too.
    """

    def __init__(self) -> None:
        self._wake: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        self.requested = False
        self.signum = signal.SIGINT.value
        """The signal that asked first (SIGINT when a test or a parent asked)."""

    @contextlib.contextmanager
    def bound(self, event: asyncio.Event) -> Iterator[None]:
        """While a load runs on this thread's loop, `stop()` also sets `event`."""
        self._wake = (asyncio.get_running_loop(), event)
        try:
            if self.requested:
                event.set()
            yield
        finally:
            self._wake = None

    def stop(self, signum: int | None = None) -> None:
        if not self.requested and signum is not None:
            self.signum = signum
        self.requested = True
        wake = self._wake  # one read: the load may end (and unbind) meanwhile
        if wake is not None:
            with contextlib.suppress(RuntimeError):  # that loop has just closed
                wake[0].call_soon_threadsafe(wake[1].set)


@dataclass
class Gathered:
    """What the shares of a load sent back: results by share, errors, and the shares lost
    (a worker that died or left), each described for the user."""

    results: dict[int, Result] = field(default_factory=dict)
    failures: list[LoadcmpError] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)


class Fleet(Protocol):
    """Where the shares of a load run: processes here (`Processes`) or a Dask cluster
    (`cluster.DaskFleet`). Both hand back a `Gathered`; `run_load` merges it."""

    @property
    def size(self) -> int:
        """How many shares it runs at once."""
        ...

    start_delay: float
    """Seconds between planning the start and the first request."""

    def run_shares(self, shares: list[LoadSpec], t_load0: float, cpus: str | None, live: LiveFn | None,
                   stopper: Stopper) -> Gathered: ...

    def describe(self) -> dict[str, Any]:
        """What it is, for run.json."""
        ...


def run_load(
    spec: LoadSpec,
    *,
    workers: int = 1,
    cpus: str | None = None,
    live: LiveFn | None = None,
    stopper: Stopper | None = None,
    start_at: float | None = None,
    fleet: Fleet | None = None,
) -> Result:
    """Run `spec` with `workers` processes (1 = in this process), or over `fleet`, and merge.

    `start_at` (CLOCK_MONOTONIC) is when the load starts, warm-up included;
    by default a moment from now. The caller may line other samplers up on it.
    """
    if workers < 1:
        raise UsageError("--workers must be >= 1")
    conns = spec.schedule.connections
    if wants_seconds(live):
        spec = replace(spec, live_seconds=True)
    if conns > SPREAD_ABOVE and not spec.spread_sources:
        spec = replace(spec, spread_sources=True)
    n = min(fleet.size if fleet is not None else workers, conns)
    check_nofile(conns, n)
    stopper = stopper or Stopper()
    dropped = conntrack_drops()
    if fleet is None and n == 1:
        raise_nofile(conns)
        before = os.sched_getaffinity(0)
        pin(cpus)
        try:
            result = run_here(spec, start_at or now() + START_DELAY, live, stopper)
        finally:
            if cpus:  # the caller's thread goes on where it was allowed to run before
                os.sched_setaffinity(0, before)
    else:
        fleet = fleet or Processes(n)
        shares = split_spec(spec, n)
        t_load0 = start_at if start_at is not None else now() + fleet.start_delay
        result = _merge(fleet.run_shares(shares, t_load0, cpus, live, stopper), spec, t_load0, stopper)
    note = conntrack_note(dropped, conntrack_drops())
    if note:
        result.warnings.append(note)
    return result


def split_spec(spec: LoadSpec, n: int) -> list[LoadSpec]:
    """The load's shares, one per worker: its schedule split, and its pages' sequence dealt as the split deals
    the requests (`Pages.shares`), so that a count of requests sends each position of it once."""
    parts: list[Schedule] = list(spec.schedule.split(n))
    counts = [part.requests if isinstance(part, Closed) else None for part in parts]
    pages = None if spec.pages is None else spec.pages.shares(counts)
    return [replace(spec, schedule=part, worker_index=i, pages=None if pages is None else pages[i])
            for i, part in enumerate(parts)]


def _merge(g: Gathered, spec: LoadSpec, t_load0: float, stopper: Stopper) -> Result:
    """One result from the shares': an error of one is the load's; a lost share is said, never hidden."""
    if g.failures:
        raise g.failures[0]
    measured = [g.results[i] for i in sorted(g.results)]
    if not measured and g.lost and not stopper.requested:
        raise LoadError("every load worker was lost: " + "; ".join(g.lost))
    # Interrupted: a worker that the terminal's Ctrl-C caught while it was still
    # starting (before it could ignore SIGINT) has nothing to send; merge the rest.
    merged = Result.merge(measured) if measured else Recorder(t_load0 + spec.warmup, spec.duration).close(0.0)
    merged.lost = list(g.lost)
    for what in g.lost:
        merged.warnings.append(f"partial: {what}")
    if stopper.requested:
        merged.interrupted = True
    return merged


def pin(cpus: str | None) -> None:
    if cpus:
        try:
            os.sched_setaffinity(0, cpu_list(cpus))
        except OSError as e:
            raise UsageError(f"cannot pin the client to CPUs {cpus}: {e.strerror}") from None


def run_here(spec: LoadSpec, t_load0: float, live: LiveFn | None, stopper: Stopper,
              stop_ev: ProcessEvent | None = None) -> Result:
    """One load on a loop of its own; `stop_ev` (a worker's) is polled too."""

    async def main() -> Result:
        stop = asyncio.Event()
        watch = asyncio.ensure_future(_watch(stop_ev, stop)) if stop_ev is not None else None
        try:
            with stopper.bound(stop):
                return await make_engine(spec, live).run(t_load0, stop)
        finally:
            if watch is not None:
                watch.cancel()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, GIL_SWITCH_S))
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(main())
    finally:
        sys.setswitchinterval(interval)
        # Finalise what the run left (sockets of aborted transports) now, while no
        # new socket can have taken their descriptor numbers: a late finaliser
        # closing a reused fd would silently cut off the next run's connection.
        gc.collect()


async def _watch(stop_ev: ProcessEvent, stop: asyncio.Event) -> None:
    """A worker's stop: the parent sets `stop_ev` (polled, it is not awaitable)."""
    while not stop_ev.is_set():
        await asyncio.sleep(0.1)
    stop.set()


def _worker_main(spec: LoadSpec, t_load0: float, cpus: str | None, q: Any, stop_ev: ProcessEvent) -> None:
    """Entry point of a worker process: run the share, send the result back."""
    for sig in STOP_SIGNALS:  # this process's owner, the parent, stops it via stop_ev
        signal.signal(sig, signal.SIG_IGN)
    try:
        raise_nofile(spec.schedule.connections)
        pin(cpus)

        def live(lv: Live) -> None:
            with contextlib.suppress(Exception):
                q.put_nowait(("live", lv))

        result = run_here(spec, t_load0, live, Stopper(), stop_ev)
        q.put(("result", spec.worker_index, result))
    except BaseException as e:  # noqa: BLE001 — whatever ends a worker is reported, or the parent would hang
        known = e if isinstance(e, LoadcmpError) else None
        q.put(("error", spec.worker_index, known, f"{type(e).__name__}: {e}", traceback.format_exc()))


class WorkerTraceback(Exception):
    """A worker's traceback, as text: the cause of the parent's LoadError."""


def _worker_failed(index: int, known: LoadcmpError | None, line: str, tb: str) -> LoadcmpError:
    """The parent's error for a worker's: the user's own errors as they were,
    anything else named as a bug, with the worker's traceback attached."""
    log.debug("load worker %d failed:\n%s", index, tb)
    if known is not None:
        return known
    err = LoadError(f"load worker {index} crashed, a bug in loadcmp: {line} (run with --debug for its traceback)")
    err.__cause__ = WorkerTraceback(tb)
    return err


class Processes:
    """Shares in worker processes of this machine (`--workers N`), started with spawn."""

    start_delay = SPAWN_DELAY

    def __init__(self, size: int) -> None:
        self.size = size

    def describe(self) -> dict[str, Any]:
        return {"processes": self.size}

    def run_shares(self, shares: list[LoadSpec], t_load0: float, cpus: str | None, live: LiveFn | None,
                   stopper: Stopper) -> Gathered:
        ctx = mp.get_context("spawn")
        q: Any = ctx.Queue()
        stop_ev = ctx.Event()
        procs = []
        got = Gathered()
        try:
            for share in shares:
                p = ctx.Process(target=_worker_main, args=(share, t_load0, cpus, q, stop_ev), daemon=True)
                p.start()
                procs.append(p)
            latest: dict[int, Live] = {}
            spec = shares[0]
            deadline = t_load0 + spec.warmup + spec.duration + 30
            while len(got.results) + len(got.failures) < len(procs):
                if stopper.requested:
                    stop_ev.set()
                try:
                    msg = q.get(timeout=0.1)
                except queue.Empty:
                    if now() > deadline or not any(p.is_alive() for p in procs) and q.empty():
                        break
                    continue
                if msg[0] == "live":
                    lv: Live = msg[1]
                    latest[lv.worker] = lv
                    if live is not None and len(latest) == len(procs):
                        live(sum_live(list(latest.values())))
                elif msg[0] == "result":
                    got.results[msg[1]] = msg[2]
                else:
                    got.failures.append(_worker_failed(*msg[1:]))
            if not stopper.requested:
                for i, p in enumerate(procs):
                    if i not in got.results:
                        got.lost.append(f"load worker {i} (pid {p.pid}) ended without a result (exit code "
                                        f"{p.exitcode}); the requests of its {shares[i].schedule.connections:,} "
                                        "clients are missing from these figures")
            return got
        finally:
            stop_ev.set()
            for p in procs:
                p.join(timeout=3)
                if p.is_alive():
                    p.kill()


def sum_live(vals: list[Live]) -> Live:
    cpus = [v.client_cpu for v in vals if v.client_cpu is not None]
    lags = [v.lag_ms for v in vals if v.lag_ms is not None]
    shares = [v.requests for v in vals if v.requests is not None]
    return Live(max(v.elapsed for v in vals), sum(v.ok for v in vals), sum(v.failed for v in vals),
                sum(v.inflight for v in vals), sum(v.rps for v in vals), vals[0].measuring,
                client_cpu=max(cpus) if cpus else None, lag_ms=max(lags) if lags else None,
                requests=sum(shares) if shares else None, closed=_merged_seconds(vals), warmup=vals[0].warmup,
                warmup_started=sum(v.warmup_started for v in vals))


def _merged_seconds(vals: list[Live]) -> tuple[tuple[int, Second], ...]:
    """The seconds every share has closed in its latest Live, merged as `Result.merge` merges them (a second
    one share closed in an earlier Live is left to the stored rows at the trial's end)."""
    held = [dict(v.closed) for v in vals]
    common = sorted(set(held[0]).intersection(*held[1:]))
    return tuple((j, functools.reduce(Second.merge, [h[j] for h in held])) for j in common)
