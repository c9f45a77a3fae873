"""What a run traces (`--trace`, `--trace-sample`; `trace = true`, `trace_sample = F` in a file, and in a
`[variants.LABEL]` table for one label): the fields RunSpec takes from here, and the share each label's load sends
its traceparent header on (docs/tracing.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ConfigError

OwnTrace = dict[str, bool | float]
"""A label's own `trace` and `trace_sample` ([variants.LABEL]), only the keys its table gives."""


@dataclass(frozen=True)
class TraceSpec:
    """RunSpec's --trace fields (it subclasses this)."""

    trace: bool = False
    """--trace: a traceparent header on the requests, and a row in requests.parquet for each traced one."""
    trace_sample: float = 1.0
    """--trace-sample: the share of the requests traced, drawn from their sequence numbers (0 < F <= 1)."""
    variant_trace: dict[str, OwnTrace] = field(default_factory=dict)
    """A label's own `trace` and `trace_sample` (`[variants.LABEL]`), over the run's."""

    @property
    def trace_share(self) -> float:
        """The share a load traces (`LoadSpec.trace`): 0 without --trace."""
        return self.trace_sample if self.trace else 0.0

    def trace_share_for(self, label: str) -> float:
        """The share one label's load traces: its own `trace` and `trace_sample` over the run's (a share given
        alone is a trace asked for, as --trace-sample is); 0: not traced."""
        own = self.variant_trace.get(label, {})
        on = bool(own.get("trace", self.trace or "trace_sample" in own))
        return float(own.get("trace_sample", self.trace_sample)) if on else 0.0


def traced(spec: object, label: str) -> bool:
    """Whether a run traces one label's requests (a spec without per-label fields: its `trace`)."""
    share_for = getattr(spec, "trace_share_for", None)
    return share_for(label) > 0 if share_for is not None else bool(getattr(spec, "trace", False))


def own_trace(label: str, table: Mapping[str, object]) -> OwnTrace:
    """A `[variants.LABEL]` table's `trace` (true or false) and `trace_sample` (a share, as `trace_sample`'s in
    the file), checked; {} when it gives neither."""
    out: OwnTrace = {}
    if "trace" in table:
        if not isinstance(table["trace"], bool):
            raise ConfigError(f"[variants.{label}].trace must be true or false")
        out["trace"] = table["trace"]
    if "trace_sample" in table:
        v = table["trace_sample"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v <= 1.0:
            raise ConfigError(f"[variants.{label}].trace_sample: expected a share of the requests, above 0 and at "
                              f"most 1 (0.1: one in ten), got {v!r}")
        out["trace_sample"] = float(v)
    return out
