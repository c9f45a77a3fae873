"""Reading results folders: the one loader every reader goes through.

`load_results(*paths)` reads one or several folders written by `store.RunWriter`
into one `Results`. The report, its tables and figures, `--json`, the
end-of-sweep table and smoke's checks all read through it, so they agree on
which trials exist, what each server is called and in which order servers come.

Server labels stay as stored unless two folders use the same one; then the
run's name is added ("nginx (paper-2013)") so nothing is mixed up.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa

from ..errors import StoreError
from ..load.record.histogram import Histogram
from ..records import (CapacityDoc, CapacityServerDoc, CauseDoc, LoadSummary, RunDoc, RunStatus, ServerInfo,
                       ServerMetrics, SpecDoc, TrialRecord, missing_keys)
from .handshakes import HandshakeCost, handshake_cost, spec_tls, tls_of
from .writer import FORMAT, SUMMARY_COLUMNS, summary_row

_WORST: list[str] = ["complete", "running", "interrupted", "abandoned", "failed"]
"""Statuses from best to worst: several runs together have the worst one."""


@dataclass(frozen=True)
class Unread:
    """A per-second table of a results folder that could not be read: the folder is read without it."""

    file: Path  #: timeline.parquet or server.parquet of one folder
    damage: str | None  #: how reading it failed; None: the file is missing

    @property
    def table(self) -> str:
        """Which table: `timeline` (the client side) or `server` (the server side)."""
        return self.file.stem


OwnerState = Literal["gone", "running", "elsewhere"]
"""What is known here of a run's process: it ended, it still runs, or it ran on another machine (or boot)."""


@dataclass(frozen=True)
class Owner:
    """The process that writes a results folder (run.json's `owner` and `host`)."""

    pid: str
    machine: str  #: the name of the machine it runs on
    state: OwnerState


@dataclass(frozen=True)
class Run:
    """One results folder: where it is, its run.json, and its unique name."""

    path: Path
    doc: RunDoc
    name: str  #: the run's name, suffixed " #2" when two folders share one
    unread: tuple[Unread, ...] = ()  #: its per-second tables that could not be read (the rest is read without)

    @property
    def status(self) -> RunStatus | str:
        """As stored, but `abandoned` for a run left `running` by a process that is gone."""
        status = self.doc.get("status", "unknown")
        if status == "running" and (owner := self.owner) is not None and owner.state == "gone":
            return "abandoned"
        return status

    @property
    def owner(self) -> Owner | None:
        """The process that writes this folder and whether it still runs (None: run.json names none)."""
        owner = self.doc.get("owner")
        if not owner:
            return None
        from ..lab.provenance import owner_gone, this_host

        host = self.doc.get("host", "")
        state: OwnerState = "gone" if owner_gone(owner, host) else "running" if host == this_host() else "elsewhere"
        machine = host.partition("/")[0] or self.doc.get("machine", {}).get("hostname") or "an unknown machine"
        return Owner(owner.partition(":")[0], machine, state)

    @property
    def problems(self) -> list[str]:
        return list(self.doc.get("problems", []))


