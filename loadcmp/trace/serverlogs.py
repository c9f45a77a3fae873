"""Each stack's trace log read back: the server's own timings of every request that carried a traceparent.

With the override `trace` on (`--trace`), every stack's templates add an access log at
/tmp/loadcmp-trace-<program>.log (nginx, apache, fpm, caddy, lighttpd) whose fields are the ones parsed here, in
that order; the trial reads those files in each role's container after its window (`observe.tracelogs`). An app's
database writes one too (mariadb: its own time per traced request, from what it keeps in memory), by a script
of the app's data run in its container first (`DUMPS`). The
format lives in two places, the templates and the parsers below; tests/test_trace_join.py reads lines each stack
wrote (tests/fixtures/trace/) through these parsers, so the two cannot drift apart unseen.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

LOG_GLOB = "/tmp/loadcmp-trace-*.log"
"""Where every stack's trace logs are, in each role's container."""

NAN = math.nan

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$|^([0-9a-f]{32})$")

DUMPS = "/etc/loadcmp/loadcmp-trace-*.sh"
"""A role's scripts (rendered from its data) that write its trace log from what a program keeps in memory (MariaDB's
performance_schema), run in its container before its trace logs are read."""

FLUSH: dict[str, str] = {"lighttpd": "pkill -HUP -x lighttpd"}
"""What makes a program write out the lines it buffers, run before its trace log is read: lighttpd flushes its
access log only every 4 s, and at SIGHUP (which reopens its logs). nginx's `flush=1s` needs only the wait."""

FRONTS = ("nginx", "caddy", "lighttpd", "apache")
"""The programs that take a client's request, in the order one is the front when two log an id (nginx-apache:
nginx in front of Apache)."""
UPSTREAMS = ("fpm",)
"""The programs that only ever serve behind another."""
DATABASES = ("mariadb",)
"""The programs that time the queries a request's upstream ran (an app's database): a part of the upstream's time."""


@dataclass(frozen=True)
class ServerLine:
    """One request as one server timed it (milliseconds; NaN where that server does not say)."""

    trace_id: str
    program: str
    role: str
    at: float
    """The server's own stamp of the line (epoch seconds)."""
    total_ms: float
    """The server's time for the whole request, from reading it to its answer handed to the kernel."""
    upstream_connect_ms: float = NAN
    upstream_ms: float = NAN
    """The time the front waited for its upstream (nginx: $upstream_response_time, summed over tries)."""
    status: int = 0
    cpu_pct: float = NAN
    mem_bytes: float = NAN
    queries: int = 0
    """A database's line: the request's queries it ran (its total_ms is their time summed)."""


@dataclass
class Parsed:
    """A trace log's lines: the ones with an id, and how many had none or could not be read."""

    lines: list[ServerLine] = field(default_factory=list)
    untraced: int = 0
    """Lines of requests that carried no traceparent (fpm logs every request; a sampled run's others)."""
    unreadable: int = 0
    """Lines in no format the parser knows (cut by a full disk, a log rotated mid-line)."""
    notes: list[str] = field(default_factory=list)
    """What the log says of itself that the join should know (a database's history that was full)."""


def trace_id(traceparent: str) -> str | None:
    """The 32 hex trace id of a W3C traceparent (or the bare id, as a database's trace log keeps it), or None."""
    m = TRACEPARENT.match(traceparent.strip().lower())
    return (m[1] or m[2]) if m else None


def _ms(s: str, scale: float = 1000.0) -> float:
    """A server's figure in milliseconds ("-": NaN; "0.001, 0.002", nginx's tries: summed)."""
    if s in ("-", ""):
        return NAN
    return sum(float(x) for x in s.replace(" ", "").split(",") if x not in ("-", "")) * scale


def _nginx(f: list[str], role: str) -> ServerLine:
    # $http_traceparent $msec $request_time $upstream_connect_time $upstream_header_time $upstream_response_time
    # $status $connection $connection_requests (nginx.conf.j2)
    return ServerLine(f[0], "nginx", role, float(f[1]), _ms(f[2]), _ms(f[3]), _ms(f[5]), int(f[6]))


def _apache(f: list[str], role: str) -> ServerLine:
    # %{traceparent}i %{msec}t %D %>s %{remote}p %k (apache2.conf.j2)
    return ServerLine(f[0], "apache", role, float(f[1]) / 1000, float(f[2]) / 1000, status=int(f[3]))


def _fpm(f: list[str], role: str) -> ServerLine:
    # %{HTTP_TRACEPARENT}e %{%s}t %{micro}d %{mili}d %M %C %s (php-fpm.conf.j2)
    return ServerLine(f[0], "fpm", role, float(f[1]), float(f[2]) / 1000, status=int(f[6]),
                      cpu_pct=float(f[5]), mem_bytes=float(f[4]))


def _lighttpd(f: list[str], role: str) -> ServerLine:
    # %{traceparent}i %{msec}t %D %>s %k (lighttpd.conf.j2)
    return ServerLine(f[0], "lighttpd", role, float(f[1]) / 1000, float(f[2]) / 1000, status=int(f[3]))


