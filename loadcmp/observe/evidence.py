"""Why a server failed, from what the servers themselves logged (not from config arithmetic).

Every server of the lab logs to its container's stderr, so `docker logs` holds it. After
the measured window the runner reads each container's lines stamped inside it
(`lab.Deployment.log_lines`) and `Tally` counts them by cause: the stack's `[[causes]]`
(in its parts and stack file, read into `model.Cause`) say which line means which limit,
which setting it points to and which client failures it makes. `trial_causes` then keeps a
limit only where evidence points to it (log lines, workers busy at the cap on the status
pages, the kernel's listen-queue overflows summed over the window (`kernel`), OOM kills), as
a record of figures (`records.CauseDoc`: the line it quotes and how often, the failure kinds
it explains); `report.causes` says it in words. A limit the config merely allows is not news.

The patterns were taken from lines the lab's own servers wrote under overload; they
are checked against those lines in tests/fixtures/logs/.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import LabError
from ..units import Setting
from ..lab.containers import Deployment
from ..lab.model import StatusPage
from ..lab.stacks import Cause, Stack, all_causes
from ..facts import KernelDoc
from ..records import CauseDoc
from . import ownlogs
from .kernel import COUNTERS, SCOPE_SAID
from .statuspages import BUSY_UNREAD

OOM_KINDS = ("reset", "http_5xx", "protocol_error", "timeout")
"""The client failures a server process killed at the memory cap makes."""


def stamp(line: str) -> tuple[float | None, str]:
    """Split Docker's RFC 3339 timestamp (`docker logs -t`) off a line: (epoch seconds or None, the rest)."""
    head, sep, rest = line.partition(" ")
    if sep and len(head) > 20 and head[4] == "-" and head[10] == "T":
        try:
            return datetime.fromisoformat(head).timestamp(), rest
        except ValueError:
            pass
    return None, line


@dataclass
class Tally:
    """Counts log lines by cause, keeping only those stamped inside [since, until]."""

    since: float | None = None
    until: float | None = None
    counts: dict[str, int] = field(default_factory=dict)
    """Cause key -> lines; causes not seen are absent."""
    quotes: dict[str, str] = field(default_factory=dict)
    """Cause key -> the first matching text, as the server wrote it."""
    lines: int = 0
    """Lines inside the window, whatever they said."""
    causes: tuple[Cause, ...] = field(default_factory=all_causes)
    """What to look for: the stack's causes (by default every stack's)."""

    def feed(self, line: str) -> None:
        t, text = stamp(line.rstrip("\n"))
        if t is not None and (self.since is not None and t < self.since or self.until is not None and t > self.until):
            return
        self.lines += 1
        for cause in self.causes:
            m = cause.pattern.search(text) if cause.pattern is not None else None
            if m:
                self.counts[cause.key] = self.counts.get(cause.key, 0) + 1
                self.quotes.setdefault(cause.key, m.group(0))
                return

    def feed_all(self, lines: Iterable[str]) -> Tally:
        for line in lines:
            self.feed(line)
        return self


def tally(text: str, since: float | None = None, until: float | None = None,
          causes: tuple[Cause, ...] | None = None) -> Tally:
    """A log's text counted by cause (lines without Docker's timestamp always count)."""
    t = Tally(since, until) if causes is None else Tally(since, until, causes=causes)
    return t.feed_all(text.splitlines())


LOG_LAG = 0.25
"""Seconds Docker may take to stamp a line that a server wrote as the window closed.

The window read runs to the end of the client's teardown: requests still in flight
at the close end there. What a server logs later is not read: nginx's upstream
timeouts (60 s after the request) in a shorter trial, and Apache's AH00161 and
php-fpm's max_children warnings, logged once per server or per episode, after the
first level of a server kept across levels (reuse_server)."""


