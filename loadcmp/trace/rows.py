"""One row per traced request: kept by the engine while the trial runs, written to requests.parquet after it.

The pure-Python engines add a row a request (`RowBuffer.add`); the compiled loops push a C struct a request into a
growing array (`load/core/_ctrace.h`'s `trow_t`), read here as numpy columns by its layout (`ROW`). Either way the
engine hands the trial's rows over as `TraceRows` (columns, picklable: workers send theirs back), with the clock
turned from CLOCK_MONOTONIC to epoch seconds, and as requests.parquet's table of a trial (`TraceRows.table`; the
store writes it: `store.traceparts.add_requests`). docs/tracing.md gives its columns.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from ..records import OUTCOME_KINDS
from .ids import Ids, format_id, with_header

UNFINISHED = -1
"""The kind of a traced request still in flight when the window closed."""
KIND_NAMES = (*OUTCOME_KINDS, "unfinished")
"""A row's kind by index (`UNFINISHED`, -1, is the last)."""
PROTOS = ("h1", "h1-tls", "h2", "h3")
FLOATS = ("connect_ms", "handshake_ms", "write_ms", "wait_ms", "read_ms")
NAN = math.nan


def row_dtype() -> Any:
    """`trow_t`'s layout (72 bytes): seq, t_intended, t_start, t_end (monotonic seconds), the five phases in ms,
    bytes, conn, stream, status, kind, padding."""
    import numpy as np

    return np.dtype([("seq", "<u8"), ("t_intended", "<f8"), ("t_start", "<f8"), ("t_end", "<f8"), ("ph", "<f4", (5,)),
                     ("bytes", "<i4"), ("conn", "<i4"), ("stream", "<i4"), ("status", "<i2"), ("kind", "<i2"),
                     ("pad", "<i4")])


@dataclass
class TraceRows:
    """One worker's (or, merged, every worker's) traced requests of a trial, as columns."""

    nonce: list[int] = field(default_factory=list)
    """Each part's nonce (one per worker), indexed by `part`."""
    cols: dict[str, Any] = field(default_factory=dict)
    """seq (uint64), part (int16: the worker), t_intended, t_start (epoch s), the phases and latency_ms (float32),
    status, kind (int16), bytes, conn, stream (int32), proto (uint8: an index into PROTOS)."""

    def __len__(self) -> int:
        return 0 if not self.cols else len(self.cols["seq"])

    @classmethod
    def of(cls, nonce: int, worker: int, proto: str, c_rows: bytes = b"", py_rows: list[tuple[Any, ...]] | None = None
           ) -> TraceRows:
        """A worker's rows: the compiled loop's (`c_rows`, `trow_t` structs) and the pure-Python engine's."""
        import numpy as np

        a = np.frombuffer(c_rows, dtype=row_dtype())
        if py_rows:
            a = np.concatenate([a, np.array(py_rows, dtype=row_dtype())])
        off = time.time() - time.monotonic()
        lat = np.where(a["kind"] == UNFINISHED, np.nan, (a["t_end"] - a["t_intended"]) * 1000.0)
        cols: dict[str, Any] = {"seq": a["seq"].copy(), "part": np.zeros(len(a), np.int16),
                                "worker": np.full(len(a), worker, np.int16),
                                "t_intended": a["t_intended"] + off, "t_start": a["t_start"] + off}
        cols.update({name: a["ph"][:, j].copy() for j, name in enumerate(FLOATS)})
        cols.update(latency_ms=lat.astype(np.float32), status=a["status"].copy(), kind=a["kind"].copy(),
                    bytes=a["bytes"].copy(), conn=a["conn"].copy(), stream=a["stream"].copy(),
                    proto=np.full(len(a), PROTOS.index(proto), np.uint8))
        return cls([nonce], cols)

    @classmethod
    def merge(cls, parts: list[TraceRows | None]) -> TraceRows | None:
        """The workers' rows together (None: no worker traced)."""
        import numpy as np

        got = [p for p in parts if p is not None and p.cols]
        if not got:
            return next((p for p in parts if p is not None), None)
        nonce: list[int] = []
        cols: dict[str, list[Any]] = {}
        for p in got:
            for k, v in p.cols.items():
                cols.setdefault(k, []).append(v + len(nonce) if k == "part" else v)
            nonce += p.nonce
        return cls(nonce, {k: np.concatenate(v) for k, v in cols.items()})

    def counts(self) -> dict[str, int]:
        """The rows by kind, as the recorder names them ("unfinished" too)."""
        import numpy as np

        if not self.cols:
            return {}
        kinds, n = np.unique(self.cols["kind"], return_counts=True)
        return {KIND_NAMES[int(k)]: int(c) for k, c in zip(kinds, n, strict=True)}

    def table(self, label: str, level: int, trial: int) -> Any:
        """The rows as requests.parquet's table, tagged with their cell and trial (docs/tracing.md)."""
        import pyarrow as pa

        c = self.cols
        n = len(self)
        ids = [format_id(self.nonce[p], s) for p, s in zip(c["part"].tolist(), c["seq"].tolist(), strict=True)]
        kinds = pa.DictionaryArray.from_arrays(pa.array(c["kind"] % len(KIND_NAMES), pa.int8()), list(KIND_NAMES))
        protos = pa.DictionaryArray.from_arrays(pa.array(c["proto"], pa.int8()), list(PROTOS))
        cols = {"trace_id": pa.array(ids, pa.string()), "label": pa.array([label] * n).dictionary_encode(),
                "level": pa.array([level] * n, pa.int32()), "trial": pa.array([trial] * n, pa.int16()),
                "worker": pa.array(c["worker"], pa.int16()), "t_intended": pa.array(c["t_intended"], pa.float64()),
                "t_start": pa.array(c["t_start"], pa.float64()),
                **{k: pa.array(c[k], pa.float32()) for k in (*FLOATS, "latency_ms")},
                "status": pa.array(c["status"], pa.int16()), "kind": kinds, "bytes": pa.array(c["bytes"], pa.int32()),
                "conn": pa.array(c["conn"], pa.int32()), "proto": protos, "stream": pa.array(c["stream"], pa.int32())}
        return pa.table(cols)


