"""The server's side of a measurement: 1 Hz samples lined up with the client's seconds.

Read straight from the containers' cgroups (CPU time, memory, tasks, OOM
kills), from the kernel's socket table for the server port (by TCP state, with
`ss`'s kernel-side filter so that hundreds of thousands of TIME_WAIT sockets
cost no Python time), and from the stacks' status pages (busy/idle workers).
Docker's stats API is the fallback where cgroup files cannot be found.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .lab import Deployment, http_get

CG = Path("/sys/fs/cgroup")
EARLY = 0.05
"""Samples are taken this much before each second ends, so the last one still
sees the load (the client drops its connections exactly at the end)."""
TCP_STATES = ("ESTAB", "SYN-RECV", "TIME-WAIT", "CLOSE-WAIT", "FIN-WAIT-1", "FIN-WAIT-2", "LAST-ACK", "CLOSING")


def _read_int(p: Path) -> int | None:
    try:
        return int(p.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _kv(p: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in p.read_text().splitlines():
            k, _, v = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[k] = int(v)
    return out


@dataclass
class Cgroup:
    """cgroup v1 (or v2) files of one container."""

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

    def read(self) -> dict[str, int | None]:
        if self.v1:
            stat = _kv(self._v1("memory", "memory.stat"))
            usage = _read_int(self._v1("memory", "memory.usage_in_bytes"))
            inactive = stat.get("total_inactive_file", 0)
            oom = _kv(self._v1("memory", "memory.oom_control"))
            procs = self._v1("pids", "cgroup.procs")
            return {
                "cpu_ns": _read_int(self._v1("cpuacct", "cpuacct.usage")),
                "mem_bytes": None if usage is None else max(0, usage - inactive),
                "mem_rss_bytes": stat.get("total_rss"),
                "mem_max_usage_bytes": _read_int(self._v1("memory", "memory.max_usage_in_bytes")),
                "mem_limit_hits": _read_int(self._v1("memory", "memory.failcnt")),
                "oom_kills": oom.get("oom_kill"),
                "threads": _read_int(self._v1("pids", "pids.current")),
                "procs": _count_lines(procs),
            }
        cpu = _kv(self._v2("cpu.stat"))
        ev = _kv(self._v2("memory.events"))
        stat = _kv(self._v2("memory.stat"))
        usage = _read_int(self._v2("memory.current"))
        return {
            "cpu_ns": None if "usage_usec" not in cpu else cpu["usage_usec"] * 1000,
            "mem_bytes": None if usage is None else max(0, usage - stat.get("inactive_file", 0)),
            "mem_rss_bytes": stat.get("anon"),
            "mem_max_usage_bytes": _read_int(self._v2("memory.peak")),
            "mem_limit_hits": ev.get("max"),
            "oom_kills": ev.get("oom_kill"),
            "threads": _read_int(self._v2("pids.current")),
            "procs": _count_lines(self._v2("cgroup.procs")),
        }

    def reset_peak(self) -> None:
        with contextlib.suppress(OSError):
            self._v1("memory", "memory.max_usage_in_bytes").write_text("0")


def _count_lines(p: Path) -> int | None:
    try:
        return len(p.read_text().splitlines())
    except OSError:
        return None


def tcp_states(port: int) -> dict[str, int]:
    """Sockets on 127.0.0.1:port by TCP state (server side), counted by awk."""
    cmd = f"ss -Htan 'sport = :{port}' | awk '{{c[$1]++}} END {{for (s in c) print s, c[s]}}'"
    try:
        res = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out: dict[str, int] = {}
    for line in res.stdout.splitlines():
        k, _, v = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[k] = int(v)
    return out


def status_sample(dep: Deployment, timeout: float = 0.5) -> dict[str, float | None]:
    """Busy/idle workers and connections from the stack's status pages."""
    out: dict[str, float | None] = {}
    for kind, url in dep.status_urls.items():
        path = url.split(str(dep.port), 1)[1]
        try:
            code, body = http_get(dep.port, path, timeout=timeout)
        except OSError:
            continue
        if code != 200:
            continue
        text = body.decode(errors="replace")
        if kind == "apache":
            for key, name in (("BusyWorkers", "apache_busy"), ("IdleWorkers", "apache_idle")):
                m = re.search(rf"^{key}: (\d+)", text, re.M)
                if m:
                    out[name] = float(m.group(1))
        elif kind == "nginx":
            m = re.search(r"Active connections:\s*(\d+)", text)
            if m:
                out["nginx_active"] = float(m.group(1))
            m = re.search(r"Reading: (\d+) Writing: (\d+) Waiting: (\d+)", text)
            if m:
                out["nginx_reading"], out["nginx_writing"], out["nginx_waiting"] = (float(x) for x in m.groups())
        elif kind == "fpm":
            with contextlib.suppress(ValueError):
                d = json.loads(text)
                out["fpm_active"] = float(d.get("active processes", 0))
                out["fpm_idle"] = float(d.get("idle processes", 0))
                out["fpm_queue"] = float(d.get("listen queue", 0))
                out["fpm_max_children_reached"] = float(d.get("max children reached", 0))
    # The front server's workers where it has them (Apache), else PHP's (nginx).
    busy = out.get("apache_busy", out.get("fpm_active"))
    if busy is not None:
        out["busy_workers"] = busy
    return out


