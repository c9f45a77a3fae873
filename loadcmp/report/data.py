"""Several results folders as one body of data for the report.

Server labels stay as they are unless two folders use the same one, in which
case the run's name is added ("nginx (paper-2013)"), so nothing is mixed up.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import StoreError
from ..store import Results, load_results, summary_row

KNOWN_ORDER = ["nginx", "apache-prefork", "apache-worker", "apache-event", "nginx-apache"]


@dataclass
class ReportData:
    """The union of one or more results folders."""

    runs: list[Results]
    trials: list[dict[str, Any]]
    """Every trial record, with `server` relabelled where folders collide."""
    timeline: pd.DataFrame
    server: pd.DataFrame

    @property
    def servers(self) -> list[str]:
        seen: list[str] = []
        for t in self.trials:
            if t["server"] not in seen:
                seen.append(t["server"])

        def key(s: str) -> tuple[int, str]:
            base = s.split("/")[0].split(" ")[0]
            return (KNOWN_ORDER.index(base) if base in KNOWN_ORDER else len(KNOWN_ORDER), s)

        return sorted(seen, key=key)

    @property
    def levels(self) -> list[int]:
        return sorted({int(t["level"]) for t in self.trials})

    @property
    def summary(self) -> pd.DataFrame:
        from ..store import SUMMARY_COLUMNS

        return pd.DataFrame([summary_row(t) for t in self.trials], columns=SUMMARY_COLUMNS)

    @property
    def interrupted(self) -> list[str]:
        return [str(r.path) for r in self.runs if r.status == "interrupted"]

    def as_results(self) -> Results:
        """A Results-shaped view for the table helpers."""
        run = dict(self.runs[0].run)
        run["trials"] = self.trials
        run["name"] = " + ".join(str(r.run.get("name")) for r in self.runs)
        run["problems"] = [p for r in self.runs for p in r.run.get("problems", [])]
        return Results(self.runs[0].path, run, self.summary, self.timeline, self.server)


def load_many(paths: Sequence[str | Path]) -> ReportData:
    if not paths:
        raise StoreError("give at least one results folder")
    runs = [load_results(p) for p in paths]
    labels: dict[str, int] = {}
    for r in runs:
        for s in {t["server"] for t in r.run.get("trials", [])}:
            labels[s] = labels.get(s, 0) + 1
    trials: list[dict[str, Any]] = []
    tls: list[pd.DataFrame] = []
    srvs: list[pd.DataFrame] = []
    names = [str(r.run.get("name") or r.path.name) for r in runs]
    names = [n if names.count(n) == 1 else f"{n} #{i + 1}" for i, n in enumerate(names)]
    for r, name in zip(runs, names, strict=True):

        def relabel(s: str, name: str = name) -> str:
            return f"{s} ({name})" if labels.get(s, 0) > 1 else s

        for t in r.run.get("trials", []):
            trials.append({**t, "server": relabel(t["server"]), "run": name})
        for df, acc in ((r.timeline, tls), (r.server, srvs)):
            if not df.empty:
                d = df.copy()
                d["server"] = d["server"].map(relabel)
                acc.append(d)
    if not trials:
        raise StoreError(f"{', '.join(str(p) for p in paths)}: no trial was stored (the run stopped before the first one ended)")
    return ReportData(runs, trials, pd.concat(tls, ignore_index=True) if tls else pd.DataFrame(),
                      pd.concat(srvs, ignore_index=True) if srvs else pd.DataFrame())
