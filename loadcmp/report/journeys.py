"""The report's journeys section (`--journey`): per label and level, each journey's completion rate (completed
over the journeys that ended; those the window's close cut off are left out) with where the others failed, and
each step measured as the page `journey/step`: answered as the journey needs, failed, its latency.

Only a run with journeys has this section: a run of pages reports as it did.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from ..records import JourneyDoc, PageSummary, TrialRecord
from ..store.reader import Results

HEADER = ["clients", "server", "journey", "started", "completed", "completion", "failed at (most)"]
STEP_HEADER = ["clients", "server", "step", "ok", "failed", "p50 ms", "p99 ms"]
LEGEND = ("started: journeys begun inside the window, over the trials; completion: completed / (started − cut "
          "by the window's close); failed at: the step where most of the others ended, and why. Each step is "
          "counted as a page of its own (journey/step): ok and failed by its answer's outcome; p50 and p99: the "
          "worst trial's. ‡: client-bound, the journeys ran on "
          "the Python path and the client limited them.")


def cell_journeys(trials: list[TrialRecord]) -> dict[str, JourneyDoc]:
    """Each journey's counts over the trials, added."""
    out: dict[str, JourneyDoc] = {}
    for t in trials:
        r = t.get("result")
        for name, j in ((r.get("journeys") if r else None) or {}).items():
            acc = out.setdefault(name, JourneyDoc(started=0, completed=0, failed=0, cut=0, completion_rate=None,
                                                  failed_at={}))
            acc["started"] += j["started"]
            acc["completed"] += j["completed"]
            acc["failed"] += j["failed"]
            acc["cut"] += j["cut"]
            acc["failed_at"] = dict(Counter(acc["failed_at"]) + Counter(j["failed_at"]))
    for acc in out.values():
        ended = acc["started"] - acc["cut"]
        acc["completion_rate"] = acc["completed"] / ended if ended else None
    return out


def _steps(trials: list[TrialRecord]) -> dict[str, tuple[int, int, list[PageSummary]]]:
    """Each step's page (the load's `pages`) over the trials of a run with journeys."""
    out: dict[str, tuple[int, int, list[PageSummary]]] = {}
    for t in trials:
        r = t.get("result")
        if not r or not r.get("journeys"):
            continue
        for s in r.get("pages") or []:
            ok, failed, docs = out.get(s["page"], (0, 0, []))
            out[s["page"]] = (ok + s["ok"], failed + s["failed"], [*docs, s])
    return out


def _ms(docs: list[PageSummary], key: str) -> str:
    """The worst trial's percentile (the trials' histograms are not stored per step)."""
    vals = [float(v) for d in docs if isinstance(v := cast(dict[str, Any], d["latency_ms"]).get(key), int | float)]
    return f"{max(vals):,.1f}" if vals else "-"


def journey_rows(data: Results, bound_mark: str) -> tuple[list[str], list[list[str]]]:
    """One row per label, level and journey (a client-bound cell's rate marked with `bound_mark`); empty
    without journeys."""
    rows = []
    for level in data.levels:
        for s in data.servers:
            mark = bound_mark if data.client_bound(s, level) is not None else ""
            for name, j in cell_journeys(data.cell(s, level)).items():
                rate = "-" if j["completion_rate"] is None else f"{j['completion_rate']:.1%}{mark}"
                top = max(j["failed_at"].items(), key=lambda kv: kv[1], default=None)
                rows.append([f"{level:,}", s, name, f"{j['started']:,}", f"{j['completed']:,}", rate,
                             f"{top[0]} ({top[1]:,})" if top else "-"])
    return (HEADER, rows) if rows else ([], [])


def step_rows(data: Results) -> tuple[list[str], list[list[str]]]:
    """One row per label, level and step (`journey/step`); empty without journeys."""
    rows = []
    for level in data.levels:
        for s in data.servers:
            for page, (ok, failed, docs) in _steps(data.cell(s, level)).items():
                rows.append([f"{level:,}", s, page, f"{ok:,}", f"{failed:,}", _ms(docs, "p50"), _ms(docs, "p99")])
    return (STEP_HEADER, rows) if rows else ([], [])


def journeys_json(trials: list[TrialRecord]) -> dict[str, object]:
    """`--json`'s keys for a cell with journeys (`journeys`, `journey_completion`); none without."""
    found = cell_journeys(trials)
    if not found:
        return {}
    done = sum(j["completed"] for j in found.values())
    ended = sum(j["started"] - j["cut"] for j in found.values())
    return {"journeys": found, "journey_completion": round(done / ended, 4) if ended else None}
