"""The command's records as the page's events; the same events for a live command and a stored run.

A live command hands over what the store is handed, where it is handed it, and nothing else:

    client   each second of the window as it closes (`driver.Live.closed`), made into a row by
             `summary.second_row`, the function that makes timeline.parquet's rows; before the window,
             each warm-up second as the engine's tick closes it (`second` < 0, `warmup`: its requests
             started and the client's own load, which are not stored)
    server   each row of the sampler as it keeps it (`metrics.Sampler.on_row`), server.parquet's rows;
             the warm-up's seconds (`second` < 0), which the sampler samples for the page alone
    trial    a trial starts (its server label, level and number)
    mark     an --event of the trial as it is fired (`running`) and as it ends (`events.fire.Firer`): what
             was asked, its start and end in seconds of the window, whether it failed and why
    stored   a trial's record once the writer has it on disk (`RunWriter.watch`): status, causes in
             words, its events (`facts.EventDoc`, evidence quoted), and its stored rows, which replace
             what was drawn live of it
    progress the run as run.json says it after each change: the grid, the capacity search, the study
    parts    --trace: where a trial's time went, once its servers' lines are joined after it (trace.json's
             figures of the trial: each part's share of p50 and p99), the page showing each label's last
    end      the run's final status, where it is stored and its report

`storedruns.events` makes the same events from a results folder, so a run watched live and one
opened a month later are drawn by the same page from the same records.
"""

from __future__ import annotations

import functools
import logging
import math
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..load.driver import Live
from ..load.record.outcomes import KINDS
from ..load.record.saturation import CPU_BOUND_PCT, LAG_BOUND_MS
from ..load.record.summary import second_row
from ..facts import EventDoc, events_of
from ..records import RunDoc, TrialRecord
from ..report.causes import note
from ..store.traceparts import TrialMatch, read_matches
from ..trace.breakdown import PARTS, SHORT
from ..store.reader import causes_of
from ..store.writer import Row, RunWriter
from ..units import cpu_list
from .hub import Event, Hub


log = logging.getLogger("loadcmp.live")
F = TypeVar("F", bound=Callable[..., None])


def never_raises(f: F) -> F:
    """A hook of the page: whatever goes wrong in it is logged (--debug) and the command goes on; the page
    must never stop or slow a measurement."""

    @functools.wraps(f)
    def quiet(*args: object) -> None:
        try:
            f(*args)
        except Exception:  # a bug of the page is not the measurement's: logged, not raised
            log.debug("the live page's %s failed", f.__name__, exc_info=True)

    return quiet  # type: ignore[return-value]


class Trial(Protocol):
    """What the feed reads of a planned trial (`sweep.trial.Planned`)."""

    @property
    def label(self) -> str: ...
    @property
    def level(self) -> int: ...
    @property
    def trial(self) -> int: ...


def hello(command: str, title: str) -> Event:
    """The first event: what the page shows and the client-bound thresholds it marks in red."""
    return {"type": "hello", "command": command, "title": title,
            "bound": {"cpu_pct": CPU_BOUND_PCT, "lag_ms": LAG_BOUND_MS}, "kinds": list(KINDS)}


def trial_started(server: str, level: int, trial: int, i: int | None = None, n: int | None = None) -> Event:
    return {"type": "trial", "key": {"server": server, "level": level, "trial": trial}, "i": i, "n": n}


def stored(rec: TrialRecord, timeline: list[Row], server: list[Row]) -> Event:
    """A trial as stored: its status and why, its causes in words, client-bound, and its rows."""
    r: Mapping[str, Any] = rec.get("result") or {}
    failures = r.get("failures", {})
    causes = [note(c, failures, r.get("slow_connects")) for c in causes_of(rec)]
    return {"type": "stored", "key": {"server": rec["server"], "level": rec["level"], "trial": rec["trial"]},
            "status": rec["status"], "reason": rec.get("reason"), "rps": r.get("rps"), "ok": r.get("ok"),
            "failed": r.get("failed"), "client_bound": bool(r.get("client_bound")),
            "client_bound_reason": r.get("client_bound_reason"), "causes": causes,
            "oom_kills": (rec.get("server_metrics") or {}).get("oom_kills", 0),
            "roles": list(((rec.get("server_metrics") or {}).get("apart") or {})),
            "events": [dict(e) for e in events_of(rec)], "timeline": timeline, "server": server}


