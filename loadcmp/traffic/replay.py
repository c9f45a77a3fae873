"""An access log made a replay: which of its requests are sent, in which order, when, and what each expects.

`plan_replay` reads what `logs.read_log` gave and decides everything before the load starts:

- **which requests**: GET and HEAD unless `methods` allows more; a request for another host than the site's
  (the host most of the log's requests name, when it names any), a target that is not a path (`*`, a
  `CONNECT`), or a line whose request was not a request line are counted and left out, and named;
- **the order**: the log's, by time (a log writes a request when it ends; lines of one second keep their
  order);
- **when** (`speed`, `parse_speed`): at `Nx` each request is due at its own time in the log divided by N,
  from the first's; a log to the second (combined, common) spreads the requests of one second evenly over
  it, a log with finer times (JSON `msec`) keeps them; at `max` nothing is due: the closed loop sends the
  sequence as fast as it can;
- **what each expects**: the status the log says it got (a 404 then is expected to be a 404 again);
- **its pages**: every distinct request is sent as logged, but only the `top` most requested are recorded
  as pages of their own; the rest are recorded together as `other` (a log with thousands of URLs must not
  make thousands of per-page records).
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import UsageError
from .logs import AccessLog, Entry

if TYPE_CHECKING:
    from ..load.pages import Pages
    from ..load.target import Target

DEFAULT_METHODS = ("GET", "HEAD")
"""What a replay sends unless `--replay-methods` says more: requests that change nothing."""
TOP_PAGES = 20
"""Pages recorded on their own; the rest of a log's URLs are recorded together as `OTHER`."""
OTHER = "other"
SPEED = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*x\s*$", re.IGNORECASE)
NAMED = 5
"""How many of each kind of left-out request the summary names."""


def parse_speed(text: str) -> float | None:
    """`1x`, `2x`, `0.5x`, `<n>x` as a factor; `max` as None (the closed loop's pace)."""
    if text.strip().lower() == "max":
        return None
    m = SPEED.match(text)
    if m is None or not math.isfinite(float(m.group(1))) or float(m.group(1)) <= 0:
        raise UsageError(f"bad --replay-speed {text!r}: use 1x, 2x, 10x, any <n>x above 0, or max")
    return float(m.group(1))


def parse_methods(text: str | tuple[str, ...] | list[str], what: str = "--replay-methods") -> tuple[str, ...]:
    """`GET,HEAD,POST` as upper-case method names, GET first when given."""
    items = text.split(",") if isinstance(text, str) else list(text)
    out = tuple(dict.fromkeys(m.strip().upper() for m in items if m.strip()))
    if not out or not all(m.isalpha() for m in out):
        raise UsageError(f"bad {what} {text!r}: use method names, like GET,HEAD,POST")
    return out


@dataclass(frozen=True)
class Request:
    """One distinct request of a replay: sent as `method path`, expected to answer `status`."""

    method: str
    path: str
    status: int

    @property
    def page(self) -> str:
        """Its name as a page: the path, after its method when that is not GET."""
        return self.path if self.method == "GET" else f"{self.method} {self.path}"


@dataclass(frozen=True)
class ReplayPlan:
    """A log's replay, decided: its distinct requests, their pages, the sequence and (at Nx) when each is due."""

    file: str
    format: str
    speed: float | None
    """The factor on the log's own timing; None: `max`."""
    requests: tuple[Request, ...]
    page_names: tuple[str, ...]
    page_of: tuple[int, ...]
    """Request index -> page index."""
    order: array
    """array('I'): the request index of each position of the sequence."""
    dues: array | None
    """array('d'): when each position is due, seconds from the replay's start (None at max)."""
    span: float
    """Seconds the replay lasts at its speed: from the first due time to one gap after the last (0 at max)."""
    lines: int
    """The log's lines read."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Requests not sent, by reason (`method`, `host`, `not a path`, `not a request`, `unreadable`)."""
    left_out_named: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """The most frequent of each reason's requests, with their counts."""
    subsecond: bool = False
    grouped: int = 0
    """Distinct pages recorded together as `other`."""

    @property
    def sent(self) -> int:
        return len(self.order)

    def mean_rate(self) -> float | None:
        """The log's requests per second at this speed (None at max)."""
        return self.sent / self.span if self.dues is not None and self.span > 0 else None

    def pages(self, base: Target) -> Pages:
        """What the engines send: each request on `base`'s server, recorded as its page, expecting its status."""
        from dataclasses import replace

        from ..load.pages import Pages
        root = base.url.split("://", 1)[1].split("/", 1)[0]
        targets = tuple(replace(base, method=r.method, path=r.path, url=f"{base.scheme}://{root}{r.path}", body=b"")
                        for r in self.requests)
        return Pages(targets, self.page_names, self.order, self.page_of, tuple(r.status for r in self.requests))

    def doc(self) -> dict[str, object]:
        """What run.json keeps of the replay (`ReplayDoc`)."""
        out: dict[str, object] = {"file": self.file, "format": self.format, "speed": self.speed_text(),
                                  "lines": self.lines, "sent": self.sent, "distinct": len(self.requests),
                                  "pages": list(self.page_names), "grouped": self.grouped,
                                  "left_out": dict(self.left_out),
                                  "left_out_named": {k: [list(x) for x in v] for k, v in self.left_out_named.items()},
                                  "subsecond": self.subsecond}
        if (rate := self.mean_rate()) is not None:
            out["rate"] = round(rate, 3)
            out["span_s"] = round(self.span, 3)
        return out

    def speed_text(self) -> str:
        return "max" if self.speed is None else f"{self.speed:g}x"