def status_peaks(samples: Iterable[Mapping[str, Any]], causes: Iterable[Cause]) -> dict[str, float]:
    """From the 1 Hz samples: the peak of each column a cause reads as a peak (busy workers), how much each
    counter it reads rose in the window (php-fpm's 'max children reached'), and the sum of each column it reads
    as a total (the kernel's listen-queue overflows each second)."""
    causes = list(causes)
    peaks = {c.peak for c in causes if c.peak}
    counters = {c.counter for c in causes if c.counter}
    totals = {c.total for c in causes if c.total}
    out: dict[str, float] = {}
    seen: dict[str, list[float]] = {}
    for row in samples:
        for key in totals:
            if isinstance(v := row.get(key), (int, float)) and v == v:
                out[key] = out.get(key, 0) + v
        for key in peaks | counters:
            v = row.get(key)
            if v is None or v != v:  # NaN: the page did not answer that second
                continue
            if key in peaks:
                out[key] = max(out.get(key, v), v)
            if key in counters:
                seen.setdefault(key, []).append(v)
    for key, vals in seen.items():
        if len(vals) > 1 and vals[-1] > vals[0]:
            out[key] = vals[-1] - vals[0]
    return out


def held_at(samples: Iterable[Mapping[str, Any]], causes: Iterable[Cause],
            pages: Iterable[StatusPage] = ()) -> dict[str, tuple[float, float, int]]:
    """For each state column a cause reads as `held` (Apache's workers idle in keep-alive): its count and the busy
    workers at the fullest second the status page answered, and the seconds it went unanswered (`BUSY_UNREAD`: every
    worker held). Left out: a column never answered, or not the most common of its page's `states` at that second."""
    rows = list(samples)
    unread = sum(1 for r in rows if r.get(BUSY_UNREAD))
    out: dict[str, tuple[float, float, int]] = {}
    for col in {c.held for c in causes if c.held}:
        others = [s for p in pages if col in dict(p.states) for s, _ in p.states if s != col]
        answered = [(b, v, r) for r in rows if isinstance(b := r.get("busy_workers"), (int, float)) and b == b
                    and isinstance(v := r.get(col), (int, float)) and v == v]
        if answered:
            busy, held, row = max(answered, key=lambda a: (a[0], a[1]))
            if all(not isinstance(o := row.get(s), (int, float)) or o <= held for s in others):
                out[col] = (held, busy, unread)
    return out


@dataclass(frozen=True)
class Seen:
    """Everything a trial's notes are drawn from."""

    tally: Tally | None
    """None: the logs could not be read."""
    failures: Mapping[str, int]
    """The client's failures by kind (LoadSummary.failures)."""
    peaks: Mapping[str, float] = field(default_factory=dict)
    """status_peaks of the window."""
    oom_kills: int = 0
    memory: int | None = None
    """The memory cap, bytes."""
    scope: str | None = None
    """What the kernel's counters cover (`kernel.SCOPE_SAID`'s keys); None: they were not read."""
    somaxconn: int | None = None
    """The host's net.core.somaxconn, which cuts every listen backlog."""
    slow: int = 0
    """The client's connects that waited for TCP's SYN retry (`SlowConnects.over_1s`): the host's counters are
    this server's only where the client saw what they count."""
    held: Mapping[str, tuple[float, float, int]] = field(default_factory=dict)
    """`held_at` of the window: a state column's count and the busy workers at the fullest answered second, and the
    seconds the page went unanswered."""


def _setting(cause: Cause, stack: Stack, settings: Mapping[str, Setting]) -> tuple[str, Setting] | None:
    key = stack.setting_of(cause)
    return (key, settings[key]) if key is not None and key in settings else None


def _status_evidence(cause: Cause, stack: Stack, settings: Mapping[str, Setting], seen: Seen,
                     rec: CauseDoc) -> None:
    """What the status pages say about a limit, into its record: a column at its peak reaching the setting
    (all workers busy), or a counter of the server's own that rose (php-fpm's 'max children reached').

    A busy count is evidence only where the stack file says so: php-fpm's status page takes a
    worker itself, so all look busy one client short of the cap, and a full pool leaves the page unanswered."""
    s, peaks = _setting(cause, stack, settings), seen.peaks
    if cause.peak and s and isinstance(s[1], int) and peaks.get(cause.peak, -1) >= s[1]:
        rec["peak"], rec["peak_said"] = peaks[cause.peak], cause.peak_said
    if cause.counter and peaks.get(cause.counter):
        rec["rose"], rec["rose_said"] = peaks[cause.counter], cause.counter_said
    # a kernel counter's rise: kept as one, its scope said; the host's counters count any listener's queue, so
    # there it is this server's only where its own client saw it (a slow connect, or a failure the cause makes)
    mine = (cause.total not in COUNTERS.values() or seen.scope != "host" or seen.slow > 0
            or any(seen.failures.get(k) for k in cause.kinds))
    if cause.held and s and isinstance(s[1], int) and (got := seen.held.get(cause.held)):
        held, busy, unread = got
        if (busy >= s[1] - 1 or unread) and held > 0:  # all held (its page takes one), the state the most common
            rec["held"], rec["held_busy"], rec["held_said"] = held, busy, cause.held_said
    if cause.total and peaks.get(cause.total) and mine:
        rec["rose"] = peaks[cause.total]
        rec["rose_said"] = cause.total_said.replace("{scope}", SCOPE_SAID.get(seen.scope or "host", ""))


