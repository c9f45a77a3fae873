"""Access logs read into entries: nginx's and Apache's `combined` and `common` formats, and JSON lines.

A log is read whole before anything starts, so a mistake in it is said in one line (exit 2): an empty
log, or one whose lines are not of its format (the first bad line named, `file:line: ...`). A few bad
lines among many good ones (a truncated last line, a line a crash cut) are counted and left out; more
than `MAX_BAD_SHARE` of them refuse the log, since a replay of what is left would not be the log.

The format is told by the first lines (`detect`) or given (`--log-format`):

- `combined`: `addr ident user [time] "request" status bytes "referer" "agent"` (nginx's default
  `access_log`, Apache's `LogFormat ... combined`), with an optional leading `vhost[:port]`
  (Apache's `vhost_combined`), which is the entry's host;
- `common`: the same without referer and agent (Apache's `common`, `%b` as `-` for no body);
- `json`: one object a line, as nginx's `log_format ... escape=json` or Caddy write. The keys read, the
  first present of each: the time `msec` (epoch seconds with milliseconds), `ts`, `time_iso8601`,
  `time_local`, `timestamp`, `time`, `@timestamp`; minus `request_time` (seconds) when given, as nginx
  logs a request when it ends; the request `request` ("GET /p HTTP/1.1", or Caddy's object with
  `method`, `uri`, `host`), or `method` with `request_uri`, `uri` or `path` (and `args` or
  `query_string`); `status`; the body size `body_bytes_sent`, `bytes_sent`, `bytes` or `size`; the host
  `host`, `http_host`, `server_name` or `vhost`.

A line of the format whose request is not `METHOD target [HTTP/x]` (a scanner's bytes, nginx's `-`
for a closed connection) is an entry without a method: the replay counts it and leaves it out.
"""

from __future__ import annotations

import calendar
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from ..errors import Problems, UsageError

LogFormat = Literal["combined", "common", "json"]
FORMATS: tuple[LogFormat, ...] = ("combined", "common", "json")

MAX_BAD_SHARE = 0.01
"""At most this share of a log's lines may be unreadable (counted and left out); more refuses the log."""
DETECT_LINES = 20
"""How many of the first lines tell the format."""

_Q = r'"((?:[^"\\]|\\.)*)"'
LINE = re.compile(r'^(?:(\S+?)(?::\d+)? )?(\S+) (\S+) (\S+) \[([^\]]+)\] ' + _Q + r' (\d{3}) (\d+|-)(.*)$')
"""common, and combined before its tail: vhost, addr, ident, user, time, request, status, bytes, the rest."""
TAIL = re.compile(r'^ ' + _Q + ' ' + _Q + r'(?: .*)?$')
"""combined's tail: referer and agent (nginx's own extras after them are allowed)."""
REQUEST = re.compile(r"^([A-Za-z]+) (\S+)(?: HTTP/\d(?:\.\d)?)?$")
MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                      "Dec"), 1)}
CLF_TIME = re.compile(r"^(\d\d)/(\w{3})/(\d{4}):(\d\d):(\d\d):(\d\d)(?:\.(\d+))? ([+-])(\d\d)(\d\d)$")


@dataclass(frozen=True)
class Wording:
    """How a log's problems are said by the command that reads it: `run --replay`'s words or `loadcmp mix`'s
    (whose own flag is `--methods`): one check, each command's flags named."""

    nothing: str = "nothing to replay"
    methods: str = "--replay-methods"


REPLAY_WORDS = Wording()
MIX_WORDS = Wording("nothing to make a mix of", "--methods")


@dataclass(frozen=True, slots=True)
class Entry:
    """One request of the log, as the log says it."""

    time: float
    """When it started, epoch seconds (to the second in combined and common logs)."""
    method: str
    """Upper case; "" when the log's request was not a request line (then `path` is what it was)."""
    path: str
    """The path with its query, as sent (`/?p=1042`); an absolute-form target gives its path here."""
    status: int
    bytes: int
    host: str | None
    """The virtual host when the log names one (vhost_combined, JSON `host`, an absolute-form target)."""
    line: int
    """Its line in the file (1-based)."""


@dataclass(frozen=True)
class AccessLog:
    """A log read whole: its entries in the file's order, and what could not be read."""

    file: str
    format: LogFormat
    entries: tuple[Entry, ...]
    lines: int
    """Non-blank lines read."""
    bad: tuple[str, ...] = ()
    """The unreadable lines, each said as `file:line: why` (left out; at most MAX_BAD_SHARE of `lines`)."""
    subsecond: bool = False
    """Times finer than a second (JSON `msec`): then kept as they are, else spread over their second."""


