"""A small site with sessions for the journey tests: a login form with a CSRF token and a session cookie, a
dashboard only a logged-in user sees (with a nonce for its form), and comments posted with that nonce.

It runs aiohttp in a thread of its own, on 127.0.0.1, and keeps what it accepted (`comments`) so a test can
check that a journey's writes arrived, and each request's traceparent header (`traceparents`).
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp import web

USER, PASSWORD = "author", "s3cret"


@dataclass
class Site:
    port: int = 0
    sessions: dict[str, dict[str, str]] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    logins: int = 0
    traceparents: list[str] = field(default_factory=list)
    """Each request's traceparent header, in the order they came (--trace)."""

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _app(site: Site) -> web.Application:
    def session(request: web.Request) -> dict[str, str] | None:
        return site.sessions.get(request.cookies.get("sid", ""))

    async def login_form(request: web.Request) -> web.Response:
        sid, token = secrets.token_hex(8), secrets.token_hex(8)
        site.sessions[sid] = {"csrf": token}
        resp = web.Response(text=f'<form method="post"><input type="hidden" name="csrf" value="{token}"></form>',
                            content_type="text/html")
        resp.set_cookie("sid", sid, path="/")
        return resp

    async def login(request: web.Request) -> web.Response:
        s = session(request)
        form = await request.post()
        if s is None or form.get("csrf") != s["csrf"]:
            return web.Response(status=403, text="bad csrf")
        if form.get("user") != USER or form.get("pwd") != PASSWORD:
            return web.Response(status=200, text="wrong password")
        s["user"] = USER
        s["nonce"] = secrets.token_hex(6)
        site.logins += 1
        raise web.HTTPFound("/dash")

    async def dash(request: web.Request) -> web.Response:
        s = session(request)
        if s is None or "user" not in s:
            raise web.HTTPFound("/login")
        return web.Response(text=f'hello {s["user"]} <input name="nonce" value="{s["nonce"]}">',
                            content_type="text/html")

    async def comment(request: web.Request) -> web.Response:
        s = session(request)
        form = await request.post()
        if s is None or "user" not in s or form.get("nonce") != s["nonce"]:
            return web.Response(status=403, text="not allowed")
        site.comments.append(str(form.get("text")))
        return web.Response(text="posted")

    async def whoami(request: web.Request) -> web.Response:
        return web.Response(text=f"sid header {request.headers.get('X-Sid', '')}")

    @web.middleware
    async def traced(request: web.Request, handler):  # type: ignore[no-untyped-def]
        if "traceparent" in request.headers:
            site.traceparents.append(request.headers["traceparent"])
        return await handler(request)

    app = web.Application(middlewares=[traced])
    app.add_routes([web.get("/login", login_form), web.post("/login", login), web.get("/dash", dash),
                    web.post("/comment", comment), web.get("/whoami", whoami), web.get("/", whoami)])
    return app


@contextmanager
def running() -> Iterator[Site]:
    """The site on a free port of 127.0.0.1 while the block runs."""
    site = Site()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    runner = web.AppRunner(_app(site), access_log=None)

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        tcp = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(tcp.start())
        site.port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield site
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
