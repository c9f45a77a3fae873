"""The command line: parse, call, print. The only place that exits.

Exit codes (DESIGN.md §6): 0 done, 1 runtime error, 2 bad usage, 3 a smoke
threshold not met, 130 interrupted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from . import __version__
from .errors import LoadcmpError, UsageError

EXIT_INTERRUPTED = 130


def emit_json(doc: Any) -> None:
    """The one JSON document of a --json command, on stdout."""
    click.echo(json.dumps(doc, indent=2, default=str))


class _Group(click.Group):
    """Turns loadcmp's errors into one line and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LoadcmpError as e:
            _fail(e)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)


def _fail(e: LoadcmpError) -> None:
    errors = getattr(e, "errors", None)
    if errors and len(errors) > 1:
        click.echo(f"error: {len(errors)} problems:", err=True)
        for m in errors:
            click.echo(f"  - {m}", err=True)
    else:
        click.echo(f"error: {e}", err=True)
    sys.exit(e.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="loadcmp")
def cli() -> None:
    """loadcmp: start real web servers in Docker, load them, compare them."""


def main() -> None:
    cli(prog_name="loadcmp")


# --- shared option groups -----------------------------------------------------------


def server_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                     help="Override a tunable, e.g. prefork.MaxRequestWorkers=500 (repeatable).")(f)
    f = click.option("--server-memory", metavar="SIZE", help="Memory cap per server container, e.g. 512m, 3g.")(f)
    f = click.option("--server-cpus", metavar="CPUS", help="CPU set for the server containers, e.g. 1 or 0-1.")(f)
    return f


def parse_memory(text: str | None) -> int | None:
    """A --server-memory value checked against Docker's minimum and this machine."""
    if text is None:
        return None
    from .units import format_bytes, mem_total, parse_size

    n = parse_size(text)
    if n < 6 * 1024 * 1024:
        raise UsageError(f"--server-memory {text}: Docker needs at least 6 MiB")
    total = mem_total()
    if total and n > total:
        raise UsageError(f"--server-memory {text}: more than this machine has ({format_bytes(total)})")
    return n


# --- servers / build / up / down ----------------------------------------------------


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--tunables", is_flag=True, help="Also list every tunable with its default.")
def servers(as_json: bool, tunables: bool) -> None:
    """List the server set-ups (stacks) loadcmp can start."""
    from rich.table import Table

    from . import stacks as st
    from .console import out

    if as_json:
        doc: dict[str, Any] = {
            "servers": [
                {"name": s.name, "description": s.description, "php": s.php_api, "mpm": s.mpm,
                 "containers": [r.name for r in s.roles], "tunable_sections": list(s.sections)}
                for s in st.STACKS.values()
            ],
            "aliases": st.ALIASES,
        }
        if tunables:
            doc["tunables"] = {k: {"default": t.default, "doc": t.doc} for k, t in st.tunables().items()}
        emit_json(doc)
        return
    t = Table(title="server set-ups", title_justify="left")
    for c in ("name", "description", "PHP (Server API)", "tunables"):
        t.add_column(c)
    for s in st.STACKS.values():
        t.add_row(s.name, s.description, s.php_api, ", ".join(s.sections))
    out.print(t)
    out.print("alias: " + ", ".join(f"{a} = {b}" for a, b in st.ALIASES.items()))
    if tunables:
        tt = Table(title="tunables (--set KEY=VALUE)", title_justify="left")
        for c in ("key", "default", "what it does"):
            tt.add_column(c)
        for k, tun in st.tunables().items():
            tt.add_row(k, str(tun.default), tun.doc)
        out.print(tt)


@cli.command()
@click.option("--server", "servers_", multiple=True, default=("all",), show_default=True,
              help="Build the images these stacks need.")
