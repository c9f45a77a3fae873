"""The page's server: aiohttp in a thread of its own, with an event loop of its own.

It never shares the load's loop or thread: the load runs in the command's main thread (or
its worker processes) and only hands events to the hub. The server binds 127.0.0.1 unless
told otherwise; on any other address every request must carry the token printed in the URL
(a cookie keeps it for the page's own requests; a scraper of /metrics sends it as `Authorization: Bearer`). It
answers GET alone: the page is read-only.

Routes: `/` the page (a live command's) or the list of stored runs (`loadcmp serve`);
`/events` the command's events as server-sent events; `/static/...` the page's files and
uPlot; `/runs/<name>/` a stored run's page, `/runs/<name>/events` its events,
`/runs/<name>/report/` its report (`loadcmp.live.storedruns`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import ipaddress
import secrets
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from ..errors import LoadcmpError, UsageError
from . import DEFAULT_PORT
from .hub import Hub, Subscriber

STATIC = Path(__file__).parent / "static"
WRITE_TIMEOUT_S = 5.0
"""A browser whose socket takes no bytes for this long is dropped."""
COOKIE = "loadcmp_live"
"""The token cookie's name stem; the port is added (`cookie_name`): two pages on one host keep their own."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def cookie_name(port: int) -> str:
    return f"{COOKIE}_{port}"


def loopback_hosts(port: int) -> frozenset[str]:
    """The Host headers a page on loopback without a token answers: a name that resolves to 127.0.0.1 by DNS
    rebinding carries its own name, and is refused."""
    return frozenset(f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]"))


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass
class LiveServer:
    """The page's server for one command (`hub`) or over a results folder (`routes` of `loadcmp serve`)."""

    hub: Hub | None
    port: int = DEFAULT_PORT
    host: str = "127.0.0.1"
    routes: Callable[[web.Application], None] | None = None
    token: str | None = None
    """Set when `host` is not a loopback address: every request must carry it."""
    flags: tuple[str, str] = ("--live", "--live-host")
    """The command's flags for the port and the address, named in its errors (`loadcmp serve`: --port, --host)."""
    loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _ready: threading.Event = field(default_factory=threading.Event)
    _failed: BaseException | None = None
    _stop: asyncio.Event | None = None

    def __post_init__(self) -> None:
        if not is_loopback(self.host) and self.token is None:
            self.token = secrets.token_urlsafe(18)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/" + (f"?token={self.token}" if self.token else "")

    def urls(self) -> list[str]:
        """Where to open it: `url`, or for an address that means every one (0.0.0.0, ::) this machine's
        name and addresses, each with the token (no browser opens 0.0.0.0)."""
        if not (_is_ip(self.host) and ipaddress.ip_address(self.host).is_unspecified):
            return [self.url]
        q = f"?token={self.token}" if self.token else ""
        hosts = [socket.gethostname()]
        with contextlib.suppress(OSError):
            hosts += sorted({str(a[4][0]) for a in socket.getaddrinfo(hosts[0], None, type=socket.SOCK_STREAM)
                             if not ipaddress.ip_address(str(a[4][0]).split("%")[0]).is_loopback})
        hosts.append("127.0.0.1")
        return [f"http://{f'[{h}]' if ':' in h else h}:{self.port}/{q}" for h in dict.fromkeys(hosts)]

    def start(self) -> LiveServer:
        """Bind and serve in a thread of its own; a port in use or an address not here is a UsageError."""
        self._thread = threading.Thread(target=self._main, name="loadcmp-live", daemon=True)
        self._thread.start()
        if not self._ready.wait(15):
            self.stop()
            raise LoadcmpError(f"{self.flags[0]}: the page's server on {self.host}:{self.port} did not start in 15 s")
        if self._failed is not None:
            self._thread.join(5)
            raise self._failed
        return self

    def stop(self) -> None:
        """End every stream, close the listening socket, end the thread."""
        if self.hub is not None:
            self.hub.end()
        if self.loop is not None and self._stop is not None and not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self.loop = loop
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        runner = web.AppRunner(self._app(), handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            # SO_REUSEADDR: a page closed a moment ago (TIME_WAIT) does not hold the port; a listener still does
            site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
            await site.start()
        except OSError as e:
            self._failed = _bind_error(e, self.host, self.port, self.flags)
            await runner.cleanup()
            self._ready.set()
            return
        if self.hub is not None:
            self.hub.loop = asyncio.get_running_loop()
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            if self.hub is not None:
                self.hub._close_all()
            await runner.cleanup()

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        app.router.add_static("/static/", STATIC, show_index=False)
        if self.hub is not None:
            hub = self.hub
            token = self.token

            async def page(request: web.Request) -> web.StreamResponse:
                return page_response(request, token, self.port)

            async def events(request: web.Request) -> web.StreamResponse:
                return await stream(request, hub)

            app.router.add_get("/", page)
            app.router.add_get("/events", events)
        if self.routes is not None:
            self.routes(app)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Read-only, and with the token where one is needed."""
        if request.method not in ("GET", "HEAD"):
            raise web.HTTPMethodNotAllowed(request.method, ["GET"])
        if self.token is not None:
            bearer = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            given = request.query.get("token") or request.cookies.get(cookie_name(self.port)) or bearer
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                raise web.HTTPForbidden(text="this page needs the token printed with its URL\n")
        elif request.host not in loopback_hosts(self.port):
            raise web.HTTPForbidden(text="open the page as http://127.0.0.1:PORT/ (or localhost)\n")
        return await handler(request)


def page_response(request: web.Request, token: str | None, port: int,
                  events: str = "events") -> web.StreamResponse:
    """The page (the same file, live or replayed); `events` is where its stream is, relative to it."""
    html = (STATIC / "index.html").read_text().replace("__EVENTS__", events)
    resp = web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})
    if token is not None:
        resp.set_cookie(cookie_name(port), token, httponly=True, samesite="Strict")
    return resp


async def stream(request: web.Request, hub: Hub) -> web.StreamResponse:
    """Server-sent events: the history, then each event as it comes, until the command ends or the
    browser is too slow (its queue full, or a write that does not finish in WRITE_TIMEOUT_S)."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store",
                                       "X-Accel-Buffering": "no"})
    await resp.prepare(request)
    past, sub = hub.subscribe()
    sub.task = asyncio.current_task()
    try:
        await _write(resp, "".join(f"data: {t}\n\n" for t in past))
        await _follow(resp, sub)
    except TimeoutError:
        hub.drop(sub)  # its socket took no bytes for WRITE_TIMEOUT_S
    except (asyncio.CancelledError, ConnectionError):
        pass  # dropped, gone, or the command ended: the stream is over
    finally:
        hub.leave(sub)
    return resp


