"""One results folder as the catalog reads it: its state, its entry, its trials as rows of the metrics.

The state is the store's (`store.reader.Run.status`, which judges a `running` run's owner
process); a folder whose run.json is missing, is not JSON, is of another format or lacks a
required key is `broken`, with the reason in words. A trial's figures are the report's:
req/s (`report.tables.rps`), the server's CPU per request from `report.tables.per_core`
(requests per core-second: 1000 / it is the CPU milliseconds per request), the latencies
from the trial's `latency_ms`; their means and intervals are `report.tables.Estimate.of`
over the measured trials, latencies on the log scale (`report.tables.LATENCY`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .. import protocols
from ..errors import UsageError
from ..records import RunDoc, SpecDoc, TrialRecord, missing_keys
from .model import METRICS, CellKey, RunEntry, RunState, Value

if TYPE_CHECKING:
    from ..report.tables import Estimate

FORMAT = 1
"""The results format the catalog reads (`store.writer.FORMAT`, checked equal in the tests; not imported
here so that listing folders loads no pandas)."""

SKEWED = frozenset({"p50", "p99"})
"""The metrics whose intervals are taken on the log scale (the latencies, as `report.tables.LATENCY`)."""

Row = dict[str, Any]
"""A measured trial: path, stack, its cell's fields (`CELL_COLUMNS`), trial, then one value per metric (or None)."""


