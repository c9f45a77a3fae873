"""The tables a part file (`configs/parts/<part>.toml`) and a stack file share, read and checked.

A part holds what one program brings to every stack that runs it: `[tunables.SECTION.NAME]`,
`[[checks]]`, `[[causes]]`, `[status.KIND]` and `[versions]`; a stack file may add its own of
each. Every mistake goes to an `errors.Problems` with its file and line, so that `stackfile`
and `apps` list them all at once.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Problems
from ..records import FAIL_KINDS
from .model import FORMATS, Cause, ErrorLogFind, StatusPage, Tunable

TUNABLE_KEYS = {"default", "doc", "min", "max", "choices", "pattern"}
STATUS_KEYS = {"path", "format", "fields", "find", "role", "command", "scoreboard", "count", "states"}
CAUSE_KEYS = {"key", "pattern", "phrase", "setting", "kinds", "peak", "peak_said", "counter", "counter_said", "total",
              "total_said", "also", "held", "held_said"}
ERROR_LOG_KEYS = {"program", "files", "find", "root", "default", "always"}
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED = {"stack", "role", "port", "ports", "bind", "nofile", "www", "vars", "app", "https"}
"""What templates see besides the settings (render.render): no tunable section may take these names."""


def read_toml(path: Path, problems: Problems) -> tuple[dict[str, Any], str] | None:
    try:
        text = path.read_text()
    except OSError as e:
        problems.at(path, None, None, f"cannot read it ({e.strerror or e})")
        return None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as e:
        problems.at(path, None, None, f"not valid TOML: {e}")
        return None


def open_toml(path: Path) -> tuple[Problems, dict[str, Any], str]:
    """A stack's or an app's own file, and the collector of the problems found in it from now on; ConfigError
    at once when it cannot be read or is not TOML (nothing else can be checked then)."""
    p = Problems()
    got = read_toml(path, p)
    p.raise_if_any()
    assert got is not None
    return p, *got


class Reader:
    """Reads the shared tables (tunables, checks, causes, status, versions) of one file into a stack's pieces."""

    def __init__(self, problems: Problems) -> None:
        self.p = problems
        self.tunables: dict[str, Tunable] = {}
        self.checks: list[tuple[Path, str, dict[str, Any]]] = []
        self.causes: list[tuple[Path, str, dict[str, Any]]] = []
        self.status: dict[str, StatusPage] = {}
        self.versions: dict[str, str] = {}
        self.listen: list[str] = []
        self.error_logs: list[ErrorLogFind] = []

    def read(self, path: Path, doc: dict[str, Any], text: str) -> None:
        self._tunables(path, doc.get("tunables", {}), text)
        if "error_log" in doc:
            self._error_log(path, doc["error_log"], text)
        self._status(path, doc.get("status", {}), text)
        for key, into in (("checks", self.checks), ("causes", self.causes)):
            items = doc.get(key, [])
            if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
                self.p.at(path, text, key, f"{key} must be an array of tables ([[{key}]])")
                continue
            into.extend((path, text, x) for x in items)
        versions = doc.get("versions", {})
        if not isinstance(versions, dict) or not all(isinstance(v, str) and v.strip() for v in versions.values()):
            self.p.at(path, text, "versions", "versions must be a table of program = \"command\"")
        else:
            self.versions.update(versions)
        listen = doc.get("listen", [])
        if not isinstance(listen, list) or not all(isinstance(x, str) for x in listen):
            self.p.at(path, text, "listen", "listen must be a list of regexes (group 1: the port)")
            return
        for rx in listen:
            problem = _one_group(rx)
            if problem:
                self.p.at(path, text, "listen", f"listen {rx!r}: {problem}")
            else:
                self.listen.append(rx)

    def _error_log(self, path: Path, t: object, text: str) -> None:
        """[error_log]: how the program's config names its error log (program, files, find; root, default,
        always)."""
        if not isinstance(t, dict):
            self.p.at(path, text, "error_log", "error_log must be a table ([error_log])")
            return
        wrong = []
        if bad := sorted(set(t) - ERROR_LOG_KEYS):
            wrong.append(f"unknown key(s) {', '.join(bad)} (known: {', '.join(sorted(ERROR_LOG_KEYS))})")
        if not {"program", "files", "find"} <= set(t):
            wrong.append("it needs program, files and find")
        wrong += [f"{k} must be a string" for k in ("program", "find", "root", "default")
                  if k in t and not isinstance(t[k], str)]
        files = t.get("files", [])
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            wrong.append("files must be a list of file names")
        if isinstance(t.get("find"), str) and (problem := _one_group(t["find"])):
            wrong.append(f"find {t['find']!r}: {problem}")
        if not isinstance(t.get("always", False), bool):
            wrong.append("always must be true or false")
        for message in wrong:
            self.p.at(path, text, "error_log", f"error_log: {message}")
        if not wrong:
            self.error_logs.append(ErrorLogFind(t["program"], tuple(files), t["find"], t.get("root"), t.get("default"),
                                                t.get("always", False)))

    def _tunables(self, path: Path, table: object, text: str) -> None:
        if not isinstance(table, dict):
            self.p.at(path, text, "tunables", "tunables must be a table of [tunables.SECTION.NAME] tables")
            return
        for section, knobs in table.items():
            if section in RESERVED:
                self.p.at(path, text, section, f"tunables.{section}: {section} is a name the templates use "
                           f"for something else ({', '.join(sorted(RESERVED))}); pick another section name")
                continue
            if not IDENT.match(section) or not isinstance(knobs, dict):
                self.p.at(path, text, section, f"tunables.{section}: a section is a name (letters, digits, _) "
                           "holding [tunables.SECTION.NAME] tables")
                continue
            for name, t in knobs.items():
                key = f"{section}.{name}"
                if not IDENT.match(name) or not isinstance(t, dict):
                    self.p.at(path, text, name, f"tunable {key}: give it as a [tunables.{key}] table "
                               "(names: letters, digits, _)")
                    continue
                tun = self._tunable(path, text, key, t)
                if tun is not None:
                    self.tunables[key] = tun

    def _tunable(self, path: Path, text: str, key: str, t: dict[str, Any]) -> Tunable | None:
        name = key.split(".")[1]
        bad = sorted(set(t) - TUNABLE_KEYS)
        if bad:
            self.p.at(path, text, name, f"tunable {key}: unknown key(s) {', '.join(bad)} "
                       f"(known: {', '.join(sorted(TUNABLE_KEYS))})")
        if "default" not in t:
            self.p.at(path, text, name, f"tunable {key}: it has no default")
            return None
        d = t["default"]
        if not isinstance(d, (bool, int, str)):
            self.p.at(path, text, name, f"tunable {key}: a default is on/off, a whole number or a string")
            return None
        for b in ("min", "max"):
            if b in t and (isinstance(d, bool) or not isinstance(d, int) or not isinstance(t[b], int)):
                self.p.at(path, text, name, f"tunable {key}: {b} needs whole numbers (default and {b})")
                return None
        pattern = t.get("pattern")
        if pattern is not None:
            try:
                re.compile(pattern)
            except (re.error, TypeError) as e:
                self.p.at(path, text, name, f"tunable {key}: pattern does not compile ({e})")
                return None
        choices = t.get("choices")
        if choices is not None and (not isinstance(choices, list) or not all(isinstance(c, str) for c in choices)):
            self.p.at(path, text, name, f"tunable {key}: choices must be a list of strings")
            return None
        tun = Tunable(key, d, str(t.get("doc", "")), t.get("min"), t.get("max"),
                      tuple(choices) if choices is not None else None, pattern)
        try:
            tun.parse(d)
        except ConfigError as e:
            self.p.at(path, text, name, f"tunable {key}: its default does not fit its own bounds ({e})")
            return None
        return tun

    def _status(self, path: Path, table: object, text: str) -> None:
        if not isinstance(table, dict):
            self.p.at(path, text, "status", "status must be a table of [status.KIND] tables")
            return
        for kind, page in table.items():
            where = f"status.{kind}"
            if not isinstance(page, dict):
                self.p.at(path, text, kind, f"{where}: give path, format and fields")
                continue
            problems = _status_problems(page)
            if problems:
                for m in problems:
                    self.p.at(path, text, kind, f"{where}: {m}")
                continue
            fields, command = page["fields"], page.get("command")
            p = "" if command is not None or page.get("role") is not None else page["path"]
            count = page.get("count", {})
            fields = {**fields, **{col: page["scoreboard"] for col in count}}
            self.status[kind] = StatusPage(kind, p, page["format"], tuple(fields.items()), page.get("find"),
                                           page.get("role"), command, tuple(count.items()),
                                           tuple(page.get("states", {}).items()))


