"""What `--net SPEC` asks of the path: a round trip, its jitter, a rate each way, a loss (netem only), and
what carries it (`via`: Toxiproxy, or the kernel's netem).

SPEC is `rtt=80ms,jitter=10ms,rate=10mbit,rate-up=2mbit` (durations and bit rates in `loadcmp.units`'s
grammar), or the name of a profile: a TOML file in `configs/net/` with the same keys and its source; a profile's
name may be followed by keys (`dsl,via=netem`).
Everything a user can get wrong is a one-line UsageError here, before anything starts.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..lab.model import configs_dir
from ..protocols import get as get_protocol
from . import netem, toxiproxy
from ..units import parse_bitrate, parse_duration, parse_percent

KEYS = ("rtt", "jitter", "rate", "rate-up", "loss", "via")
"""The keys of a SPEC and of a profile's file."""


@dataclass(frozen=True)
class NetSpec:
    """The conditions asked of the path between the clients and the server."""

    text: str
    """As given (a profile's name, or the keys): what the report and a catalog cell name."""
    rtt_s: float = 0.0
    """The round trip added: half of it each way."""
    jitter_s: float = 0.0
    """The round trip's spread: half of it each way (Toxiproxy adds up to +-jitter to each chunk's delay)."""
    rate_bps: float | None = None
    """Downstream (server -> client) bits per second of each connection (Toxiproxy's bandwidth toxic has no limit
    shared by connections); None: no limit."""
    rate_up_bps: float | None = None
    """Upstream (client -> server) bits per second of each connection; None: no limit."""
    loss: float = 0.0
    """Packets lost, as a ratio: only netem drops packets (a TCP proxy cannot)."""
    via: str = "proxy"
    """What carries the conditions: `proxy` (Toxiproxy, per connection) or `netem` (the kernel's qdisc on the
    server's port: packet-level, shared by the connections, and the only one that loses packets)."""
    profile: str | None = None
    """The profile's name when one was named."""
    source: str | None = None
    """Where the profile's figures come from."""

    def describe(self) -> dict[str, float | str | None]:
        """The conditions asked, as run.json and `--json` keep them (ms and bits per second)."""
        return {"spec": self.text, "profile": self.profile, "rtt_ms": round(self.rtt_s * 1e3, 3),
                "jitter_ms": round(self.jitter_s * 1e3, 3), "rate_bps": self.rate_bps,
                "rate_up_bps": self.rate_up_bps, "loss": self.loss, "via": self.via}


def profiles_dir() -> Path:
    return configs_dir() / "net"


def profile_names() -> list[str]:
    """The profiles in `configs/net/`, sorted."""
    return sorted(p.stem for p in profiles_dir().glob("*.toml"))


def parse_net(text: str) -> NetSpec:
    """A SPEC or a profile's name, checked whole (UsageError, one line)."""
    s = text.strip()
    if not s:
        raise UsageError("--net: give a profile or keys like rtt=80ms,rate=10mbit")
    if "=" not in s:
        return _profile(s)
    first, _, rest = s.partition(",")
    if "=" not in first:  # a profile, then keys over its own: `dsl,via=netem`
        name, base, source = _profile_pairs(first.strip())
        return _of(s, {**base, **_pairs(rest, text)}, profile=name, source=source)
    return _of(s, _pairs(s, text))


def _pairs(s: str, text: str) -> dict[str, str]:
    """`key=value,...` checked: known keys, each once."""
    pairs: dict[str, str] = {}
    for item in s.split(","):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq or key not in KEYS:
            raise UsageError(f"--net: unknown key {key!r} in {text!r} (known: {', '.join(KEYS)}; "
                             f"or a profile: {', '.join(profile_names())})")
        if key in pairs:
            raise UsageError(f"--net: {key} given twice in {text!r}")
        pairs[key] = value.strip()
    return pairs


