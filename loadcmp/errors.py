"""The one error hierarchy of loadcmp.

Library code raises these; only the CLI turns them into a one-line message and
an exit code. Anything else that escapes is a bug and is shown as one.

    LoadcmpError                 exit 1 unless noted
    ├── UsageError               exit 2: bad flags, bad values, bad experiment file
    │   └── ConfigError          exit 2: unknown --set key, bad tunable value, TOML errors
    ├── LabError                 the Docker side
    │   ├── DockerUnavailable    no engine answers
    │   ├── BuildError           an image did not build (names the step and the log)
    │   ├── ServerStartError     a container exited or never answered
    │   └── NotOnEngine          the engine has no such container or image (often what was wanted)
    ├── LoadError                the client side (file limits, engine failure)
    ├── PrimerError              the page served is not the page expected
    ├── StoreError               a results folder is unreadable or of an older format
    ├── ReportError              a figure could not be drawn (then no file of the report is written)
    ├── ThresholdFailed          exit 3: a smoke check was not met
    └── Interrupted              exit 128 + the signal (130 for Ctrl-C, 143 SIGTERM, 129 SIGHUP);
                                 carries the results folder when one was written
"""

from __future__ import annotations

from pathlib import Path


class LoadcmpError(Exception):
    """Base of every error loadcmp raises on purpose."""

    exit_code: int = 1


class UsageError(LoadcmpError):
    """The user asked for something that cannot be done as asked."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration value or file is wrong; may carry several messages."""

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        self.errors = errors or [message]
        super().__init__(message)


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
