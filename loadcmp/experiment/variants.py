"""Server variants: the same stack more than once in one run, each under a label.

A run names its servers by label. A label is either a stack's own name
(`nginx`) or one the user chose for a stack with its own settings:

    --server nginx --server tuned=nginx --set tuned:nginx.worker_connections=20000

    [variants.tuned]
    stack = "nginx"
    set = { "nginx.worker_connections" = 20000 }

Each label runs https or not (`--tls`, `[variants.LABEL] tls`): `tls_problems` checks it for run specs and
`up` in one wording.

`--set KEY=VALUE` applies to every chosen server whose stack has KEY's section;
`--set LABEL:KEY=VALUE` to that label only. A setting that no chosen server can
take is refused before anything starts: silently ignoring it would run an
experiment other than the one asked for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from dataclasses import dataclass, field
from functools import partial

from ..lab import apps, ownconfig, render
from ..lab.model import TLS_PART, Stack
from ..lab.render import no_https
from ..lab.stacks import Catalog
from ..load.target import resume_share_error
from ..errors import ConfigError, LoadcmpError, Problems, UsageError
from ..trace.serverlogs import OWN_FILES, own_config_refusal
from .eventspec import from_toml
from .protos import parse_protos
from .tracing import OwnTrace, own_trace, traced
from ..units import Setting

LABEL_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
"""Labels appear in file names, tables and check expressions (`label:rps>100`)."""


@dataclass(frozen=True)
class Variant:
    """A labelled stack and the settings that are its own."""

    label: str
    stack: str
    settings: Mapping[str, Setting]
    tls: bool | None = None
    """`tls` of its table: https or not, over the run's; None: the run's."""
    protos: tuple[str, ...] = ()
    """`proto` of its table: the protocols it runs, over the run's; empty: the run's."""
    net: str | None = None
    """`net` of its table: the network between its clients and it (`loadcmp.net`), over the run's."""
    events: tuple[str, ...] = ()
    """`events` of its table: 'AT ACTION' fired in its trials beside the run's (`eventspec`)."""
    trace: OwnTrace = field(default_factory=dict)
    """`trace`, `trace_sample` of its table: whether its requests are traced and what share, over the run's."""


