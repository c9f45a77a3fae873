"""Journeys: a user's visit as TOML steps, with variables carried from one step's answer to the next.

A journey file is a list of `[[steps]]`, each a request (`method`, `path`, `body`, `headers`) that may
`extract` a value from its answer (a regex with one group over the body, or a cookie's value) into a
variable that later steps use as `{name}` (a CSRF token, a nonce), may `expect` a status, and may `think`
before the next step. The file is read and checked whole before anything starts: every problem is said
as `file:line: message` (an unknown key, a bad regex, a `{var}` used before a step extracts it).
`{user}`, `{iteration}` and `{unique}` are always there: the virtual user's number, its journey's
number, and both with the load process's and a random part that no seed repeats (so two comments never have
the same text, in this run or a later one on the same database).

A mix of journeys (`reader=80,author=20`) says how often each user picks each journey; names refer to
an app's shipped journeys (its `journeys/` folder), anything else is a file.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Problems, UsageError
from ..units import parse_duration

STEP_KEYS = ("name", "method", "path", "body", "headers", "extract", "expect", "think")
FILE_KEYS = ("description", "steps")
BUILTIN_VARS = ("user", "iteration", "unique")
"""Variables every step may use without a step extracting them."""
VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A variable in a path, a body or a header: `{name}`; other braces (JSON) are left as they are."""
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Extract:
    """A variable taken from a step's answer: a regex's one group over the body, or a cookie's value."""

    var: str
    regex: str | None = None
    cookie: str | None = None

    def describe(self) -> str:
        return f"cookie {self.cookie}" if self.cookie is not None else f"/{self.regex}/"


@dataclass(frozen=True)
class Step:
    """One request of a journey."""

    name: str
    path: str
    method: str = "GET"
    body: str | tuple[tuple[str, str], ...] | None = None
    """Raw text, or form fields (sent url-encoded)."""
    headers: tuple[tuple[str, str], ...] = ()
    extract: tuple[Extract, ...] = ()
    expect: int | None = None
    """The status the answer must have (after redirects); None: any status below 400."""
    think: float = 0.0
    """Seconds the user waits after this step, before the next."""


@dataclass(frozen=True)
class Journey:
    """A named list of steps; `weight` is its share in a mix."""

    name: str
    steps: tuple[Step, ...]
    description: str = ""
    weight: float = 1.0
    source: str = ""


@dataclass(frozen=True)
class JourneyMix:
    """The journeys each virtual user picks from, by weight (at least one)."""

    journeys: tuple[Journey, ...] = field(default_factory=tuple)

    def names(self) -> list[str]:
        return [j.name for j in self.journeys]

    def describe(self) -> str:
        """`reader=80,author=20` (a lone journey: its name)."""
        if len(self.journeys) == 1:
            return self.journeys[0].name
        return ",".join(f"{j.name}={j.weight:g}" for j in self.journeys)

    def pages(self) -> list[str]:
        """Every step as the page it is measured as: `journey/step`."""
        return [f"{j.name}/{s.name}" for j in self.journeys for s in j.steps]


def fill(text: str, values: Mapping[str, str]) -> str:
    """`text` with each `{var}` replaced by its value (a name not given is left as it is)."""
    return VAR.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def _step_lines(text: str) -> list[int]:
    """The line of each `[[steps]]` header, in order."""
    return [i for i, line in enumerate(text.splitlines(), 1) if re.match(r"^\s*\[\[\s*steps\s*\]\]", line)]


def _key_line(text: str, start: int | None, key: str) -> int | None:
    """The line of `key =` in the step that starts at line `start` (or the step's own line)."""
    if start is None:
        return None
    lines = text.splitlines()
    for i in range(start, len(lines)):
        if re.match(r"^\s*\[", lines[i]):
            break
        if re.match(rf'^\s*"?{re.escape(key)}"?\s*=', lines[i]):
            return i + 1
    return start


def _vars_used(step: Mapping[str, Any]) -> list[str]:
    """The variables a step's path, body and headers use, in order."""
    texts: list[str] = [str(step.get("path", ""))]
    body = step.get("body")
    texts += [str(v) for v in body.values()] if isinstance(body, dict) else [str(body or "")]
    headers = step.get("headers")
    texts += [str(v) for v in headers.values()] if isinstance(headers, dict) else []
    return [m.group(1) for t in texts for m in VAR.finditer(t)]


