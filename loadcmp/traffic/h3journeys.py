"""Journeys over HTTP/3: each virtual user on a QUIC connection of its own (`load.h3`'s `Connections`, a new one
after a GOAWAY), with its own cookie jar; each step's answer read as the aiohttp session reads it over HTTP/1.1
(`hops`: cookies, redirects, decoding, one timeout per step). Imported only when journeys run over h3 (it
imports qh3).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..load.driver import LiveFn, LoadSpec
from ..load.h3.engine import UNSENT, Connections, Sending, Slot
from ..load.record.outcomes import HTTP_5XX, RESET
from .hops import Fields, HopEngine, Reply, User
from .sessions import JourneyPlan


@dataclass(frozen=True)
class H3JourneyPlan(JourneyPlan):
    """A journey plan whose users walk over HTTP/3 (`JourneyTraffic.plan` hands it to an h3 load)."""

    def engine(self, spec: LoadSpec, live: LiveFn | None = None) -> H3JourneyEngine:
        return H3JourneyEngine(spec, live, self)


class H3JourneyEngine(HopEngine[Slot]):
    """The journey engine with its users' steps over HTTP/3: `-c` users, one QUIC connection each."""

    name = "journey-h3"

    async def open(self) -> None:
        await super().open()
        self.h3 = Connections(self)
        await self.h3.open()

    async def close(self) -> None:
        self.h3.close()

    def abort_all(self) -> None:
        self.h3.abort_all()

    def _new_session(self) -> User[Slot]:
        return User(self.h3.new_slot(), self._jar())

    async def _hop(self, user: User[Slot], fields: Fields, body: bytes, t: float, within: float, counted: bool,
                   first: bool) -> Reply:
        s = Sending(t)
        kind, own = await self.h3.timed(user.via, fields, body, counted, s, keep=True, within=within)
        trace = {"t_connect": s.t_connect, "t_sent": s.t_sent, "t_written": s.t_sent}
        if kind == UNSENT and first:  # taken back by the recorder (`Connections.timed`): its traced row too
            self._trace_drop(user.seq)
        stream = s.stream
        if kind == UNSENT or kind > HTTP_5XX or stream is None or not stream.status or stream.fields is None:
            return Reply(RESET if kind == UNSENT else kind, own, trace=trace)
        return Reply(kind, None, stream.status, stream.fields, bytes(stream.body or b""), stream.nbytes,
                     stream.t_first, trace)
