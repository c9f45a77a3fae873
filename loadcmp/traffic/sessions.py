"""The journey engine: `-c` virtual users, each with its own cookie jar, each looping a journey (or one drawn
from a weighted mix) step by step, on aiohttp (the Python path: the client-bound flag says when it limits); over
h2 and h2c on HTTP/2 connections instead (`h2journeys`), over HTTP/3 on QUIC connections (`h3journeys`).

Each step is a request counted as any other (the recorder's outcomes, status codes and latency) and also as
the page `journey/step` (the recorder's pages); each journey started inside the window ends as completed,
failed at a step (its name and why: a status not expected, an extract that found nothing), or cut by the
window's close (`load.record.journeytally`). A journey is a session: its user's cookies are cleared before it
starts, so an author logs in on every journey. `prime_journeys` walks each journey once before the load,
so that a journey that cannot complete stops the run with the step named instead of measuring failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from .. import protocols
from ..errors import LoadError, PrimerError
from ..load.tls import context as tls
from ..load.driver import BACKOFF_S, LiveFn, LoadSpec, now
from ..load.record.journeytally import JourneyTally
from ..load.record.outcomes import (CONNECT_TIMEOUT, KINDS, OK, PROTOCOL_ERROR, RESET, TIMEOUT, kind_of_error,
                                   kind_of_status)
from ..load.record.result import Result
from ..load.schedules import Closed, Ramp, Rate, Replay
from ..load.target import Target
from ..load.traced import Traced
from .journeys import Journey, JourneyMix, Step, fill

if TYPE_CHECKING:  # aiohttp: imported by the engine when journeys run
    from aiohttp import BaseConnector, ClientSession
    from aiohttp.abc import AbstractCookieJar


@dataclass(frozen=True)
class JourneyPlan:
    """What `LoadSpec.traffic` carries for journeys (picklable: workers get it): the mix and the draw's seed."""

    mix: JourneyMix
    seed: int = 0

    def engine(self, spec: LoadSpec, live: LiveFn | None = None) -> JourneyEngine:
        """The users on aiohttp's connections; over h2 and h2c `h2journeys.H2JourneyPlan`'s engine runs them, over
        QUIC `h3journeys.H3JourneyPlan`'s."""
        if protocols.get(spec.target.proto).multiplexed:
            raise LoadError(f"journeys over {spec.target.proto} run on their own plan's engine (h2journeys, "
                            "h3journeys), not on aiohttp's")
        return JourneyEngine(spec, live, self)

    def draw(self, worker: int, user: int) -> tuple[random.Random, Callable[[], Journey]]:
        """A user's own seeded draw: its random source, and the next journey it walks (the same seed, worker
        and user give the same sequence)."""
        rng = random.Random(self.seed * 1_000_003 + worker * 100_003 + user)
        journeys, weights = self.mix.journeys, [j.weight for j in self.mix.journeys]
        return rng, lambda: rng.choices(journeys, weights)[0]

    def describe(self) -> dict[str, object]:
        return {"journey": self.mix.describe(), "journey_seed": self.seed}


@dataclass
class Answer:
    """One step's answer, as far as the journey and the recorder need it."""

    kind: int
    status: int = 0
    body: str = ""
    nbytes: int = 0
    client_error: str | None = None
    trace: dict[str, float] | None = None
    t_first: float = 0.0


Fields = tuple[tuple[str, str], ...]
"""Header fields added to a step's request."""


def _session(aiohttp: ModuleType, connector: BaseConnector, timeout: float) -> ClientSession:
    """A virtual user's session: its own cookie jar (`unsafe`: cookies for 127.0.0.1 are kept too)."""
    trace = aiohttp.TraceConfig()

    def mark(name: str) -> Callable[[ClientSession, SimpleNamespace, object], Awaitable[None]]:
        async def hook(session: ClientSession, ctx: SimpleNamespace, params: object) -> None:
            if isinstance(ctx.trace_request_ctx, dict):
                ctx.trace_request_ctx.setdefault(name, now())
        return hook

    trace.on_connection_create_start.append(mark("t_connect"))
    trace.on_connection_create_end.append(mark("t_sent"))
    trace.on_connection_reuseconn.append(mark("t_sent"))
    trace.on_request_headers_sent.append(mark("t_written"))
    return aiohttp.ClientSession(
        connector=connector, connector_owner=False, cookie_jar=aiohttp.CookieJar(unsafe=True),
        trace_configs=[trace], timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout),
        auto_decompress=True, skip_auto_headers=("User-Agent",), headers={"User-Agent": "loadcmp"},
    )


