"""The one error hierarchy of loadcmp.

Library code raises these; only the CLI turns them into a one-line message (or a
list, when an error carries several) and an exit code. Anything else that escapes is a
bug and is shown as one. `Problems` collects every mistake found in one reading (each
with its file and line when known) and raises them as one error, so that a user fixes
them all in one go.

    LoadcmpError                 exit 1 unless noted
    ├── UsageError               exit 2: bad flags, bad values, bad experiment file
    │   └── ConfigError          exit 2: unknown --set key, bad tunable value, TOML errors
    ├── LabError                 the Docker side
    │   ├── DockerUnavailable    no engine answers
    │   ├── BuildError           an image did not build (names the step and the log)
    │   ├── ServerStartError     a container exited or never answered
    │   └── NotOnEngine          the engine has no such container or image (often what was wanted)
    ├── LoadError                the client side (file limits, engine failure)
    │   └── WrongProtocol        exit 2: the server negotiated another protocol than the one asked (no fallback)
    ├── PrimerError              the page served is not the page expected
    ├── StoreError               a results folder is unreadable or of an older format
    ├── ReportError              a figure could not be drawn (then no file of the report is written)
    ├── ThresholdFailed          exit 3: a smoke check was not met
    └── Interrupted              exit 128 + the signal (130 for Ctrl-C, 143 SIGTERM, 129 SIGHUP);
                                 carries the results folder when one was written
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class LoadcmpError(Exception):
    """Base of every error loadcmp raises on purpose; it may carry several problems (`messages`)."""

    exit_code: int = 1

    def __init__(self, message: str = "", messages: Iterable[str] | None = None) -> None:
        super().__init__(message)
        self._messages = tuple(messages or ())

    @property
    def messages(self) -> list[str]:
        """Every problem it carries, one line each: its own message when it carries no list."""
        return list(self._messages) or [str(self)]


class UsageError(LoadcmpError):
    """The user asked for something that cannot be done as asked."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration value or file is wrong; may carry several messages."""


class LabError(LoadcmpError):
    """Something on the Docker side failed."""


class DockerUnavailable(LabError):
    """No Docker engine answers."""


class BuildError(LabError):
    """An image build failed."""


class ServerStartError(LabError):
    """A server container exited or never became ready."""


class LoadError(LoadcmpError):
    """The load client cannot do what was asked (limits, engine failure)."""


class WrongProtocol(LoadError):
    """The server negotiated another protocol than the one asked for (h2 answered in HTTP/1.1): the load stops,
    nothing of it is measured as the protocol asked for."""

    exit_code = 2


class PrimerError(LoadcmpError):
    """The primer requests did not get the page that was expected."""


class StoreError(LoadcmpError):
    """A results folder cannot be read or written."""


class ReportError(LoadcmpError):
    """A report could not be built from readable results (a figure failed to draw)."""


class ThresholdFailed(LoadcmpError):
    """At least one smoke check was not met."""

    exit_code = 3


class Interrupted(LoadcmpError):
    """Ctrl-C, or SIGTERM / SIGHUP (`timeout`, a cancelled CI job, a closed terminal): what was
    measured so far is kept in `results` (if any); the exit code is 128 + the signal, as a shell's."""

    exit_code = 130

    def __init__(self, message: str = "interrupted", results: Path | None = None, signum: int = 2) -> None:
        self.results = results
        self.signum = signum
        self.exit_code = 128 + signum
        head = "interrupted" if signum == 2 else f"interrupted by {signal_name(signum)}"
        text = head if message == "interrupted" else f"{head}: {message}"
        super().__init__(text if results is None else f"{text}; kept what was measured in {results}")


def signal_name(signum: int) -> str:
    """SIGTERM for 15; `signal 99` for one Python does not name."""
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class NotOnEngine(LabError):
    """The engine has no such container or image: removed meanwhile, or never made. Often what the
    caller wanted (a container already gone), so it is told apart from the engine's other refusals."""


def line_of(text: str, needle: str) -> int | None:
    """The first line of a TOML text where `needle` is a key (`needle =`), in a table header, or the name of a
    role or cause (`name = "needle"`); else the first line that holds it (a rule's own text); else None."""
    n = re.escape(needle)
    pat = re.compile(rf'^\s*(?:"?{n}"?\s*=|\[\[?[^\]]*\b{n}\b|(?:name|key)\s*=\s*"{n}")')
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        if pat.search(line):
            return i
    return next((i for i, line in enumerate(lines, 1) if needle in line), None)


class Problems:
    """Every problem found in one reading (a stack's files, an experiment file, the flags of a command), each
    as `file:line: message` when its place is known, raised together by `raise_if_any`."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def add(self, message: str, path: Path | str | None = None, line: int | None = None) -> None:
        """One problem, said where it is (`path:line: message`, `path: message`) when that is given."""
        where = f"{path}{f':{line}' if line else ''}: " if path is not None else ""
        text = where + message
        if text not in self.messages:  # the same problem reached twice is said once
            self.messages.append(text)

    def at(self, path: Path | str, text: str | None, needle: str | None, message: str) -> None:
        """One problem in a file; `needle` (a key or table name) finds its line in `text` when it is there."""
        self.add(message, path, line_of(text, needle) if text and needle else None)

    def extend(self, messages: Iterable[str], prefix: str = "") -> None:
        """Several problems, each after `prefix` (`"file:3: "`, `"label: "`)."""
        for m in messages:
            self.add(prefix + m)

    def take(self, error: LoadcmpError, prefix: str = "") -> None:
        """Every problem an error carries, each after `prefix`."""
        self.extend(error.messages, prefix)

    def attempt(self, f: Callable[[], T], prefix: str = "") -> T | None:
        """What `f` gives, or None with every problem of the UsageError it raised noted (after `prefix`)."""
        try:
            return f()
        except UsageError as e:
            self.take(e, prefix)
            return None

    def __len__(self) -> int:
        return len(self.messages)

    def __bool__(self) -> bool:
        return bool(self.messages)

    def __iter__(self) -> Iterator[str]:
        return iter(self.messages)

    def raise_if_any(self, error_type: type[LoadcmpError] | None = None, summary: str = "{n} problems") -> None:
        """Raise one error carrying every problem (ConfigError unless told): one problem is its own message;
        several are summed up by `summary` (`{n}` is their number) and listed by the CLI."""
        if not self.messages:
            return
        kind = error_type or ConfigError
        first = self.messages[0] if len(self.messages) == 1 else summary.replace("{n}", str(len(self.messages)))
        raise kind(first, list(self.messages))
