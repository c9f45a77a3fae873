"""The user's own config files (`--config LABEL:ROLE=FILE`): a role runs the user's file, not the one loadcmp renders.

loadcmp still has to reach the server. The front role's port is read from the file by the stack's `listen`
patterns, or given (`port=N`). Each status page's path is read from the user's files by its `find` pattern,
or given (`status.KIND=/path`, or `none`). A page that does not answer with its figures once the server is up is
left out and named (`Deployment.unmeasured`), never guessed. The settings that a replaced file held are no
longer loadcmp's: they leave the plan, so that no note quotes a default the user's file may not have.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .model import ErrorLogFind, Role, Stack, StatusPage

MAX_BYTES = 1 << 20
"""A config file larger than this is not a config file."""
NONE = "none"
"""`status.KIND=none`: the user's server has no such page (nothing is tried)."""


@dataclass(frozen=True)
class OwnConfig:
    """One role of one server label running the user's file."""

    server: str
    role: str
    file: str
    """Absolute path of the user's file."""
    port: int | None = None
    """Where the front role listens, when the file does not say it in a way the stack's patterns read."""
    status: Mapping[str, str | None] = field(default_factory=dict)
    """Status page kind -> its path on the user's server, or None: it has none."""

    def doc(self) -> dict[str, Any]:
        """As run.json's spec keeps it (and an experiment file's [[configs]] table gives it)."""
        out: dict[str, Any] = {"server": self.server, "role": self.role, "file": self.file}
        if self.port is not None:
            out["port"] = self.port
        if self.status:
            out["status"] = {k: v or NONE for k, v in self.status.items()}
        return out


def _port(raw: object, what: str) -> int:
    try:
        port = int(str(raw).strip()) if not isinstance(raw, bool) else 0
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise UsageError(f"{what}: port {raw!r} is not a port (1..65535)")
    return port


def _status_path(raw: object, what: str) -> str | None:
    if not isinstance(raw, str) or not (raw == NONE or raw.startswith("/")):
        raise UsageError(f"{what}: a status page is a path starting with / (or {NONE}), got {raw!r}")
    return None if raw == NONE else raw


def from_doc(d: Mapping[str, Any], base: Path | None = None, what: str = "[[configs]]") -> OwnConfig:
    """A [[configs]] table (server, role, file, port, status = {KIND = PATH}); `file` relative to `base`."""
    unknown = sorted(set(d) - {"server", "role", "file", "port", "status"})
    if unknown:
        raise UsageError(f"{what}: unknown key(s) {', '.join(unknown)} (known: server, role, file, port, status)")
    for key in ("server", "role", "file"):
        if not isinstance(d.get(key), str) or not d[key].strip():
            raise UsageError(f"{what}: {key} is missing (a string)")
    status = d.get("status", {})
    if not isinstance(status, Mapping):
        raise UsageError(f"{what}: status must be a table of KIND = \"/path\"")
    path = Path(d["file"]).expanduser()
    path = (base / path if base and not path.is_absolute() else path).resolve()
    return OwnConfig(d["server"].strip(), d["role"].strip(), str(path),
                     None if d.get("port") is None else _port(d["port"], what),
                     {str(k): _status_path(v, f"{what} status.{k}") for k, v in status.items()})


def from_tables(tables: Iterable[Mapping[str, Any]], base: Path) -> tuple[dict[str, Any], ...]:
    """An experiment file's [[configs]] tables, checked, as the spec keeps them (paths relative to the file)."""
    return tuple(from_doc(t, base, f"[[configs]] {t.get('server')}:{t.get('role')}").doc() for t in tables)


