"""Options shared by several commands, and the flag groups that carry their values.

`bench`, `run` and `smoke` take the same load options; `run`, `capacity` and `tune` the same
set-up options (https among them: `TlsFlags`, which `smoke` and `up` take too); `capacity` and
`tune` the same search options. Every option defaults to None ("not given"), and each group
(`LoadFlags`, `SetupFlags`, `SearchFlags`, `DockerFlags`; `TlsFlags` and `ProtoFlags` in `protocols`) says
which were given, by RunSpec field name (`given()`, laid over an experiment file by
`experiment.flags`) and as typed (`given_flags()`, for a message). `writable` checks an output
path before anything else is done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..errors import Problems, UsageError
from ..load import engines
from .clientflags import behaviour_options, trace_options
from .flaggroup import FlagGroup, flag
from .protocols import ProtoFlags, TlsFlags, proto_options, tls_options
from .types import COUNT, CPUS, DURATION, LEVELS, MEMORY, POSITIVE_DURATION, RATE, SERVER_CPUS

if TYPE_CHECKING:
    from ..lab.dockerhost import DockerHost

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class LoadFlags(FlagGroup):
    """The load options as given on the command line (None: not given)."""

    levels: tuple[int, ...] | None = flag("-c/--clients")
    duration: float | None = flag("-t/--time")
    requests: int | None = flag("-n/--requests")
    schedule: str | None = flag("--schedule")
    keepalive: bool | None = flag("--keepalive/--no-keepalive")
    ramp_up: float | None = flag("--ramp-up")
    pace: float | None = flag("--pace")
    rate: float | None = flag("--rate")
    max_inflight: int | None = flag("--max-inflight")
    warmup: float | None = flag("--warmup")
    timeout: float | None = flag("--timeout")
    engine: str | None = flag("--engine")
    workers: int | None = flag("--workers")
    cluster: str | None = flag("--cluster")
    client_cpus: str | None = flag("--client-cpus")
    net: str | None = flag("--net")
    trace: bool | None = flag("--trace")
    trace_sample: float | None = flag("--trace-sample")
    think: str | None = flag("--think")
    send_rate: str | None = flag("--send-rate")
    read_rate: str | None = flag("--read-rate")

    def given(self) -> dict[str, Any]:
        """The flags the user gave, by RunSpec field name (keep-alive as the spec's tuple of settings)."""
        out = super().given()
        if "keepalive" in out:
            out["keepalive"] = (out["keepalive"],)
        if "trace_sample" in out and "trace" not in out:  # a share asked for is a trace asked for
            out["trace"] = True
        return out

    def refuse(self, why: dict[str, str]) -> None:
        """A UsageError naming every flag given that the command refuses (field name -> why), at once."""
        p = Problems()
        p.extend(text for key, text in why.items() if getattr(self, key) is not None)
        p.raise_if_any(UsageError)


def load_options(f: F) -> F:
    """-c, -t, -n and the schedule, connection and client options (bench, run, smoke)."""
    return load_options_but()(f)


def load_options_but(*refused: str) -> Callable[[F], F]:
    """The load options, those a command refuses (by field name: `levels`, `duration`...) left out of its
    --help (still read, so that the command can say why it refuses them)."""
    def add(f: F) -> F:
        for o in reversed(_load_options(set(refused))):
            f = o(f)
        return f
    return add


def _load_options(hide: set[str]) -> list[Callable[[F], F]]:
    return [
        click.option("-c", "--clients", "levels", type=LEVELS, metavar="N[,N...]", hidden="levels" in hide,
                     help="Concurrent clients (ramp: users; rate: most in flight); a list sweeps (run)."),
        click.option("-t", "--time", "duration", type=POSITIVE_DURATION, metavar="DURATION",
                     hidden="duration" in hide, help="Measured time per trial: 30, 30s, 2m."),
        click.option("-n", "--requests", type=COUNT, metavar="N", hidden="requests" in hide,
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
        click.option("--rate", type=RATE, hidden="rate" in hide, help="rate: requests per second."),
        click.option("--max-inflight", type=COUNT,
                     help="rate: most requests in flight (default: " + ("a second's requests)." if "levels" in hide
                                                                        else "-c).")),
        click.option("--warmup", type=DURATION, metavar="DURATION", help="Load sent before measuring, not counted."),
        click.option("--timeout", type=POSITIVE_DURATION, metavar="DURATION",
                     help="Per request, connect included; past it a request is a timeout (default 10s)."),
        click.option("--engine", type=click.Choice(list(engines.names())),
                     help=f"{' or '.join(engines.names())} (default {engines.FAST.name})."),
        click.option("--workers", type=COUNT, help="Client processes (default 1)."),
        click.option("--cluster", envvar="LOADCMP_CLUSTER", metavar="local:N|tcp://HOST:PORT",
                     help="Share the clients over a Dask cluster: N worker processes here, or a running scheduler "
                          "(env LOADCMP_CLUSTER)."),
        click.option("--client-cpus", type=CPUS, metavar="CPUS", help="Pin the client processes to these CPUs."),
        click.option("--net", callback=_net, metavar="SPEC|PROFILE",
                     help="Put a network between the clients and the server (a Toxiproxy on 127.0.0.1, or "
                          "via=netem the kernel's): rtt=80ms,jitter=10ms,rate=10mbit,rate-up=2mbit,loss=1%, or a "
                          "profile (lan, cable, dsl, 4g, 3g, wan), keys after it changing its own: dsl,via=netem."),
        *trace_options(),
        *behaviour_options(),
    ]


def _net(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--net checked as soon as it is read (one line, exit 2, nothing started); kept as typed."""
    if value is not None:
        from ..net.conditions import parse_net

        parse_net(value)
    return value


def event_option(f: F) -> F:
    """--event 'AT ACTION' (repeatable): a reload, restart, killed worker or paused role in every trial (run, smoke,
    capacity)."""
    return click.option("--event", "events", multiple=True, metavar="'AT ACTION'",
                        help="Fire an event in each trial's window: '5s reload', 'every 5s reload', '8s pause db 3s' "
                             "(repeatable; the stack's actions: `loadcmp servers`, docs/events.md).")(f)


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
class DockerFlags(FlagGroup):
    """Where the stacks run (run, smoke, up, down, build): another Docker engine, how it is reached
    (TLS as the docker CLI's flags), and where its servers are reached."""

    docker_host: str | None = flag("--docker-host")
    server_address: str | None = flag("--server-address")
    tlsverify: bool | None = flag("--tlsverify")
    tlscacert: str | None = flag("--tlscacert")
    tlscert: str | None = flag("--tlscert")
    tlskey: str | None = flag("--tlskey")

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
        tls_options,
        proto_options,
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


@dataclass(frozen=True)
class SetupFlags(FlagGroup):
    """The set-up flags of `setup_options` (run, capacity, tune; smoke has some): the page, the servers'
    limits and settings, where they run, what they serve and where the results go."""

    page: str | None = flag("--page")
    server_cpus: str | None = flag("--server-cpus")
    server_memory: int | None = flag("--server-memory")
    sets: tuple[str, ...] = flag("--set", spec="", default=())
    """Parsed with the command's --server items (`experiment.flags.server_fields`)."""
    reuse_server: bool | None = flag("--reuse-server")
    out_dir: str | None = flag("--out", spec="out")
    name: str | None = flag("--name")
    stack_dirs: tuple[str, ...] = flag("--stacks", default=())
    www: str | None = flag("--www")
    configs: tuple[dict[str, Any], ...] = flag("--config", default=())
    app: str | None = flag("--app")
    docker: DockerFlags = field(default_factory=DockerFlags)
    tls: TlsFlags = field(default_factory=TlsFlags)
    proto: ProtoFlags = field(default_factory=ProtoFlags)

    @classmethod
    def pop(cls, kwargs: dict[str, Any]) -> SetupFlags:
        """Take this group's values, the Docker, TLS and protocol flags' among them, out of a command's keyword
        arguments."""
        own = {f.name: kwargs.pop(f.name, f.default) for f in fields(cls) if f.name not in ("docker", "tls", "proto")}
        return cls(**own, docker=DockerFlags.pop(kwargs), tls=TlsFlags.pop(kwargs), proto=ProtoFlags.pop(kwargs))

    def check_out(self) -> None:
        """--out, first of all: one that cannot be written is exit 2 before anything is read or started."""
        writable("--out", self.out_dir, folder=True)

    def fields_with(self, servers: tuple[str, ...], file_dirs: tuple[str, ...] = ()) -> dict[str, Any]:
        """The RunSpec fields these flags and the command's --server items give (only those given); the
        stacks they name are looked up among ours, --stacks' and `file_dirs` (an experiment file's, when read)."""
        from ..experiment.flags import server_fields

        return {**self.given(), **server_fields(servers, self.sets, (*file_dirs, *self.stack_dirs))}


@dataclass(frozen=True)
class SearchFlags(FlagGroup):
    """A capacity search's own flags (capacity, tune), by their [capacity] key: the target, the levels,
    the probes and the confirmations."""

    slo: str | None = flag("--slo")
    resolution: str | None = flag("--resolution")
    start: int | None = flag("--start")
    max_: int | None = flag("--max", spec="max")
    probe_time: float | None = flag("--probe-time")
    confirm: int | None = flag("--confirm")

    def table(self) -> dict[str, Any]:
        """Every key of the search, None where not given (laid over the file's [capacity] table)."""
        return {f.metadata.get("spec", f.name): getattr(self, f.name) for f in fields(self)}


def search_options(start: str, confirm: str) -> Callable[[F], F]:
    """--slo, --resolution, --start, --max, --probe-time, --confirm (capacity, tune: their own words for two)."""
    def add(f: F) -> F:
        opts = [
            click.option("--slo", metavar="CHECKS",
                         help="The target, in smoke's check grammar: 'p99<500ms, failed_rate<1%'."),
            click.option("--resolution", metavar="PERCENT", help="How close the edge is bracketed (default 10%)."),
            click.option("--start", type=COUNT, help=start),
            click.option("--max", "max_", type=COUNT,
                         help="The highest level probed (default: what the open-file limit holds)."),
            click.option("--probe-time", type=POSITIVE_DURATION, metavar="DURATION",
                         help="Measured time of a probe (default 5s)."),
            click.option("--confirm", type=COUNT, help=confirm),
        ]
        for o in reversed(opts):
            f = o(f)
        return f
    return add


def writable(flag: str, path: str | None, *, folder: bool) -> None:
    """An output path, checked before anything is read, loaded or started: one that cannot be written is
    bad usage (exit 2), said in one line, rather than a run lost at its end. Nothing is left behind: a
    folder's nearest existing parent is tried with a folder made and removed at once."""
    if path is None:
        return  # first: the store's writer loads pandas, a second in a command that writes nothing
    from ..errors import StoreError
    from ..store.writer import check_out_file

    try:
        if not folder:
            check_out_file(path, flag)
        else:
            _writable_folder(flag, Path(path).expanduser())
    except StoreError as e:
        raise UsageError(str(e)) from None
    except OSError as e:  # a name too long, a parent that may not be looked into
        raise UsageError(f"{flag} {path}: {e.strerror or e}") from None


def _writable_folder(flag: str, p: Path) -> None:
    """A results folder that can be made: not a file, under a folder where one can be made and removed."""
    import tempfile

    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag} {p} is a file; give a folder")
    base = p
    while not base.exists():
        base = base.parent
    if not base.is_dir():
        raise UsageError(f"{flag} {p}: {base} is a file, so no folder can be made under it")
    try:
        Path(tempfile.mkdtemp(prefix=".loadcmp-", dir=base)).rmdir()
    except OSError as e:
        raise UsageError(f"{flag} {p}: cannot create the folder ({e.strerror or e})") from None