def _of(text: str, pairs: dict[str, str], profile: str | None = None, source: str | None = None) -> NetSpec:
    """The spec of checked keys (`what` names the value in a message)."""
    def dur(key: str) -> float:
        return parse_duration(pairs[key], f"--net {key}") if key in pairs else 0.0

    def rate(key: str) -> float | None:
        return parse_bitrate(pairs[key], f"--net {key}") if key in pairs else None

    loss = parse_percent(pairs["loss"], "--net loss") if "loss" in pairs else 0.0
    if not 0.0 <= loss <= 1.0:
        raise UsageError(f"bad --net loss {pairs['loss']!r}: must be from 0% to 100%")
    via = pairs.get("via", "netem" if loss else "proxy").lower()
    if via not in ("proxy", "netem"):
        raise UsageError(f"bad --net via {pairs['via']!r}: proxy (Toxiproxy, per connection) or netem (the kernel's)")
    if loss and via != "netem":
        raise UsageError("--net loss= drops packets, which only netem does: a TCP proxy loses nothing (via=netem, or "
                         "leave loss= out)")
    spec = NetSpec(text, dur("rtt"), dur("jitter"), rate("rate"), rate("rate-up"), loss, via, profile, source)
    if spec.jitter_s > spec.rtt_s:
        raise UsageError(f"--net jitter {pairs['jitter']} is more than the rtt ({pairs.get('rtt', '0')}): "
                         "a delay cannot go below zero")
    return spec


def _profile_pairs(name: str) -> tuple[str, dict[str, str], str | None]:
    """A profile of `configs/net/`: its name, its keys (checked as a SPEC's by `_of`), its source."""
    key = name.lower()
    path = profiles_dir() / f"{key}.toml"
    if key != Path(key).name or not path.is_file():
        raise UsageError(f"--net: unknown profile {name!r} (known: {', '.join(profile_names())}; "
                         "or keys like rtt=80ms,rate=10mbit)")
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"--net: profile {path} cannot be read: {e}") from None
    return key, {k: str(v) for k, v in doc.items() if k in KEYS}, str(doc.get("source", "")) or None


def _profile(name: str) -> NetSpec:
    key, pairs, source = _profile_pairs(name)
    return _of(key, pairs, profile=key, source=source)


def cluster_error(cluster: str | None) -> str | None:
    """Why `--net` cannot go with this `--cluster` (None: it can). The proxy listens on this machine's 127.0.0.1:
    `local:N`'s workers are here, a scheduler's (`tcp://`) may be anywhere, where 127.0.0.1 is their own."""
    if cluster is None or cluster.strip().startswith("local:"):
        return None
    return (f"--net takes no --cluster {cluster.strip()}: its proxy listens on this machine's 127.0.0.1, which "
            "workers on other machines do not reach (use --cluster local:N, or no cluster)")


def refuse(spec: NetSpec, proto: str, netem: str | None, cluster: str | None = None) -> None:
    """What no path can carry: UDP (the probe and Toxiproxy are TCP's), clients on a scheduler's workers
    (`cluster_error`), a proxy path without toxiproxy-server built, and the netem path (a loss) where the kernel
    has no netem (`netem`: why it is missing, None when the kernel has it)."""
    if (why := get_protocol(proto).net_error()) is not None:
        raise UsageError(why)
    if (why := cluster_error(cluster)) is not None:
        raise UsageError(why)
    if spec.via == "netem":
        if netem is not None:
            needs = "loss= needs" if spec.loss else "via=netem needs"
            raise UsageError(f"--net {needs} the kernel's netem, and {netem}")
    elif toxiproxy.binary() is None:
        raise UsageError(toxiproxy.MISSING)


def net_problems(labels: Mapping[str, tuple[str | None, tuple[str, ...]]], cluster: str | None = None) -> list[str]:
    """Each label's (net, protocols) checked whole, with the run's `--cluster`: the problems, each said once
    (`experiment.spec.validate`)."""
    out: list[str] = []
    for net, protos in labels.values():
        if net is None:
            continue
        try:
            spec = parse_net(net)
            for proto in protos:
                refuse(spec, proto, netem.missing() if spec.via == "netem" else None, cluster)
        except UsageError as e:
            out += [m for m in e.messages if m not in out]
    return out