@dataclass
class Sampler:
    """Samples a deployment once a second from `t0` in a background thread."""

    dep: Deployment
    t0: float
    labels: dict[str, Any] = field(default_factory=dict)
    seconds: int | None = None
    """How many seconds the window has; no sample is taken past it."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Sampler:
        self.cgroups = [Cgroup(c.id) for c in self.dep.containers]
        self._thread = threading.Thread(target=self._loop, name="loadcmp-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        return self.rows

    def _read_all(self) -> dict[str, Any]:
        acc: dict[str, Any] = {}
        for cg in self.cgroups:
            if not cg.available():
                continue
            for k, v in cg.read().items():
                if v is None:
                    continue
                acc[k] = acc.get(k, 0) + v
        return acc

    def _loop(self) -> None:
        from .load.driver import now

        with contextlib.suppress(Exception):
            while now() < self.t0 - 0.05 and not self._stop.is_set():
                time.sleep(min(0.05, self.t0 - now()))
            for cg in self.cgroups:
                cg.reset_peak()
            prev = self._read_all()
            t_prev = now()
            base_oom = prev.get("oom_kills", 0) or 0
            base_hits = prev.get("mem_limit_hits", 0) or 0
            k = 0
            while not self._stop.is_set() and (self.seconds is None or k < self.seconds):
                due = self.t0 + k + 1 - EARLY
                while now() < due and not self._stop.is_set():
                    time.sleep(min(0.05, max(0.0, due - now())))
                if self._stop.is_set():
                    break
                cur = self._read_all()
                t = now()
                row: dict[str, Any] = {**self.labels, "second": k}
                if "cpu_ns" in cur and "cpu_ns" in prev:
                    row["cpu_pct"] = round(100.0 * (cur["cpu_ns"] - prev["cpu_ns"]) / 1e9 / max(1e-6, t - t_prev), 2)
                for key in ("mem_bytes", "mem_rss_bytes", "mem_max_usage_bytes", "threads", "procs"):
                    if key in cur:
                        row[key] = cur[key]
                row["oom_kills"] = (cur.get("oom_kills", 0) or 0) - base_oom
                row["mem_limit_hits"] = (cur.get("mem_limit_hits", 0) or 0) - base_hits
                states = tcp_states(self.dep.port)
                for s in TCP_STATES:
                    row["tcp_" + s.lower().replace("-", "_")] = states.get(s, 0)
                row["tcp_total"] = sum(states.values())
                row.update(status_sample(self.dep))
                self.rows.append(row)
                prev, t_prev = cur, t
                k += 1


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-trial server figures (§6): cpu_pct, mem_peak_bytes, pids_peak, ..."""
    if not rows:
        return {"cpu_pct": None, "mem_peak_bytes": None, "pids_peak": None, "samples": 0}

    def col(k: str) -> list[float]:
        return [r[k] for r in rows if r.get(k) is not None]

    cpu, mem, peak, thr, procs = col("cpu_pct"), col("mem_bytes"), col("mem_max_usage_bytes"), col("threads"), col("procs")
    tcp = col("tcp_total")
    busy = col("busy_workers")
    return {
        "cpu_pct": round(sum(cpu) / len(cpu), 2) if cpu else None,
        "cpu_pct_max": max(cpu) if cpu else None,
        "mem_peak_bytes": int(max(peak)) if peak else (int(max(mem)) if mem else None),
        "mem_mean_bytes": int(sum(mem) / len(mem)) if mem else None,
        "pids_peak": int(max(thr)) if thr else None,
        "procs_peak": int(max(procs)) if procs else None,
        "tcp_peak": int(max(tcp)) if tcp else None,
        "tcp_established_peak": int(max(col("tcp_estab"))) if col("tcp_estab") else None,
        "busy_workers_peak": max(busy) if busy else None,
        "oom_kills": int(max(col("oom_kills"))) if col("oom_kills") else 0,
        "mem_limit_hits": int(max(col("mem_limit_hits"))) if col("mem_limit_hits") else 0,
        "samples": len(rows),
    }
