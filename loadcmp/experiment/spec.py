"""What a run is: a frozen RunSpec from CLI flags and/or an experiment TOML file.

`load_experiment` validates a file into a list of *all* its errors, each with
its line, the way k6 validates a config; CLI flags then override its values.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, cast

from ..lab import apps as lab_apps, dockerhost, ownconfig, stacks
from ..lab.stacks import Catalog
from . import apps, journeys, protos as protocols, sources, variants
from .filekeys import FIELD_OF, KEYS, convert
from ..errors import ConfigError, Problems, UsageError, line_of
from ..records import SpecDoc
from ..verdicts.findings import check_labels, parse_findings
from ..load.schedules import Schedule, make_schedule, time_cap
from ..traffic.mix import MIX_LABEL, new_seed
from ..traffic.logreplay import ReplayPlan, load_plan, replay_schedule, replay_window
from ..units import parse_cluster, parse_cpus


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
    mix: dict[str, float] = field(default_factory=dict)
    """A weighted mix (`--mix`, `[mix]`): page -> weight, every trial's requests drawn by weight
    (`traffic.mix`) and each page recorded on its own; `page` is then its first page."""
    seed: int | None = None
    """The mix's draw (`--seed`, `seed = N`); a mix given without one gets one at random, stored with the run."""
    replay: str | None = None
    """An access log replayed (`--replay`, `replay = "FILE"`), absolute: its requests in its order at its own
    times (`traffic.logreplay`), each page recorded on its own; `page` is then its most sent answered page."""
    replay_speed: str = "1x"
    """`Nx`: the log's own timing divided by N, an open schedule; `max`: the closed loop's pace."""
    replay_methods: tuple[str, ...] = ("GET", "HEAD")
    """The methods a replay sends; the log's other requests are counted and left out."""
    log_format: str | None = None
    """The log's format (combined, common, json); None: told by its first lines."""
    www: str | None = None
    """The user's own pages (`--www`), absolute, served read-only by every stack instead of the demo pages."""
    app: str | None = None
    """The application (`--app`, `configs/apps/<name>/`) its own pages run on, behind every stack (`apps`)."""
    journey: str | None = None
    """--journey: the journeys each virtual user walks, as given (`reader=80,author=20`, a name, a file)."""
    journey_levels: dict[str, str] = field(default_factory=dict)
    """The mix at some levels (by level, `[journeys.levels]`), over `journey`."""
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
    tls: bool = False
    """--tls: every server serves https on its port, its certificate issued by the run's CA (`lab.certs`)."""
    tls_resume: float = 0.0
    """--tls-resume: the share of new connections that resume a TLS session (0: a full handshake each, as ab)."""
    variant_tls: dict[str, bool] = field(default_factory=dict)
    """A label's own `tls` (`[variants.LABEL] tls = ...`), over `tls`."""
    protos: tuple[str, ...] = ("h1",)
    """--proto: the protocols each label runs (`experiment.protos`); several: labels like `nginx[h2]`."""
    variant_protos: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """A label's own protocols (`[variants.LABEL] proto = ...`), over `protos`."""
    streams: int = 1
    """-m/--streams: requests in flight per connection on h2, h2c and h3 (h1: one)."""
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
        """No time given: with -n, only the safety cap (`schedules.time_cap`, for the fewest clients) limits it;
        a replay lasts as long as its log at its speed (`replay.replay_window`); at max it sends the log once."""
        if self.replay is not None:
            plan = self.replay_plan()
            whole = self.requests or (plan.sent if plan.dues is None else None)
            return replace(self, requests=whole,
                           duration=replay_window(plan, self.warmup, min(self.levels, default=1), self.timeout))
        if self.requests is None:
            return self
        return replace(self, duration=time_cap(self.requests, min(self.levels, default=1), self.timeout))

    def schedule_for(self, level: int) -> Schedule:
        """The schedule of one level (its `connections` bound the open files)."""
        if self.replay is not None:
            return replay_schedule(self.replay_plan(), level, self.max_inflight, self.requests)
        return make_schedule(self.schedule, level, ramp_up=self.ramp_up, pace=self.pace, rate=self.rate,
                             max_inflight=self.max_inflight, requests=self.requests)

    def replay_plan(self) -> ReplayPlan:
        """The replay's plan: the log read and planned once (UsageError for a log that cannot be replayed)."""
        assert self.replay is not None
        return load_plan(self.replay, self.log_format, self.replay_speed, self.replay_methods)

    def catalog(self) -> Catalog:
        """The stacks this spec sees: ours, LOADCMP_STACKS' and its own folders (`stack_dirs`), no other's."""
        return stacks.catalog(self.stack_dirs)

    def stack_of(self, label: str) -> str:
        """The stack a label runs."""
        return self.stacks.get(label) or self.catalog().get(label).name

    def own_for(self, label: str) -> list[ownconfig.OwnConfig]:
        """The user's own files one label's roles run."""
        return [c for d in self.configs if (c := ownconfig.from_doc(d)).server == label]

    def tls_for(self, label: str) -> bool:
        """Whether a label's server serves https."""
        return self.variant_tls.get(label, self.tls)

    def protos_for(self, label: str) -> tuple[str, ...]:
        """The protocols a label runs."""
        return self.variant_protos.get(label, self.protos)

    def streams_for(self, proto: str) -> int:
        """Requests in flight per connection on a protocol (HTTP/1.1: one)."""
        return 1 if proto == "h1" else self.streams

    def settings_for(self, label: str) -> dict[str, Any]:
        """The overrides one label's server starts with."""
        return {**self.settings, **self.variant_settings.get(label, {})}

    @property
    def all_pages(self) -> tuple[str, ...]:
        return self.pages or (self.page,)

    def variants(self) -> list[tuple[str, bool, str, str]]:
        """(server, keepalive, page, protocol); labels only name what varies."""
        return [(s, ka, pg, pr) for s in self.servers for pr in self.protos_for(s) for ka in self.keepalive
                for pg in self.all_pages]

    @property
    def several_protos(self) -> bool:
        """Whether the run loads more than one protocol (its labels then carry theirs: `nginx[h2]`)."""
        return len({pr for s in self.servers for pr in self.protos_for(s)}) > 1

    def label(self, server: str, keepalive: bool, page: str | None = None, proto: str = "h1") -> str:
        out = protocols.label_with(server, proto, self.several_protos)
        if len(self.keepalive) > 1:
            out += f"/{'keepalive' if keepalive else 'close'}"
        if len(self.all_pages) > 1 and page:
            out += f" {page}"
        return out