async def send(aiohttp: ModuleType, session: ClientSession, base: str, step: Step, values: dict[str, str],
               timeout: float, extra: Fields = ()) -> Answer:
    """One step's request, its variables filled, `extra` header fields added (--trace: its traceparent, which
    aiohttp sends again on each redirect); every failure an outcome kind."""
    trace: dict[str, float] = {}
    headers = {**{k: fill(v, values) for k, v in step.headers}, **dict(extra)}
    data: dict[str, str] | bytes | None = None
    if isinstance(step.body, tuple):
        data = {k: fill(v, values) for k, v in step.body}
    elif step.body is not None:
        data = fill(step.body, values).encode()
    try:
        async with asyncio.timeout(timeout):
            async with session.request(step.method, base + fill(step.path, values), headers=headers, data=data,
                                       allow_redirects=True, trace_request_ctx=trace) as resp:
                t_first = now()
                raw = await resp.read()
                nbytes = len(raw) + sum(len(k) + len(v) + 4 for k, v in resp.raw_headers) + 17
                return Answer(kind_of_status(resp.status), resp.status, raw.decode("utf-8", "replace"), nbytes,
                              None, trace, t_first)
    except TimeoutError:
        return Answer(TIMEOUT if "t_sent" in trace else CONNECT_TIMEOUT, trace=trace)
    except aiohttp.ClientConnectorError as e:
        kind, err = kind_of_error(e.os_error)
        return Answer(kind, client_error=err, trace=trace)
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
        return Answer(RESET, trace=trace)
    except aiohttp.ClientError:
        return Answer(PROTOCOL_ERROR, trace=trace)
    except OSError as e:
        kind, err = kind_of_error(e)
        return Answer(kind, client_error=err, trace=trace)


def judge_step(step: Step, answer: Answer, jar: AbstractCookieJar, values: dict[str, str]) -> str | None:
    """Why the journey fails at this step (None: it goes on); the step's extracts land in `values`."""
    got = f"HTTP {answer.status}" if answer.status else f"no answer ({KINDS[answer.kind]})"
    if step.expect is not None and answer.status != step.expect:
        return f"{got}, expected {step.expect}"
    if step.expect is None and answer.kind != OK:
        return got
    for ex in step.extract:
        if ex.cookie is not None:
            found = next((c.value for c in jar if c.key == ex.cookie), None)
        else:
            m = re.search(ex.regex or "", answer.body)
            found = m.group(1) if m else None
        if found is None:
            return f"extract {ex.var} ({ex.describe()}) found nothing"
        values[ex.var] = found
    return None


def base_of(target: Target) -> str:
    default = 443 if target.scheme == "https" else 80
    return f"{target.scheme}://{target.host}" + (f":{target.port}" if target.port != default else "")


