"""The engines, as one registry: which engine sends which protocols under which `--engine` name, whether it
has a compiled path (and whether that path's module is there), and how it is made.

Everything that depends on the engine is derived from it: `make_engine` (what a load runs), `engine_path`
(the path shown to users: bench --json), `names` (the `--engine` values) and `problem` (an engine or a schedule
a protocol does not run with, worded by the protocol table's `run_error`, said before anything starts). Adding
a protocol is a row in `loadcmp.protocols`, an engine registered here (`register`) and the stacks' data.

An engine's module is imported only when one is made, so the CLI reads this registry without uvloop,
httptools, aiohttp or qh3. A load of journeys runs the engine its traffic plan hands down (`LoadSpec.traffic`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .. import protocols
from ..errors import UsageError
from .core.compiled import EnginePath
from .h1.loops import cloop_module
from .h2.loops import h2_module

if TYPE_CHECKING:
    from .driver import Engine
    from .spec import LiveFn, LoadSpec

Factory = Callable[["LoadSpec", "LiveFn | None"], "Engine[Any]"]
"""How an engine is made for one load (its module imported then)."""


@dataclass(frozen=True)
class EngineKind:
    """One engine: the `--engine` name it answers to, the protocols it sends, and how it is made."""

    name: str
    protos: tuple[str, ...]
    make: Factory
    compiled: Callable[[bool, bool], bool] | None = None
    """Whether a load (closed schedule?, https?) runs its compiled path: built, current and not refused by
    LOADCMP_PURE_PYTHON (`compiled.py`). None: a pure-Python engine."""
    open_here: Callable[[], bool] | None = None
    """Whether its open schedules (a rate, a replay at its own times) run here: only its compiled loop runs them,
    and it is built and current. None: they run wherever the engine does."""


_KINDS: list[EngineKind] = []


def register(kind: EngineKind) -> EngineKind:
    """Add an engine; no other engine may send one of its protocols under its name."""
    taken = [p for p in kind.protos if find(kind.name, p) is not None]
    if taken:
        raise ValueError(f"--engine {kind.name} sends {', '.join(taken)} already")
    _KINDS.append(kind)
    return kind


def unregister(kind: EngineKind) -> None:
    """Drop an engine (a test's made-up one, after the test)."""
    if kind in _KINDS:
        _KINDS.remove(kind)


def names() -> tuple[str, ...]:
    """The `--engine` values, in the order they were registered."""
    return tuple(dict.fromkeys(k.name for k in _KINDS))


def find(engine: str, proto: str) -> EngineKind | None:
    """The engine that sends `proto` under `--engine engine`, or None."""
    return next((k for k in _KINDS if k.name == engine and proto in k.protos), None)


def problem(proto: str, engine: str, schedule: str) -> str | None:
    """Why `--proto proto` does not run with `--engine engine` and `--schedule schedule`, in one line (the
    protocol table's wording); None: it does. An engine no one registered is `unknown_engine`'s."""
    err = protocols.get(proto).run_error(engine, schedule)
    kind = find(engine, proto)
    if err is None and kind is None:
        return f"--proto {proto}: no engine sends it under --engine {engine} (use {' or '.join(names())})"
    if err is None and kind is not None and schedule != "closed" and kind.open_here is not None \
            and not kind.open_here():
        return (f"--schedule {schedule} over --proto {proto} needs the compiled loop, which is not built here "
                "(its pure-Python fallback runs the closed loop only)")
    return err


def unknown_engine(engine: str) -> str | None:
    """An `--engine` value no engine answers to, in one line; None: it is known."""
    return None if engine in names() else f"unknown engine {engine!r}: use {' or '.join(names())}"


def make_engine(spec: LoadSpec, live: LiveFn | None = None) -> Engine[Any]:
    """The engine that runs `spec`: its protocol's under its `--engine` name; UsageError for a pair that
    does not run (the CLI says it before anything starts: this holds for a spec built in code)."""
    if spec.traffic is not None:  # journeys: the traffic package's engine, handed down in the spec
        return cast("Engine[Any]", spec.traffic.engine(spec, live))
    err = unknown_engine(spec.engine) or problem(spec.target.proto, spec.engine, spec.schedule.kind)
    if err is not None:
        raise UsageError(err)
    kind = find(spec.engine, spec.target.proto)
    assert kind is not None  # `problem` said so otherwise
    return kind.make(spec, live)


def engine_path(engine: str, closed: bool = True, https: bool = False,
                proto: str = protocols.DEFAULT) -> EnginePath:
    """The path that sends a load's requests, as users are shown it: `compiled` where the engine has a
    compiled path and it runs for this load, else `python`."""
    kind = find(engine, proto)
    runs = kind is not None and kind.compiled is not None and kind.compiled(closed, https)
    return "compiled" if runs else "python"


def _fast(spec: LoadSpec, live: LiveFn | None) -> Engine[Any]:
    from .h1.engine import FastEngine

    return FastEngine(spec, live)


def _aiohttp(spec: LoadSpec, live: LiveFn | None) -> Engine[Any]:
    from .h1.aio import AiohttpEngine

    return AiohttpEngine(spec, live)


def _h2(spec: LoadSpec, live: LiveFn | None) -> Engine[Any]:
    from .h2.engine import H2Engine

    return H2Engine(spec, live)


def _h3(spec: LoadSpec, live: LiveFn | None) -> Engine[Any]:
    from .h3.engine import H3Engine  # qh3 is imported only for it

    return H3Engine(spec, live)


FAST = register(EngineKind("fast", (protocols.H1.name,), _fast,
                           compiled=lambda closed, https: closed and cloop_module(https) is not None))
"""HTTP/1.x over uvloop + httptools; its closed loop compiled (`_cloop`, over https `_ctls`)."""
AIOHTTP = register(EngineKind("aiohttp", (protocols.H1.name,), _aiohttp))
H2 = register(EngineKind("fast", (protocols.H2.name, protocols.H2C.name), _h2,
                         compiled=lambda closed, https: h2_module() is not None,
                         open_here=lambda: h2_module() is not None))
"""h2 and h2c: `_ch2` over libnghttp2, or the `h2` package."""
H3 = register(EngineKind("fast", (protocols.H3.name,), _h3))
"""h3 over QUIC (qh3)."""
