"""What differs between two runs' set-ups, read from their run.json alone.

`compare` lists these first and every change point names them (between the run before it
and the run at it), so both say the same thing in the same words. A value is compared as
its text (`_said`): 5 and "5" are one setting, as a user reads them. What was sent (the
workload a cell names: its traffic, and each label's protocol, streams and app) comes first,
in the cell's own words (`workload`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .folder import app_of, label_page, load, measured, protocol_of, streams_of, traffic_said
from .model import Difference, DifferenceKind

if TYPE_CHECKING:
    from ..records import TrialRecord

MACHINE_KEYS = ("cpu_model", "cores", "kernel")
"""The machine facts that change what a run can measure (its hostname or Python do not)."""

SPEC_KEYS = ("duration", "warmup", "schedule", "keepalive", "tls_resume", "timeout", "engine", "workers",
             "requests", "ramp_up", "pace", "rate", "max_inflight", "server_cpus", "client_cpus", "server_memory",
             "docker_host", "cluster", "reuse_server", "seed")
"""The spec keys that change what is measured (the levels, labels, pages and workloads are the cells themselves:
TLS is in a cell's protocol, `workload` says it). A mix's or journeys' seed draws another sequence of the same
workload: a difference of the set-up, never another cell (each run without `--seed` draws its own)."""

PORT_AT = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\]):(\d{2,5})\b")
"""A port written beside the loopback address in a rendered config (a back-end's, a front's)."""

LABEL_KEYS = ("stack", "cpus", "memory_bytes", "keepalive")
"""A label's own set-up keys in run.json's `servers` that change what it measures (its settings apart)."""


def _said(v: object) -> str | None:
    """A value as its text; None stays None (absent)."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True, default=str)


def _short(text: str) -> str:
    """A config file named by its content: the first 12 hex digits of its sha256 and its lines."""
    return f"{hashlib.sha256(text.encode()).hexdigest()[:12]} ({len(text.splitlines())} lines)"


def _pairs(kind: DifferenceKind, scope: str, a: Mapping[str, Any], b: Mapping[str, Any],
           keys: tuple[str, ...] | None = None) -> list[Difference]:
    """Each key whose value differs between `a` and `b` (absent on a side: None)."""
    out = []
    for key in keys if keys is not None else sorted({*a, *b}):
        before, after = _said(a.get(key)), _said(b.get(key))
        if before != after:
            out.append(Difference(kind, scope, key, before, after))
    return out


def ports_of(doc: Mapping[str, Any], label: str) -> set[str]:
    """The ports a run picked for `label`: its front's (the trials' URL) and every port its rendered configs
    write beside a loopback address. Each run picks free ones, so they say nothing of its set-up."""
    ports = {str(urllib.parse.urlsplit(str(t.get("result", {}).get("url") or "")).port or "")
             for t in doc.get("trials") or [] if t.get("server") == label}
    configs = ((doc.get("servers") or {}).get(label) or {}).get("configs") or {}
    for text in configs.values():
        ports.update(PORT_AT.findall(str(text)))
    return ports - {""}


def _masked(text: str | None, ports: set[str]) -> str | None:
    """A rendered config with its run's own ports written as PORT."""
    if text is None or not ports:
        return text
    return re.sub(r"\b(?:" + "|".join(sorted(map(re.escape, ports))) + r")\b", "PORT", text)


def _configs(scope: str, a: Mapping[str, str], b: Mapping[str, str],
             ports: tuple[set[str], set[str]] = (set(), set())) -> list[Difference]:
    """The rendered configs that differ once each run's own ports are masked (`ports_of`), each with a
    unified diff (A's file, then B's) of the masked texts: a port each run picked is no difference, so no hunk
    of the diff is one."""
    out = []
    for path in sorted({*a, *b}):
        before, after = a.get(path), b.get(path)
        masked = _masked(before, ports[0]), _masked(after, ports[1])
        if masked[0] == masked[1]:
            continue
        diff = "".join(difflib.unified_diff((masked[0] or "").splitlines(keepends=True),
                                            (masked[1] or "").splitlines(keepends=True),
                                            fromfile=f"a/{path}", tofile=f"b/{path}"))
        out.append(Difference("config", scope, path, None if before is None else _short(before),
                              None if after is None else _short(after), diff))
    return out


def _label(label: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None,
           ports: tuple[set[str], set[str]] = (set(), set()),
           pages: tuple[Any, Any] = (None, None)) -> list[Difference]:
    """One label's differences: present on one side only, or its settings, configs, versions, pages."""
    if a is None or b is None:
        side = a if a is not None else b or {}
        said = f"{side.get('stack') or label} (a label of this run only)"
        return [Difference("setting", label, "server", None if a is None else said, None if b is None else said)]
    out = _pairs("setting", label, a, b, LABEL_KEYS)
    out += _pairs("setting", label, a.get("settings") or {}, b.get("settings") or {})
    out += _configs(label, a.get("configs") or {}, b.get("configs") or {}, ports)
    out += _pairs("version", label, a.get("versions") or {}, b.get("versions") or {})
    out += _pairs("page", label, {"page": pages[0]}, {"page": pages[1]})  # a label's page, else the spec's
    return out


def _pages(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """The user's pages (--www) as their digest, and the run's pages."""
    www_a, www_b = a.get("www") or {}, b.get("www") or {}
    out = _pairs("page", "", {"www": www_a.get("sha256")}, {"www": www_b.get("sha256")})
    return out


def _sent(doc: Mapping[str, Any], label: str) -> dict[str, Any]:
    """What a label sent, as its cells name it: protocol (of its first measured trial), streams, app."""
    t = next((t for t in measured(doc) if t["server"] == label), cast("TrialRecord", {"server": label}))
    return {"protocol": protocol_of(t, doc), "streams": streams_of(doc, label, t), "app": app_of(doc, label) or None}


def workload(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """What was sent that differs: the traffic (in a cell's words; the keys themselves where the words agree,
    a replayed log of the same name elsewhere), then each label of both runs' protocol, streams and app."""
    from ..traffic.fits import traffic_of

    out = _pairs("workload", "", {"traffic": traffic_said(a) or None}, {"traffic": traffic_said(b) or None})
    if not out:  # (the seed is said with the spec's keys: another draw of the same workload)
        fields = [{k: v for k, v in traffic_of(d.get("spec") or {})[0].fields().items() if k != "seed"}
                  for d in (a, b)]
        out = _pairs("workload", "", fields[0], fields[1])
    servers_a, servers_b = a.get("servers") or {}, b.get("servers") or {}
    for label in [s for s in servers_a if s in servers_b]:
        out += _pairs("workload", label, _sent(a, label), _sent(b, label), ("protocol", "streams", "app"))
    return out


def differences_of(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """What differs from run.json `a` to run.json `b`: what was sent first (`workload`), then the run's (machine,
    loadcmp, pages, spec), then each label's, labels in A's order then B's own."""
    out = workload(a, b)
    out += _pairs("machine", "", a.get("machine") or {}, b.get("machine") or {}, MACHINE_KEYS)
    out += _pairs("loadcmp", "", a, b, ("loadcmp_version",))
    out += _pages(a, b)
    out += _pairs("spec", "", a.get("spec") or {}, b.get("spec") or {}, SPEC_KEYS)
    servers_a, servers_b = a.get("servers") or {}, b.get("servers") or {}
    for label in [*servers_a, *(s for s in servers_b if s not in servers_a)]:
        out += _label(label, servers_a.get(label), servers_b.get(label), (ports_of(a, label), ports_of(b, label)),
                      (label_page(a, label), label_page(b, label)))
    return out


def differences(a: Path, b: Path) -> list[Difference]:
    """What differs between the set-ups of the results folders `a` and `b` (a UsageError for a folder that is
    not one, or whose run.json cannot be read)."""
    return differences_of(load(a)[1], load(b)[1])
