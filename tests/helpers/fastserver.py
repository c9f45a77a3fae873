"""A fast HTTP/1.1 server for tests that need the client, not the server, to be
the bottleneck: uvloop + a bare Protocol, one fixed answer, no parsing beyond
the request line. Run as a script; prints its port on stdout.

    python fastserver.py            answer at once
    GET /slow                       answer after 20 ms (the client then waits)
    GET /count                      how many other requests it has seen
"""

from __future__ import annotations

import asyncio
import sys

import uvloop

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
ANSWER_KA = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


class Answer(asyncio.Protocol):
    seen = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.t: asyncio.Transport = transport  # type: ignore[assignment]
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while b"\r\n\r\n" in self.buf:
            head, self.buf = self.buf.split(b"\r\n\r\n", 1)
            close = b"connection: close" in head.lower()
            answer = ANSWER if close else ANSWER_KA
            if head.startswith(b"GET /count"):
                body = str(Answer.seen).encode()
                self._send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body),
                           True)
                continue
            Answer.seen += 1
            if head.startswith(b"GET /slow"):
                asyncio.get_running_loop().call_later(0.02, self._send, answer, close)
            else:
                self._send(answer, close)

    def _send(self, answer: bytes, close: bool) -> None:
        if self.t.is_closing():
            return
        self.t.write(answer)
        if close:
            self.t.close()


async def main() -> None:
    server = await asyncio.get_running_loop().create_server(Answer, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        uvloop.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
