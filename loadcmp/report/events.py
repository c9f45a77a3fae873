"""--event: what each event fired in a trial cost, from what was stored per second, never from live state.

Each event's window starts at the second it fired in and lasts until 2 s after its command returned (a server acts on a
signal in its own time), or, when throughput fell in that time below 90 % of the mean of the 5 s before it, until
it was back there (the recovery time, counted from when it fired); the next event's second ends it. Over that
window: the requests that failed, by kind (timeline.parquet), the p99 against the 5 s before, and the server's
memory and processes (server.parquet) against before. The section "Events" and `--json`'s `events` (per server x
level) say it.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import pandas as pd

from ..facts import EventDoc, events_of
from ..load.record.outcomes import KINDS
from ..store.reader import Results

BEFORE_S = 5
"""The seconds before an event its cost is measured against."""
BACK = 0.9
"""Throughput is back at this share of the seconds before's."""
GRACE_S = 2
"""Seconds after an event's command returned in which its effect is still its own."""
PAUSE = "pause"
"""The first word of every stack's `pause ROLE DURATION` (`loadcmp.events.plan`): its cost is that role's stall's."""

LEGEND = ("fired: seconds into the window (asked: its time); took: until its command returned or its container "
          "was back; failed: requests that failed in its window (its second until 2 s after it returned, or until "
          "the server was back), by kind; dropped: requests the rate schedule did not send in that window, the "
          "client's in-flight cap being full (never sent, so not among failed here; a run's failed counts them); "
          "recovery: from when it fired until a whole second served within 10 % of "
          "the mean of the 5 s before ('< 1 s': no second fell below it; '(N s before)': only N s of the window "
          "came before it, and those are compared; '-': it fired in the window's first second, with no second "
          "before it to compare, so no recovery is measured); p99, memory and processes: the 5 s before against "
          "the event's window (the peak).")


class EventCost(TypedDict):
    """One event and its cost (`--json`'s `events` items)."""

    trial: int
    asked: str
    action: str
    at_s: float
    start_s: float
    took_s: float
    ok: bool
    said: str | None
    failed: int
    failures: dict[str, int]  #: by kind, those seen
    served: int  #: requests that succeeded in its window (a failed rate's other part)
    dropped: int  #: requests the client dropped at its in-flight cap in the window (never sent: not in failed)
    recovery_s: float | None  #: None: see recovery_why
    recovery_why: str | None  #: why recovery_s is None: "not back" (within its window), "no baseline" (no second
    #: before it served a request: it fired in the window's first second)
    baseline_s: int  #: the seconds before it its recovery and p99 are measured against (BEFORE_S, or fewer)
    p99_before_ms: float | None
    p99_during_ms: float | None
    mem_before_bytes: float | None
    mem_peak_bytes: float | None
    procs_before: float | None
    procs_peak: float | None
    evidence: list[str]


def col(df: pd.DataFrame, key: str) -> pd.Series:
    """A column, or an empty one where it was not stored."""
    return df[key] if key in df else pd.Series(dtype=float)


def _mean(col: pd.Series) -> float | None:
    col = pd.to_numeric(col, errors="coerce").dropna()
    return round(float(col.mean()), 3) if len(col) else None


def _peak(col: pd.Series) -> float | None:
    col = pd.to_numeric(col, errors="coerce").dropna()
    return float(col.max()) if len(col) else None


