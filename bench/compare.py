"""The load engine measured against wrk and ab on the same pinned server, in one run.

    .venv/bin/python bench/compare.py [--time 10] [--rounds 2] [--levels 50,1000]

Starts the `nginx` stack pinned to CPU 1 (worker_connections raised so 1000
clients fit), then alternates A B A B with every client pinned to CPU 0:
wrk vs `loadcmp bench --keepalive`, and ab vs `loadcmp bench` (a new connection
per request), at each level; the aiohttp engine's ratio is printed too, and without
keep-alive the pure-Python loop's (LOADCMP_PURE_PYTHON=1, the fallback of the compiled one). Last, a
15000-client closed loop for 20 s: exact counts and the client's peak memory.
A benchmark, not a test: it prints ratios and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

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


def run_wrk(url: str, c: int, t: int, lua: str) -> float:
    out = subprocess.run(pinned(["wrk", "-t1", f"-c{c}", f"-d{t}s", "-s", lua, url]), capture_output=True, text=True,
                         check=True).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    return doc["requests"] / doc["seconds"]


def run_ab(url: str, c: int, t: int) -> float:
    out = subprocess.run(pinned(["ab", "-q", "-r", "-c", str(c), "-t", str(t), "-n", "10000000", url]),
                         capture_output=True, text=True).stdout
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    done = int(fields["Complete requests"].strip())
    secs = float(fields["Time taken for tests"].split()[0])
    return done / secs


def run_loadcmp(url: str, c: int, t: int, keepalive: bool, engine: str = "fast", pure: bool = False) -> dict:
    cmd = [PY, "-m", "loadcmp", "bench", url, "-c", str(c), "-t", str(t), "--warmup", "1", "--json",
           "--client-cpus", "0", "--engine", engine] + (["-k"] if keepalive else [])
    env = {**os.environ, "LOADCMP_PURE_PYTHON": "1" if pure else "0"}
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
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
                paths = set()
                for _ in range(args.rounds):
                    ref.append(run_wrk(url, c, args.time, lua) if keepalive else run_ab(url, c, args.time))
                    doc = run_loadcmp(url, c, args.time, keepalive)
                    ours.append(doc["completions_per_s"])
                    paths.add(doc.get("engine_path", "?"))
                    if not keepalive:
                        pure.append(run_loadcmp(url, c, args.time, keepalive, pure=True)["completions_per_s"])
                aio.append(run_loadcmp(url, c, args.time, keepalive, "aiohttp")["completions_per_s"])
                r, o, a = statistics.mean(ref), statistics.mean(ours), statistics.mean(aio)
                p = statistics.mean(pure) if pure else None
                rows.append((c, "keep-alive" if keepalive else "new conn", ref_name, r, o, o / r, a / r,
                             None if p is None else p / r, "/".join(sorted(paths))))
                extra = "" if p is None else f"   python loop {p:8.0f} ({p / r:.2f}x)"
                print(f"c={c:<5} {rows[-1][1]:<10} {ref_name:>3} {r:9.0f} req/s   loadcmp fast {o:9.0f} "
                      f"({o / r:.2f}x, {rows[-1][-1]}){extra}   aiohttp {a:8.0f} ({a / r:.2f}x)", flush=True)
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