class _Reader:
    """One journey file's steps, every problem noted with its line."""

    def __init__(self, path: Path, text: str, problems: Problems) -> None:
        self.path, self.text, self.problems = path, text, problems
        self.starts = _step_lines(text)

    def bad(self, index: int, key: str | None, message: str) -> None:
        start = self.starts[index] if index < len(self.starts) else None
        line = _key_line(self.text, start, key) if key else start
        self.problems.add(message, self.path, line)

    def step(self, i: int, raw: object, known: set[str]) -> Step | None:
        if not isinstance(raw, dict):
            self.bad(i, None, f"step {i + 1} is not a table")
            return None
        name = str(raw.get("name") or f"step{i + 1}")
        before = len(self.problems)
        for key in raw:
            if key not in STEP_KEYS:
                self.bad(i, key, f"step {name!r}: unknown key {key!r} (a step has {', '.join(STEP_KEYS)})")
        path = raw.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            self.bad(i, "path", f"step {name!r}: path must be a string that starts with '/'")
        method = str(raw.get("method", "GET")).upper()
        if method not in METHODS:
            self.bad(i, "method", f"step {name!r}: method {raw.get('method')!r} is not one of {', '.join(METHODS)}")
        for var in _vars_used(raw):
            if var not in known:
                self.bad(i, None, f"step {name!r} uses {{{var}}} before any step extracts it")
        body = self._body(i, name, raw.get("body"))
        headers = self._headers(i, name, raw.get("headers", {}))
        extracts = self._extracts(i, name, raw.get("extract", {}))
        known.update(e.var for e in extracts)
        expect = raw.get("expect")
        if expect is not None and (not isinstance(expect, int) or isinstance(expect, bool) or not 100 <= expect <= 599):
            self.bad(i, "expect", f"step {name!r}: expect must be an HTTP status (100..599), not {expect!r}")
        think = 0.0
        if "think" in raw:
            try:
                think = parse_duration(str(raw["think"]))
            except UsageError as e:
                self.bad(i, "think", f"step {name!r}: think: {e}")
        if len(self.problems) > before:
            return None
        return Step(name, str(path), method, body, headers, extracts, expect, think)

    def _body(self, i: int, name: str, body: object) -> str | tuple[tuple[str, str], ...] | None:
        if body is None or isinstance(body, str):
            return body
        if isinstance(body, dict) and all(isinstance(v, str | int | float) for v in body.values()):
            return tuple((str(k), str(v)) for k, v in body.items())
        self.bad(i, "body", f"step {name!r}: body must be a string or a table of form fields")
        return None

    def _headers(self, i: int, name: str, headers: object) -> tuple[tuple[str, str], ...]:
        if isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values()):
            return tuple((str(k), v) for k, v in headers.items())
        self.bad(i, "headers", f"step {name!r}: headers must be a table of strings")
        return ()

    def _extracts(self, i: int, name: str, raw: object) -> tuple[Extract, ...]:
        if not isinstance(raw, dict):
            self.bad(i, "extract", f"step {name!r}: extract must be a table: var = 'regex' or "
                     "var = { cookie = 'name' }")
            return ()
        out = []
        for var, how in raw.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var) or var in BUILTIN_VARS:
                self.bad(i, "extract", f"step {name!r}: {var!r} cannot be a variable's name")
            elif isinstance(how, dict) and set(how) == {"cookie"} and isinstance(how["cookie"], str):
                out.append(Extract(var, cookie=how["cookie"]))
            elif isinstance(how, str | dict):
                regex = how if isinstance(how, str) else how.get("regex")
                if not isinstance(regex, str) or (isinstance(how, dict) and set(how) != {"regex"}):
                    self.bad(i, "extract", f"step {name!r}: extract {var}: give a regex or {{ cookie = 'name' }}")
                    continue
                try:
                    groups = re.compile(regex).groups
                except re.error as e:
                    self.bad(i, "extract", f"step {name!r}: extract {var}: bad regex {regex!r}: {e}")
                    continue
                if groups != 1:
                    self.bad(i, "extract", f"step {name!r}: extract {var}: the regex must have one group, not {groups}")
                    continue
                out.append(Extract(var, regex=regex))
            else:
                self.bad(i, "extract", f"step {name!r}: extract {var}: give a regex or {{ cookie = 'name' }}")
        return tuple(out)