def _net_of(label: str, v: object) -> str | None:
    """A variant's `net`: a profile or keys, checked as --net's (`loadcmp.net.conditions`)."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise ConfigError(f"[variants.{label}].net must be a profile or keys, like \"dsl\" or \"rtt=80ms\"")
    from ..net.conditions import parse_net

    parse_net(v)
    return v


def check_label(label: str) -> None:
    """A label must be writable in a check and must not hide a different stack."""
    if not LABEL_RX.match(label) or label == "all":
        raise UsageError(f"bad server label {label!r}: use letters, digits, '.', '_' or '-' (at most 40), not 'all'")


def parse_server_items(items: Iterable[str], cat: Catalog) -> tuple[list[str], dict[str, str]]:
    """`--server` values (`STACK`, `LABEL=STACK`, `all`, comma lists) -> labels in
    order, and the stack (of `cat`) of each label given as LABEL=STACK."""
    labels: list[str] = []
    chosen: dict[str, str] = {}
    for item in items:
        for part in (p.strip() for p in item.split(",")):
            if not part:
                continue
            if "=" in part:
                label, name = (x.strip() for x in part.split("=", 1))
                check_label(label)
                stack = cat.get(name).name
                if chosen.get(label, stack) != stack:
                    raise UsageError(f"server label {label!r} is given twice, for {chosen[label]} and {stack}")
                chosen[label] = stack
                names = [label]
            else:
                names = [part]
            labels += [n for n in names if n not in labels]
    return labels, chosen


def split_sets(items: Iterable[str]) -> tuple[list[str], dict[str, list[str]]]:
    """`--set` values -> the ones for every server and those of one label (`LABEL:KEY=VALUE`)."""
    common: list[str] = []
    own: dict[str, list[str]] = {}
    for item in items:
        head = item.split("=", 1)[0]
        if ":" in head:
            label, rest = item.split(":", 1)
            own.setdefault(label.strip(), []).append(rest)
        else:
            common.append(item)
    return common, own


def parse_sets(items: Iterable[str], cat: Catalog) -> tuple[dict[str, Setting], dict[str, dict[str, Setting]]]:
    """`--set` values parsed and typed by the tunables of `cat`'s stacks and the apps'; all bad ones at once."""
    common, own = split_sets(items)
    p = Problems()
    out_own: dict[str, dict[str, Setting]] = {}
    out_common: dict[str, Setting] = {}
    extra = apps.tunables()
    for label, values in [("", common), *own.items()]:
        parsed = p.attempt(partial(cat.parse_overrides, values, extra), f"{label}: " if label else "")
        if parsed is None:
            continue
        if label:
            out_own[label] = parsed
        else:
            out_common = parsed
    p.raise_if_any(summary="{n} bad settings")
    return out_common, out_own


def parse_variant_tables(raw: object, cat: Catalog) -> dict[str, Variant]:
    """An experiment file's `[variants.LABEL]` tables (`stack` of `cat`, optional `set`)."""
    if not isinstance(raw, dict):
        raise ConfigError("expected tables like [variants.tuned] with stack = \"nginx\"")
    p = Problems()
    out: dict[str, Variant] = {}
    for label, table in raw.items():
        try:
            check_label(label)
            if not isinstance(table, dict):
                raise ConfigError(f"[variants.{label}] must be a table with stack = \"...\"")
            extra = set(table) - {"stack", "set", "tls", "proto", "net", "events", "trace", "trace_sample"}
            if extra:
                raise ConfigError(f"[variants.{label}]: unknown key(s) {', '.join(sorted(extra))} "
                                  "(known: stack, set, tls, proto, net, events, trace, trace_sample)")
            net = _net_of(label, table.get("net"))
            if not isinstance(table.get("tls", False), bool):
                raise ConfigError(f"[variants.{label}].tls must be true or false")
            if not isinstance(table.get("stack"), str):
                raise ConfigError(f"[variants.{label}] needs stack = \"NAME\" (see `loadcmp servers`)")
            stack = cat.get(table["stack"]).name
            sets = table.get("set", {})
            if not isinstance(sets, dict):
                raise ConfigError(f"[variants.{label}].set must be a table of settings")
            protos = parse_protos(table["proto"]) if "proto" in table else ()
            events = from_toml(table["events"], f"[variants.{label}].events") if "events" in table else ()
            out[label] = Variant(label, stack, cat.parse_overrides(sets, apps.tunables()), table.get("tls"), protos,
                                 net, events, own_trace(label, table))
        except UsageError as e:
            p.extend(m if m.startswith("[variants.") else f"[variants.{label}]: {m}" for m in e.messages)
    p.raise_if_any(summary="{n} bad variants")
    return out


def resolve(names: Iterable[str], chosen: Mapping[str, str], cat: Catalog) -> list[Variant]:
    """The run's servers: each name a label of `chosen`, a stack of `cat` (or alias), or `all`."""
    out: dict[str, Variant] = {}
    for name in names:
        if name in chosen:
            found = [Variant(name, chosen[name], {})]
        elif name == "all":
            found = [Variant(s, s, {}) for s in cat.names()]
        else:
            stack = cat.get(name).name
            found = [Variant(stack, stack, {})]
        for v in found:
            named = v.label in cat or v.label in cat.aliases()
            if named and v.stack != cat.get(v.label).name:
                raise UsageError(f"label {v.label!r} is a stack's name; it cannot stand for {v.stack}")
            out.setdefault(v.label, v)
    return list(out.values())


def check_sets(servers: list[Variant], common: Mapping[str, Setting], own: Mapping[str, Mapping[str, Setting]],
               cat: Catalog, app_sections: tuple[str, ...] = ()) -> list[str]:
    """What a `--set` asks of servers that cannot take it, in words (empty: all fine); `app_sections`: what
    the run's app adds to every server (its database's)."""
    sections = {v.label: (*cat.get(v.stack).sections, *app_sections) for v in servers}
    names = ", ".join(f"{v.label} ({v.stack})" if v.label != v.stack else v.label for v in servers)
    errors = []
    for key in common:
        section = key.split(".", 1)[0]
        if not any(section in s for s in sections.values()):
            errors.append(f"setting {key}: none of the chosen servers has [{section}] settings (chosen: {names})")
    for label, values in own.items():
        if label not in sections:
            errors.append(f"setting {label}:{next(iter(values), '')}: no server is labelled {label!r} "
                          f"(chosen: {names})")
            continue
        for key in values:
            section = key.split(".", 1)[0]
            if section not in sections[label]:
                errors.append(f"setting {label}:{key}: {label} has no [{section}] settings")
    return errors


