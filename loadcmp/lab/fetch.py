"""Asking a server for a page: from here over HTTP (https, verified against the run's CA, when the server serves
https), or from inside its container through the Docker API (a server on another engine's host, whose status
pages answer only there). Readiness, the primer and the status-page samplers all ask through here."""

from __future__ import annotations

import http.client
import os
import ssl
from functools import cache
from typing import TYPE_CHECKING

from .dockerapi import name_of, output_of

if TYPE_CHECKING:
    from docker.models.containers import Container


def client_context(cafile: str) -> ssl.SSLContext:
    """A client's TLS context that trusts only the run's CA (its file), HTTP/1.1 by ALPN; one per CA, known by its
    file as it is now (a new CA written over the same path, as `make bench` does between its rows, is a new one)."""
    st = os.stat(cafile)
    return _context(cafile, st.st_mtime_ns, st.st_size)


@cache
def _context(cafile: str, mtime_ns: int, size: int) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def http_get(port: int, path: str, timeout: float = 2.0, host: str = "127.0.0.1",
             cafile: str | None = None) -> tuple[int, bytes]:
    """One GET (readiness, primer, status pages), on loopback unless the servers are elsewhere; over https,
    verified against `cafile`, when it is given (an ssl.SSLError is an OSError, as a refused connection is)."""
    conn = (http.client.HTTPSConnection(host, port, timeout=timeout, context=client_context(cafile)) if cafile else
            http.client.HTTPConnection(host, port, timeout=timeout))
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


INSIDE_GET = ("timeout {timeout} bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && "
              "printf \"GET {path} HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n\" >&3 && cat <&3'")
"""bash's own /dev/tcp, all of it (the connect too) within `timeout` seconds: every image has bash, none curl."""
INSIDE_GET_TLS = ("timeout {timeout} php -n -r '$c = stream_context_create([\"ssl\" => [\"verify_peer\" => false, "
                  "\"verify_peer_name\" => false]]); $s = stream_socket_client(\"tls://127.0.0.1:{port}\", $n, $m, "
                  "{timeout}, STREAM_CLIENT_CONNECT, $c); if (!$s) exit(1); "
                  "fwrite($s, \"GET {path} HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n\"); "
                  "echo stream_get_contents($s);'")
"""The same over https (--tls): PHP's TLS streams, which every image has (none has openssl's command). The
certificate is not checked: the server is the container's own, on its own loopback, and the CA is not in it."""


def inside_get(port: int, path: str, timeout: float, tls: bool = False) -> str:
    """The shell command of one GET inside a container, over https when the server serves it."""
    return (INSIDE_GET_TLS if tls else INSIDE_GET).format(port=port, path=path, timeout=timeout)


def get_inside(container: Container, port: int, path: str, timeout: float = 2.0,
               tls: bool = False) -> tuple[int, bytes]:
    """One GET on the container's own loopback, through the Docker API (a server on
    another engine's host, whose status pages answer only there); over https with `tls`."""
    cmd = inside_get(port, path, timeout, tls)
    res = container.exec_run(["bash", "-c", cmd], demux=False)
    code, out = res.exit_code, output_of(res)
    head, _, body = out.partition(b"\r\n\r\n")
    first = head.split(b"\r\n", 1)[0].split()
    if code != 0 and not head or len(first) < 2 or not first[1].isdigit():
        raise OSError(f"no HTTP answer on 127.0.0.1:{port} inside {name_of(container)} (exit {code})")
    return int(first[1]), body
