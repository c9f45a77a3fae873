"""The error logs a user's own config sends to files (`--config`): read from inside their container.

loadcmp's own configs log to the container's stderr, which `docker logs` holds. A user's file may
send its server's error log to a file (`lab.ownconfig.error_logs` finds where); after each trial that
file is read in the role's container and its lines of the measured window are counted by cause, as
loadcmp's own log is. The window is read from each line's own timestamp (nginx, Apache, lighttpd,
php-fpm, Caddy's console and JSON formats, in the container's time: UTC); a line without one counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from ..errors import LabError
from ..lab.containers import Deployment
from ..lab.dockerapi import demuxed_of
from ..lab.ownconfig import ErrorLog, error_logs

MAX_BYTES = 64 << 20
"""The end of a log read after a trial: a kept server's log holds every level before it too."""

READ = ('[ -r /etc/apache2/envvars ] && . /etc/apache2/envvars; eval "f=\\"$1\\""; '
        'if [ -r "$f" ] && [ -f "$f" ]; then tail -c {max} "$f"; else echo "$f: no such file" >&2; exit 3; fi')
"""Run in the role's container: Apache's `${APACHE_LOG_DIR}` expands as Apache expands it."""


def _whole(fmt: str) -> Callable[[str], float]:
    return lambda s: datetime.strptime(s, fmt).replace(tzinfo=timezone.utc).timestamp()


STAMPS: tuple[tuple[re.Pattern[str], Callable[[str], float]], ...] = (
    (re.compile(r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d)"), _whole("%Y/%m/%d %H:%M:%S")),  # nginx, Caddy's console
    (re.compile(r"^\[\w{3} (\w{3} \d\d \d\d:\d\d:\d\d)(?:\.\d+)? (\d{4})\]"), _whole("%b %d %H:%M:%S %Y")),  # Apache
    (re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)"), _whole("%Y-%m-%d %H:%M:%S")),  # lighttpd
    (re.compile(r"^\[(\d\d-\w{3}-\d{4} \d\d:\d\d:\d\d)"), _whole("%d-%b-%Y %H:%M:%S")),  # php-fpm
)
"""A line's own timestamp, to the second, by the formats the servers write."""


def line_time(line: str) -> float | None:
    """When a server wrote a line of its error log (epoch seconds, whole), or None when it says not."""
    if line.startswith("{"):
        try:
            ts = json.loads(line).get("ts")
        except (ValueError, AttributeError):
            return None
        return float(ts) if isinstance(ts, int | float) else None
    for rx, parse in STAMPS:
        m = rx.match(line)
        if m:
            try:
                return parse(" ".join(m.groups()))
            except ValueError:
                return None
    return None


def in_window(lines: Iterator[str] | list[str], since: float, until: float) -> Iterator[str]:
    """The lines written inside [since, until]; a stamp to the second counts for the whole second."""
    for line in lines:
        t = line_time(line)
        if t is None or since - 1 < t <= until:
            yield line


def unreadable(dep: Deployment) -> list[ErrorLog]:
    """The user's error logs that loadcmp cannot read: said so by the file (syslog, a pipe), or not there in the
    running container. Asked once the server is up, for the server's 'not measured' list."""
    out = []
    for log in error_logs(dep.stack, dep.plan.own, dep.plan.config_files()):
        if log.why is None:
            try:
                read(dep, log, 0)
            except LabError as e:
                if log.optional:
                    continue
                log = ErrorLog(log.role, log.program, log.source, log.path, str(e))
        if log.why is not None:
            out.append(log)
    return out


def read(dep: Deployment, log: ErrorLog, max_bytes: int = MAX_BYTES) -> list[str]:
    """A log file's lines, read in its role's container (its last `max_bytes`; 0: only whether it can be read);
    LabError when it cannot be."""
    import docker

    try:
        res = dep.container_of(log.role).exec_run(["sh", "-c", READ.replace("{max}", str(max_bytes)), "sh",
                                                   log.path], demux=True)
    except (docker.errors.APIError, OSError) as e:
        raise LabError(f"its container does not answer ({e})") from None
    out, err = demuxed_of(res)
    if res.exit_code != 0:
        said = (err or b"").decode(errors="replace").strip().splitlines()
        raise LabError(said[-1] if said else f"unreadable (exit {res.exit_code})")
    return (out or b"").decode(errors="replace").splitlines()


def window_lines(dep: Deployment, since: float, until: float) -> tuple[list[str], list[str]]:
    """Every readable user error log's lines of the window, and a warning for each that could not be read."""
    lines: list[str] = []
    warnings: list[str] = []
    for log in error_logs(dep.stack, dep.plan.own, dep.plan.config_files()):
        if log.why is not None:
            continue  # named among what is not measured when the server started
        try:
            lines += in_window(read(dep, log), since, until)
        except LabError as e:
            if log.optional:
                continue
            warnings.append(f"{log.program}'s error log {log.path} ({log.source}): {e}; no cause could be read "
                            "from it")
    return lines, warnings
