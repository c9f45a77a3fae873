"""The results folder: one per run, every file written atomically.

    results/<YYYYmmdd-HHMMSS>-<name>/
        run.json          spec, configs in effect, versions, machine, status, trials
        timeline.parquet  client side, one row per second x server x level x trial
        server.parquet    server side, the 1 Hz samples, same keys
        summary.csv       one row per server x level x trial
        requests.parquet/ --trace: one row per traced request, a file per server x level x trial (docs/tracing.md)

Files are rewritten after every finished trial (temp file + rename), so a
crash or Ctrl-C leaves a readable folder with every trial measured so far.
The report reads only this folder (`loadcmp.store.reader.load_results`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pandas as pd

from .files import _atomic_write, slug, write_json
from .handshakes import tls_of
from .traceparts import add_requests
from ..trace.rows import TraceRows
from ..errors import StoreError, UsageError
from ..records import (CapacityDoc, FindingDoc, HistogramDoc, LoadSummary, MachineInfo, RunDoc, RunKind, RunStatus,
                       ServerInfo, ServerTls, SpecDoc, TrialRecord, TrialStatus, TuneDoc)

FORMAT = 1
"""Bumped when the folder's layout changes; older folders are refused clearly."""


SUMMARY_COLUMNS = [
    "server", "level", "trial", "status", "ok", "failed", "unfinished", "started", "rps",
    "completions_per_s", "failed_rate", "p50_ms", "p90_ms", "p99_ms", "max_ms", "bytes",
    "duration_s", "cpu_pct", "mem_peak_bytes", "pids_peak", "client_bound", "client_busy_pct", "webbench_susceed",
    "webbench_failed", "tls_full", "tls_resumed", "tls_error", "reason",
]
"""summary.csv's columns; the `tls_` ones are empty for plain http (and for results stored before https)."""


Row = dict[str, Any]
"""One row of timeline.parquet or server.parquet (labels plus that second's figures)."""
Watch = Callable[["RunWriter", list[Row], list[Row]], None]
"""What a writer tells of each change: itself (its path and run.json as written), and the rows of a trial just
added (none for other changes)."""