class BadLine(ValueError):
    """A line that is not of the log's format; its message says why."""


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\") if "\\" in text else text


def _clf_time(text: str, cache: dict[str, float]) -> float:
    """`26/Nov/2026:01:13:35 +0000` as epoch seconds (many lines share a second: cached)."""
    t = cache.get(text)
    if t is not None:
        return t
    m = CLF_TIME.match(text)
    if m is None or m.group(2) not in MONTHS:
        raise BadLine(f"bad time [{text}]: expected like [26/Nov/2026:01:13:35 +0000]")
    d, mon, y, hh, mm, ss, frac, sign, zh, zm = m.groups()
    try:
        t = float(calendar.timegm((int(y), MONTHS[mon], int(d), int(hh), int(mm), int(ss))))
    except ValueError:
        raise BadLine(f"bad time [{text}]") from None
    t -= (1 if sign == "+" else -1) * (int(zh) * 3600 + int(zm) * 60)
    if frac:
        t += float("0." + frac)
    cache[text] = t
    return t


def _request(text: str) -> tuple[str, str, str | None]:
    """(method, path with query, host of an absolute-form target) of a request line; ("", text, None): not one."""
    m = REQUEST.match(text)
    if m is None:
        return "", text, None
    method, target = m.group(1).upper(), m.group(2)
    if target.startswith(("http://", "https://")):
        parts = urlsplit(target)
        return method, (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), parts.hostname
    return method, target, None


def parse_clf(text: str, n: int, fmt: LogFormat, cache: dict[str, float]) -> Entry:
    """One line of a combined or common log; BadLine says why it is not one."""
    m = LINE.match(text)
    if m is None:
        raise BadLine(f"not a {fmt} log line")
    vhost, _addr, _ident, _user, when, request, status, size, rest = m.groups()
    if fmt == "combined" and TAIL.match(rest) is None:
        raise BadLine('not a combined log line: no "referer" "user-agent" after the size (a common log? '
                      "use --log-format common)")
    method, path, host = _request(_unescape(request))
    return Entry(_clf_time(when, cache), method, path, int(status), 0 if size == "-" else int(size),
                 host or vhost, n)


TIME_KEYS = ("msec", "ts", "time_iso8601", "time_local", "timestamp", "time", "@timestamp")
SIZE_KEYS = ("body_bytes_sent", "bytes_sent", "bytes", "size")
HOST_KEYS = ("host", "http_host", "server_name", "vhost")
PATH_KEYS = ("request_uri", "uri", "path")


def _first(obj: Mapping[str, Any], keys: Iterable[str]) -> Any:
    return next((obj[k] for k in keys if obj.get(k) not in (None, "", "-")), None)


def _json_time(value: Any, cache: dict[str, float]) -> float:
    """A JSON log's time: epoch seconds (a number, or a number as text), ISO 8601, or nginx's time_local."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        raise BadLine(f"bad time {value!r}")
    try:
        return float(value)
    except ValueError:
        pass
    if CLF_TIME.match(value):
        return _clf_time(value, cache)
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadLine(f"bad time {value!r}: expected epoch seconds, ISO 8601 or [26/Nov/2026:01:13:35 +0000]") from None
    if when.tzinfo is None:
        raise BadLine(f"bad time {value!r}: no time zone")
    return when.timestamp()


def _number(value: Any, what: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise BadLine(f"bad {what} {value!r}: not a number") from None


def _json_request(obj: Mapping[str, Any]) -> tuple[str, str, str | None]:
    req = obj.get("request")
    if isinstance(req, dict):  # Caddy: {"method": ..., "uri": ..., "host": ...}
        verb, path = str(req.get("method") or ""), str(req.get("uri") or "")
        return (verb.upper(), path, req.get("host")) if verb and path else ("", path, None)
    if isinstance(req, str):
        return _request(req)
    method, uri = obj.get("method") or obj.get("request_method"), _first(obj, PATH_KEYS)
    if not method or not uri:
        raise BadLine('no request: expected "request", or "method" with "request_uri", "uri" or "path"')
    query, where = _first(obj, ("args", "query_string")), str(uri)
    return str(method).upper(), where + (f"?{query}" if query and "?" not in where else ""), None


def parse_json(text: str, n: int, cache: dict[str, float]) -> Entry:
    """One line of a JSON-lines log; BadLine says why it is not one."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadLine(f"not a JSON object ({e.msg})") from None
    if not isinstance(obj, dict):
        raise BadLine("not a JSON object")
    when = _first(obj, TIME_KEYS)
    if when is None:
        raise BadLine(f"no time: expected one of {', '.join(TIME_KEYS)}")
    t = _json_time(when, cache)
    if obj.get("request_time") not in (None, "", "-"):
        t -= _number(obj["request_time"], "request_time")
    method, path, host = _json_request(obj)
    status = obj.get("status")
    if status in (None, ""):
        raise BadLine('no "status"')
    size = _first(obj, SIZE_KEYS)
    return Entry(t, method, path, int(_number(status, "status")), int(_number(size or 0, "size")),
                 cast(str | None, host or _first(obj, HOST_KEYS)), n)


