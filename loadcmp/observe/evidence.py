"""Why a server failed, from what the servers themselves logged (not from config arithmetic).

Every server of the lab logs to its container's stderr, so `docker logs` holds it:
nginx (`error_log stderr warn`), Apache (`ErrorLog /proc/self/fd/2`, LogLevel warn) and
php-fpm (`error_log = /proc/1/fd/2`, the container's own stderr). After the measured
window the runner reads each container's lines stamped inside it
(`lab.Deployment.log_lines`) and `Tally` counts them by cause: one table, `CAUSES`,
says which line means which limit, which setting it points to and which client
failures it makes. `trial_notes` then names a limit only where evidence points to it
(log lines, workers busy at the cap on the status pages, OOM kills) and quotes it,
with the failures that cause explains; a limit the config merely allows is not news.

The patterns were taken from lines the lab's own servers wrote under overload; they
are checked against those lines in tests/fixtures/logs/.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import LabError
from ..lab.containers import Deployment
from ..lab.stacks import Stack


@dataclass(frozen=True)
class Cause:
    """A limit a server says it met, and the log line that says so."""

    key: str
    """Stable name, `program.what`: the key of TrialRecord.log_evidence."""
    pattern: re.Pattern[str]
    """Matches the line; its match is what a note quotes."""
    phrase: str
    """What it means, in words, naming the limit."""
    setting: str | None = None
    """The tunable it points to (`{mpm}` is the stack's MPM); None: not a tunable."""
    kinds: tuple[str, ...] = ()
    """The client failure kinds it makes (load.outcomes); () = it makes none by itself."""


def _re(text: str) -> re.Pattern[str]:
    return re.compile(text)


CAUSES: tuple[Cause, ...] = (
    Cause("nginx.worker_connections", _re(r"\d+ worker_connections are not enough(?!, reusing)"),
          "nginx had no free connection and closed new ones unanswered", "nginx.worker_connections",
          ("reset", "connect_refused", "protocol_error")),
    Cause("nginx.worker_connections_reuse", _re(r"\d+ worker_connections are not enough, reusing connections"),
          "nginx had no free connection and closed idle keep-alive ones to make room", "nginx.worker_connections",
          ("reset", "protocol_error")),
    Cause("nginx.upstream_connect_eagain",
          _re(r"connect\(\) to \S+ failed \(11: Resource temporarily unavailable\) while connecting to upstream"),
          "nginx found php-fpm's socket queue full and answered 502", "fpm.listen_backlog", ("http_5xx",)),
    Cause("nginx.upstream_connect_timeout",
          _re(r"upstream timed out \(110: Connection timed out\) while connecting to upstream"),
          "nginx could not connect to its upstream within 60 s (its accept queue was full) and answered 504",
          None, ("http_5xx",)),
    Cause("nginx.upstream_timeout",
          _re(r"upstream timed out \(110: Connection timed out\) while reading response header from upstream"),
          "nginx waited 60 s for its upstream's answer, gave up and answered 504", None, ("http_5xx",)),
    Cause("nginx.no_live_upstreams", _re(r"no live upstreams while connecting to upstream"),
          "nginx had no upstream it could use and answered 502", None, ("http_5xx",)),
    Cause("nginx.too_many_open_files", _re(r"accept4\(\) failed \(24: Too many open files\)"),
          "nginx ran out of file descriptors and left connections unaccepted", None,
          ("connect_timeout", "timeout", "reset")),
    Cause("fpm.max_children", _re(r"\[pool \S+\] server reached (?:pm\.)?max_children setting \(\d+\)"),
          "php-fpm ran all the workers it may; further PHP requests queued on its socket", "fpm.max_children",
          ("http_5xx", "timeout")),
    Cause("fpm.seems_busy", _re(r"\[pool \S+\] seems busy"),
          "php-fpm had no idle worker and started more", "fpm.start_servers"),
    Cause("apache.max_request_workers", _re(r"AH00(?:161|286|484): server reached MaxRequestWorkers setting"),
          "Apache ran all the workers it may; further connections waited in its listen backlog",
          "{mpm}.MaxRequestWorkers", ("timeout", "connect_timeout", "connect_refused", "reset")),
)
BY_KEY = {c.key: c for c in CAUSES}


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

    def feed(self, line: str) -> None:
        t, text = stamp(line.rstrip("\n"))
        if t is not None and (self.since is not None and t < self.since or self.until is not None and t > self.until):
            return
        self.lines += 1
        for cause in CAUSES:
            m = cause.pattern.search(text)
            if m:
                self.counts[cause.key] = self.counts.get(cause.key, 0) + 1
                self.quotes.setdefault(cause.key, m.group(0))
                return

    def feed_all(self, lines: Iterable[str]) -> Tally:
        for line in lines:
            self.feed(line)
        return self


def tally(text: str, since: float | None = None, until: float | None = None) -> Tally:
    """A log's text counted by cause (lines without Docker's timestamp always count)."""
    return Tally(since, until).feed_all(text.splitlines())


LOG_LAG = 0.25
"""Seconds Docker may take to stamp a line that a server wrote as the window closed.

The window read runs to the end of the client's teardown: requests still in flight
at the close end there. What a server logs later is not read: nginx's upstream
timeouts (60 s after the request) in a shorter trial, and Apache's AH00161 and
php-fpm's max_children warnings, logged once per server or per episode, after the
first level of a server kept across levels (reuse_server)."""


def status_peaks(samples: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """From the 1 Hz status-page samples: peak busy Apache workers and php-fpm workers,
    and how often php-fpm's own counter says it reached max_children in the window."""
    out: dict[str, float] = {}
    reached: list[float] = []
    for row in samples:
        for key in ("apache_busy", "fpm_active"):
            v = row.get(key)
            if v is not None and v == v:  # NaN: the page did not answer that second
                out[key] = max(out.get(key, v), v)
        v = row.get("fpm_max_children_reached")
        if v is not None and v == v:
            reached.append(v)
    if len(reached) > 1 and reached[-1] > reached[0]:
        out["fpm_max_children_reached"] = reached[-1] - reached[0]
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
    if cause.setting is None:
        return None
    key = cause.setting.format(mpm=stack.mpm or "prefork")
    return (key, settings[key]) if key in settings else None


def _status_evidence(cause: Cause, stack: Stack, settings: Mapping[str, Any], peaks: Mapping[str, float]) -> list[str]:
    """What the status pages say about a worker cap: Apache's workers all busy, php-fpm's own counter.

    php-fpm's busy count is no evidence: its status page takes a worker itself, so all
    look busy one client short of the cap, and a full pool leaves the page unanswered."""
    out = []
    s = _setting(cause, stack, settings) if cause.key == "apache.max_request_workers" else None
    if s and peaks.get("apache_busy", -1) >= s[1]:
        out.append(f"server-status showed all {s[1]:,} workers busy (its own request on one of them)")
    if cause.key == "fpm.max_children" and peaks.get("fpm_max_children_reached"):
        out.append(f"fpm-status counted 'max children reached' {_times(peaks['fpm_max_children_reached'])}")
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
    out = [n for c in CAUSES if (n := cause_note(c, stack, settings, seen))]
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
        counted: Tally | None = Tally(*window).feed_all(dep.log_lines(*window))
        warnings = []
    except LabError as e:
        counted, warnings = None, [f"server logs: {e}; no cause could be read from them"]
    seen = Seen(counted, failures, status_peaks(samples), oom_kills, memory)
    return Causes(None if counted is None else counted.counts, trial_notes(dep.stack, dep.settings, seen), warnings)
