"""Why a server failed, from what the servers themselves logged (not from config arithmetic).

Every server of the lab logs to its container's stderr, so `docker logs` holds it. After
the measured window the runner reads each container's lines stamped inside it
(`lab.Deployment.log_lines`) and `Tally` counts them by cause: the stack's `[[causes]]`
(in its parts and stack file, read into `model.Cause`) say which line means which limit,
which setting it points to and which client failures it makes. `trial_notes` then names a
limit only where evidence points to it (log lines, workers busy at the cap on the status
pages, OOM kills) and quotes it, with the failures that cause explains; a limit the config
merely allows is not news.

The patterns were taken from lines the lab's own servers wrote under overload; they
are checked against those lines in tests/fixtures/logs/.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import LabError
from ..lab.containers import Deployment
from ..lab.stacks import Cause, Stack, all_causes


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
            m = cause.pattern.search(text)
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
    """From the 1 Hz status-page samples: the peak of each column a cause reads as a peak (busy
    workers), and how much each counter it reads rose in the window (php-fpm's 'max children reached')."""
    causes = list(causes)
    peaks = {c.peak for c in causes if c.peak}
    counters = {c.counter for c in causes if c.counter}
    out: dict[str, float] = {}
    seen: dict[str, list[float]] = {}
    for row in samples:
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


def _times(n: float) -> str:
    return "once" if n == 1 else f"{n:,.0f} times"


def _setting(cause: Cause, stack: Stack, settings: Mapping[str, Any]) -> tuple[str, Any] | None:
    key = stack.setting_of(cause)
    return (key, settings[key]) if key is not None and key in settings else None


def _status_evidence(cause: Cause, stack: Stack, settings: Mapping[str, Any], peaks: Mapping[str, float]) -> list[str]:
    """What the status pages say about a limit: a column at its peak reaching the setting (all workers busy),
    or a counter of the server's own that rose (php-fpm's 'max children reached').

    A busy count is evidence only where the stack file says so: php-fpm's status page takes a
    worker itself, so all look busy one client short of the cap, and a full pool leaves the page unanswered."""
    out = []
    s = _setting(cause, stack, settings)
    if cause.peak and s and isinstance(s[1], int) and peaks.get(cause.peak, -1) >= s[1]:
        out.append(cause.peak_said.format(limit=s[1]))
    if cause.counter and peaks.get(cause.counter):
        out.append(cause.counter_said.format(times=_times(peaks[cause.counter])))
    return out


def _failures(kinds: tuple[str, ...], failures: Mapping[str, int]) -> str:
    """The client failures a cause explains, in words; never a kind that was not seen."""
    total = sum(failures.values())
    if not total:
        return "no request failed: they waited"
    mine = {k: failures[k] for k in kinds if failures.get(k)}
    listed = ", ".join(f"{n:,} {k}" for k, n in mine.items())
    if mine and sum(mine.values()) == total:
        return f"the failures were {listed}"
    if mine:
        return f"the failures included {listed} (of {total:,})"
    seen = ", ".join(f"{n:,} {k}" for k, n in failures.items() if n)
    return f"it makes none of the failures seen ({seen})" if kinds else ""


def cause_note(cause: Cause, stack: Stack, settings: Mapping[str, Any], seen: Seen) -> str | None:
    """One cause's note, or None when no evidence points to it."""
    evidence = []
    t = seen.tally
    if t is not None and t.counts.get(cause.key):
        evidence.append(f"'{t.quotes[cause.key]}' logged {_times(t.counts[cause.key])}")
    evidence += _status_evidence(cause, stack, settings, seen.peaks)
    if not evidence:
        return None
    s = _setting(cause, stack, settings)
    head = cause.phrase + (f" ({s[0]} {s[1]})" if s else "")
    tail = _failures(cause.kinds, seen.failures) if cause.kinds else ""
    return f"{head} — {'; '.join(evidence)}" + (f"; {tail}" if tail else "")


def trial_notes(stack: Stack, settings: Mapping[str, Any], seen: Seen) -> list[str]:
    """Notes that name a limit only where the evidence points to it, quoting the evidence."""
    out = [n for c in stack.causes if (n := cause_note(c, stack, settings, seen))]
    if seen.oom_kills:
        cap = f" of {seen.memory / 2**20:,.0f} MiB" if seen.memory else ""
        tail = _failures(("reset", "http_5xx", "protocol_error", "timeout"), seen.failures)
        out.append(f"the kernel killed {seen.oom_kills:,} server process(es) at the memory cap{cap} "
                   f"(the cgroup's oom_kill count)" + (f"; {tail}" if tail else ""))
    return out


@dataclass(frozen=True)
class Causes:
    """What a trial's servers showed, for its TrialRecord."""

    log_evidence: dict[str, int] | None
    """Log lines of the window by cause; None: the logs could not be read."""
    notes: list[str]
    warnings: list[str]


def examine(dep: Deployment, window: tuple[float, float], failures: Mapping[str, int],
            samples: Iterable[Mapping[str, Any]], oom_kills: int = 0, memory: int | None = None) -> Causes:
    """A running deployment's logs of the window counted by cause, and the notes all the evidence makes.

    Called before the containers stop: their logs go with them."""
    try:
        counted: Tally | None = Tally(*window, causes=dep.stack.causes).feed_all(dep.log_lines(*window))
        warnings = []
    except LabError as e:
        counted, warnings = None, [f"server logs: {e}; no cause could be read from them"]
    seen = Seen(counted, failures, status_peaks(samples, dep.stack.causes), oom_kills, memory)
    return Causes(None if counted is None else counted.counts, trial_notes(dep.stack, dep.settings, seen), warnings)