@dataclass
class RunWriter:
    """Builds run.json and the tables, and keeps the folder current after each trial.

    The only writer of a results folder: callers add to it through its methods
    and never edit `run` themselves."""

    path: Path
    run: RunDoc
    timeline: list[Row] = field(default_factory=list)
    server: list[Row] = field(default_factory=list)
    watch: Watch | None = None
    """Told of each change once it is on disk (the live page: `loadcmp.live.feed`), in the writer's thread."""
    earlier: list[str] = field(default_factory=list)
    """A reopened run's problems from before (and the tables it could not read): `finish` keeps them first."""

    @classmethod
    def create(cls, root: Path | str, name: str, doc: RunDoc) -> RunWriter:
        """A fresh folder `<root>/<time>-<name>` holding `doc` (status `running`)."""
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
        # a copy, with what every run.json has filled in where a caller left it out
        run = cast(RunDoc, {"format": FORMAT, "status": "running", "servers": {}, "trials": [], **doc})
        w = cls(path, run)
        w.flush()
        return w

    @property
    def trials(self) -> list[TrialRecord]:
        """The trials stored so far (a copy: add with `add_trial`)."""
        return list(self.run["trials"])

    def has_server(self, label: str) -> bool:
        return label in self.run["servers"]

    def add_server(self, label: str, info: ServerInfo) -> None:
        """Store a server label's set-up once (the first trial that started it)."""
        if label in self.run["servers"]:
            return
        self.run["servers"][label] = info
        self.flush()

    def add_server_tls(self, label: str, seen: ServerTls) -> None:
        """Add what a stored label's TLS handshake gave, once: its set-up is stored before the handshake, so
        a label whose handshake fails keeps its configs, versions and images."""
        info = self.run["servers"].get(label)
        if info is None or "tls" in info:
            return
        info["tls"] = seen
        self.flush()

    def add_server_proto(self, label: str, asked: str, negotiated: str) -> None:
        """Add the protocol a stored label asked for and the one its server negotiated (the primer's), once."""
        info = self.run["servers"].get(label)
        if info is None or "negotiated" in info:
            return
        info["proto"], info["negotiated"] = asked, negotiated
        self.flush()

    def add_trial(self, trial: TrialRecord, timeline: list[Row], server: list[Row]) -> None:
        """Record one finished (or failed) trial and rewrite the folder."""
        self.run["trials"].append(trial)
        self.timeline.extend(timeline)
        self.server.extend(server)
        self.flush(timeline, server)

    def add_requests(self, rows: TraceRows, label: str, level: int, trial: int) -> int:
        """--trace: a trial's traced requests added to requests.parquet (docs/tracing.md), a file of their own in
        it; the table's size after."""
        return add_requests(self.path, rows, label, level, trial)

    def set_capacity(self, doc: CapacityDoc) -> None:
        """Store a capacity search as it stands (after every probe) and rewrite the folder."""
        self.run["capacity"] = doc
        self.flush()

    def set_tune(self, doc: TuneDoc) -> None:
        """Store a tuning study as it stands (after every trial) and rewrite the folder."""
        self.run["tune"] = doc
        self.flush()

    @classmethod
    def reopen(cls, path: Path | str) -> RunWriter:
        """An existing folder, to add to (`loadcmp tune --resume`): its run.json and tables as they are, its
        problems kept (`earlier`), its status `running` again until it is finished anew. A per-second table that
        cannot be read is set aside, said among the problems, and begun anew: run.json keeps every trial."""
        path = Path(path)
        try:
            run = cast(RunDoc, json.loads((path / "run.json").read_text()))
            earlier = list(run.get("problems") or [])
        except (OSError, ValueError, AttributeError) as e:
            raise StoreError(f"cannot read the results in {path}: {getattr(e, 'strerror', None) or e}") from None
        tables: list[list[Row]] = []
        for name in ("timeline.parquet", "server.parquet"):
            rows, problem = _reread(path / name)
            tables.append(rows)
            earlier += [problem] if problem else []
        run["status"], run["problems"] = "running", earlier
        w = cls(path, run, tables[0], tables[1], earlier=earlier)
        w.flush()
        return w

    def finish(self, status: RunStatus, problems: list[str] | None = None) -> None:
        """Say how the run ended and what went wrong (after what a resumed run's earlier part said), and rewrite
        the folder."""
        self.run["status"] = status
        self.run["ended"] = now_stamp()
        self.run["problems"] = list(dict.fromkeys([*self.earlier, *(problems or [])]))
        self.flush()

    def flush(self, timeline: list[Row] | None = None, server: list[Row] | None = None) -> None:
        """Rewrite the folder; then tell `watch` (with a trial's rows when one was added)."""
        self._write()
        if self.watch is not None:
            self.watch(self, timeline or [], server or [])

    def _write(self) -> None:
        try:
            write_json(self.path / "run.json", self.run)
            _write_parquet(self.path / "timeline.parquet", self.timeline)
            _write_parquet(self.path / "server.parquet", self.server)
            rows = [summary_row(t) for t in self.run["trials"]]
            df = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
            _atomic_write(self.path / "summary.csv", lambda tmp: df.to_csv(tmp, index=False))
        except OSError as e:
            raise StoreError(f"cannot write results to {self.path}: {e.strerror}") from None


def save_findings(path: Path | str, findings: list[FindingDoc]) -> None:
    """Add the judged findings to a finished run's run.json (atomically)."""
    rj = Path(path) / "run.json"
    try:
        doc = json.loads(rj.read_text())
        doc["findings"] = findings
        write_json(rj, doc)
    except (OSError, json.JSONDecodeError) as e:
        raise StoreError(f"cannot store the findings in {rj}: {e}") from None