def mark(key: Mapping[str, Any], doc: EventDoc, running: bool) -> Event:
    """An event of the trial `key` as it is fired (`running`: its end and outcome not known yet) or as it ended."""
    return {"type": "mark", "key": dict(key), "asked": doc["asked"], "action": doc["action"], "role": doc["role"],
            "at_s": doc["at_s"], "start_s": doc["start_s"], "end_s": None if running else doc["end_s"],
            "ok": None if running else doc["ok"], "said": doc["said"]}


def parts(match: TrialMatch) -> Event | None:
    """A traced trial's parts, from its join's figures (None: nothing matched): each part with any share of p50 or
    p99, and each part it does not know (the database's, where none logged its requests) as null, not 0; in the
    order a request goes through them (`order`: every part's, so the page orders its columns the same), named as
    the report names them."""
    p50, p99 = match.get("p50") or {}, match.get("p99") or {}
    if not p99:
        return None
    shown = [p for p in PARTS if p not in p99 or p50.get(p, 0) or p99.get(p, 0)]
    return {"type": "parts", "key": {"server": match["label"], "level": match["level"], "trial": match["trial"]},
            "matched": match["matched"] / max(match["answered"], 1), "p50_ms": match.get("p50_ms"),
            "p99_ms": match.get("p99_ms"), "order": list(PARTS),
            "parts": [{"part": p, "name": SHORT[p], "p50": p50.get(p), "p99": p99.get(p)} for p in shown]}


def progress(run: RunDoc, path: Path | str) -> Event:
    """Where the command is, from run.json as written: the grid's cells, the servers' limits, the capacity
    search's probes, the study's trials."""
    spec: Mapping[str, Any] = run.get("spec") or {}
    cells = [{"server": t["server"], "level": t["level"], "trial": t["trial"], "status": t["status"]}
             for t in run.get("trials", [])]
    cores = (run.get("machine") or {}).get("cores")
    servers = {label: _limits(info, cores) for label, info in (run.get("servers") or {}).items()}
    ev: Event = {"type": "progress", "kind": run.get("kind", "run"), "name": run.get("name"),
                 "status": run.get("status"), "path": str(path), "levels": list(spec.get("levels") or []),
                 "trials": spec.get("trials", 1), "labels": list(spec.get("servers") or []), "cells": cells,
                 "servers": servers}
    if cap := run.get("capacity"):
        ev["capacity"] = {"unit": cap["unit"], "target": cap["target"], "servers": {
            label: {"text": s["text"], "kind": s["kind"], "level": s["level"],
                    "path": [{k: p[k] for k in ("level", "stage", "met", "client_bound", "text")} for p in s["path"]]}
            for label, s in cap["servers"].items()}}
    if tune := run.get("tune"):
        ev["tune"] = {"server": tune["server"], "unit": tune["unit"], "text": tune.get("text", ""),
                      "best": tune.get("best"),
                      "trials": [{k: t.get(k) for k in ("number", "label", "params", "state", "value", "met",
                                                         "client_bound", "text")} for t in tune["trials"]]}
    return ev


def _limits(info: Mapping[str, Any], cores: int | None) -> dict[str, Any]:
    """What a server's figures are drawn against: its cores, its memory cap, its busy-worker limit."""
    limit = info.get("busy_limit")
    cpus = info.get("cpus")
    return {"stack": info.get("stack"), "workers": info.get("workers"), "memory_bytes": info.get("memory_bytes"),
            "cores": len(cpu_list(cpus)) if cpus else cores, "busy_limit": limit,
            "busy_limit_value": (info.get("settings") or {}).get(limit) if limit else None}