@dataclass
class Results:
    """One or more results folders as one body of data."""

    runs: list[Run]
    trials: list[TrialRecord]  #: every trial, `server` relabelled where folders collide
    timeline: pd.DataFrame  #: client side, one row per second (same labels as `trials`)
    server: pd.DataFrame  #: server side 1 Hz samples (same labels)
    servers: list[str]  #: the labels in ONE order for every table and figure (see `_order`)
    origin: dict[str, tuple[Run, str]] = field(default_factory=dict)  #: label -> its run and label there
    pages: pd.DataFrame = field(default_factory=pd.DataFrame)
    """A load of several pages: timeline.parquet's rows of each page and second (`page` named); `timeline`
    keeps the load's own rows only."""

    def info(self, server: str) -> tuple[Run, ServerInfo] | None:
        """A label's run and its run.json entry (labels relabelled across folders included)."""
        run, label = self.origin.get(server, (self.runs[0], server))
        info = run.doc.get("servers", {}).get(label)
        return (run, info) if info is not None else None

    @property
    def path(self) -> Path:
        """The first folder (where a report goes by default)."""
        return self.runs[0].path

    @property
    def run(self) -> RunDoc:
        """The first folder's run.json (THE run when one folder was read)."""
        return self.runs[0].doc

    @property
    def name(self) -> str:
        return " + ".join(r.name for r in self.runs)

    @property
    def status(self) -> str:
        """The worst status of the runs (one run: its status)."""
        return max((r.status for r in self.runs), key=lambda s: _WORST.index(s) if s in _WORST else len(_WORST))

    @property
    def interrupted(self) -> list[Path]:
        """The folders whose run was interrupted or abandoned (they hold fewer trials than planned)."""
        return [r.path for r in self.runs if r.status in ("interrupted", "abandoned")]

    @property
    def problems(self) -> list[str]:
        return [p for r in self.runs for p in r.problems]

    @property
    def unread(self) -> list[Unread]:
        """The per-second tables of every folder that could not be read (the report names them)."""
        return [u for r in self.runs for u in r.unread]

    @cached_property
    def levels(self) -> list[int]:
        return sorted({int(t["level"]) for t in self.trials})

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per trial (the columns of summary.csv)."""
        return pd.DataFrame([summary_row(t) for t in self.trials], columns=SUMMARY_COLUMNS)

    def cell(self, server: str, level: int) -> list[TrialRecord]:
        """The trials of one server at one level that produced a measurement; a page of a mix (`nginx /x`,
        `nginx mix`: `store.pagecells`) its share of its server's."""
        got = [t for t in self.trials if t["server"] == server and t["level"] == level and t.get("result")]
        if got or server in self.servers:
            return got
        from .pagecells import page_cell

        return page_cell(self.trials, self.servers, server, level)

    def has(self, label: str) -> bool:
        """A label of these results: a server's, or a page of its mix (`store.pagecells`)."""
        from .pagecells import MIX, mix_pages

        server, _, page = label.partition(" ")
        return label in self.servers or (server in self.servers and (page == MIX and bool(mix_pages(
            self.trials, server)) or page in mix_pages(self.trials, server)))

    def pooled_latency(self, server: str, level: int) -> Histogram:
        """Every request's latency of a cell's trials in one histogram: the one definition of
        a cell's percentiles (Table 1, the figures, `--json` and smoke checks alike)."""
        return pooled_latency(self.cell(server, level))

    def of_server(self, server: str) -> list[TrialRecord]:
        return [t for t in self.trials if t["server"] == server]

    @cached_property
    def capacity(self) -> dict[str, tuple[CapacityDoc, CapacityServerDoc]]:
        """Each label's capacity search (`loadcmp capacity`), with the search it was part of; {} for a run."""
        out: dict[str, tuple[CapacityDoc, CapacityServerDoc]] = {}
        for label in self.servers:
            run, there = self.origin.get(label, (self.runs[0], label))
            doc = run.doc.get("capacity")
            if doc is not None and there in doc.get("servers", {}):
                out[label] = (doc, doc["servers"][there])
        return out

    def client_bound(self, server: str, level: int) -> ClientBound | None:
        """Why the client limited a cell's measurement (the first trial that says so), or None."""
        return client_bound(self.cell(server, level))

    @cached_property
    def tls(self) -> bool:
        """Whether these runs used https: a trial's TLS facts, a label's primed handshake or the spec say so."""
        return (any(tls_of(t) for t in self.trials) or any(spec_tls(r.doc["spec"])[0] for r in self.runs)
                or any("tls" in info for r in self.runs for info in (r.doc.get("servers") or {}).values()))


@dataclass(frozen=True)
class ClientBound:
    """A measurement the client limited: what says so, and what would help."""

    reason: str
    advice: str | None
    handshakes: HandshakeCost | None = None
    """https with full handshakes: what a handshake cost the client and the server (`handshake_cost`)."""


def client_bound(trials: list[TrialRecord]) -> ClientBound | None:
    """The first of these trials whose client was the bottleneck (`load.record.saturation`)."""
    for t in trials:
        r = t.get("result")
        if r and r.get("client_bound"):
            cost = handshake_cost([t])
            return ClientBound(r.get("client_bound_reason") or "the client was saturated", r.get("client_advice"),
                               cost if cost is not None and cost.full else None)
    return None