def _status_problems(page: dict[str, Any]) -> list[str]:
    """What is wrong with one [status.KIND] table: its keys, where it is read (a path, or a role's command),
    its format and its fields."""
    p, fmt, find = page.get("path"), page.get("format"), page.get("find")
    role, command = page.get("role"), page.get("command")
    problems = [f"unknown key(s) {', '.join(bad)} (known: {', '.join(sorted(STATUS_KEYS))})"
                for bad in [sorted(set(page) - STATUS_KEYS)] if bad]
    if find is not None and (why := _one_group(find) if isinstance(find, str) else "not a string"):
        problems.append(f"find must be a regex whose group 1 is the page's path ({why})")
    if command is not None or role is not None:
        if not isinstance(command, str) or not command.strip() or not isinstance(role, str) or p is not None:
            problems.append("a status read by a command gives role (whose container runs it) and command, "
                            "and no path")
    elif not isinstance(p, str) or not p.startswith("/"):
        problems.append("path must start with /")
    if fmt not in FORMATS:
        problems.append(f"format must be one of {', '.join(FORMATS)}")
    return problems + _fields_problems(fmt, page.get("fields")) + _states_problems(page)


def _states_problems(page: dict[str, Any]) -> list[str]:
    """What is wrong with a page's scoreboard (a regex field whose group is one character per slot), the columns
    counted from it (`count`: column = "the characters counted") and its `states` (column = its state in words)."""
    board, count, states = page.get("scoreboard"), page.get("count"), page.get("states", {})
    problems = []
    if (board is None) != (count is None):
        problems.append("scoreboard and count go together (the line of one character per slot, the columns "
                        "counted from it)")
    elif board is not None:
        if page.get("format") != "regex" or not isinstance(board, str) or _one_group(board):
            problems.append("scoreboard must be a regex with one group (format regex)")
        if not isinstance(count, dict) or not count or not all(
                isinstance(k, str) and IDENT.match(k) and isinstance(v, str) and v for k, v in count.items()):
            problems.append("count must be a table of column = \"the characters counted\"")
    columns = set(page.get("fields") or {}) | set(count or {})
    if not isinstance(states, dict) or not all(isinstance(v, str) and v.strip() for v in states.values()):
        problems.append("states must be a table of column = \"its state in words\"")
    elif bad := sorted(set(states) - columns):
        problems.append(f"states: {', '.join(bad)} not among its fields or counted columns")
    return problems


