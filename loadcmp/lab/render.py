"""A stack's configuration files rendered from the templates in configs/stacks/, and
the deployment plan that fixes them once: the lab starts exactly that plan and the
run stores exactly that plan, so nothing is derived twice.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .stacks import Role, Stack, configs_dir, effective_settings

def nofile_limit() -> int:
    """Open files a server process may have: this machine's hard limit, which a
    container cannot exceed (dockerd and runc inherit it), capped at 262144."""
    from ..load.limits import UNLIMITED, nofile

    hard = nofile()[1]
    return 262144 if hard == UNLIMITED else min(262144, hard)


class _Tmpl(string.Template):
    """`@{name}` placeholders: nginx and Apache configs are full of `$` and `%`."""

    delimiter = "@"


def _template(name: str) -> str:
    return (configs_dir() / "stacks" / name).read_text()


def _fill(name: str, values: dict[str, Any]) -> str:
    try:
        return _Tmpl(_template(name)).substitute(values)
    except KeyError as e:  # a template names a value we do not have: our bug
        raise ConfigError(f"template {name} needs {e.args[0]!r}") from None


def _fmt(v: Any, apache: bool = False) -> str:
    if isinstance(v, bool):
        return ("On" if v else "Off") if apache else ("on" if v else "off")
    return str(v)


@dataclass
class Rendered:
    """The files of one role, ready to be put into /etc/loadcmp."""

    role: Role
    port: int
    files: dict[str, str] = field(default_factory=dict)


def render(stack: Stack, settings: dict[str, Any], ports: dict[str, int], bind: str = "127.0.0.1", *,
           nofile: int | None = None) -> list[Rendered]:
    """Render every role's config files; `ports` maps role name to its port, `bind` is
    where the front role listens (the others stay on 127.0.0.1), `nofile` the servers'
    open-file limit (None: this machine's, `nofile_limit`)."""
    out: list[Rendered] = []
    for role in stack.roles:
        port = ports[role.name]
        vals: dict[str, Any] = {"stack": stack.name, "port": port,
                                "nofile": nofile_limit() if nofile is None else nofile,
                                "bind": bind if role.name == stack.front.name else "127.0.0.1"}
        for k, v in settings.items():
            vals[k.replace(".", "_")] = _fmt(v, apache=k.startswith("apache."))
        vals["php_opcache"] = "1" if settings.get("php.opcache", True) else "0"
        r = Rendered(role, port)
        if role.image == "apache":
            vals["mpm_block"] = _fill(f"apache-mpm-{role.mpm}.tmpl", vals)
            php = "apache-php-mod.tmpl" if role.mode == "apache-modphp" else "apache-php-fpm.tmpl"
            vals["php_block"] = _fill(php, vals)
            r.files["apache2.conf"] = _fill("apache2.conf.tmpl", vals)
        else:
            if role.mode == "nginx-proxy":
                backend = ports["backend"]
                vals["backend_port"] = backend
                keep = settings.get("proxy.upstream_keepalive", 32)
                vals["upstream_block"] = (
                    f"    upstream loadcmp_backend {{\n        server 127.0.0.1:{backend};\n"
                    + (f"        keepalive {keep};\n" if keep else "")
                    + "    }"
                )
                vals["proxy_location"] = "~ \\.php$" if settings.get("proxy.serve_static", True) else "/"
                vals["php_block"] = _fill("nginx-proxy.tmpl", vals)
            else:
                vals["upstream_block"] = ""
                vals["php_block"] = _fill("nginx-php-fpm.tmpl", vals)
            r.files["nginx.conf"] = _fill("nginx.conf.tmpl", vals)
        if role.uses_fpm:
            r.files["php-fpm.conf"] = _fill("php-fpm.conf.tmpl", vals)
        if role.mode != "nginx-proxy":
            r.files["php/90-loadcmp.ini"] = _fill("php.ini.tmpl", vals)
        out.append(r)
    return out


@dataclass(frozen=True)
class DeploymentPlan:
    """Everything needed to start one stack, decided once: the settings in
    effect, the ports, the rendered configs and the limits. The lab starts
    exactly this and the run stores exactly this (nothing is re-derived)."""

    stack: Stack
    settings: dict[str, Any]
    ports: dict[str, int]
    """Role name -> port on 127.0.0.1; the front role's is where clients go."""
    rendered: tuple[Rendered, ...]
    cpus: str | None = None
    memory: int | None = None
    bind: str = "127.0.0.1"
    """Where the front role listens (`dockerhost.DockerHost.bind`)."""

    @property
    def port(self) -> int:
        return self.ports[self.stack.front.name]

    def config_files(self) -> dict[str, str]:
        """The rendered files keyed `role/name`, as stored in run.json."""
        return {f"{r.role.name}/{name}": text for r in self.rendered for name, text in r.files.items()}


def plan_deployment(stack: Stack, overrides: dict[str, Any], ports: dict[str, int], *, cpus: str | None = None,
                    memory: int | None = None, bind: str = "127.0.0.1", nofile: int | None = None) -> DeploymentPlan:
    """Settings in effect (checked), then every role's configs rendered for `ports`."""
    missing = [r.name for r in stack.roles if r.name not in ports]
    if missing:  # the caller picks the ports: a missing one is our bug
        raise ValueError(f"{stack.name}: no port for role(s) {', '.join(missing)}")
    settings = effective_settings(stack, overrides)
    return DeploymentPlan(stack, settings, dict(ports), tuple(render(stack, settings, ports, bind, nofile=nofile)),
                          cpus, memory, bind)
