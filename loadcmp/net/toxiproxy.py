"""Toxiproxy (2.5.0, built by scripts/setup.sh) as loadcmp runs it: one `toxiproxy-server` on 127.0.0.1 per
load, pinned to the client's CPUs, its proxies and toxics made through its HTTP API, stopped whatever way the
load ends (the caller's `finally`, `atexit`, and the kernel's parent-death signal if loadcmp itself is killed).

A server loadcmp starts carries LOADCMP_NET_OWNER=<loadcmp's pid> in its environment: `strays` finds those
whose owner is gone (`loadcmp down` ends them).
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LoadError, UsageError

BINARY = "toxiproxy-server"
OWNER = "LOADCMP_NET_OWNER"
"""The environment variable that marks a toxiproxy-server as loadcmp's (its value: the owner's pid)."""
MISSING = ("--net needs toxiproxy-server (Toxiproxy 2.5.0): run `make setup` (scripts/setup.sh builds it with Go), "
           "or put it on PATH")
READY_S = 5.0
"""How long its API has to answer after the start."""


def binary() -> str | None:
    """The toxiproxy-server to run: beside this Python (the venv's bin, where setup builds it), else on PATH."""
    here = Path(sys.executable).parent / BINARY
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which(BINARY)


_GO_MODULE = re.compile(rb"\tgithub\.com/Shopify/toxiproxy/v2\tv(\d[^\t\n\s]*)")
"""The module's version in the Go build info of the binary (what `go version -m` prints)."""


def version_of(said: Any, exe: str) -> str:
    """Toxiproxy's version: what its /version said (2.5.0 answers a string, later ones {"version": ...}); when that
    is no version (a `go install` build says "git"), the module's version in the binary's Go build info."""
    v = str(said.get("version", "") if isinstance(said, dict) else said or "").strip().lstrip("v")
    if v[:1].isdigit():
        return v
    try:
        m = _GO_MODULE.search(Path(exe).read_bytes())
    except OSError:
        m = None
    return m.group(1).decode(errors="replace") if m else (v or "unknown")


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _load_prctl() -> Any:
    """libc's prctl, found here in the parent: loading a library in the forked child of a process with threads
    can deadlock on the loader's lock (None where there is none)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()
_PR_SET_PDEATHSIG = 1


def _pinned(cpus: list[int] | None) -> Any:
    """The child's set-up before exec: on the client's CPUs (before the Go runtime starts its threads, which
    inherit them), and ended with its parent; it only calls what the parent loaded."""
    prctl = _PRCTL

    def setup() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)
        if prctl is not None:  # PR_SET_PDEATHSIG: if loadcmp is killed outright, the kernel ends the proxy too
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    return setup


@dataclass
class Toxiproxy:
    """A running toxiproxy-server: its API's port, its pid, the proxies made on it."""

    proc: subprocess.Popen[bytes]
    api_port: int
    proxies: list[str] = field(default_factory=list)
    version: str = "unknown"
    """Its version (`version_of`): what the facts name as the proxy."""

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    def start(cls, cpus: list[int] | None = None) -> Toxiproxy:
        """Start a server on 127.0.0.1 and wait for its API (LoadError when it does not answer)."""
        exe = binary()
        if exe is None:
            raise UsageError(MISSING)
        port = free_port()
        env = {**os.environ, OWNER: str(os.getpid())}
        proc = subprocess.Popen([exe, "-host", "127.0.0.1", "-port", str(port)], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_pinned(cpus))
        tp = cls(proc, port)
        atexit.register(tp.stop)
        deadline = time.monotonic() + READY_S
        while True:
            try:
                tp.version = version_of(tp.call("GET", "/version"), exe)
                return tp
            except LoadError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tp.stop()
                    raise LoadError(f"toxiproxy-server did not answer on 127.0.0.1:{port} within {READY_S:g} s"
                                    + (f" (it exited with {proc.returncode})" if proc.returncode is not None
                                       else "")) from None
                time.sleep(0.05)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One request to its API; its JSON answer (LoadError on any failure)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.api_port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            said = e.read().decode(errors="replace").strip()
            raise LoadError(f"toxiproxy {method} {path}: {e.code} {said}") from None
        except (OSError, urllib.error.URLError) as e:
            raise LoadError(f"toxiproxy {method} {path}: {e}") from None
        try:
            return json.loads(raw) if raw.strip() else None
        except ValueError:
            return raw.decode(errors="replace")

    def proxy(self, name: str, upstream: tuple[str, int], toxics: list[dict[str, Any]]) -> int:
        """A proxy from a free port of 127.0.0.1 to `upstream`, with these toxics; its port."""
        port = free_port()
        self.call("POST", "/proxies", {"name": name, "listen": f"127.0.0.1:{port}",
                                       "upstream": f"{upstream[0]}:{upstream[1]}", "enabled": True})
        self.proxies.append(name)
        for t in toxics:
            self.call("POST", f"/proxies/{name}/toxics", t)
        return port

    def stop(self) -> None:
        """End the server (and so every connection it carries); twice is harmless."""
        atexit.unregister(self.stop)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def strays() -> list[int]:
    """The pids of toxiproxy-servers loadcmp started whose loadcmp is gone."""
    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(d / "exe")).name != BINARY:
                continue
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        owner = next((e.split(b"=", 1)[1] for e in env if e.startswith(OWNER.encode() + b"=")), None)
        if owner is not None and not Path(f"/proc/{owner.decode()}").exists():
            out.append(int(d.name))
    return out


def end_strays() -> list[int]:
    """End the stray servers (`loadcmp down`); the pids ended."""
    ended = []
    for pid in strays():
        try:
            os.kill(pid, signal.SIGTERM)
            ended.append(pid)
        except OSError:
            pass
    return ended