def now_stamp() -> str:
    """Local time with its offset, as run.json's `started` / `ended`."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def new_run_doc(kind: RunKind, name: str, spec: SpecDoc, machine: MachineInfo,
                loadcmp_version: str, started: str | None = None) -> RunDoc:
    """A run.json with nothing measured yet; optional fields are set by the caller."""
    return RunDoc(format=FORMAT, kind=kind, name=name, status="running", spec=spec, loadcmp_version=loadcmp_version,
                  started=started or now_stamp(), machine=machine, servers={}, trials=[])


def save_bench(out_dir: Path | str, run: RunDoc, summary: LoadSummary,
               hists: tuple[HistogramDoc, HistogramDoc | None], timeline: list[Row],
               watch: Watch | None = None, window_start: float | None = None) -> Path:
    """A bench result as a one-trial results folder with a run's layout.

    `run["spec"]` names the one server (host:port), level, page and URL, so the report
    reads a bench exactly like a run; `hists` are the latency and service histograms."""
    spec = run["spec"]
    label, clients, keepalive, page = spec["servers"][0], spec["levels"][0], spec["keepalive"][0], spec["page"]
    if "cluster" in summary:
        run["cluster"] = summary["cluster"]
    w = RunWriter.create(out_dir, f"bench-{label.split(':')[0]}", run)
    w.watch = watch
    w.add_server(label, ServerInfo(url=spec.get("url", ""), keepalive=keepalive, page=page))
    lost = summary.get("lost", [])
    status: TrialStatus = "interrupted" if summary["interrupted"] else "partial" if lost else "ok"
    reason = "; ".join([*lost, *(["interrupted"] if summary["interrupted"] else [])]) or None
    trial = TrialRecord(server=label, level=clients, trial=1, stack="", keepalive=keepalive, status=status,
                        reason=reason, page=page, result=summary, latency_hist=hists[0])
    if window_start is not None:
        trial["window_start"] = round(window_start, 3)
    if hists[1] is not None:
        trial["service_hist"] = hists[1]
    if "tls" in summary:
        trial["tls"] = summary["tls"]
    keys = {"server": label, "level": clients, "trial": 1}
    w.add_trial(trial, [{**keys, **row} for row in timeline], [])
    w.finish("interrupted" if summary["interrupted"] else "complete")
    return w.path


def check_out_dir(root: Path | str, flag: str = "--out") -> None:
    """Make sure results can be stored under `root` before any load is sent (creating it):
    a bad --out found after the load would lose what was measured."""
    root = Path(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"{flag} {root}: cannot create the folder ({e.strerror or e})") from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise StoreError(f"{flag} {root}: the folder is not writable")


def check_out_file(path: Path | str, flag: str) -> None:
    """Make sure a file can be written at `path` before any load is sent (its folder exists
    and is writable, and it is not a folder itself)."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{flag} {p} is a folder; give a file")
    parent = p.parent
    if not parent.is_dir():
        raise StoreError(f"{flag} {p}: no folder {parent} to write it in")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise StoreError(f"{flag} {p}: not writable")


def _reread(f: Path) -> tuple[list[Row], str | None]:
    """A per-second table's rows, for a reopened run; a damaged one moved aside (`<file>.damaged`, never written
    over) with no rows, and why in words."""
    if not f.exists():
        return [], None
    try:
        return cast(list[Row], pd.read_parquet(f).to_dict("records")), None
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        damage = str(e).split(f"'{f}': ", 1)[-1] or type(e).__name__
    aside = f.with_name(f"{f.name}.damaged")
    n = 1
    while aside.exists():
        n += 1
        aside = f.with_name(f"{f.name}.damaged-{n}")
    try:
        os.replace(f, aside)
    except OSError as e:
        raise StoreError(f"{f} cannot be read ({damage}) nor set aside: {e.strerror or e}") from None
    return [], (f"{f.name} could not be read when the run was resumed ({damage}); it is kept as {aside.name}, "
                "and its seconds from before are not in the new one")


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    df = pd.DataFrame(rows)
    _atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))


def summary_row(trial: TrialRecord) -> dict[str, object]:
    """A trial as one row of summary.csv (and of `Results.summary`)."""
    result = trial.get("result")
    s: Mapping[str, object] = result or {}
    lat: Mapping[str, object] = result.get("latency_ms") or {} if result else {}
    srv: Mapping[str, object] = trial.get("server_metrics") or {}
    wb: Mapping[str, object] = result.get("webbench") or {} if result else {}
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
        "client_bound": s.get("client_bound"),
        "client_busy_pct": s.get("client_busy_pct"),
        "webbench_susceed": wb.get("susceed"),
        "webbench_failed": wb.get("failed"),
        **_tls_columns(trial),
        "reason": trial.get("reason"),
    }


def _tls_columns(trial: TrialRecord) -> dict[str, int | None]:
    """summary.csv's TLS columns: the full and resumed handshakes and the `tls_error` failures (None: plain)."""
    tls = tls_of(trial)
    if tls is None:
        return {"tls_full": None, "tls_resumed": None, "tls_error": None}
    result = trial.get("result")
    failures = result["failures"] if result else {}
    return {"tls_full": tls["full"], "tls_resumed": tls["resumed"], "tls_error": failures.get("tls_error", 0)}
