"""The protocols a run loads (`--proto h1,h2`, `proto = [...]`) and the streams per connection (`-m/--streams`).

The protocol is a dimension like the server label: each label runs once per protocol asked, and when a run asks
for more than one its results are labelled `nginx[h2]`. What a stack speaks is its data (`protocols` in its
stack.toml); what each protocol needs (TLS or none, streams) and each refusal's wording are its row in
`loadcmp.protocols`. A protocol a label cannot speak is refused before anything starts, in one line naming the
stacks that do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .. import protocols
from ..errors import ConfigError, Problems, UsageError
from ..lab.stacks import Catalog
from ..load import engines


def parse_protos(value: str | Sequence[Any]) -> tuple[str, ...]:
    """`h1,h2` (a flag) or `["h1", "h2"]` / `"h2"` (a file) -> the protocols in order; UsageError for
    one that is not a protocol, or one given twice."""
    items = value.split(",") if isinstance(value, str) else list(value)
    if not all(isinstance(x, str) for x in items):
        raise ConfigError(f"expected a protocol or a list of them ({', '.join(protocols.names())}), got {value!r}")
    given = [x.strip().lower() for x in items if x.strip()]
    out = tuple(dict.fromkeys(given))
    if (wrong := protocols.unknown_error(out or [repr(value)])) is not None:
        raise UsageError(wrong)
    twice = next((x for x in out if given.count(x) > 1), None)
    if twice:
        raise UsageError(f"protocol {twice} is given twice: give each protocol once (--trials N repeats them)")
    return out


def label_with(server: str, proto: str, several: bool) -> str:
    """A result's label: the server's, with its protocol in brackets when the run asks for several."""
    return f"{server}[{proto}]" if several else server


def proto_problems(labels: Mapping[str, str], protos_of: Mapping[str, tuple[str, ...]],
                   tls_of: Mapping[str, bool], streams: int, cat: Catalog) -> list[str]:
    """Every protocol problem of a run or `up`, in its row's wording: a protocol a label's stack does not speak
    (naming the stacks that do), one over TLS only without --tls or one refusing TLS with it, and -m/--streams
    out of range or asked of protocols that carry one request per connection alone. `labels`: label -> stack;
    `protos_of`: label -> its protocols."""
    p = Problems()
    for label, stack_name in labels.items():
        stack = cat.get(stack_name)
        for row in map(protocols.get, protos_of.get(label, (protocols.DEFAULT,))):
            who = label if label == stack.name else f"{label} ({stack.name})"
            if row.name not in stack.protocols:
                p.add(row.unspoken_error(who, [s.name for s in cat if row.name in s.protocols]))
            elif (wrong := row.tls_error(label, tls_of.get(label, False))) is not None:
                p.add(wrong)
    if (wrong := protocols.streams_error(streams, {x for v in protos_of.values() for x in v})) is not None:
        p.add(wrong)
    return p.messages


def engine_problems(protos: Iterable[str], engine: str, schedule: str) -> list[str]:
    """Each protocol asked that the engine or the schedule does not run, in the protocol table's words
    (`load.engines.problem`, the registry `make_engine` reads): said before anything starts. An engine no one
    registered is said once, by the spec's own check."""
    if engines.unknown_engine(engine) is not None:
        return []
    return [err for x in dict.fromkeys(protos) if (err := engines.problem(x, engine, schedule)) is not None]

