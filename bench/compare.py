"""The load engine measured against wrk and ab on the same pinned server, in one run.

    .venv/bin/python bench/compare.py [--time 10] [--rounds 2] [--levels 50,1000]

Starts the `nginx` stack pinned to CPU 1 (worker_connections raised so 1000
clients fit), then alternates A B A B with every client pinned to CPU 0:
wrk vs `loadcmp bench --keepalive`, and ab vs `loadcmp bench` (a new connection
per request), at each level; the aiohttp engine's ratio is printed too, and without
keep-alive the pure-Python loop's (LOADCMP_PURE_PYTHON=1, the fallback of the compiled one). Each
ratio is the median of the rounds' ratios: a round runs A and B back to back, so a drift
of the machine between rounds cancels within each. Beside each rate, the client's CPU
per request (wrk and ab: their process's user + system time; loadcmp: its load
thread's, inside the window) and the server CPU's busy share: when the server's CPU is
full, the ratio measures the server under each client, not the clients. Last, a
15000-client closed loop for 20 s: exact counts and the client's peak memory.
A benchmark, not a test: it prints ratios and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loadcmp import lab  # noqa: E402
from loadcmp import stacks as st  # noqa: E402

PY = sys.executable
WRK_LUA = """
done = function(summary, latency, requests)
  local secs = summary.duration / 1e6
  io.write(string.format('{"requests": %d, "seconds": %.6f, "errors": %d}\\n', summary.requests, secs,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
"""


def pinned(cmd: list[str], cpu: str = "0") -> list[str]:
    return ["taskset", "-c", cpu, *cmd]


class Run(NamedTuple):
    """One run: its rate, the client's CPU per request (us), the server CPU's busy share (%)."""

    rps: float
    cpu_us: float
    server_busy: float


def cpu_times(cpu: str = "1") -> tuple[int, int]:
    """(busy, all) jiffies of one CPU so far, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in next(line for line in f if line.startswith(f"cpu{cpu} ")).split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)


def measured(cmd: list[str], **kw: Any) -> tuple[str, float, float]:
    """Run `cmd`: its stdout, its CPU seconds (user + system) and CPU 1's busy share meanwhile."""
    before, (b0, a0) = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_times()
    out = subprocess.run(cmd, capture_output=True, text=True, **kw).stdout
    after, (b1, a1) = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_times()
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return out, cpu, 100.0 * (b1 - b0) / max(1, a1 - a0)


def run_wrk(url: str, c: int, t: int, lua: str) -> Run:
    out, cpu, busy = measured(pinned(["wrk", "-t1", f"-c{c}", f"-d{t}s", "-s", lua, url]), check=True)
    doc = json.loads(out.strip().splitlines()[-1])
    return Run(doc["requests"] / doc["seconds"], 1e6 * cpu / max(1, doc["requests"]), busy)


def run_ab(url: str, c: int, t: int) -> Run:
    out, cpu, busy = measured(pinned(["ab", "-q", "-r", "-c", str(c), "-t", str(t), "-n", "10000000", url]))
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    done = int(fields["Complete requests"].strip())
    secs = float(fields["Time taken for tests"].split()[0])
    return Run(done / secs, 1e6 * cpu / max(1, done), busy)


def run_loadcmp(url: str, c: int, t: int, keepalive: bool, engine: str = "fast", pure: bool = False) -> dict:
    cmd = [PY, "-m", "loadcmp", "bench", url, "-c", str(c), "-t", str(t), "--warmup", "1", "--json",
           "--client-cpus", "0", "--engine", engine] + (["-k"] if keepalive else [])
    env = {**os.environ, "LOADCMP_PURE_PYTHON": "1" if pure else "0"}
    out, _, busy = measured(cmd, check=True, env=env)
    return {**json.loads(out), "server_busy": busy}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--levels", default="50,1000")
    ap.add_argument("--big", type=int, default=15000)
    args = ap.parse_args()
    for tool in ("wrk", "ab", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"bench needs {tool}: run `make setup` (installs wrk and apache2-utils)")
    levels = [int(x) for x in args.levels.split(",")]
    stack = st.get_stack("nginx")
    overrides = st.parse_overrides(["nginx.worker_connections=20000", "nginx.keepalive_requests=100000000"])
    with tempfile.TemporaryDirectory() as tmp, lab.up(lab.plan_deployment(stack, cpus="1", overrides=overrides)) as dep:
        lua = str(Path(tmp) / "report.lua")
        Path(lua).write_text(WRK_LUA)
        url = f"http://127.0.0.1:{dep.port}/index.html"
        print(f"server: nginx stack on CPU 1 at {url}; clients on CPU 0; {args.time} s per run, "
              f"{args.rounds} rounds A B\n")
        rows = []
        for c in levels:
            for keepalive, ref_name in ((True, "wrk"), (False, "ab")):
                ref, ours, pure, aio = [], [], [], []
                ref_cpu, our_cpu, ref_busy, our_busy = [], [], [], []
                paths = set()
                for _ in range(args.rounds):
                    run = run_wrk(url, c, args.time, lua) if keepalive else run_ab(url, c, args.time)
                    ref.append(run.rps)
                    ref_cpu.append(run.cpu_us)
                    ref_busy.append(run.server_busy)
                    doc = run_loadcmp(url, c, args.time, keepalive)
                    ours.append(doc["completions_per_s"])
                    our_cpu.append(doc.get("client_cpu_us") or float("nan"))
                    our_busy.append(doc["server_busy"])
                    paths.add(doc.get("engine_path", "?"))
                    if not keepalive:
                        pure.append(run_loadcmp(url, c, args.time, keepalive, pure=True)["completions_per_s"])
                aio.append(run_loadcmp(url, c, args.time, keepalive, "aiohttp")["completions_per_s"])
                r, o, a = statistics.median(ref), statistics.median(ours), statistics.mean(aio)
                ratio = statistics.median(x / y for x, y in zip(ours, ref, strict=True))
                p = statistics.median(pure) if pure else None
                pratio = statistics.median(x / y for x, y in zip(pure, ref, strict=True)) if pure else None
                rows.append((c, "keep-alive" if keepalive else "new conn", ref_name, r, o, ratio, a / r, pratio,
                             "/".join(sorted(paths))))
                extra = "" if p is None else f"   python loop {p:8.0f} ({pratio:.2f}x)"
                rounds = " ".join(f"{x / y:.2f}" for x, y in zip(ours, ref, strict=True))
                print(f"c={c:<5} {rows[-1][1]:<10} {ref_name:>3} {r:9.0f} req/s   loadcmp fast {o:9.0f} "
                      f"({ratio:.2f}x, rounds {rounds}, {rows[-1][-1]}){extra}   aiohttp {a:8.0f} ({a / r:.2f}x)",
                      flush=True)
                print(f"        client CPU per request: {ref_name} {statistics.median(ref_cpu):.1f} us, loadcmp "
                      f"{statistics.median(our_cpu):.1f} us (its load thread); server CPU busy: with {ref_name} "
                      f"{statistics.median(ref_busy):.0f} %, with loadcmp {statistics.median(our_busy):.0f} % "
                      f"(its start-up included)", flush=True)
        print("\nratios (loadcmp / reference):")
        for c, mode, name, _r, _o, ratio, aratio, pratio, path in rows:
            py = "" if pratio is None else f"  python loop {pratio:.2f}x"
            print(f"  c={c:<5} {mode:<10} vs {name}: fast {ratio:.2f}x ({path}){py}  aiohttp {aratio:.2f}x")
        big = args.big
        code = ("import resource,subprocess,sys,json;"
                f"p=subprocess.run({[PY, '-m', 'loadcmp', 'bench', url, '-c', str(big), '-t', '20', '--json', '--client-cpus', '0']!r},"
                "capture_output=True,text=True);d=json.loads(p.stdout);"
                "d['peak_rss_kib']=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
                "print(json.dumps({k:d[k] for k in ('started','ok','failed','failures','unfinished','rps','peak_rss_kib','warnings')}))")
        doc = json.loads(subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True).stdout)
        exact = doc["ok"] + doc["failed"] + doc["unfinished"] == doc["started"]
        print(f"\nc={big} closed loop, 20 s, new connection per request: started {doc['started']:,}, ok {doc['ok']:,}, "
              f"failed {doc['failed']:,} {({k: v for k, v in doc['failures'].items() if v})}, unfinished "
              f"{doc['unfinished']:,}; counts exact: {exact}; {doc['rps']:,.0f} req/s; client peak memory "
              f"{doc['peak_rss_kib'] / 1024:.0f} MiB")
        for w in doc["warnings"]:
            print(f"  warning: {w}")


if __name__ == "__main__":
    main()
