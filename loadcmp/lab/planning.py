"""A stack's deployment decided before anything starts: its ports (free ones here, the user's own front
config's, or picked at random on another engine's host) and its configs rendered for them (`render`)."""

from __future__ import annotations

import random
import socket
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit
from typing import Any

from . import render
from .certs import ADDRESSES, RunCA
from .dockerhost import DockerHost
from .model import App, Stack
from .ownconfig import OwnConfig, front_port
from ..errors import UsageError

# --- ports --------------------------------------------------------------------

LOCAL = DockerHost()
"""This machine's engine, servers on 127.0.0.1, measured through cgroup files."""
REMOTE_PORTS = (20000, 29999)
"""Where ports are picked on another engine's host (below Linux's ephemeral range)."""


def free_port(host: DockerHost = LOCAL) -> int:
    """A free port here; on another engine's host, one picked at random from a range
    this machine cannot check (a clash shows as a server that does not start)."""
    if host.remote:
        return random.randint(REMOTE_PORTS[0], REMOTE_PORTS[1])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check_port_free(port: int, whose: str = "pick another or leave --port out") -> None:
    if not 1 <= port <= 65535:
        raise UsageError(f"bad port {port}: use 1..65535")
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise UsageError(f"port {port} is already in use on 127.0.0.1; {whose}") from None


def plan_deployment(stack: Stack, *, port: int | None = None, cpus: str | None = None, memory: int | None = None,
                    overrides: dict[str, Any] | None = None, host: DockerHost = LOCAL,
                    www: Path | None = None, own: Sequence[OwnConfig] = (),
                    app: App | None = None, tls: render.Issuer | None = None) -> render.DeploymentPlan:
    """A stack's deployment decided: free ports picked on 127.0.0.1 (or `port` checked, or the one the user's
    own front config listens on), then its configs rendered for them (`render.render_plan`; serving `app`,
    when given: `apps.on_stack` gave its images; https on its front role when `tls`, the run's CA, is given)."""
    theirs = front_port(stack, own)
    if theirs is not None:
        if port is not None and port != theirs[0]:
            raise UsageError(f"--port {port}: your config listens on {theirs[0]} ({theirs[1]})")
        port = theirs[0]
    if port is None:
        port = free_port(host)
    elif not host.remote:
        check_port_free(port, "pick another or leave --port out" if theirs is None else
                        f"your config's port ({theirs[1]}): stop what listens there or change it")
    ports = {stack.front.name: port}
    for role in stack.roles:
        while role.name not in ports or list(ports.values()).count(ports[role.name]) > 1:  # (random) ports differ
            ports[role.name] = free_port(host)
    if isinstance(tls, RunCA) and host.address not in ADDRESSES:  # the clients connect to the engine's address
        tls = tls.for_hosts(host.address, urlsplit(host.url or "").hostname or "")
    plan = render.render_plan(stack, overrides or {}, ports, bind=host.bind, nofile=host.nofile, www=www, own=own,
                              app=app, tls=tls)
    return replace(plan, cpus=cpus, memory=memory)


