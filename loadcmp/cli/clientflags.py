"""How the clients behave and what they keep: --think, --send-rate, --read-rate (`load.pacing`,
docs/clients.md) and --trace, --trace-sample (`trace`, docs/tracing.md), among the load options every loading
command takes (`options.LoadFlags` holds their values). Each value is checked as soon as it is read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def trace_options() -> list[Callable[[F], F]]:
    """--trace and --trace-sample F (bench, run, smoke, capacity, tune): docs/tracing.md."""
    return [
        click.option("--trace", is_flag=True, default=None,
                     help="Send a traceparent header (W3C Trace Context) and keep a row per traced request in "
                          "requests.parquet: its phases, status, bytes, connection (docs/tracing.md)."),
        click.option("--trace-sample", type=float, metavar="F", callback=_trace_sample,
                     help="--trace on this share of the requests (0 < F <= 1, default 1), drawn from their "
                          "sequence numbers: the same requests each run."),
    ]


def _trace_sample(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """--trace-sample checked as soon as it is read (one line, exit 2, nothing started)."""
    if value is not None:
        from ..trace.ids import check_share

        check_share(value)
    return value


def behaviour_options() -> list[Callable[[F], F]]:
    """--think, --send-rate, --read-rate: clients that behave like people (`load.pacing`, docs/clients.md)."""
    return [
        click.option("--think", callback=_pacing, metavar="DURATION[±JITTER]",
                     help="Closed loop: each client (h2, h3: each stream) idles this long between an answer and "
                          "its next request (2s, 2s±500ms; the jitter drawn uniformly, seeded)."),
        click.option("--send-rate", callback=_pacing, metavar="RATE|slowloris",
                     help="HTTP/1.1: write each request paced to RATE (2kbit, 10kB/s); slowloris: 8 bytes every 2 s."),
        click.option("--read-rate", callback=_pacing, metavar="RATE",
                     help="HTTP/1.1: read each response at RATE (2kbit, 10kB/s) through a small receive buffer."),
    ]


def _pacing(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A behaviour's value checked as soon as it is read (one line, exit 2, nothing started); kept as typed."""
    if value is not None:
        from ..load.pacing import pacing_of

        asked = {"think": None, "send_rate": None, "read_rate": None} | {str(param.name): value}
        pacing_of(asked["think"], asked["send_rate"], asked["read_rate"])
    return value