def pooled_latency(trials: list[TrialRecord]) -> Histogram:
    """The trials' latency histograms merged (empty when none was stored)."""
    h = Histogram()
    for t in trials:
        if "latency_hist" in t:
            h = h.merge(Histogram.from_dict(t["latency_hist"]))
    return h


def result_of(t: TrialRecord) -> LoadSummary | None:
    """A trial's measurement, or None when it did not run."""
    return t.get("result") or None


def metrics_of(t: TrialRecord) -> ServerMetrics:
    """A trial's server-side summary ({} when none was sampled)."""
    return t.get("server_metrics") or ServerMetrics()


def cpu_of_its_cpus(t: TrialRecord) -> tuple[float | None, dict[str, float]]:
    """The CPU used on a server's CPUs: its own mean plus its roles' measured apart (an app's database runs
    on the same CPU set), and those roles' shares by name. None: no CPU was sampled."""
    m = metrics_of(t)
    cpu = m.get("cpu_pct")
    apart = {role: float(v) for role, rm in (m.get("apart") or {}).items() if (v := rm.get("cpu_pct"))}
    return (None if cpu is None else cpu + sum(apart.values())), apart


_FIGURES = re.compile(r"\d[\d,.]*")
"""Figures in an older run.json's note: masked, its limit names the same cause in every trial."""


def causes_of(t: TrialRecord) -> list[CauseDoc]:
    """The limits a trial's evidence points to: its `causes`; a run.json written before they were records keeps
    notes (sentences), read here, and only here, into records that keep their words: the limit before the
    dash, the evidence after it (`said`). Those older runs also noted limits read from the config alone: a
    note of a trial where nothing failed and no log was read is no evidence and is left out."""
    if not t.get("result"):
        return []
    if "causes" in t:
        return t["causes"]
    if not t["result"]["failed"] and "log_evidence" not in t:
        return []
    out = []
    for text in t.get("notes", []):
        limit, _, said = text.partition(" — ")
        rec = CauseDoc(cause=_FIGURES.sub("#", limit), phrase=limit)
        if said:
            rec["said"] = said
        out.append(rec)
    return out