class Tracer:
    """A pure-Python engine's traced requests in one trial: which carry the header, and their rows (the compiled
    loops keep theirs in C and hand them over here, `rows`)."""

    def __init__(self, share: float, worker: int, proto: str) -> None:
        self.ids = Ids(share)
        self.worker, self.proto = worker, proto
        self.c_rows = b""
        """The compiled loop's rows (`trow_t` structs), handed over when it stops."""
        self.tls = proto == "h1-tls"
        self.done: list[tuple[Any, ...]] = []
        self.open: dict[int, tuple[float, float, int, int]] = {}
        """Traced requests counted and sent, not ended yet: seq -> (t_intended, t_start, conn, stream)."""

    def take(self) -> int:
        """The next request's sequence number when it is traced, else -1."""
        return self.ids.take()

    def request(self, raw: bytes, seq: int) -> bytes:
        """An HTTP/1 request's bytes with request `seq`'s header."""
        return with_header(raw, self.ids.line(seq))[0]

    def sent(self, seq: int, t_intended: float, t_start: float, conn: int, stream: int = 0) -> None:
        """A counted traced request went out (monotonic times)."""
        self.open[seq] = (t_intended, t_start, conn, stream)

    def ended(self, seq: int, kind: int, t_end: float, status: int, nbytes: int, marks: tuple[float, ...] | None,
              counted: bool) -> None:
        """Request `seq` ended as `kind` at `t_end`; `counted`: the recorder counted it (else, ended after the
        close, it stays unfinished)."""
        if not counted or (began := self.open.pop(seq, None)) is None:
            return
        ph = (NAN,) * 5 if marks is None else phases_ms(marks, self.tls)
        self.done.append((seq, began[0], began[1], t_end, ph, nbytes, began[2], began[3], status, kind, 0))

    def rows(self) -> TraceRows:
        """The trial's rows: those ended, then those still open as unfinished, then the compiled loop's."""
        left = [(seq, b[0], b[1], NAN, (NAN,) * 5, 0, b[2], b[3], 0, UNFINISHED, 0) for seq, b in self.open.items()]
        self.open.clear()
        return TraceRows.of(self.ids.nonce, self.worker, self.proto, self.c_rows, self.done + left)


def proto_of(proto: str, scheme: str) -> str:
    """requests.parquet's proto for a load's protocol (`loadcmp.protocols`) and scheme."""
    return {"h2": "h2", "h2c": "h2", "h3": "h3"}.get(proto, "h1-tls" if scheme == "https" else "h1")


def phases_ms(m: tuple[float, ...], tls: bool) -> tuple[float, ...]:
    """A response's `Marks` (connect, send, written, first byte, end) as the five phases in ms, as the recorder
    folds them: the connect NaN on a kept connection, the handshake 0 over http (in the connect over https)."""
    connect = (m[1] - m[0]) * 1000.0
    shake = NAN if tls or math.isnan(connect) else 0.0
    return connect, shake, (m[2] - m[1]) * 1000.0, (m[3] - m[2]) * 1000.0, (m[4] - m[3]) * 1000.0

