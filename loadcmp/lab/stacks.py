"""The catalog of server set-ups, as data: stacks, roles, tunables and their checks.

A stack is one or more containers (roles). Each role runs one image with one
entrypoint mode; `loadcmp.lab.render` turns a stack and the tunables in effect into
its config files. Nothing here touches Docker or the network, so all of it is
unit-testable.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError, UsageError


def project_root() -> Path:
    """Where `configs/` and the Dockerfiles live; the one place that decides it.

    1. LOADCMP_HOME, when set: a user's own copy of them, which wins over everything.
    2. The checkout the package is imported from (`configs/` beside the `loadcmp/` folder: a
       clone, an editable install), so that an edit there takes effect at once.
    3. Else the copy a wheel installs in `loadcmp/_data` (setup.py puts it there, byte for byte,
       so the image tags come out as in the checkout).
    """
    env = os.environ.get("LOADCMP_HOME")
    if env:
        return Path(env)
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent
    if (checkout / "configs" / "stacks" / "defaults.toml").is_file():
        return checkout
    return package / "_data"


def configs_dir() -> Path:
    return project_root() / "configs"


@dataclass(frozen=True)
class Role:
    """One container of a stack."""

    name: str
    """Short role name, part of the container name (web, backend)."""
    image: str
    """Which image: 'apache' or 'nginx'."""
    mode: str
    """Entrypoint mode: apache-modphp, apache-fpm, nginx-fpm, nginx-proxy."""
    mpm: str | None = None
    """The Apache MPM this role loads, if it is Apache."""

    @property
    def uses_fpm(self) -> bool:
        return self.mode in ("apache-fpm", "nginx-fpm")


@dataclass(frozen=True)
class Stack:
    """A server set-up: what runs, how PHP runs, which tunables apply."""

    name: str
    description: str
    roles: tuple[Role, ...]
    php_api: str
    """What phpinfo() says as "Server API" on this stack."""
    sections: tuple[str, ...]
    """Tunable sections that apply."""

    @property
    def front(self) -> Role:
        """The role the clients talk to (the last one started)."""
        return self.roles[-1]

    @property
    def mpm(self) -> str | None:
        return next((r.mpm for r in self.roles if r.mpm), None)

    @property
    def images(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.image for r in self.roles))


STACKS: dict[str, Stack] = {
    s.name: s
    for s in (
        Stack(
            "nginx",
            "Nginx with PHP in php-fpm over FastCGI",
            (Role("web", "nginx", "nginx-fpm"),),
            "FPM/FastCGI",
            ("nginx", "fpm", "php"),
        ),
        Stack(
            "apache-prefork",
            "Apache, prefork MPM, PHP in-process with mod_php",
            (Role("web", "apache", "apache-modphp", "prefork"),),
            "Apache 2.0 Handler",
            ("apache", "prefork", "php"),
        ),
        Stack(
            "apache-worker",
            "Apache, worker MPM, PHP in php-fpm via mod_proxy_fcgi",
            (Role("web", "apache", "apache-fpm", "worker"),),
            "FPM/FastCGI",
            ("apache", "worker", "fpm", "php"),
        ),
        Stack(
            "apache-event",
            "Apache, event MPM, PHP in php-fpm via mod_proxy_fcgi",
            (Role("web", "apache", "apache-fpm", "event"),),
            "FPM/FastCGI",
            ("apache", "event", "fpm", "php"),
        ),
        Stack(
            "nginx-apache",
            "Nginx reverse proxy in front of Apache prefork + mod_php",
            (
                Role("backend", "apache", "apache-modphp", "prefork"),
                Role("web", "nginx", "nginx-proxy"),
            ),
            "Apache 2.0 Handler",
            ("nginx", "proxy", "apache", "prefork", "php"),
        ),
    )
}

ALIASES = {"apache": "apache-prefork"}


def stack_names() -> list[str]:
    return list(STACKS)


def get_stack(name: str) -> Stack:
    """Look a stack up by name or alias; a one-line error lists the valid ones."""
    key = ALIASES.get(name, name)
    if key not in STACKS:
        valid = ", ".join(list(STACKS) + list(ALIASES))
        raise UsageError(f"unknown server {name!r}; valid: {valid}")
    return STACKS[key]


def resolve_servers(names: list[str] | tuple[str, ...]) -> list[Stack]:
    """Expand 'all', resolve aliases, drop repeats (keeping order)."""
    out: list[Stack] = []
    for n in names:
        for part in n.split(","):
            part = part.strip()
            if not part:
                continue
            stacks = list(STACKS.values()) if part == "all" else [get_stack(part)]
            for s in stacks:
                if s not in out:
                    out.append(s)
    return out


# --- tunables -----------------------------------------------------------------


@dataclass(frozen=True)
class Tunable:
    """One knob of a server config, with its default and its bounds."""

    key: str
    default: Any
    doc: str
    min: int | None = None
    max: int | None = None
    choices: tuple[str, ...] | None = None
    pattern: str | None = None

    @property
    def section(self) -> str:
        return self.key.split(".", 1)[0]

    def parse(self, raw: Any) -> Any:
        """Turn a value (a --set string or a TOML value) into this knob's type."""
        d = self.default
        if isinstance(d, bool):
            if isinstance(raw, bool):
                return raw
            s = str(raw).strip().lower()
            if s in ("1", "true", "on", "yes"):
                return True
            if s in ("0", "false", "off", "no"):
                return False
            raise ConfigError(f"{self.key}: expected on/off, got {raw!r}")
        if isinstance(d, int):
            try:
                v = int(str(raw).strip()) if not isinstance(raw, bool) else None
            except ValueError:
                v = None
            if v is None:
                raise ConfigError(f"{self.key}: expected a whole number, got {raw!r}")
            if self.min is not None and v < self.min or self.max is not None and v > self.max:
                raise ConfigError(f"{self.key}: {v} is outside {self.min}..{self.max}")
            return v
        s = str(raw).strip()
        if self.key == "nginx.worker_processes":
            if s != "auto" and not (s.isdigit() and 1 <= int(s) <= 1024):
                raise ConfigError(f"{self.key}: expected 'auto' or 1..1024, got {raw!r}")
        if self.choices and s not in self.choices:
            raise ConfigError(f"{self.key}: expected one of {', '.join(self.choices)}, got {raw!r}")
        if self.pattern and not re.match(self.pattern, s):
            raise ConfigError(f"{self.key}: {raw!r} is not a valid value")
        return s


