"""What a run is: a frozen RunSpec from CLI flags and/or an experiment TOML file.

`load_experiment` validates a file into a list of *all* its errors, each with
its line, the way k6 validates a config; CLI flags then override its values.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, cast

from ..lab import apps as lab_apps, dockerhost, ownconfig, stacks
from ..lab.stacks import Catalog
from . import apps, eventspec, protos as protocols, sources, tracing, variants
from .filekeys import FIELD_OF, KEYS, convert, variant_error, where_in
from ..net.conditions import net_problems
from ..errors import ConfigError, Problems, UsageError
from ..protocols import get as get_protocol
from ..records import SpecDoc
from ..verdicts.findings import check_labels, parse_findings
from ..load import engines
from ..load.pacing import pacing_problems
from ..load.schedules import Schedule, make_schedule, time_cap
from ..traffic.fits import Beside, traffic_of
from ..traffic.source import DEFAULTS, OnePage, Traffic
from ..units import Setting, TomlValue, parse_cluster, parse_cpus
from ..protocols import DEFAULT as DEFAULT_PROTO


@dataclass(frozen=True)
class RunSpec(tracing.TraceSpec):
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
    traffic: Traffic = field(default_factory=OnePage)
    """What is sent (`traffic.source`): one page, a weighted mix (`--mix`, `[mix]`; `page` is then its first
    page), an access log replayed (`--replay`; `page` is then its most sent answered page) or journeys
    (`--journey`, `[journeys]`). run.json keeps it as its flat keys (`mix`, `seed`, `replay`, ...)."""
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
    """`local:N` or `tcp://HOST:PORT`: the load's shares on a Dask cluster (`load.run.cluster`)."""
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
    net: str | None = None
    """--net: the network between the clients and every server (`loadcmp.net`: a profile or keys); None: loopback."""
    variant_net: dict[str, str] = field(default_factory=dict)
    """A label's own `net` (`[variants.LABEL] net = ...`), over `net`."""
    think: str | None = None
    send_rate: str | None = None
    read_rate: str | None = None
    """--think, --send-rate, --read-rate: how each client behaves (`load.pacing`); None: as fast as it can."""
    server_memory: int | None = None
    settings: dict[str, Setting] = field(default_factory=dict)
    """Tunables for every server whose stack has their section."""
    variant_settings: dict[str, dict[str, Setting]] = field(default_factory=dict)
    """Tunables of one label, over `settings`."""
    reuse_server: bool = False
    tls: bool = False
    """--tls: every server serves https on its port, its certificate issued by the run's CA (`lab.certs`)."""
    tls_resume: float = 0.0
    """--tls-resume: the share of new connections that resume a TLS session (0: a full handshake each, as ab)."""
    variant_tls: dict[str, bool] = field(default_factory=dict)
    """A label's own `tls` (`[variants.LABEL] tls = ...`), over `tls`."""
    protos: tuple[str, ...] = (DEFAULT_PROTO,)
    """--proto: the protocols each label runs (`experiment.protos`); several: labels like `nginx[h2]`."""
    variant_protos: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """A label's own protocols (`[variants.LABEL] proto = ...`), over `protos`."""
    streams: int = 1
    """-m/--streams: requests in flight per connection on h2, h2c and h3 (h1: one)."""
    findings: tuple[dict[str, str], ...] = ()
    """The write-up's claims (`claim`, `check`), judged on the results after the run."""
    events: tuple[str, ...] = ()
    """--event, [[events]]: 'AT ACTION' fired in every trial's window, 'LABEL: AT ACTION' in a label's (`eventspec`)."""
    name: str = ""
    description: str = ""
    out: str = "results"

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> RunSpec:
        """The spec of flat fields (a file's keys, run.json's `spec`): the traffic's keys made one value
        (`traffic.fits.traffic_of`; what they say against each other is `validate`'s, given by `flags.spec_of`)."""
        return cls(**{k: v for k, v in fields.items() if k not in DEFAULTS}, traffic=traffic_of(fields)[0])

    def to_dict(self) -> SpecDoc:
        """run.json's `spec`: every field, with tuples as the lists JSON gives back; the traffic as its flat keys."""
        flat = {k: v for k, v in asdict(self).items() if k != "traffic"} | self.traffic.fields()
        return cast(SpecDoc, {k: list(v) if isinstance(v, tuple) else v for k, v in flat.items()})

    def docker(self) -> dockerhost.DockerHost:
        """The engine the stacks run on, how it is reached and where its servers are (UsageError if the
        docker fields and the environment do not fit)."""
        return dockerhost.resolve(self.docker_host, self.server_address, tlsverify=self.tlsverify,
                                  tlscacert=self.tlscacert, tlscert=self.tlscert, tlskey=self.tlskey)

    def without_time_limit(self) -> RunSpec:
        """No time given: with -n, only the safety cap (`schedules.time_cap`, for the fewest clients) limits it;
        a traffic source that sets its own window sets it (a replay: `ReplayTraffic.window`)."""
        fewest = min(self.levels, default=1)
        if (own := self.traffic.window(self.warmup, fewest, self.timeout, self.requests)) is not None:
            return replace(self, requests=own[0], duration=own[1])
        if self.requests is None:
            return self
        return replace(self, duration=time_cap(self.requests, fewest, self.timeout))

    def schedule_for(self, level: int) -> Schedule:
        """The schedule of one level (its `connections` bound the open files)."""
        if (own := self.traffic.schedule(level, self.max_inflight, self.requests)) is not None:
            return own  # a replay's: the log's own times, or the closed loop at max
        return make_schedule(self.schedule, level, ramp_up=self.ramp_up, pace=self.pace, rate=self.rate,
                             max_inflight=self.max_inflight, requests=self.requests)

    def fit(self) -> Beside:
        """What the rest of the run chose, which its traffic must fit (`traffic.fits`)."""
        protos = tuple(dict.fromkeys([*self.protos, *(x for v in self.variant_protos.values() for x in v)]))
        return Beside(protos, self.schedule, self.requests, self.rate, self.ramp_up, self.pace, self.page, self.pages,
                   self.warmup, self.app)

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

    def net_for(self, label: str) -> str | None:
        """The network between a label's clients and its server (None: loopback)."""
        return self.variant_net.get(label, self.net)

    def streams_for(self, proto: str) -> int:
        """Requests in flight per connection on a protocol (one where it does not multiplex: HTTP/1.1)."""
        return self.streams if get_protocol(proto).multiplexed else 1

    def settings_for(self, label: str) -> dict[str, Setting]:
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

    def label(self, server: str, keepalive: bool, page: str | None = None, proto: str = DEFAULT_PROTO) -> str:
        out = protocols.label_with(server, proto, self.several_protos)
        if len(self.keepalive) > 1:
            out += f"/{'keepalive' if keepalive else 'close'}"
        if len(self.all_pages) > 1 and page:
            out += f" {page}"
        return out


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
        if own := self.extra.pop("variant_events", ()):  # beside the file's [[events]], wherever those are
            self.fields["events"] = (*self.fields.get("events", ()), *own)
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
            where = where_in(self.path, self.text, "stacks")
            self.catalog = self.problems.attempt(lambda: stacks.catalog(self.fields["stack_dirs"]),
                                                 f"{where}: ") or self.catalog

    def _key(self, key: str, value: TomlValue) -> None:
        where = where_in(self.path, self.text, key)
        kind = KEYS.get(key)
        if kind is None:
            self.problems.add(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
            return
        try:
            conv = convert(key, kind, value, self.catalog)
        except UsageError as e:
            for m in e.messages:
                self.problems.add(variant_error(self.path, self.text, m) if key == "variants" else
                                  f"{where}: {key}: {m}")
            return
        p, fields = self.path, self.fields
        if kind == "path":
            fields[key] = str((p.parent / conv).expanduser().resolve())  # a file's paths are its own
        elif key == "configs":
            fields["configs"] = ownconfig.from_tables(conv, p.parent)
        elif kind == "fields":  # a table that sets several keys (`[journeys]`)
            fields.update(conv)
        elif key in ("smoke", "capacity", "tune"):  # read by their commands (`loadcmp smoke`, `capacity`, `tune`)
            self.extra[key] = conv
        elif key == "variants":
            fields["stacks"] = {v.label: v.stack for v in conv.values()}
            fields["variant_settings"] = {v.label: dict(v.settings) for v in conv.values() if v.settings}
            fields["variant_tls"] = {v.label: v.tls for v in conv.values() if v.tls is not None}
            fields["variant_protos"] = {v.label: v.protos for v in conv.values() if v.protos}
            fields["variant_net"] = {v.label: v.net for v in conv.values() if v.net}
            fields["variant_trace"] = {v.label: v.trace for v in conv.values() if v.trace}
            self.extra["variant_events"] = eventspec.of_variants(conv.values())
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
                    self.problems.add(f"{where_in(self.path, self.text, 'servers')}: {e}")
        elif "stacks" in fields:
            fields["servers"] = tuple(fields["stacks"])


def _result_labels(spec: RunSpec, servers: list[str]) -> list[str]:
    """The labels results of these servers carry (with the page or keep-alive when those vary)."""
    run = replace(spec, servers=tuple(dict.fromkeys(servers)))
    out = list(dict.fromkeys(run.label(*v) for v in run.variants()))
    return out + spec.traffic.labels(out)


def validate(spec: RunSpec, said: Iterable[str] = ()) -> RunSpec:
    """Check a spec as a whole; all errors at once (`said`: those found making it, `fits.traffic_of`'s)."""
    p = Problems()
    cat = p.attempt(spec.catalog) or stacks.catalog()
    servers = p.attempt(lambda: variants.resolve(spec.servers, spec.stacks, cat)) or []
    _check_numbers(p, spec)
    page_problems = apps.page_errors(spec)
    p.extend(page_problems)
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
    p.extend(pacing_problems(spec.think, spec.send_rate, spec.read_rate, spec.schedule, spec.engine,
                             {x for v in servers for x in spec.protos_for(v.label)}, spec.traffic))
    p.extend(net_problems({v.label: (spec.net_for(v.label), spec.protos_for(v.label)) for v in servers}, spec.cluster))
    if spec.events and not page_problems:  # each label's events against its stack as it runs each page
        p.extend(eventspec.problems(spec, servers, cat, p.attempt(lambda: apps.app_of(spec))))
    p.extend(said)
    p.extend(sources.source_errors(spec.traffic, spec.fit()))
    p.raise_if_any()
    labels = tuple(v.label for v in servers)
    # a draw fixed now is stored: the run repeats it
    return replace(spec, servers=labels, traffic=spec.traffic.drawn(), stacks={v.label: v.stack for v in servers},
                   events=eventspec.kept(spec.events, labels),
                   variant_settings={k: v for k, v in spec.variant_settings.items() if k in labels},
                   variant_tls={k: v for k, v in spec.variant_tls.items() if k in labels},
                   variant_protos={k: v for k, v in spec.variant_protos.items() if k in labels},
                   variant_net={k: v for k, v in spec.variant_net.items() if k in labels},
                   variant_trace={k: v for k, v in spec.variant_trace.items() if k in labels})


def _tls_errors(spec: RunSpec, servers: list[variants.Variant], cat: Catalog) -> list[str]:
    """The https problems of these labels (`render.tls_problems`): each label's own --tls and settings."""
    asked = [variants.TlsAsked(v.label, cat.get(v.stack), spec.tls_for(v.label),
                      tuple(spec.variant_settings.get(v.label, {}))) for v in servers]
    return variants.tls_problems(asked, spec.tls_resume, tuple(spec.settings),
                                 None if spec.traffic.resumes_tls else spec.traffic.flag)


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
    if (unknown := engines.unknown_engine(spec.engine)) is not None:
        p.add(unknown)
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
