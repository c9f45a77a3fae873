"""--trace in a sweep: the stacks told to write their trace logs, those read after each window, and joined to the
client's rows once the trial is stored (the client's requests.parquet is in the folder by then)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..experiment.tracing import traced
from ..lab import render
from ..observe.tracelogs import TraceLines
from ..records import TrialRecord
from ..store import traceparts
from ..trace.join import join


def trace_override(spec: Any, label: str) -> dict[str, object]:
    """The override that turns the stacks' trace logs on (`render.TRACE`), when the run traces the label."""
    return {render.TRACE: True} if traced(spec, label) else {}


def join_trial(folder: Path, record: TrialRecord, duration: float, got: TraceLines) -> list[str]:
    """A stored trial's client rows joined to its servers' trace lines, the parts stored; what went wrong, in
    words (none when it went right)."""
    if "result" not in record:
        return []
    label, level, trial = record["server"], record["level"], record["trial"]
    where = f"{label} at {level} clients, trial {trial}"
    req = traceparts.read_requests(folder, label, level, trial)
    if req is None or req.empty:
        return [f"--trace: {where}: the client kept no traced request; nothing to join", *got.warnings]
    t0 = float(record.get("window_start") or 0.0)
    joined = join(req, got.lines, (t0, t0 + duration))
    match = traceparts.trial_match(label, level, trial, joined.parts, joined.unmatched)
    if got.unreadable:
        match["unmatched"]["server lines in no known format"] = got.unreadable
    traceparts.add_parts(folder, match, joined.parts)
    share = joined.matched_share()
    low = [] if share is None or share >= 0.99 else [
        f"--trace: {where}: only {share:.1%} of the answered requests were in a server's trace log ("
        + "; ".join(f"{n} {why}" for why, n in joined.unmatched.items()) + ")"]
    return [*low, *got.warnings]
