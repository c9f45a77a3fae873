"""The results folder: one per run, every file written atomically.

    results/<YYYYmmdd-HHMMSS>-<name>/
        run.json          spec, configs in effect, versions, machine, status, trials
        timeline.parquet  client side, one row per second x server x level x trial
        server.parquet    server side, the 1 Hz samples, same keys
        summary.csv       one row per server x level x trial

Files are rewritten after every finished trial (temp file + rename), so a
crash or Ctrl-C leaves a readable folder with every trial measured so far.
The report reads only this folder (`loadcmp.results.load_results`).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, cast
from urllib.parse import urlsplit

import pandas as pd

from .errors import StoreError

FORMAT = 1
"""Bumped when the folder's layout changes; older folders are refused clearly."""

# --- typed records ---------------------------------------------------------------------
# The documents below are what run.json holds. They are TypedDicts so that they
# are plain JSON on disk (readable by any tool, and by older reports) while
# every reader and writer is checked by mypy against one definition.

TrialStatus = Literal["ok", "server_failed", "server_died", "oom", "interrupted", "failed"]
"""How a trial ended: measured normally, or why not."""
RunStatus = Literal["running", "complete", "interrupted", "failed"]
"""How a run ended (`running` while it is being written)."""


class LatencyMs(TypedDict):
    """Percentiles of a latency histogram, in milliseconds (None: no sample)."""

    p50: float | None
    p75: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    p99_9: float | None
    max: float | None
    min: float | None
    mean: float | None


class WebbenchCount(TypedDict):
    """What webbench would have counted for the same requests."""

    susceed: int  #: webbench's spelling: any answer read to EOF, whatever its status
    failed: int  #: only connections that could not be made or read
    pages_per_min: float
    bytes_per_s: float


class HistogramDoc(TypedDict):
    """A mergeable log histogram as stored (see load.recorder.Histogram)."""

    base: float
    unit: str
    idx: list[int]
    cnt: list[int]
    total_s: float
    max_s: float
    min_s: float | None  #: None: no sample


class LoadSummary(TypedDict):
    """One measurement's numbers: the `result` of a trial and of `--json`."""

    ok: int  #: complete responses with status < 400
    failed: int  #: sum of `failures`
    failures: dict[str, int]  #: outcome kind -> count (dropped included for the rate schedule)
    unfinished: int  #: in flight when the window closed; not failed
    started: int  #: ok + failed + unfinished
    dropped: int  #: rate schedule: due but not sent (the in-flight cap was reached)
    completed: int  #: every response or failure that ended inside the window
    rps: float  #: ok / measured seconds
    completions_per_s: float
    failed_rate: float  #: failed / (started - unfinished)
    duration_s: float  #: the measured seconds
    bytes: int
    bytes_per_s: float
    latency_ms: LatencyMs  #: from the intended start (corrects coordinated omission)
    service_ms: LatencyMs  #: from the moment the request was written
    webbench: WebbenchCount
    interrupted: bool
    warnings: list[str]
    client_errors: NotRequired[dict[str, int]]  #: the client's own socket errors (EMFILE ...)
    schedule: NotRequired[dict[str, Any]]  #: the schedule's own description, plus keepalive
    engine: NotRequired[str]
    workers: NotRequired[int]
    url: NotRequired[str]
    clients: NotRequired[int]  #: bench: the concurrency level
    timeout_s: NotRequired[float]  #: bench: the per-request timeout
    warmup_s: NotRequired[float]  #: bench: load sent before the window, not counted


class ServerMetrics(TypedDict, total=False):
    """A trial's server side summed up from the 1 Hz samples."""

    cpu_pct: float | None  #: mean over the window, 100 = one core
    cpu_pct_max: float | None
    mem_peak_bytes: int | None
    mem_mean_bytes: int | None
    pids_peak: int | None  #: threads (cgroup pids)
    procs_peak: int | None
    tcp_peak: int | None
    tcp_established_peak: int | None
    busy_workers_peak: float | None
    oom_kills: int
    mem_limit_hits: int
    samples: int


class ContainerState(TypedDict):
    """Docker's word on one container after the load."""

    Status: str | None
    ExitCode: int | None
    OOMKilled: bool | None


class TrialRecord(TypedDict):
    """One server x level x trial, as stored in run.json's `trials`."""

    server: str  #: the label (a stack name, or a variant's label)
    level: int  #: concurrency (clients, users or in-flight cap)
    trial: int  #: 1-based repeat number
    stack: str
    keepalive: bool
    status: TrialStatus
    reason: str | None  #: why the status is not `ok`, in words
    page: NotRequired[str]
    ready_s: NotRequired[float | None]  #: seconds from start to ready (None: the server was reused)
    result: NotRequired[LoadSummary]
    latency_hist: NotRequired[HistogramDoc]
    service_hist: NotRequired[HistogramDoc]
    server_metrics: NotRequired[ServerMetrics]
    container_state: NotRequired[dict[str, ContainerState]]
    notes: NotRequired[list[str]]  #: what the evidence says limited the server
    warnings: NotRequired[list[str]]  #: client saturation, sampler errors ...


