"""The hub: every event of the page, kept in order and fanned out to each browser.

The command's threads (the load's, the sampler's, the main one) publish; they never wait.
`publish` hands the event to the live server's own event loop (`call_soon_threadsafe`) and
returns. There each browser has a bounded queue: a browser that falls behind by `QUEUE`
events, or whose socket stops taking bytes, is dropped (its stream ends; a reload starts it
again from the history). A browser that comes late gets the history first, so the page it
draws is the whole command's.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

QUEUE = 2000
"""Events a browser may be behind before it is dropped (a second of a sweep is a few events)."""
HISTORY = 400_000
"""Events kept for browsers that come late (a 13-level sweep is about 10 000); past it, the oldest per-second
rows go (`ROWS`): the structural events (hello, trial, mark, stored, progress, end) are always kept."""
ROWS = ('"type": "client"', '"type": "server"')
"""How a per-second event's text begins (`encode` puts `type` first): the only ones trimmed."""

Event = dict[str, Any]


@dataclass(eq=False)
class Subscriber:
    """One browser's stream: its queue and the task that writes it."""

    queue: asyncio.Queue[str | None]
    task: asyncio.Task[Any] | None = None
    dropped: bool = False


@dataclass
class Hub:
    """Events in order, as JSON text; a history for late browsers and a queue per browser."""

    loop: asyncio.AbstractEventLoop | None = None
    """The live server's loop; events published before it runs are kept in the history alone."""
    history: list[str] = field(default_factory=list)
    subscribers: set[Subscriber] = field(default_factory=set)
    dropped: int = 0
    """Browsers dropped for being slow (a count the tests read)."""
    ended: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, event: Event) -> None:
        """From any thread, at once: the event goes to the server's loop, nobody waits for a browser."""
        text = encode(event)
        loop = self.loop
        if loop is None or loop.is_closed():
            with self._lock:
                self._keep(text)
            return
        try:
            loop.call_soon_threadsafe(self._fan_out, text)
        except RuntimeError:  # the loop closed between the check and the call: the command is ending
            pass

    def end(self) -> None:
        """No more events: every stream is closed once its queue is written."""
        if self.loop is not None and not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self._close_all)
            except RuntimeError:
                pass

    def subscribe(self) -> tuple[list[str], Subscriber]:
        """The history so far and a queue for what comes next, taken together (in the loop's thread)."""
        sub = Subscriber(asyncio.Queue(QUEUE))
        with self._lock:
            past = list(self.history)
        if self.ended:
            sub.queue.put_nowait(None)
        else:
            self.subscribers.add(sub)
        return past, sub

    def leave(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    def _keep(self, text: str) -> None:
        self.history.append(text)
        if len(self.history) > HISTORY:
            self.history = trim(self.history)

    def _fan_out(self, text: str) -> None:
        with self._lock:
            self._keep(text)
        for sub in list(self.subscribers):
            try:
                sub.queue.put_nowait(text)
            except asyncio.QueueFull:
                self.drop(sub)

    def drop(self, sub: Subscriber) -> None:
        """A slow browser: forget it and end its stream (its task is cancelled even mid-write)."""
        if sub.dropped:
            return
        self.subscribers.discard(sub)
        sub.dropped = True
        self.dropped += 1
        if sub.task is not None:
            sub.task.cancel()

    def _close_all(self) -> None:
        self.ended = True
        for sub in list(self.subscribers):
            try:
                sub.queue.put_nowait(None)
            except asyncio.QueueFull:
                self.drop(sub)
        self.subscribers.clear()


def trim(history: list[str]) -> list[str]:
    """The oldest tenth of the per-second rows dropped; a late browser still gets every run, trial and stored
    record (a stored trial's rows come again inside its `stored` event)."""
    rows = sum(1 for t in history if t.startswith(ROWS, 1))
    drop = max(rows // 10, 1) if rows else 0
    out = []
    for t in history:
        if drop and t.startswith(ROWS, 1):
            drop -= 1
            continue
        out.append(t)
    if len(out) > HISTORY:  # structural events alone past the bound: the oldest go, the first hello stays
        out = out[:1] + out[len(out) - HISTORY + 1:]
    return out


def encode(event: Event) -> str:
    """An event as the one line of JSON a stream carries, its `type` first."""
    event = {"type": event["type"], **event} if "type" in event else event
    return json.dumps(_clean(event), default=_plain)


def _clean(o: object) -> Any:
    """NaN (a figure pandas left missing) as null: JSON has no NaN."""
    if isinstance(o, float):
        return None if o != o else o
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_clean(v) for v in o]
    return o


def _plain(o: object) -> Any:
    """numpy numbers and the like as JSON values; NaN (a missing figure) as null."""
    if hasattr(o, "item"):
        v = o.item()
        return None if isinstance(v, float) and v != v else v
    return str(o)