def _read_one(path: Path | str) -> tuple[Run, pd.DataFrame, pd.DataFrame]:
    p = Path(path)
    rj = p / "run.json"
    if not p.is_dir():
        raise StoreError(f"{p} is not a results folder (no such directory)")
    if not rj.is_file():
        raise StoreError(f"{p} is not a results folder (no run.json)")
    try:
        doc = json.loads(rj.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise StoreError(f"{rj} is unreadable: {e}") from None
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if fmt != FORMAT:
        raise StoreError(
            f"{p} was written in results format {fmt!r}; this loadcmp reads format {FORMAT} "
            "(re-run the experiment, or use the loadcmp version that wrote it)"
        )

    missing = missing_keys(doc, RunDoc) or (["spec"] if not isinstance(doc["spec"], dict) else
                                            [f"spec.{k}" for k in missing_keys(doc["spec"], SpecDoc)])
    if missing:
        raise StoreError(f"{rj} is not a complete run.json (no {', '.join(missing)}): damaged, or written by an "
                         "older loadcmp (re-run it, or read it with the version that wrote it)")

    _with_busy_limits(doc)
    _with_workers(doc)
    unread: list[Unread] = []
    tables = [_read_table(p / name, unread) for name in ("timeline.parquet", "server.parquet")]
    return Run(p, doc, str(doc.get("name") or p.name), tuple(unread)), tables[0], tables[1]


def _read_table(f: Path, unread: list[Unread]) -> pd.DataFrame:
    """One per-second table of a folder; empty, and added to `unread`, when it is missing or damaged (the
    rest of the folder is still read: run.json alone holds every trial's figures)."""
    if not f.exists():
        unread.append(Unread(f, None))
        return pd.DataFrame()
    try:
        return pd.read_parquet(f)
    except (OSError, ValueError, pa.ArrowException) as e:  # a damaged or truncated file
        unread.append(Unread(f, str(e).split(f"'{f}': ", 1)[-1] or type(e).__name__))  # the path is said once
        return pd.DataFrame()


def _with_busy_limits(doc: dict[str, Any]) -> None:
    """Labels stored before run.json kept a stack's `busy_limit` take it from the stack of that name, when
    this loadcmp knows one (so their report still says when every worker was busy)."""
    from ..errors import LoadcmpError
    from ..lab import stacks

    for info in (doc.get("servers") or {}).values():
        if isinstance(info, dict) and "busy_limit" not in info and info.get("stack"):
            with contextlib.suppress(LoadcmpError):
                limit = stacks.get_stack(str(info["stack"])).busy_limit
                if limit is not None:
                    info["busy_limit"] = limit


def _with_workers(doc: dict[str, Any]) -> None:
    """Labels stored before run.json said `workers` (how the server handles connections) say it in
    Apache's word, `mpm`: read as `workers`."""
    for info in (doc.get("servers") or {}).values():
        if isinstance(info, dict) and "mpm" in info:
            info.setdefault("workers", info.pop("mpm"))


def _order(run: Run, trials: list[TrialRecord]) -> list[str]:
    """A run's labels in the order its spec lists the stacks, then first appearance
    (trial 1 runs the variants in spec order, so that is the spec's order too)."""
    listed = [str(s) for s in run.doc["spec"]["servers"]]
    stack = {t["server"]: t.get("stack", "") for t in trials}  # bench trials have none

    def rank(label: str) -> int:
        for key in (label, stack[label]):
            if key in listed:
                return listed.index(key)
        return len(listed)

    return sorted(dict.fromkeys(t["server"] for t in trials), key=rank)


def load_results(*paths: Path | str) -> Results:
    """Read one or more results folders; a one-line StoreError for anything that is not one."""
    if not paths:
        raise StoreError("give at least one results folder")
    read = [_read_one(p) for p in paths]
    names = [r.name for r, _, _ in read]
    runs = [Run(r.path, r.doc, n if names.count(n) == 1 else f"{n} #{i + 1}", r.unread)
            for i, ((r, _, _), n) in enumerate(zip(read, names, strict=True))]
    seen: dict[str, int] = {}
    for run in runs:
        for label in {t["server"] for t in run.doc.get("trials", [])}:
            seen[label] = seen.get(label, 0) + 1
    trials: list[TrialRecord] = []
    servers: list[str] = []
    origin: dict[str, tuple[Run, str]] = {}
    timelines: list[pd.DataFrame] = []
    samples: list[pd.DataFrame] = []
    for run, (_, tl, sv) in zip(runs, read, strict=True):

        def relabel(label: str, name: str = run.name) -> str:
            return f"{label} ({name})" if len(runs) > 1 and seen.get(label, 0) > 1 else label

        mine: list[TrialRecord] = []
        for t in run.doc.get("trials", []):
            rec = t.copy()
            rec["server"] = relabel(t["server"])
            origin[rec["server"]] = (run, t["server"])
            mine.append(rec)
        trials += mine
        servers += [s for s in _order(run, mine) if s not in servers]
        for df, acc in ((tl, timelines), (sv, samples)):
            if not df.empty:
                d = df.copy()
                d["server"] = d["server"].map(relabel)
                acc.append(d)
    timeline, pages = _pages_apart(_concat(timelines))
    return Results(runs, trials, timeline, _concat(samples), servers, origin, pages)


def _pages_apart(tl: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The load's own rows, and those of its pages (a `page` named: `load.record.summary.page_row`)."""
    if "page" not in tl.columns:
        return tl, pd.DataFrame()
    named = tl["page"].notna()
    own = tl[~named].drop(columns="page").reset_index(drop=True)
    for col in ("started", "dropped", "inflight"):  # whole counts, made floats by the pages' rows that lack them
        if col in own.columns and own[col].notna().all():
            own[col] = own[col].astype("int64")
    return own, tl[named].reset_index(drop=True)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
