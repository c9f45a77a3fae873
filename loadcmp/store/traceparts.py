"""--trace's files in the results folder: the client's rows written and read by trial, the joined parts written.

    requests.parquet  the client's row of each traced request (`trace.rows.TraceRows.table`)
    parts.parquet     each traced request's parts (`loadcmp.trace.join`), one row per client row
    trace.json        per trial, the lines that did not match, by why, and where its time went (each part's
                      share of p50 and p99)

requests.parquet and parts.parquet are folders of one file per trial (`trialfiles`): a trial adds its own file,
written beside it and renamed, and a trial written again replaces its own. An older run's single files are read as
they are. trace.json is small (a few figures a trial) and rewritten whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import NotRequired, TypedDict

import pandas as pd

from . import trialfiles
from .files import write_json
from ..errors import StoreError
from ..trace.breakdown import shares
from ..trace.rows import TraceRows

REQUESTS = "requests.parquet"
PARTS = "parts.parquet"
UNMATCHED = "trace.json"


class TrialMatch(TypedDict):
    """One trial's join in figures: its label, level and trial, its rows, the answered ones a server logged, and
    the unmatched by why."""

    label: str
    level: int
    trial: int
    rows: int
    answered: int
    matched: int
    unmatched: dict[str, int]
    p50_ms: NotRequired[float]
    p99_ms: NotRequired[float]
    """The matched requests' p50 and p99 (absent: none matched)."""
    p50: NotRequired[dict[str, float]]
    p99: NotRequired[dict[str, float]]
    """Each part's share of them (`trace.breakdown.shares`): the live page shows the last trial's."""


DICTIONARY = ["label", "kind", "proto", "level", "trial", "worker", "status"]
"""requests.parquet's columns kept as parquet dictionaries (few values each)."""


def add_requests(folder: Path, rows: TraceRows, label: str, level: int, trial: int) -> int:
    """A trial's client rows added to requests.parquet (zstd), as a file of their own; the table's size after."""
    import pyarrow.parquet as pq

    table = rows.table(label, level, trial)
    return trialfiles.put(Path(folder) / REQUESTS, (label, level, trial), lambda tmp: pq.write_table(
        table, tmp, compression="zstd", use_dictionary=DICTIONARY))


def read_requests(folder: Path, label: str, level: int, trial: int) -> pd.DataFrame | None:
    """One trial's client rows (None: the folder holds no requests.parquet)."""
    return trialfiles.read_trial(Path(folder) / REQUESTS, (label, level, trial))


def read_parts(folder: Path) -> pd.DataFrame | None:
    """Every trial's parts (None: the run was not traced)."""
    return trialfiles.read_all(Path(folder) / PARTS)


def read_matches(folder: Path) -> list[TrialMatch]:
    """Every trial's join in figures ([]: the run was not traced)."""
    path = Path(folder) / UNMATCHED
    if not path.exists():
        return []
    try:
        return list(json.loads(path.read_text())["trials"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise StoreError(f"cannot read {path}: {e}") from None


def add_parts(folder: Path, match: TrialMatch, parts: pd.DataFrame) -> None:
    """A trial's parts and its join's figures stored, replacing the trial's earlier ones."""
    folder = Path(folder)
    key = (match["label"], match["level"], match["trial"])
    trialfiles.put(folder / PARTS, key, lambda tmp: parts.to_parquet(tmp, index=False, compression="zstd"))
    kept = [m for m in read_matches(folder) if (m["label"], m["level"], m["trial"]) != key]
    write_json(folder / UNMATCHED, {"trials": [*kept, match]})


def trial_match(label: str, level: int, trial: int, parts: pd.DataFrame, unmatched: Mapping[str, int]
                ) -> TrialMatch:
    """A trial's join in figures, from its parts and what did not match."""
    answered = parts[parts["status"] > 0]
    out = TrialMatch(label=label, level=level, trial=trial, rows=len(parts), answered=len(answered),
                     matched=int(answered["front"].ne("").sum()), unmatched=dict(unmatched))
    ok = answered[answered["front"].ne("")]
    lat = ok["latency_ms"].astype(float).dropna()
    if len(lat):
        out["p50_ms"], out["p99_ms"] = round(float(lat.quantile(0.5)), 3), round(float(lat.quantile(0.99)), 3)
        out["p50"] = {p: round(v, 4) for p, v in shares(ok, ok["latency_ms"].astype(float), 0.5).items()}
        out["p99"] = {p: round(v, 4) for p, v in shares(ok, ok["latency_ms"].astype(float), 0.99).items()}
    return out
