"""`--live [PORT]` on the commands that load, and `loadcmp serve`: where the live page meets the commands.

`watching` starts the page's server before anything else (a port in use is exit 2 before a container
starts) and stops it when the command ends, however it ends, so no listening socket outlives it.
`with_feed` lays the feed's methods over the terminal's sweep hooks; the sweep and the store only call
the plain callables they define (`SweepHooks.sample`, `SweepHooks.stored`, `RunWriter.watch`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..errors import UsageError
from ..live import DEFAULT_PORT
from .app import cli
from .display import err

if TYPE_CHECKING:
    from aiohttp import web

    from ..live.feed import Feed
    from ..live.hub import Hub
    from ..load.driver import Live, LiveFn
    from ..sweep.trial import Planned, SweepHooks

F = TypeVar("F", bound=Callable[..., Any])
PORT = click.IntRange(1, 65535)


def live_options(f: F) -> F:
    """--live [PORT] and --live-host ADDR."""
    f = click.option("--live-host", metavar="ADDR",
                     help="Serve the live page on this address instead of 127.0.0.1 (a token is then needed, "
                          "printed in the URL).")(f)
    return click.option("--live", "live_port", type=PORT, is_flag=False, flag_value=DEFAULT_PORT, default=None,
                        metavar="[PORT]",
                        help=f"Watch it in a browser: a live page on 127.0.0.1:PORT (default {DEFAULT_PORT}); "
                             "the word after --live is its port only when it is a number.")(f)


@dataclass(frozen=True)
class LiveFlags:
    port: int | None
    host: str | None

    @classmethod
    def pop(cls, kwargs: dict[str, Any]) -> LiveFlags:
        flags = cls(kwargs.pop("live_port", None), kwargs.pop("live_host", None))
        if flags.host is not None and flags.port is None:
            raise UsageError("--live-host goes with --live: it says where the live page listens")
        return flags


@dataclass
class LivePage:
    """A command's live page: its hub, and the feed of the run under way (seeds: one after another)."""

    hub: Hub
    feeds: list[Feed] = field(default_factory=list)

    def feed(self, command: str, title: str) -> Feed:
        from ..live.feed import Feed

        self.feeds.append(Feed(self.hub, command, title))
        return self.feeds[-1]

    def routes(self, app: web.Application) -> None:
        """/report/: the report of the run under way's results folder, built on demand, again once run.json
        has changed (a report of a run still running is of the moment it was asked)."""
        from aiohttp import web

        from ..live.replay import Reports

        reports = Reports()

        async def report(request: web.Request) -> web.StreamResponse:
            path = next((f.path for f in reversed(self.feeds) if f.path is not None), None)
            if path is None:
                raise web.HTTPNotFound(text="nothing is stored yet\n")
            return await reports.response(path)

        async def cleanup(app: web.Application) -> None:
            await reports.close()

        app.router.add_get("/report/", report)
        app.on_cleanup.append(cleanup)


@contextlib.contextmanager
def watching(flags: LiveFlags) -> Iterator[LivePage | None]:
    """The live page for as long as the command runs (None without --live)."""
    if flags.port is None:
        yield None
        return
    from ..live.hub import Hub
    from ..live.server import LiveServer

    watch = LivePage(Hub())
    server = LiveServer(watch.hub, flags.port, flags.host or "127.0.0.1", routes=watch.routes).start()
    try:
        urls = server.urls()
        err.print(f"live: {urls[0]}", highlight=False, soft_wrap=True)
        for url in urls[1:]:
            err.print(f"  or: {url}", highlight=False, soft_wrap=True)
        if server.token is not None:
            err.print("  (the token in this URL is the page's key: whoever has it can watch; the page is read-only)",
                      highlight=False)
        yield watch
    finally:
        server.stop()


def with_feed(hooks: SweepHooks, feed: Feed) -> SweepHooks:
    """The terminal's hooks, and the feed told the same."""

    def trial_start(p: Planned, i: int, n: int, seconds: float) -> None:
        hooks.trial_start(p, i, n, seconds)
        feed.trial_start(p, i, n, seconds)

    return replace(hooks, trial_start=trial_start, live=tee(hooks.live, feed), sample=feed.sample,
                   stored=feed.stored)


@dataclass(frozen=True)
class Tee:
    """A live line's callback that also feeds the page (in the load's thread: it only hands events over);
    it asks the engine for the window's closed seconds (`load.driver.wants_seconds`)."""

    line: LiveFn
    feed: Feed
    wants_seconds: bool = True

    def __call__(self, lv: Live) -> None:
        self.line(lv)
        self.feed.live(lv)


def tee(live: LiveFn, feed: Feed) -> LiveFn:
    return Tee(live, feed)


@cli.command()
@click.argument("results", default="results", type=click.Path(file_okay=False))
@click.option("--port", type=PORT, default=DEFAULT_PORT, show_default=True)
@click.option("--host", "host", default="127.0.0.1", show_default=True, metavar="ADDR",
              help="Listen on this address (another than loopback needs the token printed in the URL).")
def serve(results: str, port: int, host: str) -> None:
    """Browse stored runs: the list, each run's page (as it was live) and its report. Runs until Ctrl-C."""
    import signal
    import threading

    from ..live.replay import serve_routes
    from ..live.server import LiveServer

    root = Path(results)
    if not root.is_dir():
        raise UsageError(f"{results}: no such folder (give the folder the runs were stored in)")
    server = LiveServer(None, port, host, flags=("--port", "--host"))
    server.routes = serve_routes(root, server.token, port)
    server.start()
    done = threading.Event()
    old = signal.signal(signal.SIGTERM, lambda s, f: done.set())
    try:
        urls = server.urls()
        err.print(f"serving {root}: {urls[0]}  (Ctrl-C ends it)", highlight=False, soft_wrap=True)
        for url in urls[1:]:
            err.print(f"  or: {url}", highlight=False, soft_wrap=True)
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, old)
        server.stop()