def read_journey(path: Path, name: str | None = None, weight: float = 1.0, problems: Problems | None = None
                 ) -> Journey | None:
    """One journey file read and checked; its problems noted (raised as one ConfigError when none is given)."""
    own = problems is None
    problems = problems if problems is not None else Problems()
    journey = _read(path, name or path.stem, weight, problems)
    if own:
        problems.raise_if_any(ConfigError, "{n} problems in the journey " + str(path))
    return journey


def _read(path: Path, name: str, weight: float, problems: Problems) -> Journey | None:
    try:
        text = path.read_text()
        doc = tomllib.loads(text)
    except OSError as e:
        problems.add(f"cannot read the journey: {e.strerror or e}", path)
        return None
    except tomllib.TOMLDecodeError as e:
        line = re.search(r"line (\d+)", str(e))
        problems.add(f"not TOML: {e}", path, int(line.group(1)) if line else None)
        return None
    for key in doc:
        if key not in FILE_KEYS:
            problems.at(path, text, key, f"unknown key {key!r} (a journey file has {', '.join(FILE_KEYS)})")
    steps = doc.get("steps")
    if not isinstance(steps, list) or not steps:
        problems.add("a journey needs at least one [[steps]]", path)
        return None
    reader = _Reader(path, text, problems)
    known = set(BUILTIN_VARS)
    read = [reader.step(i, raw, known) for i, raw in enumerate(steps)]
    names = [s.name for s in read if s is not None]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.at(path, text, dup, f"two steps are named {dup!r}: each step is measured by its name")
    if any(s is None for s in read) or len(set(names)) != len(names):
        return None
    return Journey(name, tuple(s for s in read if s is not None), str(doc.get("description", "")), weight, str(path))


def parse_mix(given: str) -> list[tuple[str, float]]:
    """`reader=80,author=20`, `author` or a file's path: (name or path, weight) pairs, each name
    once; UsageError when wrong."""
    out: list[tuple[str, float]] = []
    for part in given.split(","):
        part = part.strip()
        name, _, w = part.rpartition("=") if "=" in part else (part, "", "1")
        try:
            weight = float(w)
        except ValueError:
            raise UsageError(f"--journey {given!r}: the weight of {name!r} is not a number: {w!r}") from None
        if not name or weight < 0:
            raise UsageError(f"--journey {given!r}: give NAME|FILE or NAME=WEIGHT,NAME=WEIGHT")
        if any(name == n for n, _ in out):
            raise UsageError(f"--journey {given!r} names {name!r} twice")
        out.append((name, weight))
    if sum(w for _, w in out) <= 0:
        raise UsageError(f"--journey {given!r}: the weights sum to 0")
    return out


def load_mix(given: str, shipped: Mapping[str, Path]) -> JourneyMix:
    """The journeys `given` names (the app's shipped ones by name, files by path), all checked at once."""
    problems = Problems()
    journeys = []
    for name, weight in parse_mix(given):
        path = shipped.get(name) or Path(name)
        if not path.is_file():
            known = (f" (the app's journeys: {', '.join(sorted(shipped))})" if shipped else
                     " (no --app given: an app's journeys are named with --app NAME)")
            problems.add(f"--journey: no journey {name!r}: neither one the app ships nor a file{known}")
            continue
        j = _read(path, name if name in shipped else path.stem, weight, problems)
        if j is not None:
            journeys.append(j)
    problems.raise_if_any(ConfigError, "{n} problems in the journeys")
    return JourneyMix(tuple(journeys))


def shipped_journeys(folder: Path | None) -> dict[str, Path]:
    """An app's journeys by name: the `*.toml` of its `journeys/` folder (none without one)."""
    if folder is None or not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.toml"))}
