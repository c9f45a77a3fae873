"""Run a load in this process or in several, and merge what they measured.

Every worker runs its share of the schedule against the same window: the
parent picks the start time on CLOCK_MONOTONIC, which all processes share, so
per-second buckets line up and merge exactly. Ctrl-C reaches the parent only;
it tells the workers through an Event and they stop within a tenth of a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import multiprocessing as mp
import os
import queue
import resource
import signal
from dataclasses import replace
from typing import Any

from ..errors import LoadError, UsageError
from ..units import cpu_list
from .engine import Live, LiveFn, LoadSpec, clients_of, make_engine, now, raise_nofile
from .recorder import Result
from .schedules import Schedule

START_DELAY = 0.3
"""Seconds between planning the start and the first request (one process)."""
SPAWN_DELAY = 2.0
"""The same when workers must be spawned first."""
SPREAD_ABOVE = 25000
"""Above this many connections to one address, spread source addresses."""


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop is a dependency
        return asyncio.new_event_loop()


def _pin(cpus: str | None) -> None:
    if cpus:
        try:
            os.sched_setaffinity(0, cpu_list(cpus))
        except OSError as e:
            raise UsageError(f"cannot pin the client to CPUs {cpus}: {e.strerror}") from None


class Stopper:
    """A stop request that a signal handler, a test or a parent can make."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self.requested = False

    def bind(self, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        self._loop, self._event = loop, event
        if self.requested:
            loop.call_soon_threadsafe(event.set)

    def stop(self) -> None:
        self.requested = True
        if self._loop is not None and self._event is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._event.set)


def run_load(
    spec: LoadSpec,
    *,
    workers: int = 1,
    cpus: str | None = None,
    live: LiveFn | None = None,
    stopper: Stopper | None = None,
    handle_sigint: bool = True,
    start_at: float | None = None,
) -> Result:
    """Run `spec` with `workers` processes (1 = in this process) and merge.

    `start_at` (CLOCK_MONOTONIC) is when the load starts, warm-up included;
    by default a moment from now. The caller may line other samplers up on it.
    """
    if workers < 1:
        raise UsageError("--workers must be >= 1")
    conns = clients_of(spec.schedule)
    if conns > SPREAD_ABOVE and not spec.spread_sources:
        spec = replace(spec, spread_sources=True)
    workers = min(workers, conns)
    if workers == 1:
        raise_nofile(conns + 64)
        _pin(cpus)
        return _run_here(spec, start_at or now() + START_DELAY, live, stopper or Stopper(), handle_sigint)
    per = -(-conns // workers)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and per + 64 > hard:
        need = -(-conns // max(1, hard - 64))
        raise LoadError(
            f"{per} clients per worker need about {per + 64} open files; this machine allows {hard}: use --workers {need}"
        )
    return _run_workers(spec, workers, cpus, live, stopper or Stopper(), handle_sigint, start_at)


def _run_here(spec: LoadSpec, t_load0: float, live: LiveFn | None, stopper: Stopper, handle_sigint: bool) -> Result:
    loop = _new_loop()
    try:
        asyncio.set_event_loop(loop)
        stop = asyncio.Event()
        stopper.bind(loop, stop)
        if handle_sigint:
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.add_signal_handler(signal.SIGINT, stopper.stop)
        engine = make_engine(spec, live)
        return loop.run_until_complete(engine.run(t_load0, stop))
    finally:
        with contextlib.suppress(Exception):
            loop.remove_signal_handler(signal.SIGINT)
        asyncio.set_event_loop(None)
        loop.close()
        # Finalise what the run left (sockets of aborted transports) now, while no
        # new socket can have taken their descriptor numbers: a late finaliser
        # closing a reused fd would silently cut off the next run's connection.
        gc.collect()


def _worker_main(spec: LoadSpec, t_load0: float, cpus: str | None, q: Any, stop_ev: Any) -> None:
    """Entry point of a worker process: run the share, send the result back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        raise_nofile(clients_of(spec.schedule) + 64)
        _pin(cpus)
        stopper = Stopper()

        def live(lv: Live) -> None:
            with contextlib.suppress(Exception):
                q.put_nowait(("live", lv))

        loop = _new_loop()
        asyncio.set_event_loop(loop)

        async def main() -> Result:
            stop = asyncio.Event()
            stopper.bind(loop, stop)

            async def watch() -> None:
                while not stop_ev.is_set():
                    await asyncio.sleep(0.1)
                stop.set()

            w = asyncio.ensure_future(watch())
            try:
                return await make_engine(spec, live).run(t_load0, stop)
            finally:
                w.cancel()

        result = loop.run_until_complete(main())
        loop.close()
        q.put(("result", spec.worker_index, result))
    except BaseException as e:  # report, never hang the parent
        q.put(("error", spec.worker_index, f"{type(e).__name__}: {e}"))


def _run_workers(spec: LoadSpec, n: int, cpus: str | None, live: LiveFn | None, stopper: Stopper, handle_sigint: bool,
                 start_at: float | None = None) -> Result:
    ctx = mp.get_context("spawn")
    q: Any = ctx.Queue()
    stop_ev = ctx.Event()
    parts: list[Schedule] = list(spec.schedule.split(n))
    t_load0 = start_at or now() + SPAWN_DELAY
    procs = []
    old = None
    if handle_sigint:
        with contextlib.suppress(ValueError):
            def on_sigint(*_: Any) -> None:
                stopper.stop()
                stop_ev.set()

            old = signal.signal(signal.SIGINT, on_sigint)
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
        errors: list[str] = []
        latest: dict[int, Live] = {}
        deadline = t_load0 + spec.warmup + spec.duration + 30
        while len(results) + len(errors) < len(procs):
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
                    vals = list(latest.values())
                    live(Live(max(v.elapsed for v in vals), sum(v.ok for v in vals), sum(v.failed for v in vals),
                              sum(v.inflight for v in vals), sum(v.rps for v in vals), vals[0].measuring))
            elif msg[0] == "result":
                results[msg[1]] = msg[2]
            else:
                errors.append(f"worker {msg[1]}: {msg[2]}")
        if errors or len(results) < len(procs):
            raise LoadError("load worker failed: " + ("; ".join(errors) or "a worker exited without a result"))
        merged = Result.merge([results[i] for i in sorted(results)])
        if stopper.requested:
            merged.interrupted = True
        return merged
    finally:
        stop_ev.set()
        for p in procs:
            p.join(timeout=3)
            if p.is_alive():
                p.kill()
        if old is not None:
            signal.signal(signal.SIGINT, old)
