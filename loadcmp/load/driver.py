"""The driver: one schedule, one process, one window; the engines only send.

`Engine` runs a load from its start time: it opens the engine, starts the
schedule's loop (closed clients, ramp users or the open-rate ticker), measures
`duration` after the warm-up, and stops on time, when told, or (-n) once its
share of the requests has been sent and answered. Once a second it
folds the recorder, samples the client's CPU and event-loop lag, and feeds the
live line; at the end it warns when the client itself was the bottleneck.
Subclasses (the engines `engines.py` registers: `h1.engine.FastEngine`, `h1.aio.AiohttpEngine`, `h2.engine.H2Engine`,
`h3.engine.H3Engine`) say how one request goes.
"""

from __future__ import annotations

import asyncio
import gc
import math
import time
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

from ..errors import LoadcmpError, LoadError
from .record.outcomes import OK, TLS_ERROR
from .pageset import NO_PAGE, Cursor
from .record.recorder import Began, Recorder, Result, Second, TlsTally
from .record.saturation import ClientSample, ClientUse, thread_times
from .schedules import Closed, Ramp, Rate, Replay
from .spec import DEFAULT_TIMEOUT, Live, LiveFn, LoadSpec, wants_seconds

__all__ = ["DEFAULT_TIMEOUT", "BACKOFF_S", "Engine", "Live", "LiveFn", "LoadSpec", "now", "wants_seconds"]
"""LoadSpec and Live are re-exported: the engines' callers import them from here."""

now = time.monotonic
"""CLOCK_MONOTONIC: shared by all processes, so workers line up their seconds."""

TICK_AFTER_S = 0.02
"""The ticker samples this long after each second ends, so timer jitter cannot move a sample into the next second."""
BACKOFF_S = 0.01
"""Pause of a client after an error of its own (EMFILE ...), so that it does not spin."""

USER: ContextVar[list[bool] | None] = ContextVar("loadcmp_user", default=None)
"""The user a closed client's or a ramp user's task sends for (`Recorder.user`): `_record` marks its answers."""

_DRAWN: ContextVar[int] = ContextVar("loadcmp_drawn", default=-1)
"""The request the rate loop drew for one of its tasks when it was due (`_rate_loop`); each task runs in a
copy of the context, so it is that task's alone, whatever its engine awaits before it draws. -1: none."""


S = TypeVar("S")
"""What a client keeps between its requests (the fast engine: its slot)."""