@click.option("--force", is_flag=True, help="Rebuild even when an image with the same inputs exists.")
def build(servers_: tuple[str, ...], force: bool) -> None:
    """Build the server images (and the base image if none can be had)."""
    from . import lab
    from . import stacks as st
    from .console import err

    stacks = st.resolve_servers(servers_)
    images = list(dict.fromkeys(i for s in stacks for i in s.images))
    client = lab.docker_client()
    with err.status("building images") as status:
        tags = lab.build_images(client, images, log=lambda m: status.update(m[:120]) if m.startswith("Step") else err.print(m),
                                force=force)
    for image, tag in tags.items():
        click.echo(f"{image}: {tag}")


@cli.command()
@click.option("--server", "server", required=True, help="Which stack (see `loadcmp servers`).")
@click.option("--port", type=int, help="Port on 127.0.0.1 (default: a free one).")
@server_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def up(server: str, port: int | None, server_cpus: str | None, server_memory: str | None,
       sets: tuple[str, ...], as_json: bool) -> None:
    """Start a stack and leave it running; print its URL."""
    from . import lab
    from . import stacks as st
    from .console import err
    from .units import parse_cpus

    stack = st.get_stack(server)
    overrides = st.parse_overrides(sets)
    st.effective_settings(stack, overrides)
    cpus = parse_cpus(server_cpus)
    mem = parse_memory(server_memory)
    if port is not None:
        lab.check_port_free(port)
    client = lab.docker_client()
    with err.status(f"starting {stack.name}") as status:
        dep = lab.up(lab.plan_deployment(stack, port=port, cpus=cpus, memory=mem, overrides=overrides), client=client,
                     log=lambda m: status.update(m[:120]))
    if as_json:
        emit_json({"server": stack.name, "url": dep.url, "containers": dep.container_names,
                   "status_url": next(iter(dep.status_urls.values()), None), "status_urls": dep.status_urls,
                   "run_id": dep.run_id})
    else:
        click.echo(dep.url)
        err.print(f"{stack.name} is up ({', '.join(dep.container_names)}); status: "
                  + ", ".join(dep.status_urls.values()) + "; stop it with `loadcmp down`")


@cli.command()
@click.option("--run", "run_id", help="Only the containers of this run id.")
def down(run_id: str | None) -> None:
    """Remove every container loadcmp started (label loadcmp=1)."""
    from . import lab

    names = lab.down(run_id=run_id)
    click.echo(f"removed {len(names)} container(s)" + (": " + ", ".join(names) if names else ""), err=True)


# --- bench ---------------------------------------------------------------------------


