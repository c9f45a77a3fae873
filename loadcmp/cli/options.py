"""Options shared by several commands, and the one route from load flags to values.

`bench`, `run` and `smoke` take the same load options. Every option defaults
to None ("not given") so that a command can lay the flags over its own
defaults or over an experiment file; `LoadFlags.given()` says which were set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from pathlib import Path

import click

from .types import COUNT, CPUS, DURATION, LEVELS, MEMORY, POSITIVE_DURATION, RATE, SERVER_CPUS

if TYPE_CHECKING:
    from ..lab.dockerhost import DockerHost

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class LoadFlags:
    """The load options as given on the command line (None: not given)."""

    levels: tuple[int, ...] | None = None
    duration: float | None = None
    requests: int | None = None
    schedule: str | None = None
    keepalive: bool | None = None
    ramp_up: float | None = None
    pace: float | None = None
    rate: float | None = None
    max_inflight: int | None = None
    warmup: float | None = None
    timeout: float | None = None
    engine: str | None = None
    workers: int | None = None
    cluster: str | None = None
    client_cpus: str | None = None

    @classmethod
    def pop(cls, kwargs: dict[str, Any]) -> LoadFlags:
        """Take this group's values out of a command's keyword arguments."""
        return cls(**{f.name: kwargs.pop(f.name) for f in fields(cls)})

    def given(self) -> dict[str, Any]:
        """The flags the user gave, by RunSpec field name."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        if "keepalive" in out:
            out["keepalive"] = (out["keepalive"],)
        return out


