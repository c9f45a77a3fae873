"""The pure-Python loop's client behaviours (`load.pacing`): a request trickled at `--send-rate`, a response held
back to `--read-rate`, the small receive buffer set before connecting.

Kept out of `conn.Conn` and `engine.FastEngine`, which call these only when a behaviour is asked: a load without
one runs none of this. The compiled loop does the same in C (`_cloop.pyx`'s `_trickle`, `_paced_read`).
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any, Protocol

from ..pacing import Pacing


class Conn(Protocol):
    """What these read and set of `conn.Conn` (named here, not imported: conn.py calls this module)."""

    transport: Any
    token: int
    closed: bool
    active: bool
    t_written: float

    def take(self, data: bytes) -> None: ...


def trickle(conn: Conn, request: bytes, pacing: Pacing) -> None:
    """Write `request` a chunk at a time, `send_step` apart; `t_written` once the last chunk is written. A request
    that ends meanwhile (answered early, timed out, the connection lost) stops it."""
    conn.token += 1
    conn.t_written = time.monotonic()  # until the last chunk is written (an answer before it: a write of none)
    _write_from(conn, request, 0, conn.token, pacing.send_step())


def _write_from(conn: Conn, request: bytes, off: int, token: int, step: tuple[int, float]) -> None:
    if conn.token != token or conn.closed or not conn.active:
        return
    size, gap = step
    conn.transport.write(request[off:off + size])
    off += size
    if off >= len(request):
        conn.t_written = time.monotonic()  # conn.py's clock
        return
    asyncio.get_running_loop().call_later(gap, _write_from, conn, request, off, token, step)


def hold(conn: Conn, data: bytes, pacing: Pacing) -> None:
    """Data read: held for as long as `--read-rate` takes to carry it, reading paused meanwhile (the small receive
    buffer then fills and the server's send side waits), then handed to the parser."""
    conn.transport.pause_reading()
    asyncio.get_running_loop().call_later(len(data) / pacing.read_bps, _release, conn, data)


def _release(conn: Conn, data: bytes) -> None:
    if conn.closed:
        return
    conn.take(data)
    if not conn.closed:
        conn.transport.resume_reading()


async def slow_socket(family: int, sockaddr: Any, local: tuple[str, int] | None, pacing: Pacing) -> socket.socket:
    """A connected socket whose receive buffer was made small before the connect (the window it offers is set
    then), for `create_connection(sock=...)`."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, pacing.read_step()[1])
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        if local is not None:
            sock.bind(local)
        await asyncio.get_running_loop().sock_connect(sock, sockaddr)
    except BaseException:
        sock.close()
        raise
    return sock