def recovery(ok: pd.Series, start_s: float, end_s: float, until: int | None = None) -> tuple[float | None, int]:
    """(seconds from `start_s` until throughput was back, the last second of the event's window), from a trial's
    successful requests per second (indexed by second). The event may dent throughput from its second until
    GRACE_S after its command returned (a server acts on a signal in its own time), before the next event's
    second (`until`): 0.0 when no second there fell below BACK of the mean of the BEFORE_S before it; None when
    none came back, or none before it served a request (no baseline: `cost` tells the two apart)."""
    s0 = int(math.floor(start_s))
    last = max(s0, int(math.floor(end_s)) + GRACE_S)
    if until is not None:
        last = max(s0, min(last, until - 1))
    before = ok[(ok.index >= s0 - BEFORE_S) & (ok.index < s0)]
    if before.empty or before.mean() <= 0:
        return None, last
    low = BACK * float(before.mean())
    seconds = sorted(i for i in ok.index if i >= s0)
    dip = next((s for s in seconds if s <= last and ok[s] < low), None)
    if dip is None:
        return 0.0, last
    back = next((s for s in seconds if s > dip and ok[s] >= low), None)
    end = max(last, int(ok.index.max()) if back is None else back - 1)
    if until is not None:  # the next event's second ends this one's window, however long this one took to recover
        end = max(s0, min(end, until - 1))
    return (None if back is None else round(back - start_s, 3)), end


def cost(ev: EventDoc, trial: int, timeline: pd.DataFrame, server: pd.DataFrame, until: int | None = None
         ) -> EventCost:
    """One event's cost from its trial's rows of timeline.parquet and server.parquet (`until`: the next event's
    second, where this one's window ends)."""
    tl = timeline.set_index("second").sort_index()
    back, last = recovery(tl["ok"], ev["start_s"], ev["end_s"], until)
    s0 = int(math.floor(ev["start_s"]))
    during = tl[(tl.index >= s0) & (tl.index <= last)]
    before = tl[(tl.index >= s0 - BEFORE_S) & (tl.index < s0)]
    based = len(before) > 0 and float(before["ok"].mean()) > 0
    why = None if back is not None else "not back" if based else "no baseline"
    kinds = {k: int(during[k].sum()) for k in KINDS if k != "ok" and k in during and during[k].sum() > 0}
    dropped = int(during["dropped"].sum()) if "dropped" in during else 0  # never sent: apart from the failures
    sv = server.set_index("second") if "second" in server else pd.DataFrame()
    s_during = sv[(sv.index >= s0) & (sv.index <= last)] if len(sv) else sv
    s_before = sv[(sv.index >= s0 - BEFORE_S) & (sv.index < s0)] if len(sv) else sv
    return EventCost(trial=trial, asked=ev["asked"], action=ev["action"], at_s=ev["at_s"], start_s=ev["start_s"],
                     took_s=round(ev["end_s"] - ev["start_s"], 3), ok=ev["ok"], said=ev["said"],
                     failed=sum(kinds.values()), failures=kinds, served=int(during["ok"].sum()), dropped=dropped,
                     recovery_s=back, recovery_why=why, baseline_s=len(before) if based else 0,
                     p99_before_ms=_mean(col(before, "p99_ms")), p99_during_ms=_peak(col(during, "p99_ms")),
                     mem_before_bytes=_mean(col(s_before, "mem_bytes")),
                     mem_peak_bytes=_peak(col(s_during, "mem_bytes")),
                     procs_before=_mean(col(s_before, "procs")), procs_peak=_peak(col(s_during, "procs")),
                     evidence=list(ev["evidence"]))


def _rows(df: pd.DataFrame, server: str, level: int, trial: int) -> pd.DataFrame:
    if df.empty or "server" not in df:
        return pd.DataFrame(columns=["second"])
    return df[(df.server == server) & (df.level == level) & (df.trial == trial)]


def cell_costs(res: Results, server: str, level: int) -> list[EventCost]:
    """The events of one server x level, each trial's in time order."""
    out = []
    for t in res.cell(server, level):
        tl, sv = _rows(res.timeline, server, level, t["trial"]), _rows(res.server, server, level, t["trial"])
        evs = sorted(events_of(t), key=lambda e: e["start_s"])
        for i, ev in enumerate(evs):  # the next event's second ends this one's window
            out.append(cost(ev, t["trial"], tl, sv, int(math.floor(evs[i + 1]["start_s"])) if i + 1 < len(evs)
                            else None))
    return out


def events_json(res: Results, server: str, level: int) -> dict[str, Any]:
    """`--json`'s `events` of a cell (none without events)."""
    found = cell_costs(res, server, level)
    return {"events": found} if found else {}