def ended(run: RunDoc, path: Path | str, report: str | None) -> Event:
    """The run's end. `report` is a link only where a server outlives the page (`loadcmp serve`); a live
    command's page instead names what lasts: the folder, its report.html when written, and the command that
    opens it all later."""
    folder = Path(path)
    own = folder / "report" / "report.html"
    return {"type": "end", "status": run.get("status"), "path": str(folder), "report": report,
            "report_file": str(own) if own.is_file() else None,
            "serve": f"loadcmp serve {shlex.quote(str(folder.parent))}",
            "problems": list(run.get("problems") or [])}


class Feed:
    """A live command's events, told by its hooks (`cli.live` wires them) into the hub.

    Each method is called in the thread of what it reports (the load's, the sampler's, the main one),
    does a few dictionary operations and hands the event over: nothing here waits."""

    def __init__(self, hub: Hub, command: str, title: str, report: str | None = None) -> None:
        self.hub = hub
        self.keys: dict[str, Any] = {}
        self.seen = 0
        self.report = report
        self.path: Path | None = None
        self.warm = (0, 0, 0)
        """The warm-up second told last, the requests started before it and up to now (the trial's)."""
        hub.publish(hello(command, title))

    @never_raises
    def trial_start(self, p: Trial, i: int, n: int, seconds: float) -> None:
        self.begin(p.label, p.level, p.trial, i, n)

    @never_raises
    def begin(self, server: str, level: int, trial: int, i: int | None = None, n: int | None = None) -> None:
        self.keys = {"server": server, "level": level, "trial": trial}
        self.warm = (0, 0, 0)
        self.hub.publish(trial_started(server, level, trial, i, n))

    @never_raises
    def live(self, lv: Live) -> None:
        if not lv.measuring and lv.warmup > 0:
            self.warmup(lv)
        for j, s in lv.closed:
            self.hub.publish({"type": "client", "row": {**self.keys, **second_row(j, s)}})

    def warmup(self, lv: Live) -> None:
        """A warm-up second as the engine's tick closes it (-1 the last before the window): the requests started
        in it and the client's own load; no outcome is counted before the window, so there is no ok nor latency.
        A tick within the load's first second adds its requests to the next one; with several workers a second
        is told again as each one's share comes (the page keeps the last)."""
        second = math.floor(lv.elapsed) - 1
        if not -math.ceil(lv.warmup) <= second < 0:
            return
        if second != self.warm[0]:  # a new second: the requests before it are the ones told so far
            self.warm = (second, self.warm[2], self.warm[2])
        self.warm = (second, self.warm[1], lv.warmup_started)
        row = {"second": second, "warmup": True, "started": lv.warmup_started - self.warm[1],
               "client_cpu_pct": lv.client_cpu, "loop_lag_ms": lv.lag_ms}
        self.hub.publish({"type": "client", "row": {**self.keys, **row}})

    @never_raises
    def sample(self, row: Row) -> None:
        self.hub.publish({"type": "server", "row": dict(row)})

    @never_raises
    def event(self, doc: EventDoc, running: bool) -> None:
        self.hub.publish(mark(self.keys, doc, running))

    @never_raises
    def done(self, status: str) -> None:
        """The end of a command that stored nothing (bench without --out)."""
        self.hub.publish({"type": "end", "status": status, "path": None, "report": None, "problems": []})

    @never_raises
    def trial_end(self, p: Trial, rec: TrialRecord) -> None:
        """A trial's end, after its join (--trace): its parts, read from trace.json (a few figures a trial)."""
        if self.path is None:
            return
        key = (rec["server"], rec["level"], rec["trial"])
        for m in read_matches(self.path):
            if (m["label"], m["level"], m["trial"]) == key and (ev := parts(m)) is not None:
                self.hub.publish(ev)

    @never_raises
    def stored(self, writer: RunWriter, timeline: list[Row], server: list[Row]) -> None:
        """The writer's watch: a new trial's record and rows, the progress, and the end."""
        self.path = writer.path
        trials = writer.run["trials"]
        for rec in trials[self.seen:]:
            self.hub.publish(stored(rec, timeline if rec is trials[-1] else [], server if rec is trials[-1] else []))
        self.seen = len(trials)
        self.hub.publish(progress(writer.run, writer.path))
        if writer.run.get("status") not in (None, "running"):
            self.hub.publish(ended(writer.run, writer.path, self.report))