@cache
def tunables() -> dict[str, Tunable]:
    """Every tunable, from configs/stacks/defaults.toml."""
    path = configs_dir() / "stacks" / "defaults.toml"
    with path.open("rb") as f:
        raw = tomllib.load(f)
    out: dict[str, Tunable] = {}
    for section, knobs in raw.items():
        for name, t in knobs.items():
            key = f"{section}.{name}"
            out[key] = Tunable(
                key,
                t["default"],
                t.get("doc", ""),
                t.get("min"),
                t.get("max"),
                tuple(t["choices"]) if "choices" in t else None,
                t.get("pattern"),
            )
    return out


def _flat(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """TOML reads an unquoted nginx.worker_connections = 2000 as a nested table: the same setting."""
    for k, v in table.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def parse_overrides(items: list[str] | tuple[str, ...] | dict[str, Any]) -> dict[str, Any]:
    """`--set k=v` items (or a TOML table) into typed values; all errors at once."""
    known = tunables()
    pairs: list[tuple[str, Any]] = []
    errors: list[str] = []
    if isinstance(items, dict):
        pairs = list(_flat(items))
    else:
        for item in items:
            if "=" not in item:
                errors.append(f"--set {item!r}: expected KEY=VALUE, e.g. prefork.MaxRequestWorkers=500")
                continue
            k, v = item.split("=", 1)
            pairs.append((k.strip(), v))
    out: dict[str, Any] = {}
    lower = {k.lower(): k for k in known}
    for k, v in pairs:
        key = known.get(k) and k or lower.get(k.lower())
        if key is None:
            near = [x for x in known if x.split(".")[-1].lower() == k.split(".")[-1].lower()]
            hint = f" (did you mean {', '.join(near)}?)" if near else "; see `loadcmp servers --tunables`"
            errors.append(f"unknown setting {k!r}{hint}")
            continue
        try:
            out[key] = known[key].parse(v)
        except ConfigError as e:
            errors.append(str(e))
    if errors:
        raise ConfigError(errors[0] if len(errors) == 1 else f"{len(errors)} bad settings: " + "; ".join(errors),
                          errors)
    return out


def effective_settings(stack: Stack, overrides: dict[str, Any]) -> dict[str, Any]:
    """The values in effect for a stack: defaults of its sections, then overrides."""
    vals = {k: t.default for k, t in tunables().items() if t.section in stack.sections}
    for k, v in overrides.items():
        if k in vals:
            vals[k] = v
    _check_consistency(stack, vals)
    return vals


def _check_consistency(stack: Stack, v: dict[str, Any]) -> None:
    """Catch combinations the servers would refuse or silently change."""
    errs: list[str] = []
    if "prefork" in stack.sections and v["prefork.MaxRequestWorkers"] > v["prefork.ServerLimit"]:
        errs.append(
            f"prefork.MaxRequestWorkers ({v['prefork.MaxRequestWorkers']}) exceeds prefork.ServerLimit "
            f"({v['prefork.ServerLimit']}); raise ServerLimit too"
        )
    for m in ("worker", "event"):
        if m in stack.sections:
            tpc, lim, sl, mrw = (v[f"{m}.{k}"]
                                 for k in ("ThreadsPerChild", "ThreadLimit", "ServerLimit", "MaxRequestWorkers"))
            if tpc > lim:
                errs.append(f"{m}.ThreadsPerChild ({tpc}) exceeds {m}.ThreadLimit ({lim})")
            if mrw > sl * tpc:
                errs.append(f"{m}.MaxRequestWorkers ({mrw}) exceeds ServerLimit x ThreadsPerChild ({sl * tpc})")
            if mrw % tpc:
                errs.append(f"{m}.MaxRequestWorkers ({mrw}) must be a multiple of ThreadsPerChild ({tpc})")
    if "fpm" in stack.sections and v["fpm.pm"] == "dynamic":
        lo, st, hi, mx = (v[f"fpm.{k}"]
                          for k in ("min_spare_servers", "start_servers", "max_spare_servers", "max_children"))
        if not lo <= st <= hi:
            errs.append(f"fpm: start_servers ({st}) must lie between min_spare_servers ({lo}) "
                        f"and max_spare_servers ({hi})")
        if hi > mx:
            errs.append(f"fpm: max_spare_servers ({hi}) exceeds max_children ({mx})")
    if errs:
        raise ConfigError(f"{stack.name}: " + "; ".join(errs), errs)


def status_paths(stack: Stack) -> dict[str, str]:
    """Status pages reachable through the front port: kind -> path."""
    out: dict[str, str] = {}
    front = stack.front
    if front.image == "nginx":
        out["nginx"] = "/nginx_status"
    if any(r.image == "apache" for r in stack.roles):
        out["apache"] = "/server-status?auto"
    if any(r.uses_fpm for r in stack.roles):
        out["fpm"] = "/fpm-status?json"
    return out

