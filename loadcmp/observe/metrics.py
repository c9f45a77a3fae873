"""The server's side of a measurement: 1 Hz samples lined up with the client's seconds.

Read straight from the containers' cgroups (CPU time, memory, tasks, OOM
kills; cgroup v1 or v2, whichever the host has), from the kernel's socket
table for the server port (by TCP state, counted by `ss` and awk so that
hundreds of thousands of TIME_WAIT sockets cost no Python time), and from the
stacks' status pages (busy/idle workers; parsed in statuspages.py); the kernel's counters: kernel.py.

Parsing is split from reading: every `parse_*` function is a pure function of the text a file or a page
holds, tested from fixtures in tests/test_metrics.py. A sample that cannot be read or parsed is not fatal:
the sampler keeps going and reports each distinct problem once, with a count, in `Sampler.warnings`.
"""

from __future__ import annotations

import logging
import math
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypedDict, TypeVar

from ..lab.containers import Deployment
from ..lab.fetch import http_get
from ..records import ServerMetrics
from . import kernel
from .roles import summarize_apart
from .statuspages import command_status, parse_page, with_busy_workers

log = logging.getLogger("loadcmp")
T = TypeVar("T")

CG = Path("/sys/fs/cgroup")
EARLY = 0.05
"""Samples are taken this much before each second ends, so the last one still
sees the load (the client drops its connections exactly at the end)."""
TCP_STATES = ("ESTAB", "SYN-RECV", "TIME-WAIT", "CLOSE-WAIT", "FIN-WAIT-1", "FIN-WAIT-2", "LAST-ACK", "CLOSING")
COUNT_BY_STATE = "awk '{c[$1]++} END {for (s in c) print s, c[s]}'"
"""Counts `ss -Htan` lines by their first column (the TCP state) outside Python."""

now = time.monotonic
"""CLOCK_MONOTONIC, the clock the load client's `t0` is on."""

NO_COUNTS: dict[str, int] = {}  # what a source that failed contributes to a sample (never mutated)
NO_FIGURES: dict[str, float] = {}

ServerRow = dict[str, Any]
"""One second of server.parquet: the trial's labels, `second`, and the sampled figures."""


class CgroupSample(TypedDict, total=False):
    """One reading of a container's cgroup; absent or None = the file was not there."""

    cpu_ns: int | None
    mem_bytes: int | None  #: usage minus the inactive page cache
    mem_rss_bytes: int | None
    mem_max_usage_bytes: int | None
    mem_limit_hits: int | None
    oom_kills: int | None
    threads: int | None
    procs: int | None


# --- pure parsers ------------------------------------------------------------------------


def parse_int(text: str | None) -> int | None:
    """A one-number file ('15286272\\n') -> int; None if absent or not a number ('max')."""
    if text is None:
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


def parse_keyed(text: str | None) -> dict[str, int]:
    """A flat-keyed file ('usage_usec 370995569' per line) -> {key: int}; non-numbers skipped."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        key, _, value = line.strip().partition(" ")
        try:
            out[key] = int(value)
        except ValueError:
            continue
    return out


def count_lines(text: str | None) -> int | None:
    """cgroup.procs -> how many processes it lists."""
    return None if text is None else len(text.splitlines())


CGROUP_V1_FILES = {"cpuacct.usage": "cpuacct", "memory.stat": "memory", "memory.usage_in_bytes": "memory",
                   "memory.max_usage_in_bytes": "memory", "memory.failcnt": "memory", "memory.oom_control": "memory",
                   "pids.current": "pids", "cgroup.procs": "pids"}
"""cgroup v1 file -> the controller hierarchy it lives in."""
CGROUP_V2_FILES = ("cpu.stat", "memory.stat", "memory.current", "memory.peak", "memory.events", "pids.current",
                   "cgroup.procs")


def parse_cgroup_v1(files: Mapping[str, str | None]) -> CgroupSample:
    """cgroup v1 file texts (keys as CGROUP_V1_FILES, None if unreadable) -> one sample."""
    stat = parse_keyed(files.get("memory.stat"))
    usage = parse_int(files.get("memory.usage_in_bytes"))
    return {
        "cpu_ns": parse_int(files.get("cpuacct.usage")),
        "mem_bytes": None if usage is None else max(0, usage - stat.get("total_inactive_file", 0)),
        "mem_rss_bytes": stat.get("total_rss"),
        "mem_max_usage_bytes": parse_int(files.get("memory.max_usage_in_bytes")),
        "mem_limit_hits": parse_int(files.get("memory.failcnt")),
        "oom_kills": parse_keyed(files.get("memory.oom_control")).get("oom_kill"),
        "threads": parse_int(files.get("pids.current")),
        "procs": count_lines(files.get("cgroup.procs")),
    }


def parse_cgroup_v2(files: Mapping[str, str | None]) -> CgroupSample:
    """cgroup v2 file texts (keys as CGROUP_V2_FILES, None if unreadable) -> one sample."""
    cpu = parse_keyed(files.get("cpu.stat"))
    stat = parse_keyed(files.get("memory.stat"))
    events = parse_keyed(files.get("memory.events"))
    usage = parse_int(files.get("memory.current"))
    return {
        "cpu_ns": None if "usage_usec" not in cpu else cpu["usage_usec"] * 1000,
        "mem_bytes": None if usage is None else max(0, usage - stat.get("inactive_file", 0)),
        "mem_rss_bytes": stat.get("anon"),
        "mem_max_usage_bytes": parse_int(files.get("memory.peak")),
        "mem_limit_hits": events.get("max"),
        "oom_kills": events.get("oom_kill"),
        "threads": parse_int(files.get("pids.current")),
        "procs": count_lines(files.get("cgroup.procs")),
    }


def parse_state_counts(text: str) -> dict[str, int]:
    """'ESTAB 20\\nTIME-WAIT 31000' (ss | COUNT_BY_STATE) -> {state: sockets}."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        state, _, count = line.strip().partition(" ")
        try:
            out[state] = int(count)
        except ValueError:
            raise ValueError(f"unexpected socket count line {line!r}") from None
    return out