class JourneyEngine(Traced[None]):
    """Virtual users that loop journeys on the closed schedule; each step recorded as a request (with --trace, its
    request and its redirects carry the step's traceparent, and the step is a row: `_trace_take`, `_trace_end`)."""

    name = "journey"

    def __init__(self, spec: LoadSpec, live: LiveFn | None, plan: JourneyPlan) -> None:
        super().__init__(spec, live)
        self.plan = plan
        self.tally = JourneyTally()
        self.base = base_of(spec.target)
        self.pages = tuple(plan.mix.pages())
        self.page_at = {name: i for i, name in enumerate(self.pages)}
        self.expects = tuple(s.expect or 0 for j in plan.mix.journeys for s in j.steps)

    async def open(self) -> None:
        import aiohttp

        self.aiohttp = aiohttp
        self.connector = aiohttp.TCPConnector(
            limit=0, limit_per_host=0, force_close=not self.target.keepalive,
            ssl=tls.context(self.target) or False, ttl_dns_cache=3600,
        )

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.connector.close(), 2.0)

    def abort_all(self) -> None:
        with contextlib.suppress(Exception):
            self.connector._close()

    def page_names(self) -> tuple[str, ...]:
        return self.pages

    def page_of(self, req: int) -> tuple[int, int]:
        """A step's request: `req` is its page (`journey/step`), expected to answer the step's `expect`."""
        return req, self.expects[req]

    async def run(self, t_load0: float, stop: asyncio.Event | None = None) -> Result:
        result = await super().run(t_load0, stop)
        for j in self.tally.journeys.values():
            j.cut = j.started - j.completed - sum(j.failed_at.values())
        result.journeys = self.tally
        return result

    def start_closed(self, schedule: Closed) -> None:
        for user in range(schedule.connections):
            self._spawn(self._user(user, schedule.first_client + user))

    def start_ramp(self, schedule: Ramp) -> None:
        raise LoadError("journeys run on the closed loop (-c), not on a ramp")

    def start_rate(self, schedule: Rate | Replay) -> None:
        raise LoadError("journeys run on the closed loop (-c), not at a rate nor as a replay")

    async def _user(self, user: int, number: int) -> None:
        """User `user` of this process, `number` of the whole load: `{user}` is that, so that with --workers
        each user still has an account of its own (the WordPress author journeys log in as one)."""
        _, pick = self.plan.draw(self.spec.worker_index, user)
        session = self._new_session()
        iteration = 0
        try:
            while self.may_start(now()):
                journey = pick()
                session.cookie_jar.clear()
                values = {"user": str(number), "iteration": str(iteration),
                          "unique": f"{self.spec.worker_index}-{user}-{iteration}-{secrets.token_hex(6)}"}
                await self._journey(session, journey, values)
                iteration += 1
        finally:
            with contextlib.suppress(Exception):
                await session.close()

    def _new_session(self) -> Any:
        """A virtual user's session: its own cookie jar (`cookie_jar`), ended by `close()`."""
        return _session(self.aiohttp, self.connector, self.timeout)

    async def _send(self, session: Any, step: Step, values: dict[str, str], t: float, counted: bool, seq: int
                    ) -> Answer:
        """One step's request in the user's session, started at `t` (`counted`: the recorder counts it; `seq`: its
        traced number, -1 when not traced)."""
        return await send(self.aiohttp, session, self.base, step, values, self.timeout, self._trace_field(seq))

    async def _journey(self, session: Any, journey: Journey, values: dict[str, str]) -> None:
        rec = self.rec
        assert rec is not None
        counted = rec.t0 <= now() < rec.end
        count = self.tally.journey(journey.name)
        count.started += counted
        for step in journey.steps:
            t = now()
            if not self.may_start(t):
                return
            req_counted = rec.start(t)
            seq = self._trace_take(req_counted, t)
            answer = await self._send(session, step, values, t, req_counted, seq)
            if now() >= rec.end:  # answered after the window closed: the recorder leaves it unfinished, and so
                return            # the journey is cut, neither completed nor failed (its row too)
            why = judge_step(step, answer, session.cookie_jar, values)
            inflight = rec.inflight
            self._record_answer(req_counted, t, answer, self.page_at[f"{journey.name}/{step.name}"])
            self._trace_end(seq, t, answer, rec.inflight < inflight)  # ended as the recorder counted it, or not
            if why is not None:
                if counted:
                    key = f"{step.name}: {why}"
                    count.failed_at[key] = count.failed_at.get(key, 0) + 1
                if answer.client_error is not None:
                    await asyncio.sleep(BACKOFF_S)
                return
            if step.think > 0:
                await asyncio.sleep(step.think)
        count.completed += counted

    # --trace: the step's header, and its row as the other engines keep theirs (`trace.rows.Tracer`) ----------
    def _trace_take(self, counted: bool, t: float) -> int:
        """A counted step's number when it is traced (its row opened: unfinished unless it ends), else -1."""
        tracer = self.tracer
        seq = tracer.take() if tracer is not None and counted else -1
        if seq >= 0 and tracer is not None:
            tracer.sent(seq, t, t, 0)
        return seq

    def _trace_field(self, seq: int) -> Fields:
        return (("traceparent", self.tracer.ids.value(seq)),) if seq >= 0 and self.tracer is not None else ()

    def _trace_drop(self, seq: int) -> None:
        """A traced step never sent (the recorder took it back, `Recorder.unsent`): no row."""
        if seq >= 0 and self.tracer is not None:
            self.tracer.open.pop(seq, None)

    def _trace_end(self, seq: int, t: float, a: Answer, ended: bool) -> None:
        """Traced step `seq`'s row: where it began (its connect, else its send), its phases and outcome; `ended`:
        the recorder counted its end (else, ended after the close, it stays unfinished)."""
        tracer = self.tracer
        if seq < 0 or tracer is None or seq not in tracer.open:
            return
        marks, t_end = a.trace or {}, now()
        t_sent = marks.get("t_sent", t)
        tracer.sent(seq, t, marks.get("t_connect", t_sent), 0)
        began = (marks.get("t_connect", math.nan), t_sent, marks.get("t_written", t_sent), a.t_first, t_end)
        tracer.ended(seq, a.kind, t_end, a.status, a.nbytes, began if a.status else None, ended)

    def _record_answer(self, counted: bool, t: float, a: Answer, page: int) -> None:
        trace = a.trace or {}
        t_sent = trace.get("t_sent", t)
        began = (trace.get("t_connect", math.nan), t_sent, trace.get("t_written", t_sent), a.t_first) if a.status \
            else None
        self._record(counted, a.kind, t, t_sent, a.nbytes, a.client_error, a.status, began, page)


async def _walk(mix: JourneyMix, target: Target, timeout: float) -> list[str]:
    import aiohttp

    problems = []
    connector = aiohttp.TCPConnector(ssl=tls.context(target) or False)
    try:
        for journey in mix.journeys:
            session = _session(aiohttp, connector, timeout)
            values = {"user": "0", "iteration": "0", "unique": f"primer-{secrets.token_hex(6)}"}
            try:
                for step in journey.steps:
                    answer = await send(aiohttp, session, base_of(target), step, values, timeout)
                    why = judge_step(step, answer, session.cookie_jar, values)
                    if why is not None:
                        problems.append(f"the journey {journey.name!r} failed at its step {step.name!r} "
                                        f"({step.method} {fill(step.path, values)}): {why}")
                        break
            finally:
                await session.close()
    finally:
        await connector.close()
    return problems


def prime_journeys(mix: JourneyMix, target: Target, timeout: float = 10.0, label: str = "") -> None:
    """Each journey walked once by one user before the load; one that fails stops the run, its step named."""
    problems = asyncio.run(_walk(mix, target, timeout))
    if problems:
        raise PrimerError((f"{label}: " if label else "") + problems[0])
