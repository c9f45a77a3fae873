"""What a run is: a frozen RunSpec from CLI flags and/or an experiment TOML file.

`load_experiment` validates a file into a list of *all* its errors, each with
its line, the way k6 validates a config; CLI flags then override its values.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from ..lab import apps as lab_apps, dockerhost, ownconfig, stacks
from . import apps, variants
from ..errors import ConfigError, UsageError
from ..records import SpecDoc
from ..verdicts.findings import check_labels, parse_findings
from ..load.schedules import Schedule, make_schedule, time_cap
from ..units import MAX_COUNT, parse_cluster, parse_cpus, parse_duration, parse_levels, parse_memory_cap, parse_rate


@dataclass(frozen=True)
class RunSpec:
    """Everything a sweep needs; stored whole in run.json."""

    servers: tuple[str, ...] = ("nginx",)
    """Labels: a stack's name, or a variant's label (see `loadcmp.experiment.variants`)."""
    stacks: dict[str, str] = field(default_factory=dict)
    """The stack of each label; after `validate`, of every label in `servers`."""
    stack_dirs: tuple[str, ...] = ()
    """The user's stack folders (`--stacks`, `stacks = [...]` in a file), absolute: added to the catalog."""
    levels: tuple[int, ...] = (50,)
    duration: float = 30.0
    requests: int | None = None
    """-n: requests per trial (closed loop), then stop; `duration` is then the time limit."""
    warmup: float = 2.0
    page: str = "/info.php"
    pages: tuple[str, ...] = ()
    """Several pages in one run (each server x page is a variant); overrides `page`."""
    www: str | None = None
    """The user's own pages (`--www`), absolute, served read-only by every stack instead of the demo pages."""
    app: str | None = None
    """The application (`--app`, `configs/apps/<name>/`) its own pages run on, behind every stack (`apps`)."""
    configs: tuple[dict[str, Any], ...] = ()
    """The user's own config files (`--config`, [[configs]]): `ownconfig.OwnConfig.doc()`s, paths absolute."""
    trials: int = 1
    schedule: str = "closed"
    keepalive: tuple[bool, ...] = (False,)
    """One entry per variant; [true, false] runs every server both ways."""
    ramp_up: float | None = None
    pace: float | None = None
    rate: float | None = None
    max_inflight: int | None = None
    timeout: float = 10.0
    engine: str = "fast"
    workers: int = 1
    cluster: str | None = None
    """`local:N` or `tcp://HOST:PORT`: the load's shares on a Dask cluster (`load.cluster`)."""
    docker_host: str | None = None
    """Another machine's Docker engine for the stacks (`dockerhost`); None: this machine's."""
    server_address: str | None = None
    """Where the clients reach servers on `docker_host` (None: that host's address)."""
    tlsverify: bool = False
    """TLS to a tcp:// `docker_host`, its certificate verified (`dockerhost.tls_of`; DOCKER_TLS_VERIFY too)."""
    tlscacert: str | None = None
    tlscert: str | None = None
    tlskey: str | None = None
    """The CA, this client's certificate and key (paths: run.json keeps them, never what they hold)."""
    server_cpus: str | None = None
    client_cpus: str | None = None
    server_memory: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    """Tunables for every server whose stack has their section."""
    variant_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Tunables of one label, over `settings`."""
    reuse_server: bool = False
    findings: tuple[dict[str, str], ...] = ()
    """The write-up's claims (`claim`, `check`), judged on the results after the run."""
    name: str = ""
    description: str = ""
    out: str = "results"

    def to_dict(self) -> SpecDoc:
        """run.json's `spec`: every field, with tuples as the lists JSON gives back."""
        return cast(SpecDoc, {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()})

    def docker(self) -> dockerhost.DockerHost:
        """The engine the stacks run on, how it is reached and where its servers are (UsageError if the
        docker fields and the environment do not fit)."""
        return dockerhost.resolve(self.docker_host, self.server_address, tlsverify=self.tlsverify,
                                  tlscacert=self.tlscacert, tlscert=self.tlscert, tlskey=self.tlskey)

    def without_time_limit(self) -> RunSpec:
        """No time given: with -n, only the safety cap (`schedules.time_cap`, for the fewest clients) limits it."""
        if self.requests is None:
            return self
        return replace(self, duration=time_cap(self.requests, min(self.levels, default=1), self.timeout))

    def schedule_for(self, level: int) -> Schedule:
        """The schedule of one level (its `connections` bound the open files)."""
        return make_schedule(self.schedule, level, ramp_up=self.ramp_up, pace=self.pace, rate=self.rate,
                             max_inflight=self.max_inflight, requests=self.requests)

    def stack_of(self, label: str) -> str:
        """The stack a label runs."""
        return self.stacks.get(label) or stacks.get_stack(label).name

    def own_for(self, label: str) -> list[ownconfig.OwnConfig]:
        """The user's own files one label's roles run."""
        return [c for d in self.configs if (c := ownconfig.from_doc(d)).server == label]

    def settings_for(self, label: str) -> dict[str, Any]:
        """The overrides one label's server starts with."""
        return {**self.settings, **self.variant_settings.get(label, {})}

    @property
    def all_pages(self) -> tuple[str, ...]:
        return self.pages or (self.page,)

    def variants(self) -> list[tuple[str, bool, str]]:
        """(server, keepalive, page); labels only name what varies."""
        return [(s, ka, pg) for s in self.servers for ka in self.keepalive for pg in self.all_pages]

    def label(self, server: str, keepalive: bool, page: str | None = None) -> str:
        out = server
        if len(self.keepalive) > 1:
            out += f"/{'keepalive' if keepalive else 'close'}"
        if len(self.all_pages) > 1 and page:
            out += f" {page}"
        return out