def _mariadb(f: list[str], role: str) -> ServerLine:
    # trace id, statements, their time summed (ms), the longest (ms) (the app's trace-mariadb.sh.j2)
    return ServerLine(f[0], "mariadb", role, NAN, float(f[2]), queries=int(f[1]))


def _history(f: list[str]) -> str | None:
    """A database's first line, `# <statements kept> <most kept>`: said when its history was full (the oldest
    statements of the trial were dropped before they were read)."""
    kept, most = int(f[1]), int(f[2])
    return (f"mariadb's statement history was full ({kept:,} statements kept): the trial's oldest queries were "
            "dropped before they were read, so some requests show less database time than they had") \
        if kept >= most else None


def _caddy(line: str, role: str) -> ServerLine | None:
    """Caddy's JSON access log: request>headers>Traceparent, duration (seconds), ts, status."""
    doc = json.loads(line)
    if doc.get("logger", "").split(".")[:3] != ["http", "log", "access"]:
        return None
    tp = (doc.get("request", {}).get("headers", {}).get("Traceparent") or ["-"])[0]
    return ServerLine(tp, "caddy", role, float(doc["ts"]), float(doc["duration"]) * 1000,
                      status=int(doc.get("status", 0)))


FIELDS: dict[str, tuple[int, Callable[[list[str], str], ServerLine]]] = {
    "nginx": (9, _nginx), "apache": (6, _apache), "fpm": (7, _fpm), "lighttpd": (5, _lighttpd),
    "mariadb": (4, _mariadb)}
"""Each plain format's field count and parser."""


def program_of(path: str) -> str | None:
    """The program whose trace log a file is (/tmp/loadcmp-trace-nginx.log: nginx), or None."""
    m = re.search(r"loadcmp-trace-([a-z]+)\.log$", path)
    return m[1] if m and (m[1] in FIELDS or m[1] == "caddy") else None


def parse_line(program: str, line: str, role: str) -> ServerLine | None:
    """One line; None when it carries no trace id. ValueError when it is in no known shape."""
    if program == "caddy":
        try:
            got = _caddy(line, role)
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as e:
            raise ValueError(str(e)) from None
    else:
        n, parse = FIELDS[program]
        f = line.split()
        if len(f) != n:
            raise ValueError(f"{len(f)} fields, {n} expected")
        got = parse(f, role)
    if got is None:
        return None
    tid = trace_id(got.trace_id)
    if tid is None:
        return None
    return ServerLine(tid, got.program, got.role, got.at, got.total_ms, got.upstream_connect_ms, got.upstream_ms,
                      got.status, got.cpu_pct, got.mem_bytes, got.queries)


def parse(program: str, role: str, lines: Iterable[str]) -> Parsed:
    """A trace log's lines parsed; the untraced and the unreadable counted."""
    out = Parsed()
    for line in lines:
        if not line.strip():
            continue
        if program in DATABASES and line.split()[0] == "#":  # the head line: its history full or not
            try:
                note = _history(line.split())
            except (ValueError, IndexError):
                out.unreadable += 1
                continue
            out.notes += [note] if note else []
            continue
        try:
            got = parse_line(program, line, role)
        except ValueError:
            out.unreadable += 1
            continue
        if got is None:
            out.untraced += 1
        else:
            out.lines.append(got)
    return out


OWN_LINES: dict[str, tuple[str, ...]] = {
    "nginx": ("log_format loadcmp_trace '$http_traceparent $msec $request_time $upstream_connect_time "
              "$upstream_header_time $upstream_response_time $status $connection $connection_requests';",
              "access_log /tmp/loadcmp-trace-nginx.log loadcmp_trace buffer=256k flush=1s;"),
    "apache": ('LogFormat "%{traceparent}i %{msec}t %D %>s %{remote}p %k" loadcmp_trace',
               'CustomLog /tmp/loadcmp-trace-apache.log loadcmp_trace "expr=-n %{HTTP:traceparent}"'),
    "fpm": ("access.log = /tmp/loadcmp-trace-fpm.log",
            'access.format = "%{HTTP_TRACEPARENT}e %{%s}t %{micro}d %{mili}d %M %C %s"'),
    "caddy": ("log loadcmp_trace { output file /tmp/loadcmp-trace-caddy.log; format json; include http.log.access }",
              "log (in the site)"),
    "lighttpd": ('server.modules += ( "mod_accesslog" )', 'accesslog.format = "%{traceparent}i %{msec}t %D %>s %k"',
                 'accesslog.filename = "/tmp/loadcmp-trace-lighttpd.log"'),
}
"""What a user's own config adds to be traced, per program."""


OWN_FILES = {"nginx.conf": "nginx", "php-fpm.conf": "fpm", "apache2.conf": "apache", "httpd.conf": "apache",
             "Caddyfile": "caddy", "lighttpd.conf": "lighttpd"}
"""A role's config file by name -> the program whose trace log it must write."""


def own_config_refusal(program: str, text: str) -> str | None:
    """Why a user's own config of `program` cannot be traced (it writes no trace log), with the line to add;
    None when it writes one (or the program keeps none)."""
    if program not in OWN_LINES or f"/tmp/loadcmp-trace-{program}.log" in text:
        return None
    return "it writes no trace log with the traceparent id; add: " + " | ".join(OWN_LINES[program])