def load_options(f: F) -> F:
    """-c, -t, -n and the schedule, connection and client options (bench, run, smoke)."""
    opts = [
        click.option("-c", "--clients", "levels", type=LEVELS, metavar="N[,N...]",
                     help="Concurrent clients (ramp: users; rate: most in flight); a list sweeps (run)."),
        click.option("-t", "--time", "duration", type=POSITIVE_DURATION, metavar="DURATION",
                     help="Measured time per trial: 30, 30s, 2m."),
        click.option("-n", "--requests", type=COUNT, metavar="N",
                     help="Send N requests in all, then stop (ab, hey); closed loop only; "
                          "with -t: whichever ends first."),
        click.option("--schedule", type=click.Choice(["closed", "ramp", "rate"]),
                     help="closed = webbench loop (default); ramp = JMeter users with pacing; "
                          "rate = open arrival rate."),
        click.option("--keepalive/--no-keepalive", "-k", "keepalive", default=None,
                     help="Reuse connections (default: a new one per request, as webbench and ab)."),
        click.option("--ramp-up", type=DURATION, metavar="DURATION", help="ramp: time over which the users start."),
        click.option("--pace", type=POSITIVE_DURATION, metavar="DURATION",
                     help="ramp: time between one user's requests, start to start (default 5s)."),
        click.option("--rate", type=RATE, help="rate: requests per second."),
        click.option("--max-inflight", type=COUNT, help="rate: most requests in flight (default: -c)."),
        click.option("--warmup", type=DURATION, metavar="DURATION", help="Load sent before measuring, not counted."),
        click.option("--timeout", type=POSITIVE_DURATION, metavar="DURATION",
                     help="Per request, connect included; past it a request is a timeout (default 10s)."),
        click.option("--engine", type=click.Choice(["fast", "aiohttp"]), help="fast (default) or aiohttp."),
        click.option("--workers", type=COUNT, help="Client processes (default 1)."),
        click.option("--cluster", envvar="LOADCMP_CLUSTER", metavar="local:N|tcp://HOST:PORT",
                     help="Share the clients over a Dask cluster: N worker processes here, or a running scheduler "
                          "(env LOADCMP_CLUSTER)."),
        click.option("--client-cpus", type=CPUS, metavar="CPUS", help="Pin the client processes to these CPUs."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def server_options(f: F) -> F:
    """CPU set, memory cap and tunables of the server containers (up, run)."""
    f = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                     help="Override a tunable, e.g. prefork.MaxRequestWorkers=500 (repeatable).")(f)
    f = click.option("--server-memory", type=MEMORY, metavar="SIZE",
                     help="Memory cap per server container, e.g. 512m, 3g.")(f)
    f = click.option("--server-cpus", type=SERVER_CPUS, metavar="CPUS",
                     help="CPU set for the server containers, e.g. 1 or 0-1.")(f)
    return f


def _add_stacks(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """Read the user's stacks as soon as the flag is seen, so that a mistake in them stops the command first;
    the command passes the folders on (`stacks.catalog`, a spec's `stack_dirs`)."""
    from ..lab import stacks

    if not value:
        return ()
    stacks.catalog(value)
    return tuple(str(Path(v).expanduser().resolve()) for v in value)


def stacks_option(f: F) -> F:
    """--stacks DIR: the user's own stacks beside ours (servers, build, up, run, smoke)."""
    return click.option("--stacks", "stack_dirs", multiple=True, metavar="DIR", is_eager=True, callback=_add_stacks,
                        expose_value=True,
                        help="Add your own stacks: a stack's folder (with stack.toml) or a folder of them "
                             "(repeatable; env LOADCMP_STACKS).")(f)


def _www(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    p = Path(value).expanduser()
    if not p.is_dir():
        raise click.BadParameter(f"{value}: no such folder")
    return str(p.resolve())


def www_option(f: F) -> F:
    """--www DIR: the user's own pages, served by every chosen stack (run, smoke, up)."""
    return click.option("--www", callback=_www, metavar="DIR",
                        help="Serve your own pages (read-only, PHP included) instead of the demo pages; "
                             "--page addresses them.")(f)


def app_option(f: F) -> F:
    """--app NAME: an application (`loadcmp apps`) behind every chosen stack (run, capacity, smoke, up)."""
    return click.option("--app", metavar="NAME",
                        help="Run this application (see `loadcmp apps`) behind every server; its pages run on it "
                             "(all of them unless --page names some), other pages without it.")(f)


def _configs(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    from ..lab.ownconfig import parse_item

    return tuple(parse_item(v).doc() for v in value)


def config_option(f: F) -> F:
    """--config LABEL:ROLE=FILE: a role runs the user's own config file instead of the rendered one (run, smoke, up)."""
    return click.option("--config", "configs", multiple=True, callback=_configs, metavar="LABEL:ROLE=FILE",
                        help="Run a role with your own config file (e.g. nginx:web=./nginx.conf); add ,port=N or "
                             ",status.KIND=/path|none when loadcmp cannot read them from it (repeatable).")(f)


def json_option(f: F) -> F:
    """--json: one JSON document on stdout, progress on stderr."""
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")(f)


@dataclass(frozen=True)
class DockerFlags:
    """Where the stacks run (run, smoke, up, down, build): another Docker engine, how it is reached
    (TLS as the docker CLI's flags), and where its servers are reached."""

    docker_host: str | None = None
    server_address: str | None = None
    tlsverify: bool | None = None
    tlscacert: str | None = None
    tlscert: str | None = None
    tlskey: str | None = None

    @classmethod
    def pop(cls, kwargs: dict[str, Any]) -> DockerFlags:
        """Take this group's values out of a command's keyword arguments (`build`, `down`: no --server-address)."""
        return cls(**{f.name: kwargs.pop(f.name, None) for f in fields(cls)})

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def host(self) -> DockerHost:
        """The engine these flags (and the environment) name; one-line UsageErrors."""
        from ..lab.dockerhost import resolve

        return resolve(self.docker_host, self.server_address, tlsverify=bool(self.tlsverify),
                       tlscacert=self.tlscacert, tlscert=self.tlscert, tlskey=self.tlskey)


def docker_host_option(f: F) -> F:
    """--docker-host and the docker CLI's TLS flags: the stacks on another machine's Docker engine."""
    opts = [
        click.option("--docker-host", metavar="URL",
                     help="Run the stacks on this Docker engine (tcp://HOST:2376, ssh://USER@HOST; DOCKER_HOST "
                          "too), measured through the Docker API."),
        click.option("--tlsverify", is_flag=True, default=None,
                     help="Talk TLS to a tcp:// engine and verify its certificate (DOCKER_TLS_VERIFY too)."),
        click.option("--tlscacert", metavar="PATH",
                     help="The CA that signed the engine's certificate (default: ca.pem in DOCKER_CERT_PATH, "
                          "else ~/.docker)."),
        click.option("--tlscert", metavar="PATH", help="This client's certificate (default: cert.pem there)."),
        click.option("--tlskey", metavar="PATH", help="This client's key (default: key.pem there)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def docker_options(f: F) -> F:
    """--docker-host, its TLS flags and --server-address (run, smoke, up)."""
    f = click.option("--server-address", metavar="HOST",
                     help="Where the clients reach servers on --docker-host (default: that host's address).")(f)
    return docker_host_option(f)


def setup_options(f: F) -> F:
    """The page, the servers' limits and settings, where they run and where results go (run, capacity)."""
    opts = [
        click.option("--page", help="Path requested (default /info.php)."),
        server_options,
        stacks_option,
        www_option,
        app_option,
        config_option,
        docker_options,
        click.option("--reuse-server", is_flag=True, default=None,
                     help="Keep one server per set-up from trial to trial (across levels too)."),
        click.option("--out", "out_dir", help="Where results folders go (default results/)."),
        click.option("--name", help="Name of the run (part of its folder's name)."),
        json_option,
    ]
    for o in reversed(opts):
        f = o(f)
    return f
