"""The protocols a run loads (`--proto h1,h2`, `proto = [...]`) and the streams per connection (`-m/--streams`).

The protocol is a dimension like the server label: each label runs once per protocol asked, and when a run asks
for more than one its results are labelled `nginx[h2]`. What a stack speaks is its data (`protocols` in its
stack.toml, `lab.model.PROTOCOLS`); h2 and h3 run over TLS only, h2c on the plain port by prior knowledge. A
protocol a label cannot speak is refused before anything starts, in one line naming the stacks that do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError, Problems, UsageError
from ..lab.model import OVER_TLS, PROTOCOLS
from ..lab.stacks import Catalog
from ..load import engines

NAMES = {"h1": "HTTP/1.1", "h2": "h2 (HTTP/2 over TLS)", "h2c": "h2c (cleartext HTTP/2)", "h3": "h3 (HTTP/3)"}
"""Each protocol in words."""


def parse_protos(value: str | Sequence[Any]) -> tuple[str, ...]:
    """`h1,h2` (a flag) or `["h1", "h2"]` / `"h2"` (a file) -> the protocols in order; UsageError for
    one that is not a protocol, or one given twice."""
    items = value.split(",") if isinstance(value, str) else list(value)
    if not all(isinstance(x, str) for x in items):
        raise ConfigError(f"expected a protocol or a list of them ({', '.join(PROTOCOLS)}), got {value!r}")
    given = [x.strip().lower() for x in items if x.strip()]
    out = tuple(dict.fromkeys(given))
    bad = [x for x in out if x not in PROTOCOLS]
    if bad or not out:
        raise UsageError(f"unknown protocol {', '.join(bad) or repr(value)} (known: {', '.join(PROTOCOLS)})")
    twice = next((x for x in out if given.count(x) > 1), None)
    if twice:
        raise UsageError(f"protocol {twice} is given twice: give each protocol once (--trials N repeats them)")
    return out


def label_with(server: str, proto: str, several: bool) -> str:
    """A result's label: the server's, with its protocol in brackets when the run asks for several."""
    return f"{server}[{proto}]" if several else server


def proto_problems(labels: Mapping[str, str], protos_of: Mapping[str, tuple[str, ...]],
                   tls_of: Mapping[str, bool], streams: int, cat: Catalog) -> list[str]:
    """Every protocol problem of a run or `up`, in one wording: a protocol a label's stack does not speak
    (naming the stacks that do), h2 or h3 without --tls, h2c with it, and -m/--streams out of range or
    asked of HTTP/1.1 alone. `labels`: label -> stack; `protos_of`: label -> its protocols."""
    p = Problems()
    if streams < 1:
        p.add(f"-m/--streams must be >= 1, got {streams}")
    for label, stack_name in labels.items():
        stack = cat.get(stack_name)
        for proto in protos_of.get(label, ("h1",)):
            who = label if label == stack.name else f"{label} ({stack.name})"
            if proto not in stack.protocols:
                p.add(f"--proto {proto}: {who} does not speak {NAMES[proto]}; "
                      f"{_speakers(proto, cat)}")
            elif proto in OVER_TLS and not tls_of.get(label, False):
                p.add(f"--proto {proto}: {NAMES[proto]} runs over TLS only; add --tls (tls = true) for {label}")
            elif proto == "h2c" and tls_of.get(label, False):
                p.add(f"--proto h2c: h2c is HTTP/2 on a plain port; {label} runs --tls (use --proto h2 there)")
    every = {x for v in protos_of.values() for x in v}
    if streams > 1 and every <= {"h1"}:
        p.add(f"-m/--streams {streams}: HTTP/1.1 has one request in flight per connection; streams are for "
              "--proto h2, h2c or h3")
    return p.messages


def engine_problems(protos: Iterable[str], engine: str, schedule: str) -> list[str]:
    """Each protocol asked that the engine or the schedule does not run, in the protocol table's words
    (`load.engines.problem`, the registry `make_engine` reads): said before anything starts. An engine no one
    registered is said once, by the spec's own check."""
    if engines.unknown_engine(engine) is not None:
        return []
    return [err for x in dict.fromkeys(protos) if (err := engines.problem(x, engine, schedule)) is not None]


def _speakers(proto: str, stacks: Iterable[Any]) -> str:
    """The stacks that speak a protocol, in words."""
    names = [s.name for s in stacks if proto in s.protocols]
    return f"the stacks that do: {', '.join(names)}" if names else "no stack does"