def _mib(v: float | None) -> str:
    return "–" if v is None else f"{v / 2**20:,.1f} MiB"


def _num(v: float | None, fmt: str = "{:,.0f}") -> str:
    return "–" if v is None else fmt.format(v)


def recovery_cell(c: EventCost) -> str:
    """The recovery in the Events table: '-' with no baseline, the seconds compared when fewer than BEFORE_S."""
    if c["recovery_why"] == "no baseline":
        return "-"
    back = ("not back" if c["recovery_s"] is None else "< 1 s" if c["recovery_s"] == 0
            else f"{c['recovery_s']:.1f} s")
    return back + (f" ({c['baseline_s']} s before)" if c["baseline_s"] < BEFORE_S else "")


def event_rows(res: Results) -> tuple[list[str], list[list[str]]]:
    """The Events table: one row per event of every server x level x trial (empty: no events)."""
    header = ["server", "clients", "trial", "event", "fired", "took", "failed", "dropped", "recovery", "p99 ms",
              "memory", "processes"]
    rows = []
    for server in res.servers:
        for level in res.levels:
            for c in cell_costs(res, server, level):
                kinds = ", ".join(f"{k} {v:,}" for k, v in c["failures"].items())
                rows.append([server, str(level), str(c["trial"]), c["action"] + ("" if c["ok"] else " (failed)"),
                             f"{c['start_s']:.2f} s ({c['at_s']:g})", f"{c['took_s']:.2f} s",
                             f"{c['failed']:,}" + (f" ({kinds})" if kinds else ""), f"{c['dropped']:,}",
                             recovery_cell(c),
                             f"{_num(c['p99_before_ms'], '{:,.1f}')} → {_num(c['p99_during_ms'], '{:,.1f}')}",
                             f"{_mib(c['mem_before_bytes'])} → {_mib(c['mem_peak_bytes'])}",
                             f"{_num(c['procs_before'], '{:,.1f}')} → {_num(c['procs_peak'])}"])
    return header, rows


def paused(c: EventCost) -> str:
    """What a pause of a role (an app's database) cost, in words: its failures named as that role's pause, or that the
    requests waited through it (the p99 against before, and when throughput was back)."""
    role = c["action"].split()[1]
    p99 = f"p99 {_num(c['p99_before_ms'], '{:,.1f}')} ms before → {_num(c['p99_during_ms'], '{:,.1f}')} ms in it"
    back = ("throughput never fell below 90 % of before" if c["recovery_s"] == 0
            else f"throughput was back {c['recovery_s']:.1f} s after it fired" if c["recovery_s"] is not None
            else "throughput was not back within its window" if c["recovery_why"] == "not back"
            else "no second before it to compare its throughput with")
    if c["failed"]:
        kinds = ", ".join(f"{k} {v:,}" for k, v in c["failures"].items())
        n = f"{c['failed']:,} request" + ("s" if c["failed"] != 1 else "")
        return (f"{n} failed in its window ({kinds}): the {role}'s pause, the server waiting on its {role} "
                f"({c['took_s']:.1f} s until it was back); {p99}; {back}")
    return (f"no request failed in its window: they waited on the paused {role} ({c['took_s']:.1f} s until it was "
            f"back); {p99}; {back}")


def event_lines(res: Results) -> list[str]:
    """Each event in words: a failed one's reason, and the servers' own lines about it, quoted."""
    out = []
    for server in res.servers:
        for level in res.levels:
            for c in cell_costs(res, server, level):
                head = f"{server} at {level} clients, trial {c['trial']}: {c['action']} at {c['start_s']:.2f} s"
                if not c["ok"]:
                    out.append(f"{head} failed: {c['said']}")
                if c["ok"] and c["action"].split()[0] == PAUSE and len(c["action"].split()) > 1:
                    out.append(f"{head}: {paused(c)}")
                quoted = "; ".join(f"“{q}”" for q in c["evidence"])
                out.append(f"{head}: " + (quoted if quoted else "the servers logged nothing about it"))
    return out
