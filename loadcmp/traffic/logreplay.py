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

import functools
import hashlib
import math
import re
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from ..errors import UsageError
from ..records import LoadSummary, ReplayDoc
from ..load.schedules import Closed, Replay, Schedule, time_cap
from .logs import MIX_WORDS, REPLAY_WORDS, AccessLog, Entry, LogFormat, Wording, printable, read_log

if TYPE_CHECKING:
    from ..load.pageset import Pages
    from ..load.target import Target

DEFAULT_METHODS = ("GET", "HEAD")
"""What a replay sends unless `--replay-methods` says more: requests that change nothing."""
TOP_PAGES = 20
"""Pages recorded on their own; the rest of a log's URLs are recorded together as `OTHER`."""
OTHER = "other"
HTTP_METHODS = frozenset({
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "QUERY",  # RFC 9110, 5789
    "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "SEARCH", "REPORT", "ACL", "BIND", "UNBIND",
    "REBIND", "LINK", "UNLINK", "MKCALENDAR", "MKWORKSPACE", "CHECKIN", "CHECKOUT", "UNCHECKOUT", "MERGE", "LABEL",
    "UPDATE", "ORDERPATCH", "MKACTIVITY", "MKREDIRECTREF", "UPDATEREDIRECTREF"})  # WebDAV's and its kin
"""The methods of IANA's registry a log may hold (but PRI, HTTP/2's preface, and the hyphenated ones): a method
named in --replay-methods that is none of them is a typo, refused before it leaves the log's requests out."""
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
    """`GET,HEAD,POST` as upper-case method names, in the order given; each one of `HTTP_METHODS`."""
    items = text.split(",") if isinstance(text, str) else list(text)
    out = tuple(dict.fromkeys(m.strip().upper() for m in items if m.strip()))
    if not out or not all(m.isalpha() for m in out):
        raise UsageError(f"bad {what} {text!r}: use method names, like GET,HEAD,POST")
    if unknown := [m for m in out if m not in HTTP_METHODS]:
        raise UsageError(f"bad {what} {text!r}: {', '.join(unknown)} "
                         f"{'is not an HTTP method' if len(unknown) == 1 else 'are not HTTP methods'} "
                         "(GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, WebDAV's PROPFIND, ...)")
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
    sha256: str = ""
    """The log file's content hash: a catalog cell tells two logs of one name apart by it ("": not read)."""

    @property
    def sent(self) -> int:
        return len(self.order)

    def mean_rate(self) -> float | None:
        """The log's requests per second at this speed (None at max)."""
        return self.sent / self.span if self.dues is not None and self.span > 0 else None

    def pages(self, base: Target) -> Pages:
        """What the engines send: each request on `base`'s server, recorded as its page, expecting its status."""
        from ..load.pageset import Pages
        root = base.url.split("://", 1)[1].split("/", 1)[0]
        targets = tuple(replace(base, method=r.method, path=r.path, url=f"{base.scheme}://{root}{r.path}", body=b"")
                        for r in self.requests)
        return Pages(targets, self.page_names, self.order, self.page_of, tuple(r.status for r in self.requests))

    def due_between(self, start: float, end: float) -> int:
        """How many requests are due in [start, end) seconds from the replay's start (0 at max)."""
        if self.dues is None:
            return 0
        return bisect_left(self.dues, end) - bisect_left(self.dues, start)

    def speed_text(self) -> str:
        return "max" if self.speed is None else f"{self.speed:g}x"


def _site(entries: list[Entry]) -> str | None:
    hosts = Counter(e.host.lower() for e in entries if e.host)
    return hosts.most_common(1)[0][0] if hosts else None