def _fields_problems(fmt: object, fields: object) -> list[str]:
    """What is wrong with a status page's fields (column = what to read; with format regex, one group each)."""
    if not isinstance(fields, dict) or not fields or not all(
            isinstance(k, str) and IDENT.match(k) and isinstance(v, str) for k, v in fields.items()):
        return ["fields must be a table of column = \"what to read\" (columns: letters, digits, _)"]
    problems = []
    if fmt == "regex":
        for col, rx in fields.items():
            try:
                if re.compile(rx).groups != 1:
                    problems.append(f"fields.{col}: the regex needs exactly one group (the number)")
            except re.error as e:
                problems.append(f"fields.{col}: the regex does not compile ({e})")
    return problems


def _one_group(rx: str) -> str | None:
    """What is wrong with a regex that must capture (None: nothing)."""
    try:
        groups = re.compile(rx).groups
    except re.error as e:
        return f"the regex does not compile ({e})"
    return "the regex needs a group" if groups < 1 else None


def read_cause(p: Problems, path: Path, text: str, c: dict[str, Any]) -> Cause | None:
    key = c.get("key")
    spot = key if isinstance(key, str) else "causes"
    bad = sorted(set(c) - CAUSE_KEYS)
    errs = [f"unknown key(s) {', '.join(bad)} (known: {', '.join(sorted(CAUSE_KEYS))})"] if bad else []
    if not isinstance(key, str) or not NAME.match(key):
        errs.append("key must be a name like program.what")
    if not isinstance(c.get("phrase"), str) or not c["phrase"].strip():
        errs.append("phrase (what the line means, in words) is missing")
    kinds = c.get("kinds", [])
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds) or not set(kinds) <= set(FAIL_KINDS):
        errs.append(f"kinds must be a list of failure kinds ({', '.join(FAIL_KINDS)})")
    pattern = None
    try:
        lineless = "total" in c or "held" in c  # no line says it: the samples do
        pattern = re.compile(c["pattern"]) if c.get("pattern") or not lineless else None
        if not c.get("pattern") and not lineless:
            errs.append("pattern (a regex matching the log line) is missing")
    except (re.error, TypeError) as e:
        errs.append(f"pattern does not compile ({e})")
    for opt in ("setting", "peak", "peak_said", "counter", "counter_said", "total", "total_said", "also", "held",
                "held_said"):
        if opt in c and not isinstance(c[opt], str):
            errs.append(f"{opt} must be a string")
    if errs or not isinstance(key, str):
        for m in errs:
            p.at(path, text, spot, f"cause {key if isinstance(key, str) else '?'}: {m}")
        return None
    return Cause(key, pattern, c["phrase"], c.get("setting"), tuple(kinds), c.get("peak"), c.get("peak_said", ""),
                 c.get("counter"), c.get("counter_said", ""), c.get("total"), c.get("total_said", ""), c.get("also"),
                 c.get("held"), c.get("held_said", ""))