def load_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("-c", "--clients", default="50", show_default=True,
                     help="Concurrent clients (ramp: users; rate: most in flight)."),
        click.option("-t", "--time", "duration", default="30s", show_default=True, help="Measured time: 30, 30s, 2m."),
        click.option("--schedule", type=click.Choice(["closed", "ramp", "rate"]), default="closed", show_default=True,
                     help="closed = webbench loop; ramp = JMeter users with pacing; rate = open arrival rate."),
        click.option("--keepalive", "-k", is_flag=True, help="Reuse connections (default: a new one per request)."),
        click.option("--ramp-up", help="ramp: time over which the users start (e.g. 50s)."),
        click.option("--pace", help="ramp: time between one user's requests, start to start (default 5s)."),
        click.option("--rate", type=float, help="rate: requests per second."),
        click.option("--max-inflight", type=int, help="rate: most requests in flight (default: -c)."),
        click.option("--warmup", default="0", show_default=True, help="Load sent before measuring, not counted."),
        click.option("--timeout", "req_timeout", default="10s", show_default=True,
                     help="Per request, connect included; past it a request is a timeout."),
        click.option("--method", default="GET", show_default=True),
        click.option("-H", "--header", "headers", multiple=True, help="Extra header 'Name: value' (repeatable)."),
        click.option("--body", help="Request body."),
        click.option("--http10", is_flag=True, help="Send HTTP/1.0 requests (webbench -1)."),
        click.option("--engine", type=click.Choice(["fast", "aiohttp"]), default="fast", show_default=True),
        click.option("--workers", type=int, default=1, show_default=True, help="Client processes."),
        click.option("--client-cpus", metavar="CPUS", help="Pin the client processes to these CPUs."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def build_schedule(schedule: str, clients: int, ramp_up: str | None, pace: str | None, rate: float | None,
                   max_inflight: int | None) -> Any:
    from .load.schedules import make_schedule
    from .units import parse_duration

    return make_schedule(
        schedule, clients,
        ramp_up=None if ramp_up is None else parse_duration(ramp_up, "--ramp-up"),
        pace=None if pace is None else parse_duration(pace, "--pace", allow_zero=False),
        rate=rate, max_inflight=max_inflight,
    )


@cli.command()
@click.argument("url")
@load_options
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Store the result in a results folder here.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def bench(url: str, clients: str, duration: str, schedule: str, keepalive: bool, ramp_up: str | None,
          pace: str | None, rate: float | None, max_inflight: int | None, warmup: str, req_timeout: str,
          method: str, headers: tuple[str, ...], body: str | None, http10: bool, engine: str, workers: int,
          client_cpus: str | None, out_dir: str | None, as_json: bool) -> None:
    """Load any URL and print what happened (no containers involved)."""
    from .bench_cmd import run_bench

    code = run_bench(url=url, clients=clients, duration=duration, schedule=schedule, keepalive=keepalive,
                     ramp_up=ramp_up, pace=pace, rate=rate, max_inflight=max_inflight, warmup=warmup,
                     req_timeout=req_timeout, method=method, headers=headers, body=body, http10=http10,
                     engine=engine, workers=workers, client_cpus=client_cpus, out_dir=out_dir, as_json=as_json)
    if code:
        sys.exit(code)


# --- run -------------------------------------------------------------------------------


@cli.command()
@click.argument("experiment", required=False, type=click.Path(dir_okay=False))
@click.option("--server", "servers_", multiple=True, help="Stack to run (repeatable, or 'all').")
@click.option("-c", "--clients", help="Concurrency: a number or a list, e.g. 50,100,500.")
@click.option("-t", "--time", "duration", help="Measured time per trial (default 30s).")
@click.option("--page", help="Path requested (default /info.php).")
@click.option("--trials", type=int, help="Repeat every server x level this many times (mean and 95 % interval).")
@click.option("--schedule", type=click.Choice(["closed", "ramp", "rate"]), help="closed (default), ramp or rate.")
@click.option("--keepalive/--no-keepalive", "-k", default=None, help="Reuse connections (default: a new one per request).")
@click.option("--ramp-up", help="ramp: time over which the users start.")
@click.option("--pace", help="ramp: time between one user's requests (default 5s).")
@click.option("--rate", type=float, help="rate: requests per second.")
@click.option("--max-inflight", type=int, help="rate: most requests in flight.")
@click.option("--warmup", help="Load before measuring, not counted (default 2s).")
@click.option("--timeout", "req_timeout", help="Per request (default 10s).")
@click.option("--engine", type=click.Choice(["fast", "aiohttp"]))
@click.option("--workers", type=int, help="Client processes (default 1).")
@click.option("--client-cpus", metavar="CPUS", help="Pin the client to these CPUs.")
@server_options
@click.option("--reuse-server", is_flag=True, default=None, help="Keep one server per set-up across levels and trials.")
@click.option("--out", "out_dir", help="Where results folders go (default results/).")
@click.option("--name", help="Name of the run (part of its folder's name).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document.")
def run(experiment: str | None, servers_: tuple[str, ...], clients: str | None, duration: str | None,
        page: str | None, trials: int | None, schedule: str | None, keepalive: bool | None, ramp_up: str | None,
        pace: str | None, rate: float | None, max_inflight: int | None, warmup: str | None, req_timeout: str | None,
        engine: str | None, workers: int | None, client_cpus: str | None, server_cpus: str | None,
        server_memory: str | None, sets: tuple[str, ...], reuse_server: bool | None, out_dir: str | None,
        name: str | None, as_json: bool) -> None:
    """Start servers, load them at each level, measure both sides, store it all."""
    from . import run_cmd
    from . import stacks as st
    from .units import parse_duration, parse_levels

    flags: dict[str, Any] = {
        "servers": tuple(servers_) or None,
        "levels": tuple(parse_levels(clients)) if clients else None,
        "duration": parse_duration(duration, "-t/--time", allow_zero=False) if duration else None,
        "page": page, "trials": trials, "schedule": schedule,
        "keepalive": None if keepalive is None else (keepalive,),
        "ramp_up": parse_duration(ramp_up, "--ramp-up") if ramp_up else None,
        "pace": parse_duration(pace, "--pace", allow_zero=False) if pace else None,
        "rate": rate, "max_inflight": max_inflight,
        "warmup": parse_duration(warmup, "--warmup") if warmup else None,
        "timeout": parse_duration(req_timeout, "--timeout", allow_zero=False) if req_timeout else None,
        "engine": engine, "workers": workers, "client_cpus": client_cpus, "server_cpus": server_cpus,
        "server_memory": parse_memory(server_memory), "settings": st.parse_overrides(sets) if sets else None,
        "reuse_server": reuse_server, "out": out_dir, "name": name,
    }
    spec, _ = run_cmd.build_spec(experiment, flags)
    _, code = run_cmd.run(spec, as_json)
    if code:
        sys.exit(code)


# --- report ----------------------------------------------------------------------------


@cli.command()
@click.argument("results", nargs=-1, required=True, type=click.Path())
@click.option("--out", "out_dir", help="Where to write (default: RESULTS/report).")
@click.option("--format", "fmt", default="html,md,png", show_default=True, help="Any of html, md, png, svg.")
@click.option("--level", type=int, help="Level for the timeline and latency figures (default: highest common).")
@click.option("--open", "open_", is_flag=True, help="Open report.html in a browser.")
def report(results: tuple[str, ...], out_dir: str | None, fmt: str, level: int | None, open_: bool) -> None:
    """Build report.html and report.md from one or more results folders."""
    from .report.build import build, parse_formats

    written = build(list(results), out_dir, parse_formats(fmt), level)
    for kind in ("html", "md"):
        if kind in written:
            click.echo(str(written[kind]))
    if open_ and "html" in written:
        import webbrowser

        webbrowser.open(written["html"].resolve().as_uri())


# --- smoke -----------------------------------------------------------------------------


@cli.command()
@click.argument("experiment", required=False, type=click.Path(dir_okay=False))
@click.option("--server", "servers_", multiple=True, help="Stacks to check (default: all five).")
@click.option("-c", "--clients", help="Concurrency (default from smoke.toml).")
@click.option("-t", "--time", "duration", help="Measured time per server and page (default from smoke.toml).")
@click.option("--page", "pages", multiple=True, help="Pages to load (repeatable; default /index.html and /info.php).")
@click.option("--check", "checks", multiple=True, metavar="EXPR",
              help="A threshold like rps>200, p(99)<500ms, failed_rate<1%, nginx:mem_peak<256MiB (repeatable).")
@click.option("--baseline", type=click.Path(), help="A stored results folder to compare rps and p99 against.")
@click.option("--max-regression", default="20%", show_default=True, help="Allowed regression against --baseline.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option("--summary", type=click.Path(dir_okay=False), help="Append a Markdown summary here (CI step summary).")
@click.option("--out", "out_dir", help="Where the results folder goes (default results/).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def smoke(experiment: str | None, servers_: tuple[str, ...], clients: str | None, duration: str | None,
          pages: tuple[str, ...], checks: tuple[str, ...], baseline: str | None, max_regression: str,
          junit: str | None, summary: str | None, out_dir: str | None, as_json: bool) -> None:
    """Short runs of every stack with pass/fail checks (exit 3 when one fails)."""
    from .smoke_cmd import run_smoke

    code = run_smoke(experiment=experiment, servers=servers_, clients=clients, duration=duration, pages=pages,
                     checks=checks, baseline=baseline, max_regression=max_regression, junit=junit, summary=summary,
                     out_dir=out_dir, as_json=as_json)
    if code:
        sys.exit(code)