def _why_left_out(e: Entry, methods: tuple[str, ...], site: str | None) -> tuple[str, str] | None:
    """(reason, what is named) of a request the replay does not send; None: it is sent."""
    if not e.method:
        return "not a request", printable(e.path, 60) or "-"
    if e.method not in methods:
        return "method", e.method
    if site is not None and e.host is not None and e.host.lower() != site:
        return "host", printable(e.host, 60)
    if not e.path.startswith("/"):
        return "not a path", f"{e.method} {printable(e.path, 60)}"
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
                top: int = TOP_PAGES, words: Wording = REPLAY_WORDS) -> ReplayPlan:
    """The replay of a log read whole (see the module); a UsageError when nothing of it would be sent (said in
    `words`: `loadcmp mix` plans one too)."""
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
        hint = f"; {words.methods} allows more methods" if "method" in left else ""
        raise UsageError(f"{log.file}: {words.nothing}: all {len(entries):,} requests are left out ({said}){hint}")
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
              methods: tuple[str, ...] = DEFAULT_METHODS) -> tuple[list[tuple[str, int]], int, int, int]:
    """`loadcmp mix FILE`: the log's `top` most requested paths with their counts, of the requests a replay would
    send that the log says were answered (< 400: a mix's pages must answer its primer; a mix sends GET, so a
    HEAD counts for its path); how many answered requests there are, how many paths, and how many requests the
    log says failed (left out)."""
    plan = plan_replay(log, None, methods, top, MIX_WORDS)
    sent: Counter[str] = Counter()
    failed = 0
    for i in plan.order:
        r = plan.requests[i]
        if r.status < 400:
            sent[r.path] += 1
        else:
            failed += 1
    ranked = sorted(sent.items(), key=lambda x: (-x[1], x[0]))
    return ranked[:top], plan.sent - failed, len(ranked), failed


@functools.lru_cache(maxsize=4)
def load_plan(file: str, fmt: str | None, speed: str, methods: tuple[str, ...]) -> ReplayPlan:
    """A run's replay, read and planned once per run (the spec asks for it at each level and trial), with its
    file's content hash."""
    plan = plan_replay(read_log(file, cast(LogFormat | None, fmt)), parse_speed(speed), parse_methods(methods))
    with open(file, "rb") as f:
        return replace(plan, sha256=hashlib.file_digest(f, "sha256").hexdigest())


def replay_schedule(plan: ReplayPlan, clients: int, max_inflight: int | None = None,
                    requests: int | None = None) -> Schedule:
    """At Nx the log's own times (`Replay`, at most `max_inflight` or `clients` in flight); at max `clients`
    closed clients walking the sequence: `requests` of it (the whole log once, as a run without -t asks), or
    again and again until the time is up (None)."""
    if plan.dues is None:
        return Closed(clients, requests=requests)
    return Replay(plan.dues, max_inflight or clients)


def replay_window(plan: ReplayPlan, warmup: float, clients: int, timeout: float) -> float:
    """The measured time of a replay given no -t: at Nx the log's span after the warm-up (which plays its first
    seconds unmeasured; `warmup_problem` says when nothing is left); at max the safety cap of sending its
    requests once (`schedules.time_cap`)."""
    if plan.dues is None:
        return time_cap(plan.sent, clients, timeout)
    return max(plan.span - warmup, 0.001)


def warmup_problem(plan: ReplayPlan, warmup: float) -> str | None:
    """A log no longer than the warm-up at its speed leaves the window nothing to send: said in one line."""
    if plan.dues is None or plan.span > warmup:
        return None
    return (f"{plan.file} lasts {plan.span:g} s at {plan.speed_text()}, no longer than the {warmup:g} s warm-up, "
            "which plays a log's first seconds unmeasured: give --warmup 0")


def primer_page(plan: ReplayPlan) -> str:
    """The page the primer asks for: the most sent GET the log says was answered (< 400)."""
    sent: Counter[str] = Counter()
    for i in plan.order:
        r = plan.requests[i]
        if r.method == "GET" and r.status < 400:
            sent[r.path] += 1
    return sent.most_common(1)[0][0] if sent else plan.requests[plan.order[0]].path


DIFFERING = 5
"""How many of the pages most often differing from the log a trial names."""


