"""`--live [PORT]` and `--metrics [PORT]` on the commands that load, and `loadcmp serve`: where the live page
and the Prometheus endpoint meet the commands.

`watching` starts their servers before anything else (a port in use is exit 2 before a container starts) and
stops them when the command ends, however it ends, so no listening socket outlives it. `with_feed` lays the
watchers' methods (the page's feed, the metrics) over the terminal's sweep hooks; the sweep and the store only
call the plain callables they define (`SweepHooks.sample`, `SweepHooks.stored`, `RunWriter.watch`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..errors import UsageError
from ..live import DEFAULT_PORT
from ..protocols import DEFAULT as DEFAULT_PROTO
from .app import cli
from .display import err, markup

if TYPE_CHECKING:
    from aiohttp import web

    from ..export.live import Metrics
    from ..facts import EventDoc
    from ..live.feed import Feed
    from ..live.hub import Hub
    from ..live.server import LiveServer
    from ..records import TrialRecord
    from ..load.driver import Live, LiveFn
    from ..store.writer import Row, RunWriter
    from ..sweep.trial import Planned, SweepHooks

F = TypeVar("F", bound=Callable[..., Any])
PORT = click.IntRange(1, 65535)
METRICS_PORT = 5666
"""`--metrics` without a port: the one beside the live page's."""
log = logging.getLogger("loadcmp.live")


def live_options(f: F) -> F:
    """--live [PORT], --live-host ADDR, --metrics [PORT], --metrics-host ADDR, --metrics-token TOKEN."""
    f = click.option("--metrics-token", metavar="TOKEN", envvar="LOADCMP_METRICS_TOKEN",
                     help="The token a scraper must send (Authorization: Bearer TOKEN) to --metrics on another "
                          "address than loopback; or LOADCMP_METRICS_TOKEN.")(f)
    f = click.option("--metrics-host", metavar="ADDR",
                     help="Serve --metrics on this address instead of 127.0.0.1 (needs --metrics-token).")(f)
    f = click.option("--metrics", "metrics_port", type=PORT, is_flag=False, flag_value=METRICS_PORT, default=None,
                     metavar="[PORT]",
                     help=f"Serve both sides' figures for Prometheus at http://127.0.0.1:PORT/metrics (default "
                          f"{METRICS_PORT}); with --live, the page's server serves /metrics too.")(f)
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
    metrics_port: int | None = None
    metrics_host: str | None = None
    metrics_token: str | None = None

    @classmethod
    def pop(cls, kwargs: dict[str, Any]) -> LiveFlags:
        flags = cls(kwargs.pop("live_port", None), kwargs.pop("live_host", None), kwargs.pop("metrics_port", None),
                    kwargs.pop("metrics_host", None), kwargs.pop("metrics_token", None))
        if flags.host is not None and flags.port is None:
            raise UsageError("--live-host goes with --live: it says where the live page listens")
        if flags.metrics_host is not None and flags.metrics_port is None:
            raise UsageError("--metrics-host goes with --metrics: it says where /metrics listens")
        if flags.metrics_token is not None and flags.metrics_port is None:
            raise UsageError("--metrics-token goes with --metrics: it is the token a scraper of /metrics sends")
        if flags.metrics_port is not None and flags.metrics_port == flags.port:
            raise UsageError(f"--metrics {flags.metrics_port} is --live's port: the live page serves /metrics "
                             "already (give --metrics another port, or leave it out)")
        from ..live.server import is_loopback

        if flags.metrics_port is not None and not is_loopback(flags.metrics_host or "127.0.0.1") \
                and not flags.metrics_token:
            raise UsageError(f"--metrics-host {flags.metrics_host} is not loopback: give --metrics-token TOKEN (or "
                             "LOADCMP_METRICS_TOKEN); Prometheus sends it as `authorization: {credentials: TOKEN}`")
        return flags

    @property
    def any(self) -> bool:
        return self.port is not None or self.metrics_port is not None


class Watchers:
    """The live page's feed and the metrics, told the same hooks (each one optional). Whatever goes wrong in the
    metrics is logged (--debug), never raised: like the page, they must not stop a measurement."""

    def __init__(self, feed: Feed | None, metrics: Metrics | None) -> None:
        self.feed = feed
        self.metrics = metrics

    def _tell(self, method: str, *args: Any, **kwargs: Any) -> None:
        if self.feed is not None:
            getattr(self.feed, method)(*args)
        if self.metrics is not None:
            try:
                getattr(self.metrics, method)(*args, **kwargs)
            except Exception:  # a bug of the metrics is not the measurement's: logged, not raised
                log.debug("the metrics' %s failed", method, exc_info=True)

    def trial_start(self, p: Planned, i: int, n: int, seconds: float) -> None:
        self._tell("trial_start", p, i, n, seconds)

    def begin(self, server: str, level: int, trial: int, proto: str = DEFAULT_PROTO) -> None:
        self._tell("begin", server, level, trial, proto=proto)

    def live(self, lv: Live) -> None:
        self._tell("live", lv)

    def sample(self, row: Row) -> None:
        self._tell("sample", row)

    def stored(self, writer: RunWriter, timeline: list[Row], server: list[Row]) -> None:
        self._tell("stored", writer, timeline, server)

    def trial_end(self, p: Planned, rec: TrialRecord) -> None:
        """A trial's end (its join done): the page's alone (the metrics take the trial from `stored`)."""
        if self.feed is not None:
            self.feed.trial_end(p, rec)

    def event(self, doc: EventDoc, running: bool) -> None:
        self._tell("event", doc, running)

    def done(self, status: str) -> None:
        self._tell("done", status)