# --- reading -----------------------------------------------------------------------------


def _read(p: Path) -> str | None:
    try:
        return p.read_text()
    except OSError:
        return None


class Source(Protocol):
    """One container's figures, read by the sampler: from its cgroup files here (`Cgroup`), or from the
    engine (`apimetrics.ApiStats`)."""

    @property
    def cid(self) -> str: ...
    def available(self) -> bool: ...
    def read(self) -> CgroupSample: ...
    def reset_peak(self) -> None: ...


@dataclass
class Cgroup:
    """Where one container's cgroup files are (v1 or v2) and reading them."""

    cid: str

    def _v1(self, ctrl: str, name: str) -> Path:
        return CG / ctrl / "docker" / self.cid / name

    def _v2(self, name: str) -> Path:
        return CG / "system.slice" / f"docker-{self.cid}.scope" / name

    @property
    def v1(self) -> bool:
        return self._v1("memory", "memory.usage_in_bytes").exists()

    def available(self) -> bool:
        return self.v1 or self._v2("memory.current").exists()

    def read(self) -> CgroupSample:
        if self.v1:
            return parse_cgroup_v1({n: _read(self._v1(c, n)) for n, c in CGROUP_V1_FILES.items()})
        return parse_cgroup_v2({n: _read(self._v2(n)) for n in CGROUP_V2_FILES})

    def reset_peak(self) -> None:
        """v1 lets the peak be reset so it covers the window only (v2's memory.peak cannot be)."""
        if self.v1:
            self._v1("memory", "memory.max_usage_in_bytes").write_text("0")


def tcp_states(port: int) -> dict[str, int]:
    """Sockets on 127.0.0.1:port by TCP state (server side)."""
    cmd = f"ss -Htan 'sport = :{port}' | {COUNT_BY_STATE}"
    res = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=5, check=True)
    if res.stderr.strip():  # the pipeline's status is awk's: a failing ss shows only here
        raise OSError(res.stderr.strip().splitlines()[0])
    return parse_state_counts(res.stdout)


def status_page(dep: Deployment, kind: str, timeout: float = 0.5) -> dict[str, float]:
    """One of the stack's status pages (by its kind, `[status.KIND]`), parsed."""
    page = dep.status_pages[kind]
    if page.command is not None:
        return command_status(dep, page)
    code, body = http_get(dep.port, page.path, timeout=timeout, cafile=dep.plan.cafile)
    if code != 200:
        raise ValueError(f"{page.path} answered HTTP {code}")
    return parse_page(page, body.decode(errors="replace"))


MIN_PART_S = 0.2  # the shortest last part of a second worth a sample of its own when the load stops inside it


# --- the sampler ---------------------------------------------------------------------------


