"""A stack's configuration files rendered from its Jinja2 templates (beside its stack.toml, else
configs/templates/), and
the deployment plan that fixes them once: the lab starts exactly that plan and the
run stores exactly that plan, so nothing is derived twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..errors import ConfigError, Problems, UsageError
from ..units import Setting
from . import ownconfig
from .certs import Issued
from .model import TLS_PART, App, Role, Stack, StatusPage, configs_dir

def nofile_limit() -> int:
    """Open files a server process may have: this machine's hard limit, which a
    container cannot exceed (dockerd and runc inherit it), capped at 262144."""
    from ..load.run.limits import UNLIMITED, nofile

    hard = nofile()[1]
    return 262144 if hard == UNLIMITED else min(262144, hard)


def _onoff(v: object) -> str:
    return "on" if v else "off"


def _OnOff(v: object) -> str:
    return "On" if v else "Off"


def environment(stack: Stack, app: App | None = None) -> ImmutableSandboxedEnvironment:
    """Templates beside the stack first, then the app's (its files, its roles'), then the shared ones; an
    undefined name is an error, not a blank."""
    search = [str(d) for d in (stack.home, app.home if app else None) if d]
    env = ImmutableSandboxedEnvironment(  # a shared stack folder's templates can read values, never run code
        loader=jinja2.FileSystemLoader([*search, str(configs_dir() / "templates")]), undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters["onoff"] = _onoff
    env.filters["OnOff"] = _OnOff
    return env


def _nested(settings: Mapping[str, Setting]) -> dict[str, dict[str, Setting]]:
    """{"a.b": 1} -> {"a": {"b": 1}}: templates read a setting as section.name (nginx.worker_connections)."""
    out: dict[str, dict[str, Setting]] = {}
    for k, v in settings.items():
        section, name = k.split(".", 1)
        out.setdefault(section, {})[name] = v
    return out


def _fill(env: ImmutableSandboxedEnvironment, name: str, values: Mapping[str, object]) -> str:
    """One template rendered; its mistakes as ConfigErrors that name the template file and line."""
    try:
        return env.get_template(name).render(values)
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(f"{e.filename or name}:{e.lineno}: {e.message}") from None
    except jinja2.TemplateNotFound as e:
        raise ConfigError(f"template {name}: it includes {e.name!r}, which is neither beside the stack "
                          "nor shared") from None
    except jinja2.UndefinedError as e:
        raise ConfigError(f"template {name}: {e.message} (a setting of a part the stack does not list?)") from None
    except jinja2.TemplateError as e:  # the sandbox refused something, and the like
        raise ConfigError(f"template {name}: {e.message or e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"template {name}: not UTF-8 text") from None
    except (ArithmeticError, TypeError, ValueError, LookupError) as e:  # {{ 1 // 0 }}, {{ 'a' + 1 }}
        raise ConfigError(f"template {name}: {type(e).__name__}: {e}") from None


@dataclass
class Rendered:
    """The files of one role, ready to be put into /etc/loadcmp."""

    role: Role
    port: int
    files: dict[str, str] = field(default_factory=dict)


WWW = "/srv/www"
"""Where the demo pages are in every image."""
USER_WWW = "/srv/site"
"""Where the user's own pages (--www) are put, read-only: never mixed with the demo pages."""
TRACE = "trace"
"""Not a setting: an override of this name turns on each stack's trace logs (`--trace`); templates read `trace`
(the access logs with the traceparent id and the servers' own timings that `loadcmp.trace.serverlogs` reads)."""


def render(stack: Stack, settings: Mapping[str, Setting], ports: dict[str, int], bind: str = "127.0.0.1",
           nofile: int | None = None, www: str = WWW, app: App | None = None,
           https: Issued | None = None) -> list[Rendered]:
    """Render every role's config files; `ports` maps role name to its port, `bind` is
    where the front role listens (the others stay on 127.0.0.1), `nofile` the servers'
    open-file limit (None: this machine's), `app` the application served (its root is `www`,
    its front controller answers what is no file), `https` the front role's certificate when it serves
    https (the others talk plain http behind it; templates see None there and on a plain run)."""
    env = environment(stack, app)
    trace = bool(settings.get(TRACE))
    settings = {k: v for k, v in settings.items() if k != TRACE}
    base = {"stack": stack.name, "trace": trace, "ports": dict(ports),
            "nofile": nofile_limit() if nofile is None else nofile, "www": app.www if app else www,
            "app": app.template_vars() if app else None, **_nested(settings)}
    out: list[Rendered] = []
    p = Problems()
    for role in stack.roles:
        port = ports[role.name]
        front = role.name == stack.front.name
        vals = {**base, "role": role.name, "front": front, "port": port, "vars": dict(role.vars),
                "bind": bind if front else "127.0.0.1", "https": https.template_vars() if https and front else None}
        r = Rendered(role, port)
        for dest, tmpl in role.files:
            try:
                r.files[dest] = _fill(env, tmpl, vals)
            except ConfigError as e:
                p.add(str(e))
        out.append(r)
    p.raise_if_any(summary="{n} template problems")
    return out