def parse_line(text: str, n: int, fmt: LogFormat, cache: dict[str, float]) -> Entry:
    """One line in a given format (BadLine if not)."""
    return parse_json(text, n, cache) if fmt == "json" else parse_clf(text, n, fmt, cache)


def detect(first: list[tuple[int, str]], file: str) -> LogFormat:
    """The format of a log told by its first lines: JSON when the first is an object, combined when most carry
    referer and agent, common when most are without; a UsageError naming the first line when none fits."""
    if first[0][1].startswith("{"):
        return "json"  # its lines then say what they lack
    cache: dict[str, float] = {}
    for fmt in ("combined", "common"):
        good = 0
        for n, text in first:
            try:
                parse_line(text, n, fmt, cache)
                good += 1
            except BadLine:
                pass
        if good * 2 > len(first):
            return fmt
    n, text = first[0]
    raise UsageError(f"{file}:{n}: not an access log line loadcmp reads (nginx's or Apache's combined or common, "
                     f"or JSON lines; --log-format says which): {printable(text)}")


def printable(text: str, width: int = 80) -> str:
    """A log's text fit to print: a garbage log's control bytes escaped (`\\x1b`: never sent to the terminal
    as they are), cut to `width`."""
    out = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text[: width * 2])
    return out if len(out) <= width else out[: width - 3] + "..."


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="replace") as f:
        for n, raw in enumerate(f, 1):
            text = raw.strip()
            if text:
                yield n, text


def read_log(file: str | Path, fmt: LogFormat | None = None, words: Wording = REPLAY_WORDS) -> AccessLog:
    """A log read whole (format detected unless given): UsageError, its first bad line named, when it is
    empty, not a log, or more than MAX_BAD_SHARE of its lines are unreadable (said in `words`)."""
    path = Path(file)
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"bad --log-format {fmt!r}: use {', '.join(FORMATS)}")
    try:
        lines = _lines(path)
        first = list(itertools.islice(lines, DETECT_LINES))
        if not first:
            raise UsageError(f"{path}: the access log is empty: {words.nothing}")
        fmt = fmt or detect(first, str(path))
        entries, bad = _parse_all(first, lines, fmt, path)
    except OSError as e:
        raise UsageError(f"cannot read the access log {path}: {e.strerror or e}") from None
    total = len(entries) + len(bad)
    if bad and (not entries or len(bad) > MAX_BAD_SHARE * total):
        problems = Problems()
        problems.add(f"{bad[0]} ({len(bad):,} of {total:,} lines are not {fmt} log lines; "
                     f"at most {MAX_BAD_SHARE:.0%} may be)")
        problems.raise_if_any(UsageError)
    subsecond = any(e.time != int(e.time) for e in entries)
    return AccessLog(str(path), fmt, tuple(entries), total, tuple(bad), subsecond)


def _parse_all(first: list[tuple[int, str]], rest: Iterator[tuple[int, str]], fmt: LogFormat,
               path: Path) -> tuple[list[Entry], list[str]]:
    entries: list[Entry] = []
    bad: list[str] = []
    cache: dict[str, float] = {}
    for n, text in itertools.chain(first, rest):
        try:
            entries.append(parse_line(text, n, fmt, cache))
        except (ValueError, OverflowError) as e:  # BadLine, or a number JSON gave that int() refuses
            bad.append(f"{path}:{n}: {printable(str(e), 160)}: {printable(text)}")
    return entries, bad
