"""What a run traces (`--trace`, `--trace-sample`; `trace = true`, `trace_sample = F` in a file): the fields RunSpec
takes from here, and the share each load sends its traceparent header on (docs/tracing.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TraceSpec:
    """RunSpec's --trace fields (it subclasses this)."""

    trace: bool = False
    """--trace: a traceparent header on the requests, and a row in requests.parquet for each traced one."""
    trace_sample: float = 1.0
    """--trace-sample: the share of the requests traced, drawn from their sequence numbers (0 < F <= 1)."""

    @property
    def trace_share(self) -> float:
        """The share a load traces (`LoadSpec.trace`): 0 without --trace."""
        return self.trace_sample if self.trace else 0.0
