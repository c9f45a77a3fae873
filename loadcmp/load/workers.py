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
import gc
import logging
import multiprocessing as mp
import os
import queue
import signal
import traceback
from collections.abc import Iterator
from dataclasses import replace
from multiprocessing.synchronize import Event as ProcessEvent
from typing import Any

import uvloop

from ..errors import LoadcmpError, LoadError, UsageError
from ..units import cpu_list
from .aio import AiohttpEngine
from .driver import Engine, Live, LiveFn, LoadSpec, now
from .http1 import FastEngine
from .limits import check_nofile, raise_nofile
from .recorder import Recorder, Result
from .schedules import Schedule

log = logging.getLogger("loadcmp")

START_DELAY = 0.3
"""Seconds between planning the start and the first request (one process)."""
SPAWN_DELAY = 2.0
"""The same when workers must be spawned first."""
SPREAD_ABOVE = 25000
"""Above this many connections to one address, spread source addresses."""

ENGINES: dict[str, type[Engine[Any]]] = {"fast": FastEngine, "aiohttp": AiohttpEngine}


def make_engine(spec: LoadSpec, live: LiveFn | None = None) -> Engine[Any]:
    if spec.engine not in ENGINES:
        raise UsageError(f"unknown engine {spec.engine!r}: use {' or '.join(ENGINES)}")
    return ENGINES[spec.engine](spec, live)


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

    def stop(self) -> None:
        self.requested = True
        wake = self._wake  # one read: the load may end (and unbind) meanwhile
        if wake is not None:
            with contextlib.suppress(RuntimeError):  # that loop has just closed
                wake[0].call_soon_threadsafe(wake[1].set)


def run_load(
    spec: LoadSpec,
    *,
    workers: int = 1,
    cpus: str | None = None,
    live: LiveFn | None = None,
    stopper: Stopper | None = None,
    start_at: float | None = None,
) -> Result:
    """Run `spec` with `workers` processes (1 = in this process) and merge.

    `start_at` (CLOCK_MONOTONIC) is when the load starts, warm-up included;
    by default a moment from now. The caller may line other samplers up on it.
    """
    if workers < 1:
        raise UsageError("--workers must be >= 1")
    conns = spec.schedule.connections
    if conns > SPREAD_ABOVE and not spec.spread_sources:
        spec = replace(spec, spread_sources=True)
    workers = min(workers, conns)
    check_nofile(conns, workers)
    stopper = stopper or Stopper()
    if workers == 1:
        raise_nofile(conns)
        before = os.sched_getaffinity(0)
        _pin(cpus)
        try:
            return _run_here(spec, start_at or now() + START_DELAY, live, stopper)
        finally:
            if cpus:  # the caller's thread goes on where it was allowed to run before
                os.sched_setaffinity(0, before)
    return _run_workers(spec, workers, cpus, live, stopper, start_at or now() + SPAWN_DELAY)


def _pin(cpus: str | None) -> None:
    if cpus:
        try:
            os.sched_setaffinity(0, cpu_list(cpus))
        except OSError as e:
            raise UsageError(f"cannot pin the client to CPUs {cpus}: {e.strerror}") from None


def _run_here(spec: LoadSpec, t_load0: float, live: LiveFn | None, stopper: Stopper,
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

    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(main())
    finally:
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
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # this process's owner: the parent stops it via stop_ev
    try:
        raise_nofile(spec.schedule.connections)
        _pin(cpus)

        def live(lv: Live) -> None:
            with contextlib.suppress(Exception):
                q.put_nowait(("live", lv))

        result = _run_here(spec, t_load0, live, Stopper(), stop_ev)
        q.put(("result", spec.worker_index, result))
    except BaseException as e:  # report, never hang the parent
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


def _run_workers(spec: LoadSpec, n: int, cpus: str | None, live: LiveFn | None, stopper: Stopper,
                 t_load0: float) -> Result:
    ctx = mp.get_context("spawn")
    q: Any = ctx.Queue()
    stop_ev = ctx.Event()
    parts: list[Schedule] = list(spec.schedule.split(n))
    procs = []
    try:
        for i, part in enumerate(parts):
            p = ctx.Process(
                target=_worker_main,
                args=(replace(spec, schedule=part, worker_index=i), t_load0, cpus, q, stop_ev),
                daemon=True,
            )
            p.start()
            procs.append(p)
        results: dict[int, Result] = {}
        failures: list[LoadcmpError] = []
        latest: dict[int, Live] = {}
        deadline = t_load0 + spec.warmup + spec.duration + 30
        while len(results) + len(failures) < len(procs):
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
                    live(_sum_live(list(latest.values())))
            elif msg[0] == "result":
                results[msg[1]] = msg[2]
            else:
                failures.append(_worker_failed(*msg[1:]))
        if failures:
            raise failures[0]
        if len(results) < len(procs) and not stopper.requested:
            raise LoadError("load worker failed: a worker exited without a result")
        # Interrupted: a worker that the terminal's Ctrl-C caught while it was still
        # starting (before it could ignore SIGINT) has nothing to send; merge the rest.
        measured = [results[i] for i in sorted(results)]
        merged = Result.merge(measured) if measured else Recorder(t_load0 + spec.warmup, spec.duration).close(0.0)
        if stopper.requested:
            merged.interrupted = True
        return merged
    finally:
        stop_ev.set()
        for p in procs:
            p.join(timeout=3)
            if p.is_alive():
                p.kill()


def _sum_live(vals: list[Live]) -> Live:
    cpus = [v.client_cpu for v in vals if v.client_cpu is not None]
    lags = [v.lag_ms for v in vals if v.lag_ms is not None]
    shares = [v.requests for v in vals if v.requests is not None]
    return Live(max(v.elapsed for v in vals), sum(v.ok for v in vals), sum(v.failed for v in vals),
                sum(v.inflight for v in vals), sum(v.rps for v in vals), vals[0].measuring,
                client_cpu=max(cpus) if cpus else None, lag_ms=max(lags) if lags else None,
                requests=sum(shares) if shares else None)