@dataclass
class LivePage:
    """A command's live page (its hub) and metrics, each there when asked for, and the feed of the run under way
    (seeds: one after another)."""

    hub: Hub | None
    metrics: Metrics | None = None
    feeds: list[Feed] = field(default_factory=list)

    def feed(self, command: str, title: str) -> Watchers:
        from ..live.feed import Feed

        if self.hub is not None:
            self.feeds.append(Feed(self.hub, command, title))
        return Watchers(self.feeds[-1] if self.hub is not None else None, self.metrics)

    def routes(self, app: web.Application) -> None:
        """/report/: the report of the run under way's results folder, built on demand, again once run.json
        has changed (a report of a run still running is of the moment it was asked)."""
        from aiohttp import web

        from ..live.storedruns import Reports

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
    """The live page and the metrics for as long as the command runs (None without --live or --metrics)."""
    if not flags.any:
        yield None
        return
    watch = LivePage(None)
    servers: list[LiveServer] = []
    try:
        if flags.metrics_port is not None or flags.port is not None:
            from ..export.live import Metrics

            watch.metrics = Metrics()
        if flags.port is not None:
            _serve_page(watch, flags, servers)
        if flags.metrics_port is not None:
            _serve_metrics(watch, flags, servers)
        yield watch
    finally:
        if watch.metrics is not None and servers and not watch.metrics.linger():
            err.print("metrics: no scraper read the last values", highlight=False)
        for server in servers:
            server.stop()


def _serve_page(watch: LivePage, flags: LiveFlags, servers: list[LiveServer]) -> None:
    """--live: the page, and /metrics beside it."""
    from ..live.hub import Hub
    from ..live.server import LiveServer

    watch.hub = Hub()
    metrics = watch.metrics

    def routes(app: web.Application) -> None:
        watch.routes(app)
        if metrics is not None:
            metrics.routes(app)

    server = LiveServer(watch.hub, flags.port or DEFAULT_PORT, flags.host or "127.0.0.1", routes=routes).start()
    servers.append(server)
    urls = server.urls()
    err.print(markup("live: {}", urls[0]), highlight=False, soft_wrap=True)
    for url in urls[1:]:
        err.print(markup("  or: {}", url), highlight=False, soft_wrap=True)
    if server.token is not None:
        err.print("  (the token in this URL is the page's key: whoever has it can watch; the page is read-only)",
                  highlight=False)


def _serve_metrics(watch: LivePage, flags: LiveFlags, servers: list[LiveServer]) -> None:
    """--metrics PORT: /metrics on a server of its own."""
    from ..live.server import LiveServer

    assert watch.metrics is not None and flags.metrics_port is not None
    server = LiveServer(None, flags.metrics_port, flags.metrics_host or "127.0.0.1", routes=watch.metrics.routes,
                        token=flags.metrics_token, flags=("--metrics", "--metrics-host")).start()
    servers.append(server)
    urls = [u.split("?")[0] + "metrics" for u in server.urls()]
    err.print(markup("metrics: {}{}", urls[0], "  (with Authorization: Bearer TOKEN)" if server.token else ""),
              highlight=False, soft_wrap=True)
    for url in urls[1:]:
        err.print(markup("     or: {}", url), highlight=False, soft_wrap=True)


def with_feed(hooks: SweepHooks, feed: Watchers) -> SweepHooks:
    """The terminal's hooks, and the watchers told the same."""

    def trial_start(p: Planned, i: int, n: int, seconds: float) -> None:
        hooks.trial_start(p, i, n, seconds)
        feed.trial_start(p, i, n, seconds)

    def trial_end(p: Planned, rec: TrialRecord) -> None:
        hooks.trial_end(p, rec)
        feed.trial_end(p, rec)

    return replace(hooks, trial_start=trial_start, trial_end=trial_end, live=tee(hooks.live, feed),
                   sample=feed.sample, stored=feed.stored, event=feed.event)


@dataclass(frozen=True)
class Tee:
    """A live line's callback that also feeds the page (in the load's thread: it only hands events over);
    it asks the engine for the window's closed seconds (`load.driver.wants_seconds`)."""

    line: LiveFn
    feed: Watchers
    wants_seconds: bool = True

    def __call__(self, lv: Live) -> None:
        self.line(lv)
        self.feed.live(lv)


def tee(live: LiveFn, feed: Watchers) -> LiveFn:
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

    from ..live.storedruns import serve_routes
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
        err.print(markup("serving {}: {}  (Ctrl-C ends it)", root, urls[0]), highlight=False, soft_wrap=True)
        for url in urls[1:]:
            err.print(markup("  or: {}", url), highlight=False, soft_wrap=True)
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, old)
        server.stop()