KEYS: dict[str, str] = {
    "name": "str",
    "description": "str",
    "servers": "list[str]",
    "stacks": "list[str]",
    "clients": "levels",
    "time": "positive duration",
    "requests": "int",
    "warmup": "duration",
    "page": "str",
    "pages": "list[str]",
    "www": "str",
    "app": "str",
    "configs": "configs",
    "trials": "int",
    "schedule": "str",
    "keepalive": "bools",
    "ramp_up": "duration",
    "pace": "positive duration",
    "rate": "rate",
    "max_inflight": "int",
    "timeout": "positive duration",
    "engine": "str",
    "workers": "int",
    "cluster": "str",
    "docker_host": "str",
    "server_address": "str",
    "tlsverify": "bool",
    "tlscacert": "str",
    "tlscert": "str",
    "tlskey": "str",
    "server_cpus": "str",
    "client_cpus": "str",
    "server_memory": "memory cap",
    "reuse_server": "bool",
    "set": "table",
    "variants": "variants",
    "findings": "findings",
    "smoke": "table",
    "capacity": "table",
    "tune": "table",
}
"""The keys an experiment file may have, and their types."""

FIELD_OF = {"clients": "levels", "time": "duration", "set": "settings", "stacks": "stack_dirs"}


def _line_of(text: str, key: str) -> int | None:
    m = re.search(rf"^\s*(\[)?\s*{re.escape(key)}\s*(\]|=)", text, re.M)
    return text[: m.start()].count("\n") + 1 if m else None


def _where(path: Path, text: str, key: str) -> str:
    line = _line_of(text, key)
    return f"{path.name}:{line}" if line else path.name