def own_config_errors(configs: list[ownconfig.OwnConfig], chosen: Mapping[str, str],
                      label_settings: Mapping[str, Mapping[str, Setting]], cat: Catalog) -> list[str]:
    """--config: its label is a chosen server (label -> stack), its role and file are there, its port is
    known, and no --set of that label reaches into a file that is the user's."""
    errors = [f"--config {c.server}:{c.role}: {c.server!r} is not a chosen server ({', '.join(chosen) or 'none'}; "
              "--server LABEL=STACK runs a stack under a label)" for c in configs if c.server not in chosen]
    for label, name in chosen.items():
        own, stack = [c for c in configs if c.server == label], cat.get(name)
        problems = ownconfig.check(stack, own)
        if own and not problems:
            try:
                ownconfig.front_port(stack, own)
            except UsageError as e:
                problems.append(str(e))
            gone = render.owned_sections(stack, own)
            problems += [f"--set {label}:{k}: {label} runs your own file for its {k.split('.')[0]} settings; set it "
                         "there" for k in label_settings.get(label, {}) if k.split(".")[0] in gone]
        errors += problems
    return errors


@dataclass(frozen=True)
class TlsAsked:
    """What a command asks of one server label about https: whether it runs it, and its own `tls.*` settings."""

    label: str
    stack: Stack
    https: bool
    own_settings: tuple[str, ...] = ()
    """The `tls.*` settings given to this label alone (a variant's); said as `label:key`."""


def tls_problems(servers: Sequence[TlsAsked], resume: float, settings: Sequence[str] = (),
                 resumed_by: str | None = None) -> list[str]:
    """Every https problem of a run or `up`, in one wording: --tls of a stack that cannot serve https, a share
    to resume outside 0..1, a share to resume where the traffic's engine resumes none (`resumed_by`: its flag,
    `--journey`; with or without --tls, so no "add --tls" there), and `tls.*` settings (`settings`: given to
    every label) or a share to resume where no server runs https."""
    p = Problems()
    if resume and resumed_by is not None:
        p.add(f"--tls-resume {resume:g}: {resumed_by}'s users keep their own connections and resume no TLS session; "
              f"drop --tls-resume")
        resume = 0.0
    for s in servers:
        if s.https and not s.stack.serves_https:
            p.add(no_https(s.stack) if s.label == s.stack.name else f"{s.label}: {no_https(s.stack)}")
    if (wrong := resume_share_error(resume)) is not None:
        p.add(wrong)
    if servers and not any(s.https for s in servers):
        p.extend(f"setting {k}: no server runs https; add --tls (tls = true)" for k in settings
                 if k.split(".", 1)[0] == TLS_PART)
        if resume:
            p.add(f"--tls-resume {resume:g}: no server runs https; add --tls (tls = true)")
    for s in servers:
        if not s.https:
            p.extend(f"setting {s.label}:{k}: {s.label} does not run https; add --tls (or tls = true in "
                     f"[variants.{s.label}])" for k in s.own_settings if k.split(".", 1)[0] == TLS_PART)
    return p.messages



def trace_config_errors(spec: Any) -> list[str]:
    """--trace with a user's own config: each file of a program that keeps a trace log writes it, or the line
    to add is said. Nothing when the servers do not resolve (`validate` says why)."""
    if not spec.configs or not any(traced(spec, own.server) for own in map(ownconfig.from_doc, spec.configs)):
        return []
    try:
        cat = spec.catalog()
        chosen = {v.label: v.stack for v in resolve(spec.servers, spec.stacks, cat)}
    except LoadcmpError:
        return []
    out = []
    for own in (ownconfig.from_doc(d) for d in spec.configs):
        if not traced(spec, own.server):
            continue
        try:
            role = ownconfig.role_of(cat.get(chosen[own.server]), own)
            text = ownconfig.read_text(own)
        except (LoadcmpError, KeyError):
            continue  # said by own_config_errors
        program = OWN_FILES.get(ownconfig.target(role, own))
        if program and (why := own_config_refusal(program, text)):
            out.append(f"--trace: {own.file} ({own.server}:{own.role}): {why}")
    return out
