"""What the benchmark's rows share (bench/compare.py and its https, h2 and mix rows): loadcmp's checkout on the
path, pinning to a CPU, one run measured (its output, CPU seconds, each CPU's busy share), wrk's and ab's runs, rounds
alternated A B, then B A, and the median of the rounds."""

from __future__ import annotations

import json
import resource
import socket
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PY = sys.executable
SAMPLE_S = 0.5


def pinned(cmd: list[str], cpu: str = "0") -> list[str]:
    return ["taskset", "-c", cpu, *cmd]


class Run(NamedTuple):
    """One run: its rate, the client's CPU per request (us), and the busy share (%) of
    the clients' CPU and of the server's."""

    rps: float
    cpu_us: float
    client_busy: float
    server_busy: float


def cpu_times() -> dict[str, tuple[int, int]]:
    """(busy, all) jiffies so far of CPU 0 and CPU 1, from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(("cpu0 ", "cpu1 ")):
                v = [int(x) for x in line.split()[1:9]]
                out[line[:4]] = (sum(v) - v[3] - v[4], sum(v))
    return out


def measured(cmd: list[str], **kw: Any) -> tuple[str, float, float, float]:
    """Run `cmd`: its stdout, its CPU seconds (user + system), and the median busy share of
    CPU 0 and of CPU 1 over half-second samples meanwhile (a start-up's idle samples do
    not move a median much)."""
    shares: dict[str, list[float]] = {"cpu0": [], "cpu1": []}
    done = threading.Event()

    def sample() -> None:
        prev = cpu_times()
        while not done.wait(SAMPLE_S):
            cur = cpu_times()
            for k, (b, a) in cur.items():
                shares[k].append(100.0 * (b - prev[k][0]) / max(1, a - prev[k][1]))
            prev = cur

    sampler = threading.Thread(target=sample, daemon=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler.start()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, **kw).stdout
    finally:
        done.set()
        sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    med = {k: statistics.median(v) if v else float("nan") for k, v in shares.items()}
    return out, cpu, med["cpu0"], med["cpu1"]


def run_wrk(url: str, c: int, t: int, lua: str) -> Run:
    out, cpu, b0, b1 = measured(pinned(["wrk", "-t1", f"-c{c}", f"-d{t}s", "-s", lua, url]), check=True)
    doc = json.loads(out.strip().splitlines()[-1])
    return Run(doc["requests"] / doc["seconds"], 1e6 * cpu / max(1, doc["requests"]), b0, b1)


def run_ab(url: str, c: int, t: int) -> Run:
    out, cpu, b0, b1 = measured(pinned(["ab", "-q", "-r", "-c", str(c), "-t", str(t), "-n", "10000000", url]))
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    done = int(fields["Complete requests"].strip())
    secs = float(fields["Time taken for tests"].split()[0])
    return Run(done / secs, 1e6 * cpu / max(1, done), b0, b1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def alternate(rounds: int, runners: dict[str, Callable[[], Any]]) -> dict[str, list[Any]]:
    """`rounds` rounds of the runners, in their order, then reversed, and so on."""
    got: dict[str, list[Any]] = {name: [] for name in runners}
    order = list(runners.items())
    for i in range(rounds):
        for name, run in order if i % 2 == 0 else order[::-1]:
            got[name].append(run())
    return got