def _site(entries: list[Entry]) -> str | None:
    hosts = Counter(e.host.lower() for e in entries if e.host)
    return hosts.most_common(1)[0][0] if hosts else None


def _why_left_out(e: Entry, methods: tuple[str, ...], site: str | None) -> tuple[str, str] | None:
    """(reason, what is named) of a request the replay does not send; None: it is sent."""
    if not e.method:
        return "not a request", e.path[:60] or "-"
    if e.method not in methods:
        return "method", e.method
    if site is not None and e.host is not None and e.host.lower() != site:
        return "host", e.host
    if not e.path.startswith("/"):
        return "not a path", f"{e.method} {e.path[:60]}"
    return None


def _dues(kept: list[Entry], speed: float, subsecond: bool) -> tuple[array, float]:
    """Each request's due time at `speed` from the first's, and the replay's span (see the module)."""
    t0 = kept[0].time
    out = array("d")
    if subsecond:
        for e in kept:
            out.append((e.time - t0) / speed)
        gap = (kept[-1].time - t0) / max(1, len(kept) - 1)
        return out, ((kept[-1].time - t0) + (gap if gap > 0 else 1.0)) / speed
    i = 0
    while i < len(kept):
        second = math.floor(kept[i].time)
        j = i
        while j < len(kept) and math.floor(kept[j].time) == second:
            j += 1
        n = j - i
        out.extend((second - math.floor(t0) + k / n) / speed for k in range(n))
        i = j
    return out, (math.floor(kept[-1].time) - math.floor(t0) + 1) / speed


def plan_replay(log: AccessLog, speed: float | None, methods: tuple[str, ...] = DEFAULT_METHODS,
                top: int = TOP_PAGES) -> ReplayPlan:
    """The replay of a log read whole (see the module); a UsageError when nothing of it would be sent."""
    entries = sorted(log.entries, key=lambda e: e.time)
    site = _site(entries)
    kept: list[Entry] = []
    left: Counter[str] = Counter()
    named: dict[str, Counter[str]] = {}
    for e in entries:
        why = _why_left_out(e, methods, site)
        if why is None:
            kept.append(e)
        else:
            left[why[0]] += 1
            named.setdefault(why[0], Counter())[why[1]] += 1
    if log.bad:
        left["unreadable"] = len(log.bad)
    if not kept:
        said = ", ".join(f"{n:,} {why}" for why, n in left.most_common())
        hint = "; --replay-methods allows more methods" if "method" in left else ""
        raise UsageError(f"{log.file}: nothing to replay: all {len(entries):,} requests are left out ({said}){hint}")
    index: dict[Request, int] = {}
    order = array("I")
    for e in kept:
        order.append(index.setdefault(Request(e.method, e.path, e.status), len(index)))
    requests = tuple(index)
    page_names, page_of, grouped = _pages(requests, order, top)
    dues, span = _dues(kept, speed, log.subsecond) if speed is not None else (None, 0.0)
    return ReplayPlan(log.file, log.format, speed, requests, page_names, page_of, order, dues, span, log.lines,
                      dict(left.most_common()), {k: c.most_common(NAMED) for k, c in named.items()}, log.subsecond,
                      grouped)


def _pages(requests: tuple[Request, ...], order: array, top: int) -> tuple[tuple[str, ...], tuple[int, ...], int]:
    """The `top` most sent pages by name, the rest as `other`: (names, request -> page, pages grouped)."""
    sent: Counter[str] = Counter()
    for i in order:
        sent[requests[i].page] += 1
    ranked = [name for name, _ in sorted(sent.items(), key=lambda x: (-x[1], x[0]))]
    own = ranked[:top] if len(ranked) > top else ranked
    names = tuple(own) + ((OTHER,) if len(ranked) > len(own) else ())
    where = {name: k for k, name in enumerate(own)}
    page_of = tuple(where.get(r.page, len(own)) for r in requests)
    return names, page_of, len(ranked) - len(own)


def top_pages(log: AccessLog, top: int,
              methods: tuple[str, ...] = DEFAULT_METHODS) -> tuple[list[tuple[str, int]], int, int]:
    """`loadcmp mix FILE`: the log's `top` most requested paths (of the requests a replay would send; a mix
    sends GET, so a HEAD counts for its path) with their counts, how many requests that is of, and how
    many paths there are."""
    plan = plan_replay(log, None, methods, top)
    sent: Counter[str] = Counter()
    for i in plan.order:
        sent[plan.requests[i].path] += 1
    ranked = sorted(sent.items(), key=lambda x: (-x[1], x[0]))
    return ranked[:top], plan.sent, len(ranked)