class ServerInfo(TypedDict, total=False):
    """A server label's set-up, stored once per run (run.json's `servers`)."""

    stack: str
    description: str
    php_api: str
    mpm: str | None
    settings: dict[str, Any]  #: every tunable in effect
    configs: dict[str, str]  #: rendered config files by path
    versions: dict[str, str]
    image_ids: dict[str, str]
    cpus: str | None
    memory_bytes: int | None
    keepalive: bool
    page: str
    url: str  #: bench: the URL loaded


class MachineInfo(TypedDict, total=False):
    """Where the run ran (what is known of it)."""

    kernel: str
    cpu_model: str
    cores: int | None
    mem_total_bytes: int | None
    docker_version: str | None
    python: str
    nofile_hard: int
    somaxconn: int | None
    hostname: str


class RunDoc(TypedDict):
    """run.json: everything about one run but the per-second tables."""

    format: int
    kind: Literal["run", "bench"]
    name: str
    status: RunStatus
    spec: dict[str, Any]  #: RunSpec.to_dict() (bench: the same keys that apply, plus `url`)
    loadcmp_version: str
    started: str
    machine: MachineInfo
    servers: dict[str, ServerInfo]
    trials: list[TrialRecord]
    run_id: NotRequired[str]
    description: NotRequired[str]
    git_commit: NotRequired[str | None]
    images: NotRequired[dict[str, str]]
    ended: NotRequired[str]
    problems: NotRequired[list[str]]

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


Row = dict[str, Any]
"""One row of timeline.parquet or server.parquet (labels plus that second's figures)."""


@dataclass
class RunWriter:
    """Builds run.json and the tables, and keeps the folder current after each trial.

    The only writer of a results folder: callers add to it through its methods
    and never edit `run` themselves."""

    path: Path
    run: RunDoc
    timeline: list[Row] = field(default_factory=list)
    server: list[Row] = field(default_factory=list)

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

    def add_trial(self, trial: TrialRecord, timeline: list[Row], server: list[Row]) -> None:
        """Record one finished (or failed) trial and rewrite the folder."""
        self.run["trials"].append(trial)
        self.timeline.extend(timeline)
        self.server.extend(server)
        self.flush()

    def finish(self, status: RunStatus, problems: list[str] | None = None) -> None:
        """Say how the run ended (and what went wrong) and rewrite the folder."""
        self.run["status"] = status
        self.run["ended"] = now_stamp()
        self.run["problems"] = list(problems or [])
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


def now_stamp() -> str:
    """Local time with its offset, as run.json's `started` / `ended`."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def new_run_doc(kind: Literal["run", "bench"], name: str, spec: dict[str, Any], machine: MachineInfo,
                loadcmp_version: str, started: str | None = None) -> RunDoc:
    """A run.json with nothing measured yet; optional fields are set by the caller."""
    return RunDoc(format=FORMAT, kind=kind, name=name, status="running", spec=spec, loadcmp_version=loadcmp_version,
                  started=started or now_stamp(), machine=machine, servers={}, trials=[])


def save_bench(out_dir: Path | str, *, url: str, label: str, clients: int, schedule: str, keepalive: bool,
               duration: float, warmup: float, timeout: float, engine: str, workers: int, summary: LoadSummary,
               latency_hist: HistogramDoc, service_hist: HistogramDoc | None = None,
               timeline: list[Row] | None = None, started: str | None = None,
               machine: MachineInfo | None = None, loadcmp_version: str = "") -> Path:
    """A bench result as a one-trial results folder with a run's layout.

    The spec uses RunSpec.to_dict()'s keys where they apply (`servers` is the
    label, `levels` the one concurrency, `page` the URL's path) plus `url`, so
    the report reads a bench exactly like a run."""
    parts = urlsplit(url)
    page = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    spec: dict[str, Any] = {
        "servers": [label], "levels": [clients], "duration": duration, "warmup": warmup, "timeout": timeout,
        "page": page, "schedule": schedule, "keepalive": [keepalive], "engine": engine, "workers": workers,
        "url": url,
    }
    doc = new_run_doc("bench", f"bench {url}", spec, machine or {}, loadcmp_version, started)
    w = RunWriter.create(out_dir, f"bench-{label.split(':')[0]}", doc)
    w.add_server(label, ServerInfo(url=url, keepalive=keepalive, page=page))
    status: TrialStatus = "interrupted" if summary["interrupted"] else "ok"
    trial = TrialRecord(server=label, level=clients, trial=1, stack="", keepalive=keepalive, status=status,
                        reason="interrupted" if summary["interrupted"] else None, page=page, result=summary,
                        latency_hist=latency_hist)
    if service_hist is not None:
        trial["service_hist"] = service_hist
    keys = {"server": label, "level": clients, "trial": 1}
    w.add_trial(trial, [{**keys, **row} for row in timeline or []], [])
    w.finish("interrupted" if summary["interrupted"] else "complete")
    return w.path


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    df = pd.DataFrame(rows)
    _atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))


def summary_row(trial: TrialRecord) -> dict[str, Any]:
    """A trial as one row of summary.csv (and of `Results.summary`)."""
    s: dict[str, Any] = dict(trial.get("result") or {})
    lat: dict[str, Any] = dict(s.get("latency_ms") or {})
    srv: dict[str, Any] = dict(trial.get("server_metrics") or {})
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