class Engine(Generic[S]):
    """Drives a schedule; subclasses say how one request is sent."""

    name = "base"
    carries_warmup = False
    """Its requests begun in the warm-up are counted when they end in the window (`Recorder.begin`), and its
    users' answers are marked (`Recorder.user`): the engines whose every answer reaches `_record` or marks its
    user itself (h1's); the others count from the window's start and say nothing of their users."""

    def __init__(self, spec: LoadSpec, live: LiveFn | None = None) -> None:
        self.spec = spec
        self.target = spec.target
        self.timeout = spec.timeout
        self.live = live
        self.running = False
        self.rec: Recorder | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.is_head = spec.target.method == "HEAD"
        self.t_load0 = 0.0
        self.count_start: Callable[[float], bool] = self._not_counted
        self._run_prev = self._wait_prev = self._wall_prev = 0.0
        self._lag_max = 0.0
        self.cpu_s = 0.0
        """CPU seconds of the load thread inside the window."""
        self.t_end = 0.0
        """When the window closes: no request starts at or after it."""
        self.budget = spec.schedule.requests if isinstance(spec.schedule, Closed) else None
        """-n: this process's share of the requests; each start takes a ticket (`Recorder.start`, or
        the compiled loop's own count)."""
        self._stopping = asyncio.Event()
        self._failure: BaseException | None = None
        self.cursor = Cursor(spec.pages) if spec.pages is not None else None
        """A load of several pages: the next request's place in their sequence (`next_request`)."""
        self._drawn_ahead = False
        """The rate loop draws each request when it is due (`_DRAWN`); the other loops when they send it."""

    def next_request(self) -> int:
        """The index of the request to send next (`Pages.targets`; 0 for a load of one page): in a rate
        loop's task, the one drawn for it when it was due, so drops and sends keep the sequence's order."""
        if self.cursor is None:
            return 0
        if self._drawn_ahead and (req := _DRAWN.get()) >= 0:
            _DRAWN.set(-1)
            return req
        return self.cursor.next()

    @staticmethod
    def _not_counted(t: float) -> bool:
        """`count_start` before a run: nothing counts."""
        return False

    # --- what an engine provides --------------------------------------------------
    async def request(self, t_intended: float, counted: bool, state: S | None) -> S | None:
        """Send one request intended to start at t_intended; record it if counted;
        return what the client keeps for its next request (None: nothing)."""
        raise NotImplementedError

    def reusable(self, state: S | None) -> bool:
        """May `state` serve another client's next request (an open connection)?"""
        return False

    def release(self, state: S | None) -> None:
        """A client's state will not be used again."""

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    def abort_all(self) -> None:
        """Drop every connection now (the window has closed)."""

    def settle(self) -> None:
        """Hand the recorder what the engine still holds (what the compiled loop
        counted in C): once a second, and just before the window is closed."""

    def crashed(self, e: BaseException) -> None:
        """A client failed outside a task (a loop callback): stop the load, which
        then fails rather than reporting the requests the dead client never sent."""
        if self._failure is None:
            self._failure = e
        self._stopping.set()

    def may_start(self, t: float) -> bool:
        """May a request start at `t`? Not once the window has closed, even when
        a lagging loop gets to it late: it could only end as unfinished. Nor
        without a ticket left (-n): no ticket, no request."""
        if not (self.running and t < self.t_end):
            return False
        # the hot path (every request): without -n no call into the recorder
        return self.budget is None or self.rec is None or self.rec.ticket_left(t)

    def window_open(self, t: float) -> bool:
        """May a request that has its ticket go out at `t` (after its connect)?"""
        return self.running and t < self.t_end

    def _handshake_seen(self, transport: Any) -> None:
        """What a counted request's new connection's handshake negotiated, and whether it resumed (the
        pure-Python paths; the compiled loop counts it in C)."""
        obj = transport.get_extra_info("ssl_object") if transport is not None else None
        if obj is not None and self.rec is not None:
            reused = bool(obj.session_reused)
            cipher = obj.cipher()
            seen = (obj.version() or "", cipher[0] if cipher else "", obj.selected_alpn_protocol() or "")
            self.rec.add_tls(int(not reused), int(reused), {seen: 1})

    # --- one request's end ---------------------------------------------------------
    def _record(self, counted: bool, kind: int, t_intended: float, t_sent: float, nbytes: int = 0,
                client_error: str | None = None, status: int = 0, began: Began | None = None, req: int = 0) -> bool:
        """Record a request that ended now (if it counted) as its page (`req`: its index in the pages'
        requests), naming the client's own error if there was one (of a tls_error: its reason); True when the
        client should back off."""
        reason, client_error = (client_error, None) if kind == TLS_ERROR else (None, client_error)
        if counted:
            rec = self.rec
            assert rec is not None
            t = now()
            if client_error is not None and (t_intended >= rec.t0 or t >= rec.t0):  # not a warm-up's own
                rec.client_error(client_error)
            if reason is not None and t < rec.end:  # as `done` counts the failure
                rec.tls_error(reason)
            page, expect = self.page_of(req)
            rec.done(kind, t_intended, t_sent, t, nbytes, status, None if began is None else (*began, t), page, expect)
            rec.heard(USER.get(), kind, t)
        return client_error is not None

    def page_names(self) -> tuple[str, ...]:
        """The pages the recorder keeps apart (none for a load of one page); an engine of journeys: its steps."""
        return self.spec.pages.names if self.spec.pages is not None else ()

    def page_of(self, req: int) -> tuple[int, int]:
        """Request `req`'s page and the status it is expected to answer (0: any); a load of one page: none."""
        c = self.cursor
        return (NO_PAGE, 0) if c is None else (c.page_of[req], c.expect[req])

    # --- the run -------------------------------------------------------------------
    async def run(self, t_load0: float, stop: asyncio.Event | None = None) -> Result:
        """Load from t_load0 (warm-up first), measure `duration`, then stop."""
        spec = self.spec
        self.t_load0 = t_load0
        t0 = t_load0 + spec.warmup
        self.rec = Recorder(t0, spec.duration, self.budget, self.page_names())
        self.rec.tls = TlsTally() if spec.target.scheme == "https" else None
        self.count_start = self.rec.begin if self.carries_warmup else self.rec.start
        """A request begins at `t`; whether it is counted (the schedules' loops call it)."""
        gc.freeze()  # what exists now (modules, the plan) is not walked by each collection during the load
        try:
            return await self._run(t0, stop or asyncio.Event())
        finally:
            gc.unfreeze()

    async def _run(self, t0: float, stopping: asyncio.Event) -> Result:
        spec, t_load0 = self.spec, self.t_load0
        assert self.rec is not None
        self._stopping = stopping
        await self.open()
        await asyncio.sleep(max(0.0, t_load0 - now() - 0.002))
        while now() < t_load0:  # the loop's timers are only ms-exact; the window must not start early
            await asyncio.sleep(0)
        self.running = True
        (self._run_prev, self._wait_prev), self._wall_prev = thread_times(), now()
        ticker = asyncio.ensure_future(self._ticker(t0))
        lagger = asyncio.ensure_future(self._lag_probe())
        end = self.t_end = t0 + spec.duration
        spec.schedule.start(self)
        start_s = now() - t_load0
        interrupted = await self._until_end(stopping, end)
        t_stop = now()
        self.running = False
        self._last_sample(t_stop, t0)
        measured = max(0.0, min(spec.duration, t_stop - t0))
        self.settle()
        result = self.rec.close(measured if interrupted else None)
        result.interrupted = interrupted
        ticker.cancel()
        lagger.cancel()
        for t in list(self.tasks):
            t.cancel()
        self.abort_all()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=2.0)
        await self.close()
        result.start_s, result.teardown_s = round(start_s, 3), round(now() - t_stop, 3)
        if (f := self._failure) is not None:
            raise (f if isinstance(f, LoadcmpError)  # a load stopped on purpose (the wrong protocol) says why itself
                   else LoadError(f"a load client failed, a bug in loadcmp: {type(f).__name__}: {f}")) from f
        result.client_use = [ClientUse.of(spec.worker_index, result.seconds, self.cpu_s)]
        if result.client_errors:
            errs = ", ".join(f"{k} x{v}" for k, v in result.client_errors.items())
            result.warnings.append(f"errors of the client's own, each counted as a failure (connect_refused for its "
                                   f"sockets and ports, reset for the rest): {errs}")
        return result

    async def _until_end(self, stopping: asyncio.Event, end: float) -> bool:
        """Wait for the window's close, the last answer of -n, or a stop; True: stopped."""
        rec = self.rec
        assert rec is not None
        spent = asyncio.Event()
        rec.on_spent = spent.set
        waits = [asyncio.ensure_future(stopping.wait()), asyncio.ensure_future(spent.wait())]
        await asyncio.wait(waits, timeout=max(0.0, end - now()), return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
        return stopping.is_set() and not rec.spent

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        t = asyncio.ensure_future(coro)
        self.tasks.add(t)
        t.add_done_callback(self._task_done)

    def _task_done(self, t: asyncio.Task[Any]) -> None:
        """A client's task ended: one that raised stops the load, which then
        fails rather than reporting the requests the dead client never sent."""
        self.tasks.discard(t)
        if t.cancelled() or t.exception() is None:
            return
        self.crashed(t.exception())  # type: ignore[arg-type]

    # --- the schedules' loops (schedules.Driver) ------------------------------------
    def start_closed(self, schedule: Closed) -> None:
        for _ in range(schedule.connections):
            self._spawn(self._closed_client())

    def start_ramp(self, schedule: Ramp) -> None:
        for user in range(schedule.users):
            self._spawn(self._ramp_user(schedule, user))

    def start_rate(self, schedule: Rate | Replay) -> None:
        self._spawn(self._rate_loop(schedule))

    async def _closed_client(self) -> None:
        state = None
        assert self.rec is not None
        if self.carries_warmup:
            USER.set(self.rec.user())
        while self.may_start(t := now()):
            state = await self.request(t, self.count_start(t), state)

    async def _ramp_user(self, sched: Ramp, user: int) -> None:
        rec = self.rec
        assert rec is not None
        due = self.t_load0 + sched.start_offset(user)
        state = None
        while self.running:
            delay = due - now()
            if delay > 0:
                await asyncio.sleep(delay)
            if not self.may_start(max(due, now())):
                return
            if self.carries_warmup and USER.get() is None:  # a user from its first request
                USER.set(rec.user())
            state = await self.request(due, self.count_start(due), state)
            due = self.t_load0 + sched.next_due(due - self.t_load0, now() - self.t_load0)

    async def _rate_loop(self, sched: Rate | Replay) -> None:
        """Start each request when due (a rate's tick, a replayed log's own time), whatever the responses; over
        the in-flight cap it is dropped (counted, its place in the pages' sequence passed), never queued. Each
        takes its place in the sequence when due, sent or dropped: a task may run later than a drop is made."""
        rec = self.rec
        assert rec is not None
        k = 0
        idle: list[S] = []  # open connections a new request may take
        inflight = 0
        self._drawn_ahead = True

        async def one(due: float, req: int) -> None:
            nonlocal inflight
            _DRAWN.set(req)  # this task's context: the engine's `next_request` takes it
            if not self.may_start(now()):  # spawned in time, but the loop got to it after the close
                inflight -= 1
                return
            state = idle.pop() if idle else None
            try:
                state = await self.request(due, self.count_start(due), state)
            finally:
                inflight -= 1
            if self.running and state is not None and self.reusable(state):
                idle.append(state)
            else:
                self.release(state)

        while self.may_start(t := now()):
            n_due = sched.count_before(t - self.t_load0 + 1e-9)
            while k < n_due:
                due = self.t_load0 + sched.due(k)
                k += 1
                req = self.next_request()  # a replay's next request is the log's next, sent or dropped
                if inflight < sched.max_inflight:
                    inflight += 1
                    self._spawn(one(due, req))
                else:
                    rec.drop(due)
            nxt = self.t_load0 + sched.due(k)
            if nxt == math.inf:  # a replay's last request has gone
                return
            await asyncio.sleep(max(0.0005, nxt - now()))

    # --- watching the client itself -------------------------------------------------
    async def _lag_probe(self) -> None:
        step = 0.05
        while True:
            t = now()
            await asyncio.sleep(step)
            lag = now() - t - step
            if lag > self._lag_max:
                self._lag_max = lag

    def _sample_client(self, t: float) -> ClientSample:
        """The loop thread's CPU and run-queue wait since the last sample, and
        the worst loop lag seen since then."""
        run, wait = thread_times()
        span = max(1e-6, t - self._wall_prev)
        sample = ClientSample(100.0 * (run - self._run_prev) / span, 100.0 * (wait - self._wait_prev) / span,
                              self._lag_max * 1000, run - self._run_prev)
        self._run_prev, self._wait_prev, self._wall_prev = run, wait, t
        self._lag_max = 0.0
        return sample

    async def _ticker(self, t0: float) -> None:
        """Once a second, just after each second of the window has ended (its
        samples then belong to that second, whatever the timer's jitter): fold
        the recorder, sample the client, feed the live line."""
        rec = self.rec
        assert rec is not None
        nxt = t0 - math.floor(self.spec.warmup) + TICK_AFTER_S
        if nxt < self.t_load0:
            nxt += 1.0
        prev_ok = shown = 0
        while True:
            await asyncio.sleep(max(0.0, nxt - now()))
            t = now()
            self._lag_max = max(self._lag_max, t - nxt)  # the ticker's own timer is a lag probe too
            c = self._sample_client(t)
            measuring = t >= t0 + 1.0  # the tick just after t0 covers the warm-up's last second
            self.cpu_s += c.cpu_s if measuring else 0.0
            self.settle()  # what the compiled loop counted in this second, before it is read
            rec.tick(t, c if measuring else None)
            if self.live is not None:
                ok = fails = 0
                for s in rec.seconds:
                    ok += s.counts[OK]
                    fails += sum(s.counts) - s.counts[OK]
                last = rec.second_at(t - 1.0).counts[OK] if measuring else 0
                rps = float(last if measuring else ok - prev_ok)
                closed: tuple[tuple[int, Second], ...] = ()
                if self.spec.live_seconds:
                    closed = tuple((j, rec.seconds[j]) for j in range(shown, min(rec.folded_upto, len(rec.seconds))))
                    shown = max(shown, rec.folded_upto)
                self.live(Live(t - t0, ok, fails + rec.dropped, rec.inflight, rps, measuring, self.spec.worker_index,
                               c.cpu_pct + c.wait_pct, c.lag_ms, self.budget, closed, self.spec.warmup,
                               rec.warmup_started))
                prev_ok = ok
            nxt += 1.0
            while nxt < now():  # a loop that lagged past several ticks samples once, over the whole gap
                nxt += 1.0

    def _last_sample(self, t_stop: float, t0: float) -> None:
        """The window's last second ends after the last tick: sample it at the close."""
        rec = self.rec
        assert rec is not None
        if t_stop <= t0:
            return
        c = self._sample_client(t_stop)
        self.cpu_s += c.cpu_s
        rec.sample_client(c, min(rec.nsec, math.ceil(t_stop - t0 - 1e-3)))