def _where(path: Path, text: str, key: str) -> str:
    line = line_of(text, key)
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
    return _FileReader(p, text, raw).read()


class _FileReader:
    """One experiment file read key by key into RunSpec fields, every problem noted with its line."""

    def __init__(self, path: Path, text: str, raw: dict[str, Any]) -> None:
        self.path, self.text, self.raw = path, text, raw
        self.problems = Problems()
        self.fields: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}
        self.catalog = stacks.catalog()

    def read(self) -> tuple[dict[str, Any], dict[str, Any]]:
        self._stacks()
        for key, value in self.raw.items():
            if key != "stacks" or "stack_dirs" not in self.fields:
                self._key(key, value)
        self._servers()
        self.problems.raise_if_any(summary=f"{self.path.name}: {{n}} errors")
        self.fields.setdefault("name", self.path.stem)
        return self.fields, self.extra

    def _stacks(self) -> None:
        """The file's own stacks first: its servers and variants may name them (paths are the file's)."""
        dirs = self.raw.get("stacks")
        if isinstance(dirs, str):
            dirs = self.raw["stacks"] = [dirs]
        if isinstance(dirs, list) and all(isinstance(d, str) for d in dirs):
            self.fields["stack_dirs"] = tuple(str((self.path.parent / d).expanduser().resolve()) for d in dirs)
            where = _where(self.path, self.text, "stacks")
            self.catalog = self.problems.attempt(lambda: stacks.catalog(self.fields["stack_dirs"]),
                                                 f"{where}: ") or self.catalog

    def _key(self, key: str, value: Any) -> None:
        where = _where(self.path, self.text, key)
        kind = KEYS.get(key)
        if kind is None:
            self.problems.add(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
            return
        try:
            conv = convert(key, kind, value, self.catalog)
        except UsageError as e:
            for m in e.messages:
                self.problems.add(_variant_error(self.path, self.text, m) if key == "variants" else
                                  f"{where}: {key}: {m}")
            return
        p, fields = self.path, self.fields
        if key in ("www", "replay"):
            fields[key] = str((p.parent / conv).expanduser().resolve())  # a file's paths are its own
        elif key == "configs":
            fields["configs"] = ownconfig.from_tables(conv, p.parent)
        elif key == "journeys":
            fields["journey"], fields["journey_levels"] = conv
        elif key in ("smoke", "capacity", "tune"):  # read by their commands (`loadcmp smoke`, `capacity`, `tune`)
            self.extra[key] = conv
        elif key == "variants":
            fields["stacks"] = {v.label: v.stack for v in conv.values()}
            fields["variant_settings"] = {v.label: dict(v.settings) for v in conv.values() if v.settings}
            fields["variant_tls"] = {v.label: v.tls for v in conv.values() if v.tls is not None}
            fields["variant_protos"] = {v.label: v.protos for v in conv.values() if v.protos}
        else:
            fields[FIELD_OF.get(key, key)] = conv

    def _servers(self) -> None:
        """Each server named is a stack, an alias or a variant's label; none named: the variants all run."""
        fields = self.fields
        if "servers" in fields:
            for s in fields["servers"]:
                if s in (self.raw.get("variants") or {}) and s not in fields.get("stacks", {}):
                    continue  # its [variants] table is wrong, and said so
                try:
                    variants.resolve([s], fields.get("stacks", {}), self.catalog)
                except UsageError as e:
                    self.problems.add(f"{_where(self.path, self.text, 'servers')}: {e}")
        elif "stacks" in fields:
            fields["servers"] = tuple(fields["stacks"])


def _variant_error(path: Path, text: str, message: str) -> str:
    """A `[variants.LABEL]: ...` message at the line of that table."""
    m = re.match(r"\[variants\.([^\]]+)\]", message)
    return f"{_where(path, text, m.group(0)[1:-1]) if m else path.name}: {message}"


def _result_labels(spec: RunSpec, servers: list[str]) -> list[str]:
    """The labels results of these servers carry (with the page or keep-alive when those vary)."""
    run = replace(spec, servers=tuple(dict.fromkeys(servers)))
    out = list(dict.fromkeys(run.label(*v) for v in run.variants()))
    # a mix's whole and each of its pages (`nginx[mix]`, `nginx[/?p=1042]`: `store.pagecells`)
    return out + [f"{label} {page}" for label in out for page in (MIX_LABEL, *spec.mix)] if spec.mix else out


def validate(spec: RunSpec) -> RunSpec:
    """Check a spec as a whole; all errors at once."""
    p = Problems()
    cat = p.attempt(spec.catalog) or stacks.catalog()
    servers = p.attempt(lambda: variants.resolve(spec.servers, spec.stacks, cat)) or []
    _check_numbers(p, spec)
    page_problems = apps.page_errors(spec)
    p.extend(page_problems)
    p.extend(journeys.journey_errors(spec))
    _check_machines(p, spec)
    if servers:
        chosen = {v.label for v in servers}
        # a file's variant left out by --server is no error; a --set for a label nobody declared is
        own = {k: v for k, v in spec.variant_settings.items() if k in chosen or k not in spec.stacks}
        app_sections = tuple(dict.fromkeys(k.split(".")[0] for k in lab_apps.tunables(spec.app))) if spec.app else ()
        p.extend(variants.check_sets(servers, spec.settings, own, cat, app_sections))
        known = _result_labels(spec, [v.label for v in servers])
        # a finding about a server declared but not chosen (a seed cut with --server) is judged
        # inconclusive after the run; one about a server that exists nowhere is a typo
        elsewhere = _result_labels(spec, [*spec.stacks, *cat.names()])
        p.attempt(lambda: check_labels(parse_findings(list(spec.findings)), known, elsewhere))
    for v in servers:
        for page in spec.all_pages:  # with the app's settings where it runs
            overrides = spec.settings_for(v.label) if page_problems else apps.overrides_for(spec, v.label, page)
            p.attempt(partial(cat.get(v.stack).effective, overrides), f"{v.label}: ")
    p.extend(variants.own_config_errors([ownconfig.from_doc(d) for d in spec.configs],
                                        {v.label: v.stack for v in servers}, spec.variant_settings, cat))
    p.extend(_tls_errors(spec, servers, cat))
    p.extend(protocols.proto_problems({v.label: v.stack for v in servers}, {v.label: spec.protos_for(v.label)
                                      for v in servers}, {v.label: spec.tls_for(v.label) for v in servers},
                                      spec.streams, cat))
    p.extend(protocols.engine_problems([x for v in servers for x in spec.protos_for(v.label)], spec.engine,
                                       spec.schedule))
    p.extend(sources.source_errors(spec))
    p.raise_if_any()
    labels = tuple(v.label for v in servers)
    seed = spec.seed if spec.seed is not None or not spec.mix else new_seed()  # stored: the run repeats its draw
    return replace(spec, servers=labels, seed=seed, stacks={v.label: v.stack for v in servers},
                   variant_settings={k: v for k, v in spec.variant_settings.items() if k in labels},
                   variant_tls={k: v for k, v in spec.variant_tls.items() if k in labels},
                   variant_protos={k: v for k, v in spec.variant_protos.items() if k in labels})


def _tls_errors(spec: RunSpec, servers: list[variants.Variant], cat: Catalog) -> list[str]:
    """The https problems of these labels (`render.tls_problems`): each label's own --tls and settings."""
    asked = [variants.TlsAsked(v.label, cat.get(v.stack), spec.tls_for(v.label),
                      tuple(spec.variant_settings.get(v.label, {}))) for v in servers]
    return variants.tls_problems(asked, spec.tls_resume, tuple(spec.settings))


def _check_numbers(p: Problems, spec: RunSpec) -> None:
    """Servers, levels, time, trials, pages, the engine and its workers given, and in range."""
    if not spec.servers:
        p.add("no server given: use --server NAME (see `loadcmp servers`)")
    if not spec.levels:
        p.add("no concurrency level given")
    if any(level < 1 for level in spec.levels):
        p.add("clients must be >= 1")
    if spec.duration <= 0:
        p.add("-t/--time must be positive")
    if spec.trials < 1:
        p.add("--trials must be >= 1")
    for page in spec.all_pages:
        if page.startswith("https://") and not spec.tls and not any(spec.variant_tls.values()):
            p.add(f"page {page!r}: a page is a path on the servers (/info.php); https is asked with --tls "
                  "(tls = true)")
        elif not page.startswith("/"):
            p.add(f"page {page!r} must start with /")
    if spec.engine not in ("fast", "aiohttp"):
        p.add(f"unknown engine {spec.engine!r}")
    if spec.workers < 1:
        p.add("--workers must be >= 1")
    for level in spec.levels[:1]:
        p.attempt(partial(spec.schedule_for, level))


def _check_machines(p: Problems, spec: RunSpec) -> None:
    """The engine the servers run on, the cluster the clients run on, and the CPUs and memory asked of them."""
    host = p.attempt(spec.docker)
    if spec.cluster is not None:
        p.attempt(lambda: parse_cluster(spec.cluster or ""))
        if spec.workers > 1:
            p.add("--workers is for processes on this machine; with --cluster the Dask workers share the load")

    def server_limits() -> None:
        parse_cpus(spec.server_cpus, here=False)
        if host is not None:  # this machine's engine: its CPUs and memory; another's once it answers (`sweep.runner`)
            dockerhost.check_server_limits(host, spec.server_cpus, spec.server_memory)

    p.attempt(server_limits)
    p.attempt(lambda: parse_cpus(spec.client_cpus))
