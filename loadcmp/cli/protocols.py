"""How the clients talk to the servers: https (`--tls`, `--tls-resume`) and the protocol (`--proto`, `-m`).

`TlsFlags` go with run, smoke, capacity, tune and up; `ProtoFlags` with the commands that load a stack (run,
smoke, capacity, tune): `--proto h1,h2` runs each server once per protocol (labels like `nginx[h2]`), `-m N`
the streams each connection carries on h2, h2c and h3 (`-c` stays the number of connections).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from .. import protocols
from ..errors import UsageError
from .flaggroup import FlagGroup, flag

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class TlsFlags(FlagGroup):
    """https on the stacks (run, smoke, capacity, tune, up): whether, and how many new connections resume."""

    tls: bool | None = flag("--tls")
    tls_resume: float | None = flag("--tls-resume")


def tls_options(f: F) -> F:
    """--tls and --tls-resume F (run, smoke, capacity, tune, up)."""
    f = click.option("--tls-resume", type=float, metavar="F",
                     help="With --tls: the share of new connections that resume a TLS session (0..1; default 0: "
                          "a full handshake each, as ab).")(f)
    return click.option("--tls", is_flag=True, default=None,
                        help="Serve https: the run makes a CA, each server a certificate of it (tls.* settings); "
                             "the clients verify against it (results/…/tls/ca.pem).")(f)


@dataclass(frozen=True)
class ProtoFlags(FlagGroup):
    """The protocols loaded and the streams per connection (run, smoke, capacity, tune)."""

    protos: tuple[str, ...] | None = flag("--proto")
    streams: int | None = flag("-m/--streams")


def _protos(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    from ..experiment.protos import parse_protos

    if value is None:
        return None
    try:
        return parse_protos(value)
    except UsageError as e:
        raise click.BadParameter(str(e)) from None


def proto_options(f: F) -> F:
    """--proto P[,P...] and -m/--streams N (run, smoke, capacity, tune)."""
    f = click.option("-m", "--streams", type=int, metavar="N",
                     help="Requests in flight per connection on h2, h2c and h3, as h2load's -m (default 1); "
                          "-c stays the number of connections.")(f)
    return click.option("--proto", "protos", callback=_protos, metavar="|".join(protocols.names()) + "[,...]",
                        help=f"The protocol(s) loaded (default {protocols.DEFAULT}): h2 over TLS (needs --tls), h2c "
                             "by prior knowledge on a plain port; several run each server once per protocol "
                             "(labels like nginx[h2]).")(f)
