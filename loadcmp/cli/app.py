"""The click group and the one place where errors become messages and exit codes.

Exit codes (ARCHITECTURE.md, "Contracts"): 0 done, 1 a runtime error with a
one-line cause, 2 bad usage, 3 a smoke threshold not met, 128 + the signal when
interrupted (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
Library code raises `LoadcmpError`s and never exits; click's own usage errors
are shown as the same one line. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from .. import __version__
from ..errors import Interrupted, LoadcmpError, signal_name

if TYPE_CHECKING:
    from ..load.run.workers import Stopper

EXIT_USAGE = 2
EXIT_INTERRUPTED = Interrupted.exit_code


def emit_json(doc: object) -> None:
    """The one JSON document of a --json command, on stdout."""
    click.echo(json.dumps(doc, indent=2, default=str))


def _say_error(e: LoadcmpError) -> None:
    if len(e.messages) > 1:
        click.echo(f"error: {len(e.messages)} problems:", err=True)
        for m in e.messages:
            click.echo(f"  - {m}", err=True)
    else:
        click.echo(f"error: {e}", err=True)


def exit_code_of(e: BaseException) -> int:
    """Say what went wrong in one line (stderr) and return the exit code for it."""
    if isinstance(e, Interrupted):
        click.echo(str(e), err=True)
        return e.exit_code
    if isinstance(e, LoadcmpError):
        _say_error(e)
        return e.exit_code
    if isinstance(e, click.UsageError):
        click.echo(f"error: {e.format_message()}", err=True)
        return EXIT_USAGE
    if isinstance(e, (click.Abort, KeyboardInterrupt)):
        # click turns a KeyboardInterrupt (our StopNow too) into Abort; the signal rides on its context
        signum = next((s for x in (e, e.__cause__, e.__context__) if (s := getattr(x, "signum", None))),
                      signal.SIGINT.value)
        click.echo("interrupted" if signum == signal.SIGINT else f"stopped at once by {signal_name(signum)}", err=True)
        return 128 + signum
    if isinstance(e, click.ClickException):
        click.echo(f"error: {e.format_message()}", err=True)
        return e.exit_code
    raise e


class LoadcmpGroup(click.Group):
    """A click group whose every failure is one line and a documented exit code."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name, cmd, rest = super().resolve_command(ctx, args)
        return name, cmd, optional_values(cmd, rest) if cmd is not None else rest

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except (LoadcmpError, click.ClickException, click.Abort, KeyboardInterrupt) as e:
            sys.exit(exit_code_of(e))
        sys.exit(rv if isinstance(rv, int) else 0)


def optional_values(cmd: click.Command, args: list[str]) -> list[str]:
    """An option whose value may be left out (`--live [PORT]`) takes the next word only when it is a number:
    `--live http://...` and `--live exp.toml` leave the URL or the file to the command's argument."""
    names = {n for p in cmd.params if isinstance(p, click.Option) and p._flag_needs_value for n in p.opts}
    out = list(args)
    for i, a in enumerate(out[:-1]):
        if a in names and not out[i + 1].startswith("-") and not out[i + 1].isdigit():
            opt = next(p for p in cmd.params if isinstance(p, click.Option) and a in p.opts)
            out[i] = f"{a}={opt.flag_value}"
    return out


@click.group(cls=LoadcmpGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="loadcmp")
@click.option("--debug", is_flag=True, envvar="LOADCMP_DEBUG",
              help="Log details to stderr: a crashed load worker's or server sampler's traceback, and more.")
def cli(debug: bool) -> None:
    """loadcmp: start real web servers in Docker, load them, compare them."""
    if debug:
        setup_debug_log()


def setup_debug_log() -> None:
    """Send loadcmp's debug log to stderr (worker processes report to the parent,
    which logs for them)."""
    log = logging.getLogger("loadcmp")
    if not any(getattr(h, "_loadcmp", False) for h in log.handlers):
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("debug: %(message)s"))
        h._loadcmp = True  # type: ignore[attr-defined]
        log.addHandler(h)
    log.setLevel(logging.DEBUG)


def _quiet_closed_terminal() -> None:
    """After a hang-up, writing to the terminal fails (EIO): the run's last lines go to /dev/null,
    so that stopping it cleanly cannot fail on them."""
    import os

    for fd in (1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, fd)
                os.close(null)


@contextlib.contextmanager
def abort_on_signals() -> Iterator[None]:
    """For a command that starts containers and leaves (`up`): SIGTERM or SIGHUP while they start
    raises StopNow at once, so that the start's clean-up removes what it had started."""
    from ..load.run.workers import STOP_SIGNALS

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise StopNow(signum)

    old = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS if signal.getsignal(sig) != signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


class StopNow(KeyboardInterrupt):
    """A second stop signal: end at once (the `finally` blocks still remove the containers)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum


@contextlib.contextmanager
def stop_on_signals(stopper: Stopper) -> Iterator[Stopper]:
    """The command's one handler of Ctrl-C, SIGTERM and SIGHUP, for as long as it loads.

    The first signal asks the load or the sweep to stop where it is, keeping what was
    measured and removing the containers, and the command exits 128 + that signal; a
    second one stops at once (`StopNow`). `timeout`, a cancelled CI job and a closed
    terminal are treated as Ctrl-C is. Library code installs no handler of its own, so
    none can be left behind.
    """
    from ..load.run.workers import STOP_SIGNALS

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            _quiet_closed_terminal()
        if stopper.requested:
            raise StopNow(signum)
        stopper.stop(signum)

    # a signal ignored on purpose (`nohup`, a background job's SIGINT) stays ignored
    old = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS if signal.getsignal(sig) != signal.SIG_IGN}
    try:
        yield stopper
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