def cause_record(cause: Cause, stack: Stack, settings: Mapping[str, Setting], seen: Seen) -> CauseDoc | None:
    """One cause as the evidence shows it (its lines logged, the status pages), or None when none points to it."""
    rec = CauseDoc(cause=cause.key, phrase=cause.phrase)
    if s := _setting(cause, stack, settings):
        rec["setting"], rec["value"] = s
    if cause.also and (also := stack.setting_of(cause, cause.also)) is not None and also in settings:
        rec["also"] = {also: settings[also]}
    if cause.total and s and isinstance(s[1], int) and seen.somaxconn and s[1] > seen.somaxconn:
        rec["also"] = {**rec.get("also", {}), "net.core.somaxconn (which cuts it)": seen.somaxconn}
    t = seen.tally
    if t is not None and t.counts.get(cause.key):
        rec["quote"], rec["logged"] = t.quotes[cause.key], t.counts[cause.key]
    _status_evidence(cause, stack, settings, seen, rec)
    if not ({"logged", "peak", "rose", "held"} & rec.keys()):
        return None
    if cause.kinds:
        rec["kinds"] = list(cause.kinds)
    return rec


def trial_causes(stack: Stack, settings: Mapping[str, Setting], seen: Seen) -> list[CauseDoc]:
    """The limits the evidence points to, and only those (`report.causes` says them in words)."""
    out = [r for c in stack.causes if (r := cause_record(c, stack, settings, seen))]
    if seen.oom_kills:
        oom = CauseDoc(cause="oom", phrase="the kernel killed server processes at the memory cap",
                       oom_kills=seen.oom_kills, kinds=list(OOM_KINDS))
        if seen.memory:
            oom["memory"] = seen.memory
        out.append(oom)
    return out


@dataclass(frozen=True)
class Causes:
    """What a trial's servers showed, for its TrialRecord."""

    log_evidence: dict[str, int] | None
    """Log lines of the window by cause; None: the logs could not be read."""
    causes: list[CauseDoc]
    warnings: list[str]


def examine(dep: Deployment, window: tuple[float, float], failures: Mapping[str, int],
            samples: Iterable[Mapping[str, Any]], oom_kills: int = 0, memory: int | None = None,
            kernel: KernelDoc | None = None, slow: int = 0) -> Causes:
    """A running deployment's logs of the window counted by cause, and the causes all the evidence shows (the
    kernel's counters with their facts, and the client's `slow` connects that tie them to this server).

    Called before the containers stop: their logs go with them. A user's own config's error log, in a file of
    its own, is read too (`ownlogs`)."""
    try:
        counted: Tally | None = Tally(*window, causes=dep.stack.causes).feed_all(dep.log_lines(*window))
        warnings = []
    except LabError as e:
        counted, warnings = None, [f"server logs: {e}; no cause could be read from them"]
    if dep.plan.own:  # a user's own config may log to a file of its own: counted the same way
        lines, said = ownlogs.window_lines(dep, *window)
        warnings += said
        if counted is not None:
            counted.feed_all(lines)
    samples = list(samples)
    held = held_at(samples, dep.stack.causes, dep.stack.status)
    seen = Seen(counted, failures, status_peaks(samples, dep.stack.causes), oom_kills, memory,
                (kernel or {}).get("scope"), (kernel or {}).get("somaxconn"), slow, held)
    return Causes(None if counted is None else counted.counts, trial_causes(dep.stack, dep.settings, seen), warnings)