def read_doc(path: Path, text: str | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """A folder's run.json (`text`: already read) and None, or None and why it is broken."""
    try:
        doc = json.loads(text if text is not None else (path / "run.json").read_text())
    except FileNotFoundError:
        return None, "no run.json"
    except (OSError, UnicodeDecodeError) as e:
        return None, f"run.json cannot be read: {e}"
    except json.JSONDecodeError as e:
        return None, f"run.json is not JSON ({e.msg} at line {e.lineno})"
    if not isinstance(doc, dict):
        return None, "run.json is not a JSON object"
    if doc.get("format") != FORMAT:
        return None, f"results format {doc.get('format')!r}; this loadcmp reads format {FORMAT}"
    missing = missing_keys(doc, RunDoc) or (["spec"] if not isinstance(doc["spec"], dict) else
                                            [f"spec.{k}" for k in missing_keys(doc["spec"], SpecDoc)])
    if missing:
        return None, f"run.json lacks {', '.join(missing)}"
    return doc, None


def state_of(path: Path, doc: Mapping[str, Any]) -> tuple[RunState, str | None]:
    """A readable run's state and why, through the store's own judgement of its status and owner."""
    from ..store.reader import Run

    run = Run(path, cast(RunDoc, doc), str(doc.get("name") or path.name))
    status = run.status
    problems = "; ".join(str(p) for p in doc.get("problems") or [])
    if status == "complete":
        return "complete", None
    if status == "interrupted":
        return "interrupted", problems or "interrupted before its last trial"
    if status == "failed":
        return "interrupted", f"failed: {problems}" if problems else "failed"
    owner = run.owner
    if status == "abandoned":
        who = f"its process {owner.pid} on {owner.machine}" if owner else "its process"
        return "abandoned", f"{who} ended before the run did"
    if status == "running":
        if owner is not None and owner.state == "elsewhere":
            return "running", f"written by process {owner.pid} on {owner.machine}, which cannot be judged from here"
        return "running", None if owner else "no owner is named; taken as still running"
    return "broken", f"unknown status {status!r}"


def started_of(path: Path, doc: Mapping[str, Any] | None) -> tuple[str, float]:
    """When a run started, as stored, and as seconds for ordering (the folder's own time when unknown)."""
    text = str(doc.get("started") or "") if doc else ""
    for fmt in ("%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S"):
        try:
            return text, datetime.strptime(text, fmt).timestamp()
        except ValueError:
            continue
    try:
        return text, path.stat().st_mtime
    except OSError:
        return text, 0.0


def entry_of(path: Path, doc: Mapping[str, Any] | None, reason: str | None) -> RunEntry:
    """The catalog's line for a folder (`doc` None: broken, for `reason`)."""
    if doc is None:
        return RunEntry(path, "broken", name=path.name, reason=reason)
    state, why = state_of(path, doc)
    return RunEntry(path, state, name=str(doc.get("name") or path.name), run_id=str(doc.get("run_id") or ""),
                    kind=str(doc.get("kind") or ""), started=started_of(path, doc)[0], reason=why)


def judge(path: Path, text: str | None = None) -> tuple[RunEntry, dict[str, Any] | None, list[Row]]:
    """A folder's entry, its run.json (None: broken) and its measured trials' rows, as every reader of the
    catalog judges it (`history`, `compare`, `serve`'s list): one trial that cannot be read makes it broken."""
    doc, reason = read_doc(path, text)
    rows, why = rows_of(path, doc) if doc is not None else ([], None)
    if why is not None:
        doc, reason = None, why
    return entry_of(path, doc, reason), doc, rows


def entry(path: Path) -> RunEntry:
    """One folder's entry; a UsageError when it is no results folder at all (no folder, no run.json)."""
    return load(path, broken_ok=True)[0]


def load(path: Path, broken_ok: bool = False) -> tuple[RunEntry, dict[str, Any]]:
    """A results folder's entry and run.json; a one-line UsageError for a folder that is not one (and, unless
    `broken_ok`, for one whose run.json is broken)."""
    path = Path(path)
    if not path.is_dir():
        raise UsageError(f"{path} is not a results folder ({'a file' if path.exists() else 'no such directory'})")
    found, doc, _ = judge(path)
    if doc is None and (found.reason == "no run.json" or not broken_ok):
        raise UsageError(f"{path} is not a results folder ({found.reason})")
    return found, doc or {}


def bench_key(t: TrialRecord | None, key: str) -> Any:
    """A key `bench` keeps in its one trial's result beside the summary (`streams_asked`); None: none."""
    result = t.get("result") if t is not None else None
    return cast(Mapping[str, Any], result).get(key) if result else None


def protocol_of(t: TrialRecord, doc: Mapping[str, Any]) -> str:
    """A trial's protocol as its cell names it: HTTP/1.1 as "https" when the trial (its TLS facts), its label's spec
    or its primed handshake says TLS, else "http"; another protocol by its name as asked (h2, h2c, h3), with
    " as X" where the server negotiated X instead (the primer's, else the trial's stream tally)."""
    from ..store.handshakes import tls_of

    label = str(t["server"])
    asked, negotiated = protocols.asked_of(doc, label, t)
    result = t.get("result")
    tally = result.get("streams") if result else None
    negotiated = negotiated or str(tally["protocol"] if tally else "")
    row = protocols.find(asked)
    same = not negotiated or negotiated == asked or (row is not None and row.http1 and negotiated in row.alpn)
    if not same:
        return f"{asked} as {negotiated}"
    if row is not None and not row.http1:
        return asked
    spec = doc.get("spec") or {}
    if tls_of(t) or (spec.get("variant_tls") or {}).get(label, spec.get("tls", False)):
        return "https"
    return "https" if "tls" in ((doc.get("servers") or {}).get(label) or {}) else "http"


def streams_of(doc: Mapping[str, Any], label: str, t: TrialRecord | None = None) -> int:
    """The requests a label kept in flight per connection: -m where its protocol multiplexes (a bench's as its
    trial keeps it), else one."""
    row = protocols.find(protocols.asked_of(doc, label, t)[0])
    if row is None or not row.multiplexed:
        return 1
    return int((doc.get("spec") or {}).get("streams") or bench_key(t, "streams_asked") or 1)


def traffic_said(doc: Mapping[str, Any], level: int | None = None) -> str:
    """A run's traffic and its parameters in a cell's words (`Source.said`; "": one page), at `level`; a replayed
    log's with its content hash, short (two logs of one name are two workloads; a run stored before the hash was
    kept says none)."""
    from ..traffic.fits import traffic_of
    from ..traffic.logreplay import log_digest

    said = traffic_of(doc.get("spec") or {})[0].said(level)
    digest = log_digest(cast(Mapping[str, Any], t["result"]) for t in measured(doc))
    return f"{said} (log sha256 {digest})" if digest else said


def app_of(doc: Mapping[str, Any], label: str) -> str:
    """The application a label's pages ran on ("": none): its own, else the run's."""
    info = (doc.get("servers") or {}).get(label) or {}
    return str(info.get("app") or (doc.get("spec") or {}).get("app") or "")


def _number(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def figures(t: TrialRecord) -> dict[str, float | None]:
    """A measured trial's value of each metric (None: not measured), from the report's own getters."""
    from ..report.tables import per_core, rps
    from ..store.reader import metrics_of

    r = t["result"]
    latency = r.get("latency_ms") or {}
    core = per_core(t)
    failed = _number(r.get("failed_rate"))
    return {"rps": _number(rps(t)), "p50": _number(latency.get("p50")), "p99": _number(latency.get("p99")),
            "failed_rate": None if failed is None else failed * 100,
            "cpu_per_request": None if not core else 1000 / core,
            "mem_peak": _number(metrics_of(t).get("mem_peak_bytes"))}


def trial_rows(path: Path, doc: Mapping[str, Any]) -> list[Row]:
    """Every measured trial of a run, as rows."""
    rows = []
    for t in measured(doc):
        cell = cell_key(t, doc)
        rows.append({"path": str(path), "stack": str(t.get("stack") or ""), **cell_row(cell),
                     "trial": int(t.get("trial") or 0), **figures(t)})
    return rows


def rows_of(path: Path, doc: Mapping[str, Any]) -> tuple[list[Row], str | None]:
    """A run's trial rows and None, or none and why its run.json is broken: one trial that cannot be read (a
    damaged or hand-edited file) makes its own folder broken, never the whole catalog fail."""
    try:
        return trial_rows(path, doc), None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        return [], f"run.json has a trial that cannot be read ({type(e).__name__}: {e})"


def measured(doc: Mapping[str, Any]) -> list[TrialRecord]:
    """A run's trials that measured (a `result`, as `store.reader.Results.cell` counts them)."""
    return [t for t in doc.get("trials") or [] if t.get("result")]


def label_page(doc: Mapping[str, Any], label: str) -> str | None:
    """The page a label served: its own (`servers[label].page`), else the spec's (a run written before labels
    kept their page); None: neither says."""
    return ((doc.get("servers") or {}).get(label) or {}).get("page") or (doc.get("spec") or {}).get("page")


def cell_key(t: TrialRecord, doc: Mapping[str, Any]) -> CellKey:
    """A trial's cell: its label, level, page (its own, else its label's: `label_page`) and the workload sent
    (protocol, streams, traffic, app); a load through `--net` has its conditions in the traffic (`net dsl`), so
    that it never shares a cell with a loopback one."""
    label = str(t["server"])
    page = t.get("page") or label_page(doc, label) or ""
    net = (cast(dict[str, Any], t.get("result") or {}).get("net") or {}).get("asked", {}).get("spec")
    traffic = "; ".join(x for x in (traffic_said(doc, int(t["level"])), f"net {net}" if net else "") if x)
    return CellKey(label, int(t["level"]), str(page), protocol_of(t, doc), streams_of(doc, label, t), traffic,
                   app_of(doc, label))


CELL_COLUMNS = ("label", "level", "page", "protocol", "streams", "traffic", "app")
"""A cell's fields as a row (and the index) names them, in `CellKey`'s order."""


def cell_row(cell: CellKey) -> dict[str, Any]:
    """A cell as the columns of a row (`CELL_COLUMNS`)."""
    return {c: getattr(cell, c) for c in CELL_COLUMNS}


def cell_of(row: Mapping[str, Any]) -> CellKey:
    return CellKey(row["label"], int(row["level"]), row["page"], row["protocol"], int(row["streams"]),
                   row["traffic"], row["app"])


def estimates(rows: Iterable[Mapping[str, Any]], metric: str) -> dict[CellKey, Estimate]:
    """Each cell's `report.tables.Estimate` of `metric` over its trials' rows (one run's rows)."""
    from ..report.tables import Estimate

    values: dict[CellKey, list[float]] = {}
    for row in rows:
        values.setdefault(cell_of(row), [])
        if (v := row.get(metric)) is not None:
            values[cell_of(row)].append(v)
    return {cell: Estimate.of(v, skewed=metric in SKEWED) for cell, v in values.items()}


def values(rows: list[Row], bound: set[CellKey] | frozenset[CellKey] = frozenset()
           ) -> dict[CellKey, tuple[str, dict[str, Value]]]:
    """Each cell of one run's rows: its stack and every metric's Value (client-bound: the cells of `bound`)."""
    per_metric = {m: estimates(rows, m) for m in METRICS}
    stacks = {cell_of(row): row["stack"] for row in rows}
    return {cell: (stacks[cell], {m: value_of(per_metric[m][cell], cell in bound) for m in METRICS})
            for cell in stacks}


def value_of(e: Estimate, client_bound: bool = False) -> Value:
    """An Estimate as the catalog says it: the mean and its 95 % interval (from 3 trials on, else None)."""
    interval = e.interval
    return Value(e.mean, interval[0] if interval else None, interval[1] if interval else None, e.n, client_bound)


def bound_cells(doc: Mapping[str, Any]) -> set[CellKey]:
    """The cells of a run where the client limited a trial (`store.reader.client_bound`): compare's rows and
    history's points mark them."""
    from ..store.reader import client_bound

    cells: dict[CellKey, list[TrialRecord]] = {}
    for t in measured(doc):
        cells.setdefault(cell_key(t, doc), []).append(t)
    return {cell for cell, trials in cells.items() if client_bound(trials) is not None}


def check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise UsageError(f"no metric {metric!r}; the metrics are {', '.join(METRICS)}")
