"""The results folder: one per run, every file written atomically.

    results/<YYYYmmdd-HHMMSS>-<name>/
        run.json          spec, configs in effect, versions, machine, status, trials
        timeline.parquet  client side, one row per second x server x level x trial
        server.parquet    server side, the 1 Hz samples, same keys
        summary.csv       one row per server x level x trial

Files are rewritten after every finished trial (temp file + rename), so a
crash or Ctrl-C leaves a readable folder with every trial measured so far.
The report reads only this folder (`load_results`).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import StoreError

FORMAT = 1
"""Bumped when the folder's layout changes; older folders are refused clearly."""

SUMMARY_COLUMNS = [
    "server", "level", "trial", "status", "ok", "failed", "unfinished", "started", "rps",
    "completions_per_s", "failed_rate", "p50_ms", "p90_ms", "p99_ms", "max_ms", "bytes",
    "duration_s", "cpu_pct", "mem_peak_bytes", "pids_peak", "reason",
]


def _atomic_write(path: Path, write: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: Path, doc: Any) -> None:
    def w(tmp: str) -> None:
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2, default=_jsonable)
            f.write("\n")

    _atomic_write(path, w)


def _jsonable(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return str(o)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "run"


@dataclass
class RunWriter:
    """Accumulates a run's trials and keeps the folder current after each one."""

    path: Path
    run: dict[str, Any]
    timeline: list[dict[str, Any]] = field(default_factory=list)
    server: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def create(cls, root: Path | str, name: str, run: dict[str, Any]) -> RunWriter:
        root = Path(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
            base = f"{time.strftime('%Y%m%d-%H%M%S')}-{slug(name)}"
            path = root / base
            n = 1
            while path.exists():
                n += 1
                path = root / f"{base}-{n}"
            path.mkdir()
        except OSError as e:
            raise StoreError(f"cannot create a results folder under {root}: {e.strerror}") from None
        run = dict(run)
        run.setdefault("format", FORMAT)
        run.setdefault("status", "running")
        run.setdefault("trials", [])
        w = cls(path, run)
        w.flush()
        return w

    def add_trial(self, trial: dict[str, Any], timeline: list[dict[str, Any]], server: list[dict[str, Any]]) -> None:
        """Record one finished (or failed) trial and rewrite the folder."""
        self.run["trials"].append(trial)
        self.timeline.extend(timeline)
        self.server.extend(server)
        self.flush()

    def finish(self, status: str, **extra: Any) -> None:
        self.run["status"] = status
        self.run["ended"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.run.update(extra)
        self.flush()

    def flush(self) -> None:
        try:
            write_json(self.path / "run.json", self.run)
            _write_parquet(self.path / "timeline.parquet", self.timeline)
            _write_parquet(self.path / "server.parquet", self.server)
            rows = [summary_row(t) for t in self.run["trials"]]
            df = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
            _atomic_write(self.path / "summary.csv", lambda tmp: df.to_csv(tmp, index=False))
        except OSError as e:
            raise StoreError(f"cannot write results to {self.path}: {e.strerror}") from None


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    df = pd.DataFrame(rows)
    _atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))


def summary_row(trial: dict[str, Any]) -> dict[str, Any]:
    s = trial.get("result") or {}
    lat = s.get("latency_ms") or {}
    srv = trial.get("server_metrics") or {}
    return {
        "server": trial["server"],
        "level": trial["level"],
        "trial": trial["trial"],
        "status": trial["status"],
        "ok": s.get("ok"),
        "failed": s.get("failed"),
        "unfinished": s.get("unfinished"),
        "started": s.get("started"),
        "rps": s.get("rps"),
        "completions_per_s": s.get("completions_per_s"),
        "failed_rate": s.get("failed_rate"),
        "p50_ms": lat.get("p50"),
        "p90_ms": lat.get("p90"),
        "p99_ms": lat.get("p99"),
        "max_ms": lat.get("max"),
        "bytes": s.get("bytes"),
        "duration_s": s.get("duration_s"),
        "cpu_pct": srv.get("cpu_pct"),
        "mem_peak_bytes": srv.get("mem_peak_bytes"),
        "pids_peak": srv.get("pids_peak"),
        "reason": trial.get("reason"),
    }


@dataclass
class Results:
    """A results folder as data frames, for the report."""

    path: Path
    run: dict[str, Any]
    trials: pd.DataFrame
    timeline: pd.DataFrame
    server: pd.DataFrame

    @property
    def status(self) -> str:
        return str(self.run.get("status", "unknown"))

    def trial_records(self) -> list[dict[str, Any]]:
        return list(self.run.get("trials", []))


def load_results(path: Path | str) -> Results:
    """Read a results folder; a clear StoreError for anything that is not one."""
    p = Path(path)
    rj = p / "run.json"
    if not p.is_dir():
        raise StoreError(f"{p} is not a results folder (no such directory)")
    if not rj.is_file():
        raise StoreError(f"{p} is not a results folder (no run.json)")
    try:
        run = json.loads(rj.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise StoreError(f"{rj} is unreadable: {e}") from None
    fmt = run.get("format") if isinstance(run, dict) else None
    if fmt != FORMAT:
        raise StoreError(
            f"{p} was written in results format {fmt!r}; this loadcmp reads format {FORMAT} "
            "(re-run the experiment, or use the loadcmp version that wrote it)"
        )
    rows = [summary_row(t) for t in run.get("trials", [])]
    trials = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)

    def read(name: str) -> pd.DataFrame:
        f = p / name
        if not f.exists():
            return pd.DataFrame()
        try:
            return pd.read_parquet(f)
        except Exception as e:  # pyarrow raises several types for a damaged file
            raise StoreError(f"{f} is unreadable: {e}") from None

    return Results(p, run, trials, read("timeline.parquet"), read("server.parquet"))
