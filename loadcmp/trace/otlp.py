"""--trace-export otlp://HOST:PORT: the joined requests sent as OTLP spans over gRPC, with opentelemetry-sdk and its
OTLP exporter (no protocol of our own).

Each traced request is three or four spans under its own trace id (the id its traceparent carried): the client's (its
span id is the traceparent's parent id, so the servers' spans hang under it in any back end that also sees
them), the front server's, where one logged it the upstream's (PHP) and, where the app's database logged it, the
database's (under PHP's, its query count an attribute). The client span runs from the request's intended start
for its latency; the server span starts once the client's phases and the unexplained part (the listen queue) are
over and lasts the servers' parts, the database's included; the upstream span ends with the server's upstream
time and holds its own time and the database's; the database's span ends with it. The durations are the
measured ones; where a span starts within its parent is laid out from them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..errors import UsageError
from .breakdown import COLUMN, PARTS
from .serverlogs import DATABASES

if TYPE_CHECKING:
    import pandas as pd

TARGET = re.compile(r"^otlp://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})/?$")


@dataclass(frozen=True)
class Target:
    """Where the spans go: an OTLP/gRPC receiver (a collector, Jaeger, Tempo), plain text."""

    host: str
    port: int

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"


def parse_target(url: str) -> Target:
    """`otlp://HOST:PORT` read; UsageError, one line, for anything else."""
    m = TARGET.match(url.strip())
    if not m or not 0 < int(m[2]) < 65536:
        raise UsageError(f"--trace-export {url!r}: give otlp://HOST:PORT (an OTLP/gRPC receiver, e.g. "
                         "otlp://127.0.0.1:4317)")
    return Target(m[1], int(m[2]))


class _Ids:
    """The ids the next span takes: the request's own, not random ones (an `IdGenerator` for the SDK)."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_ids: list[int] = []

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        return self.span_ids.pop(0)

    def is_trace_id_random(self) -> bool:
        return False  # half nonce, half sequence number (W3C's random flag stays off)


def _span_id(trace_id: str, i: int) -> int:
    """The i-th span's id of a request: the client's is the traceparent's parent id (the sequence number; W3C
    forbids 0, so sequence 0 takes 2**63), the servers' that with its top byte marked."""
    own = int(trace_id[16:], 16) or 1 << 63
    return own if i == 0 else own ^ (i << 56)


def _ns(t: float) -> int:
    return int(round(t * 1e9))


def _ms(row: Any, part: str) -> float:
    v = row[COLUMN[part]]
    return 0.0 if v != v else float(v)  # NaN: that part was not measured


def spans_of(row: Any) -> Iterator[tuple[str, str, float, float, int]]:
    """A joined request's spans as (name, kind, start, end, parent's index or -1): client, server, upstream and,
    where its database logged the request, the database's (under the upstream: its queries ran inside it)."""
    t0 = float(row["t_start"]) - _ms(row, "queue") / 1000
    end = t0 + float(row["latency_ms"]) / 1000
    yield "client " + str(row.get("proto") or "http"), "client", t0, end, -1
    if not row["front"]:
        return
    before = sum(_ms(row, p) for p in ("queue", "connect", "handshake", "write", "unexplained")) / 1000
    own = _ms(row, "upstream") + _ms(row, "database")  # ms; the database's time is part of the upstream's
    waited = _ms(row, "upstream_wait") + own  # summed outward, so no child ends past its parent by rounding
    s0 = t0 + max(before, 0.0)
    yield str(row["front"]), "server", s0, s0 + (_ms(row, "server") + waited) / 1000, 0
    if row["upstream"]:
        u1 = s0 + waited / 1000
        yield str(row["upstream"]), "internal", u1 - own / 1000, u1, 1
        if _known(row, "database"):  # laid out at the end of the upstream's time: where in it is not logged
            yield DATABASES[0], "client", u1 - _ms(row, "database") / 1000, u1, 2


def _known(row: Any, part: str) -> bool:
    v = row.get(COLUMN[part])
    return v is not None and v == v


def _exporter(target: Target, timeout: float, taken: list[int]) -> Any:
    """The SDK's OTLP/gRPC exporter to `target`, the spans its receiver took counted into `taken`."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    class Counted(OTLPSpanExporter):
        def export(self, spans: Any, *args: Any, **kwargs: Any) -> SpanExportResult:
            got = super().export(spans, *args, **kwargs)
            if got == SpanExportResult.SUCCESS:
                taken[0] += len(spans)
            return got

    return Counted(endpoint=target.endpoint, insecure=True, timeout=timeout)


def export(parts: pd.DataFrame, target: Target, timeout: float = 10.0) -> tuple[int, int]:
    """Send every joined request of `parts` (parts.parquet's rows) as spans: how many were made, and how many the
    receiver took."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    ids = _Ids()
    provider = TracerProvider(resource=Resource.create({"service.name": "loadcmp"}), id_generator=cast(Any, ids),
                              shutdown_on_exit=False)
    taken = [0]
    provider.add_span_processor(BatchSpanProcessor(_exporter(target, timeout, taken)))
    tracer = provider.get_tracer("loadcmp.trace")
    kinds = {"client": trace.SpanKind.CLIENT, "server": trace.SpanKind.SERVER, "internal": trace.SpanKind.INTERNAL}
    sent = 0
    for row in parts.dropna(subset=["latency_ms"]).to_dict("records"):
        tid = str(row["trace_id"])
        ids.trace_id = int(tid, 16)
        opened: list[Any] = []
        for i, (name, kind, start, end, parent) in enumerate(spans_of(row)):
            ids.span_ids = [_span_id(tid, i)]
            ctx = trace.set_span_in_context(opened[parent]) if parent >= 0 else None
            span = tracer.start_span(name, context=ctx, kind=kinds[kind], start_time=_ns(start),
                                     attributes=_attributes(row, name, kind))
            opened.append(span)
            span.end(end_time=_ns(end))
            sent += 1
    provider.force_flush(int(timeout * 1000))
    provider.shutdown()
    return sent, taken[0]


def _attributes(row: Any, name: str, kind: str) -> dict[str, Any]:
    """What a span says: the client's the request's label, level, status and every part (ms); the database's its
    queries."""
    if name in DATABASES:
        return {"loadcmp.program": name, "db.system": name, "loadcmp.db.queries": int(row.get("db_queries") or 0)}
    if kind != "client":
        return {"loadcmp.program": str(row["front"] if kind == "server" else row["upstream"])}
    out: dict[str, Any] = {"loadcmp.label": str(row["label"]), "loadcmp.level": int(row["level"]),
                           "loadcmp.trial": int(row["trial"]), "http.response.status_code": int(row["status"])}
    out.update({f"loadcmp.part.{p}_ms": round(_ms(row, p), 3) for p in PARTS})
    return out