def parse_item(text: str) -> OwnConfig:
    """`LABEL:ROLE=FILE[,port=N][,status.KIND=PATH|none]` (a --config value)."""
    what = f"--config {text}"
    head, eq, rest = text.partition("=")
    label, colon, role = head.partition(":")
    if not (eq and colon and label.strip() and role.strip() and rest.strip()):
        raise UsageError(f"{what}: expected LABEL:ROLE=FILE (e.g. nginx:web=./nginx.conf; see `loadcmp servers` "
                         "for each stack's roles)")
    file, *options = rest.split(",")
    d: dict[str, Any] = {"server": label, "role": role, "file": file, "status": {}}
    for opt in options:
        key, eq, value = opt.partition("=")
        key = key.strip()
        if not eq:
            raise UsageError(f"{what}: {opt!r}: expected port=N or status.KIND=PATH after the file")
        if key == "port":
            d["port"] = value
        elif key.startswith("status.") and key[7:]:
            d["status"][key[7:]] = value.strip()
        else:
            raise UsageError(f"{what}: unknown option {key!r} (port=N, status.KIND=PATH or status.KIND=none)")
    return from_doc(d, Path.cwd(), what)


def read_text(own: OwnConfig) -> str:
    """The user's file as text (UsageError when it cannot be one)."""
    p = Path(own.file)
    what = f"--config {own.server}:{own.role}"
    try:
        if not p.is_file():
            raise UsageError(f"{what}: {p}: no such file")
        if p.stat().st_size > MAX_BYTES:
            raise UsageError(f"{what}: {p} is larger than {MAX_BYTES // 1024} KiB: not a config file?")
        return p.read_bytes().decode()
    except UnicodeDecodeError:
        raise UsageError(f"{what}: {p} is not UTF-8 text") from None
    except OSError as e:
        raise UsageError(f"{what}: cannot read {p}: {e.strerror or e}") from None


def role_of(stack: Stack, own: OwnConfig) -> Role:
    for r in stack.roles:
        if r.name == own.role:
            return r
    raise UsageError(f"--config {own.server}:{own.role}: stack {stack.name} has no role {own.role!r} "
                     f"(its roles: {', '.join(r.name for r in stack.roles)})")


def target(role: Role, own: OwnConfig) -> str:
    """The rendered file the user's replaces: the one of the same name, else the role's first (its main config)."""
    name = Path(own.file).name
    return next((dest for dest, _ in role.files if Path(dest).name == name), role.files[0][0])


def check(stack: Stack, configs: Sequence[OwnConfig]) -> list[str]:
    """Every problem of one label's configs (role, file, status kinds, two files for one target)."""
    errors: list[str] = []
    kinds = {p.kind for p in stack.status}
    seen: dict[str, str] = {}
    for own in configs:
        try:
            role = role_of(stack, own)
            read_text(own)
        except UsageError as e:
            errors.append(str(e))
            continue
        dest = f"{role.name}/{target(role, own)}"
        if dest in seen:
            errors.append(f"--config {own.server}:{own.role}: {own.file} and {seen[dest]} both replace {dest}")
        seen[dest] = own.file
        errors += [f"--config {own.server}:{own.role}: stack {stack.name} has no status page {k!r} "
                   f"(it has: {', '.join(sorted(kinds)) or 'none'})" for k in own.status if k not in kinds]
    return errors


def find_port(stack: Stack, text: str) -> int | None:
    """The first port the stack's `listen` patterns find in the file (group 1)."""
    for rx in stack.listen:
        m = re.search(rx, text, re.M)
        if m:
            return int(m.group(1))
    return None


def front_port(stack: Stack, configs: Sequence[OwnConfig]) -> tuple[int, str] | None:
    """(port, how it was known) when the user's file is the front role's main config; None: loadcmp picks it."""
    front = stack.front
    for own in configs:
        if own.role == front.name and target(front, own) == front.files[0][0]:
            if own.port is not None:
                return own.port, "given"
            port = find_port(stack, read_text(own))
            if port is None:
                raise UsageError(f"--config {own.server}:{own.role}: no port found in {own.file} (stack "
                                 f"{stack.name}'s `listen` patterns match no line of it); give it: "
                                 f"--config {own.server}:{own.role}={own.file},port=N")
            return port, f"read from {Path(own.file).name}"
    return None