def replay_doc(plan: ReplayPlan, summary: LoadSummary, warmup: float, dropped: list[int]) -> ReplayDoc:
    """A trial's replay in figures: the log and what was left out, at Nx the rate the log asked in the window and
    the rate sent (`dropped`: the window's dropped requests by second), and the answers as in the log or not."""
    doc = ReplayDoc(file=plan.file, format=plan.format, speed=plan.speed_text(), lines=plan.lines,
                    sent_in_log=plan.sent, distinct=len(plan.requests), pages=len(plan.page_names) - (plan.grouped > 0),
                    grouped=plan.grouped, left_out=dict(plan.left_out),
                    left_out_named={k: [list(x) for x in v] for k, v in plan.left_out_named.items()},
                    subsecond=plan.subsecond, as_in_log=0, differs=0, differing=[])
    if plan.sha256:
        doc["sha256"] = plan.sha256
    secs = summary["duration_s"]
    if plan.dues is not None and secs > 0:
        doc["log_rate"] = round(plan.due_between(warmup, warmup + secs) / secs, 3)
        doc["sent_rate"] = round((summary["started"] - summary.get("dropped", 0)) / secs, 3)
        doc["rate_ratio"] = round(doc["sent_rate"] / doc["log_rate"], 4) if doc["log_rate"] else 0.0
        doc["dropped_peak"] = max(dropped, default=0)
    rows: list[tuple[str, int, int]] = []
    for page in summary.get("pages", []):
        expected, met = page.get("expected", 0), page.get("as_expected", 0)
        doc["as_in_log"] += met
        doc["differs"] += expected - met
        if expected > met:
            rows.append((page["page"], expected - met, expected))
    doc["differing"] = [list(r) for r in sorted(rows, key=lambda r: (-r[1], r[0]))[:DIFFERING]]
    return doc


def trial_lines(result: Mapping[str, Any] | None) -> list[str]:
    """What a trial's stored result says of its replay, for the terminal (nothing without one)."""
    return replay_lines(result["replay"]) if result and "replay" in result else []


def replay_lines(doc: Mapping[str, Any]) -> list[str]:
    """A trial's replay in words, for the terminal (the report says the same from the stored record)."""
    out = []
    if "log_rate" in doc:
        out.append(f"replay {doc['speed']}: sent {doc['sent_rate']:,.1f} req/s of the log's {doc['log_rate']:,.1f} "
                   f"({doc['rate_ratio']:.1%})" + (f"; behind: up to {doc['dropped_peak']:,} dropped in a second"
                                                    if doc.get("dropped_peak") else ""))
    else:
        out.append(f"replay max: the log's {doc['sent_in_log']:,} requests as fast as the closed loop goes")
    answered = doc["as_in_log"] + doc["differs"]
    if answered:
        top = ", ".join(f"{p} {n:,}" for p, n, _ in doc["differing"])
        out.append(f"as in the log {doc['as_in_log']:,} ({doc['as_in_log'] / answered:.1%}), differs from the log "
                   f"{doc['differs']:,}" + (f" (most: {top})" if top else ""))
    if doc["left_out"]:
        said = "; ".join(f"{n:,} {why} (" + ", ".join(f"{w} {c:,}" for w, c in doc["left_out_named"].get(why, []))
                         + ")" if doc["left_out_named"].get(why) else f"{n:,} {why}"
                         for why, n in doc["left_out"].items())
        out.append(f"left out of the log: {said}")
    if doc["grouped"]:
        out.append(f"{doc['pages']} pages recorded on their own, {doc['grouped']:,} more together as '{OTHER}'")
    return out


SHORT_HASH = 8
"""The hex digits of a log's hash a cell shows: enough to tell a user's logs apart."""


def log_digest(results: Iterable[Mapping[str, Any]]) -> str:
    """The replayed log's content hash, short, from the first of a run's trial results that kept it ("": none
    did: no replay, or a run stored before the hash was kept)."""
    return next((str(r["replay"]["sha256"])[:SHORT_HASH] for r in results if "sha256" in r.get("replay", {})), "")