async def _follow(resp: web.StreamResponse, sub: Subscriber) -> None:
    while True:
        text = await sub.queue.get()
        if text is None:
            await _write(resp, "event: end\ndata: {}\n\n")
            return
        chunk = [f"data: {text}\n\n"]
        while not sub.queue.empty():  # what piled up goes in one write
            more = sub.queue.get_nowait()
            if more is None:
                await _write(resp, "".join(chunk) + "event: end\ndata: {}\n\n")
                return
            chunk.append(f"data: {more}\n\n")
        await _write(resp, "".join(chunk))


async def _write(resp: web.StreamResponse, text: str) -> None:
    if text:
        await asyncio.wait_for(resp.write(text.encode()), WRITE_TIMEOUT_S)


def _bind_error(e: OSError, host: str, port: int, flags: tuple[str, str]) -> UsageError:
    """Why the page cannot listen, in one line naming the command's own flags (`flags`: port's, address's)."""
    port_flag, host_flag = flags
    if e.errno == errno.EADDRINUSE:
        return UsageError(f"{port_flag}: port {port} on {host} is in use (give another: {port_flag} PORT)")
    if e.errno == errno.EADDRNOTAVAIL:
        return UsageError(f"{host_flag}: {host} is not an address of this machine")
    if e.errno == errno.EACCES:
        return UsageError(f"{port_flag}: port {port} needs privileges (take one above 1023)")
    return UsageError(f"{port_flag}: cannot listen on {host}:{port}: {e.strerror or e}")
