"""The aiohttp engine: the same schedules through aiohttp, for TLS, redirects
and cookies, at a fraction of the fast engine's speed. aiohttp is imported
only when this engine is chosen."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING

from ..tls import context as tls
from ..driver import BACKOFF_S, now
from ..traced import Traced
from ..record.outcomes import CONNECT_TIMEOUT, PROTOCOL_ERROR, RESET, TIMEOUT, kind_of_error, kind_of_status

if TYPE_CHECKING:
    from aiohttp import ClientSession


class AiohttpEngine(Traced[None]):
    """One aiohttp request per call; the connector keeps connections (keep-alive)."""

    name = "aiohttp"
    carries_warmup = True

    async def open(self) -> None:
        import aiohttp

        self.aiohttp = aiohttp
        self.connector = aiohttp.TCPConnector(
            limit=self.spec.schedule.connections, limit_per_host=0, force_close=not self.target.keepalive,
            ssl=tls.context(self.target) or False, ttl_dns_cache=3600,
        )
        trace = aiohttp.TraceConfig()

        def mark(name: str) -> Callable[[ClientSession, SimpleNamespace, object], Awaitable[None]]:
            async def hook(session: ClientSession, ctx: SimpleNamespace, params: object) -> None:
                ctx.trace_request_ctx[name] = now()
            return hook

        trace.on_connection_create_start.append(mark("t_connect"))
        trace.on_connection_create_end.append(mark("t_sent"))
        trace.on_connection_reuseconn.append(mark("t_sent"))
        trace.on_request_headers_sent.append(mark("t_written"))
        self.session = aiohttp.ClientSession(
            trace_configs=[trace],
            connector=self.connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout),
            version=aiohttp.HttpVersion10 if self.target.http10 else aiohttp.HttpVersion11,
            auto_decompress=False,
            skip_auto_headers=("User-Agent",),
            headers={"User-Agent": "loadcmp"},
        )
        self.headers = dict(self.target.headers)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.session.close(), 2.0)

    def abort_all(self) -> None:
        with contextlib.suppress(Exception):
            self.connector._close()  # drop open sockets now; close() is async

    async def request(self, t_intended: float, counted: bool, state: None) -> None:
        aiohttp = self.aiohttp
        trace: dict[str, float] = {}
        nbytes = status = 0
        t_first = 0.0
        client_error = None
        req = self.next_request()
        target = self.target if self.spec.pages is None else self.spec.pages.targets[req]
        seq, headers = self._trace_take(counted, t_intended, self.headers if target is self.target
                                        else dict(target.headers))
        try:
            async with asyncio.timeout(self.timeout):
                async with self.session.request(
                    target.method, target.url, headers=headers,
                    data=target.body or None,
                    allow_redirects=True, trace_request_ctx=trace,
                ) as resp:
                    t_first = now()  # aiohttp hands over the response once its head is read
                    if counted and "t_connect" in trace and self.rec is not None and self.rec.tls is not None:
                        self.rec.add_tls(1, 0, {})  # aiohttp hides its TLS objects and resumes no session
                    status = resp.status
                    body = await resp.read()
                    nbytes = len(body) + sum(len(k) + len(v) + 4 for k, v in resp.raw_headers) + 17
                    kind = kind_of_status(resp.status)
        except TimeoutError:
            kind = TIMEOUT if "t_sent" in trace else CONNECT_TIMEOUT
        except aiohttp.ClientConnectorError as e:
            kind, client_error = kind_of_error(e.os_error)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            kind = RESET
        except aiohttp.ClientError:  # payload and response errors included
            kind = PROTOCOL_ERROR
        except OSError as e:
            kind, client_error = kind_of_error(e)
        except asyncio.CancelledError:
            if "t_written" not in trace:  # the load ended before the request went out
                rec = self.rec
                assert rec is not None
                rec.unsent(t_intended, counted)
                if seq >= 0 and self.tracer is not None:
                    self.tracer.open.pop(seq, None)
            raise
        t_sent = trace.get("t_sent", t_intended)
        began = (trace.get("t_connect", math.nan), t_sent, trace.get("t_written", t_sent), t_first) if status else None
        if self._record(counted, kind, t_intended, t_sent, nbytes, client_error, status, began, req):
            await asyncio.sleep(BACKOFF_S)
        if seq >= 0:
            self._trace_end(seq, kind, t_intended, trace.get("t_connect", t_sent), status, nbytes, began, counted)
        return None

    def _trace_end(self, seq: int, kind: int, t_intended: float, t_start: float, status: int, nbytes: int,
                   began: tuple[float, ...] | None, counted: bool) -> None:
        """--trace: request `seq`'s row, when the recorder counted it (else it stays unfinished)."""
        t, rec, tracer = now(), self.rec, self.tracer
        assert rec is not None and tracer is not None
        tracer.sent(seq, t_intended, t_start, 0)
        tracer.ended(seq, kind, t, status, nbytes, None if began is None else (*began, t),
                     counted and not rec.closed and t < rec.end)

    def _trace_take(self, counted: bool, t_intended: float, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
        """--trace: a counted request's number when it is traced (its row opened: unfinished unless it ends) and
        its header fields with traceparent; else -1 and the fields as they are."""
        tracer = self.tracer
        seq = tracer.take() if tracer is not None and counted else -1
        if seq < 0 or tracer is None:
            return -1, headers
        tracer.sent(seq, t_intended, t_intended, 0)
        return seq, {**headers, "traceparent": tracer.ids.value(seq)}
