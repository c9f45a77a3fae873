"""`servers`, `build`, `up`, `down`: the stacks and their containers."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from .app import abort_on_signals, cli, emit_json
from .display import PlainTable, err, markup, out, say, warn
from .options import (DockerFlags, SetupFlags, app_option, config_option, docker_host_option, docker_options,
                      json_option, server_options, stacks_option, tls_options, www_option)
from ..lab.dockerhost import DockerHost, answering, check_server_limits, docker_client, with_engine_limits

if TYPE_CHECKING:
    from ..lab.certs import RunCA
    from ..lab.containers import Deployment
    from ..lab.model import App, Stack, Tunable
    from ..lab.ownconfig import OwnConfig
    from ..lab.stacks import Catalog
    from ..units import Setting


def engine(flags: dict[str, Any] | DockerFlags) -> DockerHost:
    """The engine a command's flags name (its keyword arguments or its Docker flags); a plain-text one is said
    in one line before it is used."""
    host = (flags if isinstance(flags, DockerFlags) else DockerFlags.pop(flags)).host()
    warn(host.warning())
    return host


@cli.command()
@json_option
@click.option("--tunables", is_flag=True, help="Also list every tunable with its default.")
@stacks_option
def servers(as_json: bool, tunables: bool, stack_dirs: tuple[str, ...]) -> None:
    """List the server set-ups (stacks) loadcmp can start."""
    from ..lab import stacks

    cat = stacks.catalog(stack_dirs)
    if as_json:
        doc: dict[str, Any] = {
            "servers": [
                {"name": s.name, "description": s.description, "php": s.php_api, "workers": s.workers,
                 "containers": [r.name for r in s.roles], "tunable_sections": list(s.sections),
                 "roles": {r.name: [f for f, _ in r.files] for r in s.roles},
                 "parts": list(s.parts), "from": s.origin, "folder": str(s.home), "smoke": s.smoke,
                 "status_pages": {p.kind: p.path for p in s.status}, "protocols": list(s.protocols)}
                for s in cat
            ],
            "aliases": cat.aliases(),
        }
        if tunables:
            doc["tunables"] = {r.tunable.key: r.doc() for r in _all_tunables(cat)}
        emit_json(doc)
        return
    t = PlainTable(title="server set-ups", title_justify="left")
    for c in ("name", "description", "PHP (Server API)", "roles (--config)", "tunables", "--proto", "from"):
        t.add_column(c)
    for s in cat:
        roles = ", ".join(f"{r.name}: {', '.join(Path(f).name for f, _ in r.files)}" for r in s.roles)
        t.add_row(s.name, s.description, s.php_api, roles, ", ".join(s.sections), ",".join(s.protocols), s.origin)
    out.print(t)
    out.print(markup("alias: {}", ", ".join(f"{a} = {b}" for a, b in cat.aliases().items())))
    if tunables:
        tt = PlainTable(title="tunables (--set KEY=VALUE)", title_justify="left")
        for c in ("key", "default", "bounds", "what it does", "with"):
            tt.add_column(c)
        for r in _all_tunables(cat):
            tt.add_row(r.tunable.key, r.default(), r.bounds(), r.tunable.doc, r.taken_by())
        out.print(tt)


@dataclass(frozen=True)
class TunableRow:
    """One key `--set` takes, with the stacks (or the apps' roles) that take it."""

    tunable: Tunable
    stacks: list[str]
    """The stacks that take the key (the first one's default, bounds and words are shown)."""
    apps: list[str]
    """The apps whose own roles have it (a database's `db.*`); empty for a stack's key."""
    every: bool
    """Every stack of the catalog takes it."""
    fixed: list[str]
    """The stacks that have the key but whose checks keep it at its default (their server has no switch for it:
    `Stack.fixes`, from the stack files' data)."""

    def bounds(self) -> str:
        """What values it takes: `1..3600`, `>= 1`, its choices or its pattern; `-` when anything of its type."""
        t = self.tunable
        if t.choices:
            return " | ".join(t.choices)
        if isinstance(t.default, bool):
            return "on | off"
        if t.min is not None and t.max is not None:
            return f"{t.min:,}..{t.max:,}"
        if t.min is not None or t.max is not None:
            return f">= {t.min:,}" if t.min is not None else f"<= {t.max:,}"
        return f"matches {t.pattern}" if t.pattern else "-"

    def default(self) -> str:
        """Its default as `--set` takes it (`on` / `off` for a switch, as its bounds say)."""
        d = self.tunable.default
        return ("on" if d else "off") if isinstance(d, bool) else str(d)

    def taken_by(self) -> str:
        """Who takes it: the stacks by name (`every stack`), and `--app NAME` for an app's own role."""
        stacks = ["every stack" if self.every else ", ".join(self.stacks)] if self.stacks else []
        fixed = [f"(fixed on {', '.join(self.fixed)})"] if self.fixed else []
        return " ".join([", ".join(stacks + [f"--app {a}" for a in self.apps]), *fixed]).strip()

    def doc(self) -> dict[str, Any]:
        t = self.tunable
        return {"default": t.default, "doc": t.doc, "stacks": self.stacks, "fixed": self.fixed, "apps": self.apps,
                "min": t.min, "max": t.max, "choices": list(t.choices) if t.choices else None, "pattern": t.pattern}


def _all_tunables(cat: Catalog) -> list[TunableRow]:
    """Every tunable `--set` takes: the stacks' (each with the stacks that take it, and those that keep it
    fixed), then the apps' own roles' (a database's) with the apps that have them (the first taker's default,
    bounds and words)."""
    from ..lab import apps

    stacks = list(cat)
    found: dict[str, TunableRow] = {}
    for s in stacks:
        for k, t in s.tunables.items():
            row = found.setdefault(k, TunableRow(t, [], [], False, []))
            (row.fixed if s.fixes(k) else row.stacks).append(s.name)
            if len(row.stacks) == 1 and row.stacks[0] == s.name:
                found[k] = replace(row, tunable=t)  # the first stack that takes it speaks for it
    for app in apps.catalog().values():
        for k, t in app.tunables.items():
            found.setdefault(k, TunableRow(t, [], [], False, [])).apps.append(app.name)
    return [replace(r, every=len(r.stacks) == len(stacks)) for r in found.values()]


@cli.command()
@click.option("--server", "servers_", multiple=True, default=("all",), show_default=True,
              help="Build the images these stacks need.")
@click.option("--force", is_flag=True, help="Rebuild even when an image with the same inputs exists.")
@stacks_option
@docker_host_option
def build(servers_: tuple[str, ...], force: bool, stack_dirs: tuple[str, ...], **flags: Any) -> None:
    """Build the server images (and the base image if none can be had)."""
    from ..lab import stacks
    from ..lab.images import build_images

    chosen = stacks.catalog(stack_dirs).resolve(servers_)
    images = list(dict.fromkeys(i for s in chosen for i in s.images))
    host = engine(flags)
    client = docker_client(host)
    with err.status("building images") as status, answering(host):
        def log(m: str) -> None:
            if m.startswith("Step"):
                status.update(Text(m[:120]))
            else:
                say(m)

        tags = build_images(client, images, log=log, force=force)
    for image, tag in tags.items():
        click.echo(f"{image}: {tag}")


@cli.command()
@click.option("--server", "server", required=True, help="Which stack (see `loadcmp servers`).")
@click.option("--port", type=click.IntRange(1, 65535), help="Port on 127.0.0.1 (default: a free one).")
@server_options
@tls_options
@stacks_option
@www_option
@app_option
@config_option
@docker_options
@json_option
def up(server: str, port: int | None, as_json: bool, **flags: Any) -> None:
    """Start a stack (with --app, serving that application; with --tls, https) and leave it running; print its
    URL (and with --tls, where the CA that verifies it is)."""
    setup = SetupFlags.pop(flags)
    chosen = _choose(server, setup)
    host = engine(setup.docker)
    check_server_limits(host, setup.server_cpus, setup.server_memory)  # this machine's engine: before it is asked
    if port is not None and not host.remote:
        from ..lab.planning import check_port_free

        check_port_free(port)
    dep = _start(chosen, port, setup, host)
    pages = {p.name: dep.url.rstrip("/") + p.path for p in chosen.app.pages} if chosen.app else {}
    if as_json:
        emit_json({"server": chosen.stack.name, "url": dep.url, "containers": dep.container_names,
                   **({"cafile": dep.plan.cafile} if dep.plan.cafile else {}),
                   **({"app": chosen.app.name, "pages": pages} if chosen.app else {}),
                   "status_url": next(iter(dep.status_urls.values()), None), "status_urls": dep.status_urls,
                   "run_id": dep.run_id, **({"unmeasured": dep.unmeasured} if dep.unmeasured else {})})
    else:
        _say_up(chosen, dep, pages)


@dataclass(frozen=True)
class _Chosen:
    """What `up` starts, its settings checked: the stack (an app's images over it), the settings in effect
    (an app's under the user's), the app, and the user's own config files."""

    stack: Stack
    overrides: dict[str, Setting]
    app: App | None
    own: list[OwnConfig]


def _choose(server: str, setup: SetupFlags) -> _Chosen:
    """The stack, the app and the settings `up` was given, every problem with them said at once (exit 2)."""
    from ..errors import Problems, UsageError
    from ..experiment.variants import Variant, check_sets, own_config_errors
    from ..lab import apps, ownconfig, stacks

    cat = stacks.catalog(setup.stack_dirs)
    stack = cat.get(server)
    overrides = cat.parse_overrides(setup.sets, apps.tunables())
    the_app = apps.get_app(setup.app) if setup.app else None
    if the_app and setup.www:
        raise UsageError("--www and --app: give one (the app brings its own pages)")
    own = [ownconfig.from_doc(d) for d in setup.configs]
    p = Problems()
    p.extend(check_sets([Variant(stack.name, stack.name, {})], overrides, {}, cat,
                        tuple(dict.fromkeys(k.split(".")[0] for k in the_app.tunables)) if the_app else ()))
    p.extend(own_config_errors(own, {server: stack.name}, {server: overrides}, cat))
    p.extend(_tls_errors(stack, overrides, setup))
    p.raise_if_any(summary="{n} settings do not apply")
    if the_app:  # its settings under the user's, its images over the stack's
        overrides = {**the_app.settings, **overrides}
        stack = apps.on_stack(the_app, stack)
    stacks.effective_settings(stack, overrides)
    return _Chosen(stack, overrides, the_app, own)


def _tls_errors(stack: Stack, overrides: dict[str, Setting], setup: SetupFlags) -> list[str]:
    """--tls of a stack that cannot serve https, --tls-resume outside 0..1, tls.* settings without --tls."""
    from ..experiment.variants import TlsAsked, tls_problems

    return tls_problems([TlsAsked(stack.name, stack, bool(setup.tls.tls))], setup.tls.tls_resume or 0.0,
                        tuple(overrides))


def _run_ca(chosen: _Chosen, setup: SetupFlags) -> RunCA | None:
    """--tls: the CA `up` makes for this server, in a folder of its own that outlives the command (the clients
    the user points at it verify against its tls/ca.pem); None without --tls."""
    import tempfile

    from ..lab.certs import RunCA

    if not setup.tls.tls:
        return None
    return RunCA(Path(tempfile.mkdtemp(prefix=f"loadcmp-up-{chosen.stack.name}-")))


def _start(chosen: _Chosen, port: int | None, setup: SetupFlags, host: DockerHost) -> Deployment:
    """The chosen stack started on `host` and left running (no owner process: `down` removes it); the
    containers of dead runs removed first, the images built when missing."""
    from ..lab import cleanup, containers
    from ..lab.images import build_images
    from ..lab.planning import plan_deployment
    from ..observe.statuspages import leave_out_unanswered

    client = docker_client(host)
    with answering(host):
        check_server_limits(host, setup.server_cpus, setup.server_memory, client)  # another machine's: its own
        reaped = cleanup.reap_orphans(client)
        if reaped:
            say(f"removed {len(reaped)} container(s) left by runs whose process is gone: {', '.join(reaped)}")
        with err.status(f"starting {chosen.stack.name}") as status:
            images = build_images(client, chosen.stack.images, log=lambda m: status.update(Text(m[:120])))
            host = with_engine_limits(client, host, images)
            plan = plan_deployment(chosen.stack, port=port, cpus=setup.server_cpus, memory=setup.server_memory,
                                   overrides=chosen.overrides, host=host, www=Path(setup.www) if setup.www else None,
                                   own=chosen.own, app=chosen.app, tls=_run_ca(chosen, setup))
            with abort_on_signals():  # SIGTERM while it starts: what started is removed, not left unowned
                dep = containers.up(plan, client=client, images=images, log=lambda m: status.update(Text(m[:120])),
                                    host=host, owned=False)
            leave_out_unanswered(dep)
    return dep


def _say_up(chosen: _Chosen, dep: Deployment, pages: dict[str, str]) -> None:
    """The URL on stdout; the containers, status pages and the app's pages on stderr."""
    click.echo(dep.url)
    if dep.plan.cafile:
        say(f"https, its certificate ({dep.plan.tls.key_type if dep.plan.tls else ''}) issued by the CA in "
            f"{dep.plan.cafile} (e.g. curl --cacert {dep.plan.cafile} {dep.url}); `loadcmp down` leaves "
            "that folder: remove it when done")
    say(f"{chosen.stack.name} is up ({', '.join(dep.container_names)}); status: "
        + (", ".join(dep.status_urls.values()) or "none") + "; stop it with `loadcmp down`")
    for kind, why in dep.unmeasured.items():
        say(f"no {kind} status page: {why}")
    for name, url in pages.items():
        say(f"{chosen.app.name if chosen.app else ''} page {name}: {url}")


@cli.command()
@json_option
def apps(as_json: bool) -> None:
    """List the applications `--app` runs behind any server, and their pages."""
    from ..lab.apps import catalog

    found = catalog()
    if as_json:
        emit_json({"apps": [{"name": a.name, "description": a.description, "packages": list(a.packages),
                             "root": a.www, "front": a.front, "setup": list(a.setup), "settings": dict(a.settings),
                             "from": a.origin, "folder": str(a.home),
                             "pages": [{"name": p.name, "path": p.path, "expect": p.expect, "doc": p.doc}
                                       for p in a.pages]} for a in found.values()]})
        return
    t = PlainTable(title="applications (--app NAME)", title_justify="left")
    for c in ("app", "description", "pages (--page)", "settings it starts with", "from"):
        t.add_column(c)
    for a in found.values():
        t.add_row(a.name, a.description, "\n".join(f"{p.path}: {p.doc or p.name}" for p in a.pages),
                  ", ".join(f"{k}={v}" for k, v in a.settings.items()) or "-", a.origin)
    out.print(t)


@cli.command()
@click.option("--run", "run_id", help="Only the containers of this run id.")
@docker_host_option
def down(run_id: str | None, **flags: Any) -> None:
    """Remove every container loadcmp started (label loadcmp=1)."""
    from ..lab import cleanup

    host = engine(flags)
    with answering(host):
        names = cleanup.down(docker_client(host), run_id=run_id)
    click.echo(f"removed {len(names)} container(s)" + (": " + ", ".join(names) if names else ""), err=True)
    from ..net.toxiproxy import end_strays

    if ended := end_strays():  # a --net proxy whose loadcmp was killed outright
        click.echo(f"ended {len(ended)} stray toxiproxy-server(s): pid {', '.join(map(str, ended))}", err=True)