def owned_sections(stack: Stack, own: Sequence[ownconfig.OwnConfig]) -> set[str]:
    """The tunable sections the replaced files' templates (and what they include) read: the settings that are
    the user's, not loadcmp's, once their own files run."""
    env = environment(stack)
    names: set[str] = set()
    todo = [dict(role.files)[ownconfig.target(role, o)] for o in own for role in [ownconfig.role_of(stack, o)]]
    done: set[str] = set()
    while todo:
        name = todo.pop()
        if name in done:
            continue
        done.add(name)
        assert env.loader is not None
        ast = env.parse(env.loader.get_source(env, name)[0])
        names |= meta.find_undeclared_variables(ast)
        todo += [t for t in meta.find_referenced_templates(ast) if t]
    return names & set(stack.sections)


@dataclass(frozen=True)
class DeploymentPlan:
    """Everything needed to start one stack, decided once: the settings in
    effect, the ports, the rendered configs and the limits. The lab starts
    exactly this and the run stores exactly this (nothing is re-derived)."""

    stack: Stack
    settings: dict[str, Setting]
    ports: dict[str, int]
    """Role name -> port on 127.0.0.1; the front role's is where clients go."""
    rendered: tuple[Rendered, ...]
    cpus: str | None = None
    memory: int | None = None
    bind: str = "127.0.0.1"
    """Where the front role listens (`dockerhost.DockerHost.bind`)."""
    www: Path | None = None
    """The user's pages (--www), served from USER_WWW instead of the demo pages; None: the demo pages."""
    own: dict[str, str] = field(default_factory=dict)
    """`role/name` -> the user's file that replaces it (`--config`); its settings are not in `settings`."""
    status: tuple[StatusPage, ...] = ()
    """The status pages to read (the stack's, or where the user's files put them)."""
    unmeasured: dict[str, str] = field(default_factory=dict)
    """Status page kind -> why it is not read (the user's server has none)."""
    app: App | None = None
    """The application served (`--app`; its images are in `stack`); None: the demo or the user's pages."""
    tls: Issued | None = None
    """--tls: the front role's certificate and key (copied in, never stored) and the CA that verifies them;
    None: plain http."""

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def cafile(self) -> str | None:
        """The CA file a client verifies the front role against (None: plain http)."""
        return self.tls.cafile if self.tls else None

    @property
    def ready_path(self) -> str:
        """What readiness asks for: a file every server answers 200 once it is up."""
        return self.app.ready if self.app else "/index.html"

    @property
    def port(self) -> int:
        return self.ports[self.stack.front.name]

    def config_files(self) -> dict[str, str]:
        """The rendered files keyed `role/name`, as stored in run.json."""
        return {f"{r.role.name}/{name}": text for r in self.rendered for name, text in r.files.items()}


class Issuer(Protocol):
    """What issues a server certificate of a key type (the run's CA, `certs.RunCA`)."""

    def issue(self, key_type: str) -> Issued: ...


def https_of(stack: Stack, settings: dict[str, Setting], tls: Issuer | None
             ) -> tuple[dict[str, Setting], Issued | None]:
    """The settings a run stores and the front role's certificate: with --tls, the stack's `tls.*` settings and a
    certificate of its `tls.key`; without, neither (its templates render no TLS lines, so those settings are
    not in effect). UsageError: --tls asked of a stack that does not list the part `tls`."""
    if tls is None:
        return {k: v for k, v in settings.items() if k.split(".", 1)[0] != TLS_PART}, None
    if not stack.serves_https:
        raise UsageError(no_https(stack))
    return settings, tls.issue(str(settings[f"{TLS_PART}.key"]))


def no_https(stack: Stack) -> str:
    """--tls asked of a stack that cannot serve https, in one line."""
    return (f"{stack.name} does not serve https: its stack.toml lists no part {TLS_PART!r} "
            f"(add it to parts and render its settings in the front role's templates; see docs/writing-a-stack.md)")


def render_plan(stack: Stack, overrides: Mapping[str, object], ports: dict[str, int], *, bind: str = "127.0.0.1",
                nofile: int | None = None, www: Path | None = None, own: Sequence[ownconfig.OwnConfig] = (),
                app: App | None = None, tls: Issuer | None = None) -> DeploymentPlan:
    """The plan for ports already chosen (`planning.plan_deployment` chooses them, and the limits): the settings
    in effect (checked), then every role's configs rendered for `ports`; the user's own files (`own`) in place
    of the ones they replace, and the settings those held left out; with `tls` (the run's CA), https on the
    front role. No I/O."""
    missing = [r.name for r in stack.roles if r.name not in ports]
    if missing:  # the caller picks the ports: a missing one is our bug
        raise ValueError(f"{stack.name}: no port for role(s) {', '.join(missing)}")
    settings, issued = https_of(stack, stack.effective({k: v for k, v in overrides.items() if k != TRACE}), tls)
    traced = {**settings, TRACE: True} if overrides.get(TRACE) else settings
    rendered = render(stack, traced, ports, bind, nofile, USER_WWW if www else WWW, app, issued)
    replaced: dict[str, str] = {}
    for o in own:
        r = next(x for x in rendered if x.role.name == ownconfig.role_of(stack, o).name)
        dest = ownconfig.target(r.role, o)
        r.files[dest] = ownconfig.read_text(o)
        replaced[f"{r.role.name}/{dest}"] = o.file
    gone = owned_sections(stack, own)
    status, unmeasured = ownconfig.status_pages(stack, own) if own else (stack.status, {})
    mine = {k: v for k, v in settings.items() if k.split(".", 1)[0] not in gone}
    return DeploymentPlan(stack, mine, dict(ports), tuple(rendered), None, None, bind, www, replaced, status,
                          unmeasured, app, issued)
