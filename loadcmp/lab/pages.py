"""Asking a server for a page: from here over plain HTTP, or from inside its container through
the Docker API (a server on another engine's host, whose status pages answer only there).
Readiness, the primer and the status-page samplers all ask through here."""

from __future__ import annotations

import http.client
from typing import Any


def http_get(port: int, path: str, timeout: float = 2.0, host: str = "127.0.0.1") -> tuple[int, bytes]:
    """One plain GET (readiness, primer, status pages), on loopback unless the servers are elsewhere."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


INSIDE_GET = ("timeout {timeout} bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && "
              "printf \"GET {path} HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n\" >&3 && cat <&3'")
"""bash's own /dev/tcp, all of it (the connect too) within `timeout` seconds: every image has bash, none curl."""


def get_inside(container: Any, port: int, path: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """One GET on the container's own loopback, through the Docker API (a server on
    another engine's host, whose status pages answer only there)."""
    cmd = INSIDE_GET.format(port=port, path=path, timeout=timeout)
    code, out = container.exec_run(["bash", "-c", cmd], demux=False)
    head, _, body = (out or b"").partition(b"\r\n\r\n")
    first = head.split(b"\r\n", 1)[0].split()
    if code != 0 and not head or len(first) < 2 or not first[1].isdigit():
        raise OSError(f"no HTTP answer on 127.0.0.1:{port} inside {container.name} (exit {code})")
    return int(first[1]), body
