"""--trace's files in the results folder: the client's rows read, the joined parts written, both by trial.

    requests.parquet  the client's row of each traced request (written by the load's side)
    parts.parquet     each traced request's parts (`loadcmp.trace.join`), one row per client row
    trace.json        per trial, the lines that did not match, by why

parts.parquet and trace.json are rewritten whole after each trial (temp file + rename), the trial's old rows
replaced, as the writer does for the other tables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

import pandas as pd

from .writer import _atomic_write, write_json
from ..errors import StoreError

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


def read_requests(folder: Path, label: str, level: int, trial: int) -> pd.DataFrame | None:
    """One trial's client rows (None: the folder holds no requests.parquet)."""
    path = Path(folder) / REQUESTS
    if not path.exists():
        return None
    try:
        df = pd.read_parquet(path, filters=[("label", "==", label), ("level", "==", level), ("trial", "==", trial)])
    except (OSError, ValueError) as e:
        raise StoreError(f"cannot read {path}: {e}") from None
    return df.reset_index(drop=True)


def read_parts(folder: Path) -> pd.DataFrame | None:
    """Every trial's parts (None: the run was not traced)."""
    path = Path(folder) / PARTS
    if not path.exists():
        return None
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as e:
        raise StoreError(f"cannot read {path}: {e}") from None


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
    old = read_parts(folder)
    if old is not None:
        old = old[~((old["label"] == key[0]) & (old["level"] == key[1]) & (old["trial"] == key[2]))]
    both = parts if old is None or old.empty else pd.concat([old, parts], ignore_index=True)
    _atomic_write(folder / PARTS, lambda tmp: both.to_parquet(tmp, index=False, compression="zstd"))
    kept = [m for m in read_matches(folder) if (m["label"], m["level"], m["trial"]) != key]
    write_json(folder / UNMATCHED, {"trials": [*kept, match]})


def trial_match(label: str, level: int, trial: int, parts: pd.DataFrame, unmatched: Mapping[str, int]
                ) -> TrialMatch:
    """A trial's join in figures, from its parts and what did not match."""
    answered = parts[parts["status"] > 0]
    return TrialMatch(label=label, level=level, trial=trial, rows=len(parts), answered=len(answered),
                      matched=int(answered["front"].ne("").sum()), unmatched=dict(unmatched))