def status_pages(stack: Stack, configs: Sequence[OwnConfig]) -> tuple[tuple[StatusPage, ...], dict[str, str]]:
    """The status pages to try on the user's server (path given, found by the page's `find`, else its own),
    and those not to try, with why."""
    given: dict[str, str | None] = {}
    for own in configs:
        given.update(own.status)
    texts = [read_text(own) for own in configs]
    pages: list[StatusPage] = []
    skipped: dict[str, str] = {}
    for page in stack.status:
        if page.kind in given:
            path = given[page.kind]
            if path is None:
                skipped[page.kind] = "you said your server has none"
                continue
        else:
            found = next((m.group(1) for t in texts if page.find and (m := re.search(page.find, t, re.M))), None)
            path = page.path if found is None else _with_query(found, page.path)
        pages.append(replace(page, path=path))
    return tuple(pages), skipped


def _with_query(path: str, default: str) -> str:
    """A found path keeps the query its page is read with (`/status` -> `/status?auto`)."""
    query = default.partition("?")[2]
    return path if "?" in path or not query else f"{path}?{query}"


STDERR = frozenset({"stderr", "/dev/stderr", "/dev/stdout", "/proc/self/fd/2", "/proc/self/fd/1", "/proc/1/fd/2",
                    "/proc/1/fd/1"})
"""Destinations that end in the container's log, which loadcmp reads anyway."""
SAFE_PATH = re.compile(r"^[\w${}./:@+-]+$")
"""A path that is read as written (`${APACHE_LOG_DIR}` expands in the container); any other is not read."""


@dataclass(frozen=True)
class ErrorLog:
    """An error log a user's file sends to a file of its own, away from the container's stderr."""

    role: str
    program: str
    source: str
    """The user's file that says so (its name) and how: `nginx-small.conf's error_log`."""
    path: str
    """As the file gives it, made absolute where the program's prefix is known."""
    why: str | None = None
    """Why loadcmp cannot read it (syslog, a pipe, a relative path); None: it is read from the role's container."""
    optional: bool = False
    """Read when it is there, not missed when it is not (nginx's default beside the logs its file names)."""

    def words(self) -> str:
        """What is not measured without it."""
        return (f"{self.program}'s error log {self.path} ({self.source}): {self.why or 'unreadable'}, so no cause "
                f"could be read from its lines")


def _where(syntax: ErrorLogFind, to: str) -> tuple[str, str | None]:
    """A destination as (path, why it cannot be read or None)."""
    if to.startswith("syslog"):
        return to, "sent to syslog"
    if to.startswith("|"):
        return to, "piped to a program"
    if to.startswith("memory:"):
        return to, "kept in memory"
    if to == "/dev/null":
        return to, "thrown away"
    if not SAFE_PATH.match(to):
        return to, "a path loadcmp does not read as written"
    if not to.startswith(("/", "$")):
        if syntax.root is None:
            return to, "a relative path (write it absolute)"
        return f"{syntax.root}/{to}", None
    return to, None


def error_logs(stack: Stack, own: Mapping[str, str], files: Mapping[str, str]) -> list[ErrorLog]:
    """The error logs the user's files (`role/name` -> the user's file; `files`: the texts by the same key) send
    somewhere other than the container's stderr, by the stack's `[error_log]` tables: each to be read from its
    container, or said why it cannot be. A file no table names (a user's stack) is not guessed at."""
    out: list[ErrorLog] = []
    for key, user_file in own.items():
        role, _, name = key.partition("/")
        text = files.get(key, "")
        for syntax in stack.error_logs:
            if name not in syntax.files:
                continue
            found = [m.group(1) for m in re.finditer(syntax.find, text, re.M)]
            source = f"named in {Path(user_file).name}"
            out += [ErrorLog(role, syntax.program, source, *_where(syntax, to))
                    for to in dict.fromkeys(found) if to not in STDERR]
            if syntax.default and (syntax.always or not found) and syntax.default not in found:
                where = _where(syntax, syntax.default)
                out.append(ErrorLog(role, syntax.program, f"{syntax.program}'s default", *where, optional=bool(found)))
    return out


def for_label(configs: Iterable[OwnConfig], label: str) -> list[OwnConfig]:
    return [c for c in configs if c.server == label]