@dataclass
class Sampler:
    """Samples a deployment once a second from `t0` in a background thread."""

    dep: Deployment
    t0: float
    labels: dict[str, Any] = field(default_factory=dict)
    seconds: int | None = None  #: how many seconds the window has; no sample is taken past it
    rows: list[ServerRow] = field(default_factory=list)
    on_row: Callable[[ServerRow], None] | None = None
    """Told of each row as it is kept (the live page), from the sampler's thread."""
    warmup: float = 0.0
    """With `on_row`: the warm-up's seconds (-1, -2, ...) sampled for it alone, never kept in `rows` (the window's)."""
    warnings: list[str] = field(default_factory=list)
    """After stop(): one line per distinct problem met while sampling, with how often."""
    _problems: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _stopped_at: float = math.inf
    _thread: threading.Thread | None = None

    def start(self) -> Sampler:
        self.cgroups = self.sources()
        self.kernel = self._try("the kernel's TCP counters", partial(kernel.open_counters, self.dep, self._note),
                                kernel.Counters(None))
        self.apart = {i: f"{r.role.name}_" for i, r in enumerate(self.dep.plan.rendered) if r.role.apart}
        """Container index -> the prefix of its columns, for the roles measured apart (an app's database)."""
        self._thread = threading.Thread(target=self._loop, name="loadcmp-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[ServerRow]:
        self._stopped_at = now()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            if self._thread.is_alive():
                self._note("the sampler did not stop within 10 s")
        self.warnings = [f"server sampling: {msg}" + (f" ({n} times)" if n > 1 else "")
                         for msg, n in dict(self._problems).items()]
        return self.rows

    # where the figures come from: this machine's cgroups, ss and loopback (`apimetrics.ApiSampler`: the Docker API)
    def sources(self) -> list[Source]:
        return [Cgroup(str(c.id)) for c in self.dep.containers]

    def tcp_states(self) -> dict[str, int]:
        return tcp_states(self.dep.port)

    def status_page(self, kind: str) -> dict[str, float]:
        return status_page(self.dep, kind)

    def _note(self, what: str, exc: BaseException | None = None) -> None:
        """Counts one problem; the first of each kind is logged with its traceback."""
        msg = what if exc is None else f"{what}: {type(exc).__name__}: {exc}"
        msg = " ".join(msg.split())
        if msg not in self._problems:
            log.debug("server sampling: %s", msg, exc_info=exc)
        self._problems[msg] = self._problems.get(msg, 0) + 1

    def _try(self, what: str, read: Callable[[], T], failed: T) -> T:
        """One source of one sample; a failure is noted and yields `failed`, the others still count."""
        try:
            return read()
        except Exception as e:  # noqa: BLE001 - noted in `warnings`, the sample goes on
            self._note(what, e)
            return failed

    def _read_cgroups(self) -> dict[str, int]:
        """The server's containers summed; a role measured apart under its own prefix (`db_cpu_ns`)."""
        acc: dict[str, int] = {}
        for i, cg in enumerate(self.cgroups):
            pre = self.apart.get(i, "")
            if not cg.available():
                self._note(f"no cgroup files for container {cg.cid[:12]}: its CPU and memory are not counted")
                continue
            sample = self._try(f"cgroup of {cg.cid[:12]}", cg.read, CgroupSample())
            for k, v in sample.items():
                if isinstance(v, int):
                    acc[pre + k] = acc.get(pre + k, 0) + v
        return acc

    def _loop(self) -> None:
        try:
            self._sample_window()
        except Exception as e:  # noqa: BLE001 - a bug here must not kill the trial; it is reported
            self._note(f"stopped after {len(self.rows)} samples", e)

    def _sample_warmup(self) -> None:
        """The warm-up's seconds, each told to `on_row` only (one begun before the sampler is left out)."""
        first = -math.ceil(self.warmup)
        self._wait(self.t0 + first)
        prev, t_prev = self._read_cgroups(), now()
        base = (prev.get("oom_kills", 0), prev.get("mem_limit_hits", 0))
        for k in (k for k in range(first, 0) if t_prev <= self.t0 + k + EARLY):
            self._wait(self.t0 + k + 1 - EARLY)
            if self._stop.is_set():
                return
            prev, t_prev = self._sample(k, prev, t_prev, *base, keep=False)

    def _wait(self, until: float) -> None:
        while now() < until and not self._stop.is_set():
            time.sleep(min(0.05, max(0.0, until - now())))

    def _sample_window(self) -> None:
        if self.warmup > 0 and self.on_row is not None:
            self._sample_warmup()
        self._wait(self.t0 - 0.05)
        for cg in self.cgroups:
            self._try(f"resetting the memory peak of {cg.cid[:12]} (mem_peak covers its whole life)", cg.reset_peak,
                      None)
        prev, t_prev = self._read_cgroups(), now()
        self._try("the kernel's TCP counters", self.kernel.mark, None)
        base_oom, base_hits = prev.get("oom_kills", 0), prev.get("mem_limit_hits", 0)
        k = 0
        while self.seconds is None or k < self.seconds:
            due = self.t0 + k + 1 - EARLY
            self._wait(due)
            if self._stop.is_set():
                # one last sample, no more: the second that fell due before the load stopped (a slow sample, e.g.
                # a status page that took a second, ran past it), or the last part of a second (-n often ends a
                # trial inside one: without it a short trial would have no server figures at all)
                if due <= self._stopped_at or self._stopped_at - t_prev >= MIN_PART_S:
                    self._sample(k, prev, t_prev, base_oom, base_hits)
                break
            prev, t_prev = self._sample(k, prev, t_prev, base_oom, base_hits)
            k += 1

    def _sample(self, k: int, prev: dict[str, int], t_prev: float, base_oom: int,
                base_hits: int, keep: bool = True) -> tuple[dict[str, int], float]:
        """One row: CPU over the time since `t_prev`, the rest as it is now; kept unless not `keep` (warm-up)."""
        cur = self._read_cgroups()
        t = now()
        row: ServerRow = {**self.labels, "second": k}
        for pre in ("", *self.apart.values()):
            if f"{pre}cpu_ns" in cur and f"{pre}cpu_ns" in prev:
                row[f"{pre}cpu_pct"] = round(100.0 * (cur[f"{pre}cpu_ns"] - prev[f"{pre}cpu_ns"]) / 1e9
                                             / max(1e-6, t - t_prev), 2)
            for key in ("mem_bytes", "mem_rss_bytes", "mem_max_usage_bytes", "threads", "procs"):
                if pre + key in cur:
                    row[pre + key] = cur[pre + key]
        row["oom_kills"] = cur.get("oom_kills", 0) - base_oom
        row["mem_limit_hits"] = cur.get("mem_limit_hits", 0) - base_hits
        states = self._try("TCP states", self.tcp_states, NO_COUNTS)
        for st in TCP_STATES:
            row["tcp_" + st.lower().replace("-", "_")] = states.get(st, 0)
        row["tcp_total"] = sum(states.values())
        row.update(self._try("the kernel's TCP counters", self.kernel.deltas, NO_COUNTS))
        status: dict[str, float] = {}
        for kind in self.dep.status_pages:
            status.update(self._try(f"{kind} status page", partial(self.status_page, kind), NO_FIGURES))
        row.update(with_busy_workers(status, self.dep.stack.busy_workers, self.dep.status_pages.values()))
        if keep:
            self.rows.append(row)
        if self.on_row is not None:
            self.on_row(row)
        return cur, t


def summarize(rows: list[ServerRow], apart: Iterable[str] = (), limits: Mapping[str, list[Any]] | None = None,
              facts: kernel.KernelDoc | None = None) -> ServerMetrics:
    """The per-trial server figures: cpu_pct, mem_peak_bytes, pids_peak, ...; the roles measured `apart`
    on their own, with the `limits` their peaks are measured against; the kernel's counters with their `facts`."""
    if not rows:
        return {"cpu_pct": None, "mem_peak_bytes": None, "pids_peak": None, "samples": 0}
    extra: ServerMetrics = {"kernel": k} if (k := kernel.totals(rows, facts)) else {}
    if apart:
        extra.update({"apart": summarize_apart(rows, apart), "limits": dict(limits or {})})

    def col(k: str) -> list[float]:
        return [r[k] for r in rows if r.get(k) is not None]

    def peak(k: str) -> int | None:
        vals = col(k)
        return int(max(vals)) if vals else None

    cpu, mem, busy = col("cpu_pct"), col("mem_bytes"), col("busy_workers")
    mem_peak = peak("mem_max_usage_bytes")
    return {
        "cpu_pct": round(sum(cpu) / len(cpu), 2) if cpu else None,
        "cpu_pct_max": max(cpu) if cpu else None,
        "mem_peak_bytes": mem_peak if mem_peak is not None else peak("mem_bytes"),
        "mem_mean_bytes": int(sum(mem) / len(mem)) if mem else None,
        "pids_peak": peak("threads"),
        "procs_peak": peak("procs"),
        "tcp_peak": peak("tcp_total"),
        "tcp_established_peak": peak("tcp_estab"),
        "busy_workers_peak": max(busy) if busy else None,
        "oom_kills": peak("oom_kills") or 0,
        "mem_limit_hits": peak("mem_limit_hits") or 0,
        "samples": len(rows),
        **extra,
    }
