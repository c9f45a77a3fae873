"""Which Docker engine runs the stacks, and where the clients reach them.

By default the engine is this machine's (docker-py's own choice: `DOCKER_HOST`
or the local socket), the servers listen on 127.0.0.1 and the lab measures them
through this machine's cgroup files and `ss`. `--docker-host URL` (or a
`DOCKER_HOST` that is not a local socket) runs them on another machine's
engine: they listen where the clients can reach them (`--server-address`,
by default the Docker host's own address) and everything the lab measures goes
through the Docker API alone (`apimetrics`), since that host's cgroup files
cannot be read from here. Giving `--docker-host unix:///var/run/docker.sock`
measures a local engine the remote way, which is how the tests check it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import UsageError

SCHEMES = ("unix", "tcp", "ssh", "http", "https", "npipe")


@dataclass(frozen=True)
class DockerHost:
    """The engine's URL (None: docker-py's default), the servers' address, and how they are measured."""

    url: str | None = None
    address: str = "127.0.0.1"
    """Where the clients send their requests (and the lab its readiness checks)."""
    remote: bool = False
    """Measure through the Docker API only (the engine's cgroups and sockets are not this machine's)."""

    @property
    def bind(self) -> str:
        """The address the front server listens on: loopback here, and there too when the
        clients reach it on loopback (an engine on this machine); else every interface of
        that host, so the clients reach it and its status pages still answer on its loopback."""
        return "127.0.0.1" if not self.remote or self.address.startswith("127.") else "0.0.0.0"

    def describe(self, client: Any = None) -> dict[str, Any]:
        """For run.json: the engine, its address, the server address and how it was measured."""
        out: dict[str, Any] = {"url": self.url or os.environ.get("DOCKER_HOST") or "local socket",
                               "server_address": self.address, "measured_through": "docker api" if self.remote
                               else "cgroup files and ss on this machine"}
        if client is not None:
            try:
                info = client.info()
                out["engine"] = {"name": info.get("Name"), "version": info.get("ServerVersion"),
                                 "cgroup_version": info.get("CgroupVersion"), "cpus": info.get("NCPU")}
            except Exception as e:  # noqa: BLE001 - provenance is best effort; the run goes on
                out["engine"] = {"error": f"{type(e).__name__}: {e}"}
        return out


def host_of(url: str) -> str:
    """The machine a Docker URL points at: tcp://H:2376 -> H, ssh://user@H -> H; a local socket -> 127.0.0.1."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise UsageError(f"bad --docker-host {url!r}: give unix:///path, tcp://HOST:PORT or ssh://[USER@]HOST")
    if parts.scheme in ("unix", "npipe"):
        return "127.0.0.1"
    if not parts.hostname:
        raise UsageError(f"bad --docker-host {url!r}: it names no host")
    return parts.hostname


def resolve(docker_host: str | None = None, server_address: str | None = None) -> DockerHost:
    """The flags (and DOCKER_HOST) as a DockerHost; one-line UsageErrors."""
    env = os.environ.get("DOCKER_HOST") or None
    url = docker_host or env
    remote = docker_host is not None or (env is not None and not env.startswith("unix://"))
    if url is not None:
        derived = host_of(url)
    else:
        derived = "127.0.0.1"
    address = server_address or derived
    if server_address is not None:
        if not server_address.strip() or any(c in server_address for c in "/ :[]"):
            raise UsageError(f"bad --server-address {server_address!r}: give a host name or an IPv4 address")
        if not remote:
            raise UsageError("--server-address needs --docker-host: the local stacks listen on 127.0.0.1")
    return DockerHost(url if remote else None, address, remote)