def load_experiment(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Parse and check an experiment file; returns (RunSpec fields, extra tables)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise UsageError(f"cannot read experiment file {p}: {e.strerror}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p.name}: not valid TOML: {e}") from None
    errors: list[str] = []
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    dirs = raw.get("stacks")
    if isinstance(dirs, str):
        dirs = raw["stacks"] = [dirs]
    if isinstance(dirs, list) and all(isinstance(d, str) for d in dirs):
        # the file's own stacks first: its servers and variants may name them (paths are the file's)
        fields["stack_dirs"] = tuple(str((p.parent / d).expanduser().resolve()) for d in dirs)
        try:
            stacks.add_stack_dirs(fields["stack_dirs"])
        except (UsageError, ConfigError) as e:
            errors.extend(f"{_where(p, text, 'stacks')}: {m}" for m in getattr(e, "errors", [str(e)]))
    for key, value in raw.items():
        if key == "stacks" and "stack_dirs" in fields:
            continue
        where = _where(p, text, key)
        kind = KEYS.get(key)
        if kind is None:
            errors.append(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
            continue
        try:
            conv = _convert(key, kind, value)
        except (UsageError, ConfigError) as e:
            for m in getattr(e, "errors", [str(e)]):
                errors.append(_variant_error(p, text, m) if key == "variants" else f"{where}: {key}: {m}")
            continue
        if key == "www":
            fields["www"] = str((p.parent / conv).expanduser().resolve())  # a file's paths are its own
        elif key == "configs":
            fields["configs"] = ownconfig.from_tables(conv, p.parent)
        elif key in ("smoke", "capacity", "tune"):  # read by their commands (`loadcmp smoke`, `capacity`, `tune`)
            extra[key] = conv
        elif key == "variants":
            fields["stacks"] = {v.label: v.stack for v in conv.values()}
            fields["variant_settings"] = {v.label: dict(v.settings) for v in conv.values() if v.settings}
        else:
            fields[FIELD_OF.get(key, key)] = conv
    if "servers" in fields:
        for s in fields["servers"]:
            if s in (raw.get("variants") or {}) and s not in fields.get("stacks", {}):
                continue  # its [variants] table is wrong, and said so
            try:
                variants.resolve([s], fields.get("stacks", {}))
            except UsageError as e:
                errors.append(f"{_where(p, text, 'servers')}: {e}")
    elif "stacks" in fields:
        fields["servers"] = tuple(fields["stacks"])
    if errors:
        raise ConfigError(errors[0] if len(errors) == 1 else f"{p.name}: {len(errors)} errors", errors)
    fields.setdefault("name", p.stem)
    return fields, extra


def _variant_error(path: Path, text: str, message: str) -> str:
    """A `[variants.LABEL]: ...` message at the line of that table."""
    m = re.match(r"\[variants\.([^\]]+)\]", message)
    return f"{_where(path, text, m.group(0)[1:-1]) if m else path.name}: {message}"


def _convert(key: str, kind: str, v: Any) -> Any:
    def want(cond: bool, what: str) -> None:
        if not cond:
            raise ConfigError(f"expected {what}, got {type(v).__name__} {v!r}")

    if kind == "str":
        want(isinstance(v, str), "a string")
        return v
    if kind == "int":
        want(isinstance(v, int) and not isinstance(v, bool), "a whole number")
        if v < 1:
            raise ConfigError(f"must be >= 1, got {v}")
        if v > MAX_COUNT:
            raise ConfigError(f"must be at most {MAX_COUNT:,}, got {v}")
        return v
    if kind == "rate":
        want(isinstance(v, (str, int, float)) and not isinstance(v, bool), "requests per second, like 1000")
        return parse_rate(v, key)
    if kind == "bool":
        want(isinstance(v, bool), "true or false")
        return v
    if kind == "bools":
        if isinstance(v, bool):
            return (v,)
        want(isinstance(v, list) and bool(v) and all(isinstance(x, bool) for x in v), "true, false or a list of them")
        return tuple(dict.fromkeys(v))
    if kind == "list[str]":
        if isinstance(v, str):
            return (v,)
        want(isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of names")
        return tuple(v)
    if kind == "levels":
        want(isinstance(v, (int, list)) and not isinstance(v, bool), "a number or a list of numbers")
        return tuple(parse_levels(v if isinstance(v, int) else [x for x in v]))
    if kind in ("duration", "positive duration"):
        want(isinstance(v, (str, int, float)) and not isinstance(v, bool), "a duration like \"30s\"")
        return parse_duration(v, key, allow_zero=kind == "duration")
    if kind == "memory cap":
        want(isinstance(v, (str, int)) and not isinstance(v, bool), "a size like \"512m\"")
        return parse_memory_cap(v, key, here=False)  # the machine is known in `validate`
    if kind == "table":
        want(isinstance(v, dict), "a table")
        if key == "set":
            return stacks.parse_overrides({k: val for k, val in v.items()}, lab_apps.tunables())
        return v
    if kind == "variants":
        return variants.parse_variant_tables(v)
    if kind == "configs":
        want(isinstance(v, list) and all(isinstance(t, dict) for t in v), "[[configs]] tables")
        return v
    if kind == "findings":
        return tuple({"claim": f.claim, "check": f.check.text} for f in parse_findings(v))
    raise ConfigError(f"unknown type {kind}")  # pragma: no cover


def _result_labels(spec: RunSpec, servers: list[str]) -> list[str]:
    """The labels results of these servers carry (with the page or keep-alive when those vary)."""
    run = replace(spec, servers=tuple(dict.fromkeys(servers)))
    return list(dict.fromkeys(run.label(*v) for v in run.variants()))


def validate(spec: RunSpec) -> RunSpec:
    """Check a spec as a whole; all errors at once."""
    errors: list[str] = []

    def check(f: Any) -> None:
        try:
            f()
        except (UsageError, ConfigError) as e:
            errors.extend(getattr(e, "errors", [str(e)]))

    servers: list[variants.Variant] = []
    check(lambda: stacks.add_stack_dirs(spec.stack_dirs))

    def resolve() -> None:
        servers.extend(variants.resolve(spec.servers, spec.stacks))

    check(resolve)
    if not spec.servers:
        errors.append("no server given: use --server NAME (see `loadcmp servers`)")
    if not spec.levels:
        errors.append("no concurrency level given")
    if any(level < 1 for level in spec.levels):
        errors.append("clients must be >= 1")
    if spec.duration <= 0:
        errors.append("-t/--time must be positive")
    if spec.trials < 1:
        errors.append("--trials must be >= 1")
    for page in spec.all_pages:
        if not page.startswith("/"):
            errors.append(f"page {page!r} must start with /")
    page_problems = apps.page_errors(spec)
    errors += page_problems
    if spec.engine not in ("fast", "aiohttp"):
        errors.append(f"unknown engine {spec.engine!r}")
    if spec.workers < 1:
        errors.append("--workers must be >= 1")
    hosts: list[dockerhost.DockerHost] = []
    check(lambda: hosts.append(spec.docker()))
    if spec.cluster is not None:
        check(lambda: parse_cluster(spec.cluster or ""))
        if spec.workers > 1:
            errors.append("--workers is for processes on this machine; with --cluster the Dask workers share the load")

    def server_limits() -> None:
        parse_cpus(spec.server_cpus, here=False)
        if hosts:  # this machine's engine: its CPUs and memory; another's once it answers (`sweep.runner`)
            dockerhost.check_server_limits(hosts[0], spec.server_cpus, spec.server_memory)

    check(server_limits)
    check(lambda: parse_cpus(spec.client_cpus))
    for level in spec.levels[:1]:
        check(lambda level=level: spec.schedule_for(level))
    if servers:
        chosen = {v.label for v in servers}
        # a file's variant left out by --server is no error; a --set for a label nobody declared is
        own = {k: v for k, v in spec.variant_settings.items() if k in chosen or k not in spec.stacks}
        app_sections = tuple(dict.fromkeys(k.split(".")[0] for k in lab_apps.tunables(spec.app))) if spec.app else ()
        errors += variants.check_sets(servers, spec.settings, own, app_sections)
        known = _result_labels(spec, [v.label for v in servers])
        # a finding about a server declared but not chosen (a seed cut with --server) is judged
        # inconclusive after the run; one about a server that exists nowhere is a typo
        elsewhere = _result_labels(spec, [*spec.stacks, *stacks.catalog()])
        check(lambda: check_labels(parse_findings(list(spec.findings)), known, elsewhere))
    for v in servers:
        for page in spec.all_pages:  # with the app's settings where it runs
            overrides = spec.settings_for(v.label) if page_problems else apps.overrides_for(spec, v.label, page)
            try:
                stacks.effective_settings(stacks.get_stack(v.stack), overrides)
            except ConfigError as e:
                errors.extend(f"{v.label}: {m}" for m in e.errors if f"{v.label}: {m}" not in errors)
    errors += variants.own_config_errors([ownconfig.from_doc(d) for d in spec.configs],
                                         {v.label: v.stack for v in servers}, spec.variant_settings)
    if errors:
        raise ConfigError(errors[0] if len(errors) == 1 else f"{len(errors)} problems", errors)
    labels = tuple(v.label for v in servers)
    return replace(spec, servers=labels, stacks={v.label: v.stack for v in servers},
                   variant_settings={k: v for k, v in spec.variant_settings.items() if k in labels})
