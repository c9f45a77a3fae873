"""The scale row of the benchmark (bench/compare.py): 10,000 users as the internet has them, against nginx.

    .venv/bin/python bench/scale_rows.py [--clients 10000] [--time 20] [--warmup 15] [--page /plaintext]
    (or compare.py --rows scale)

`loadcmp bench URL --net 4g --think 5s -k -c 10000`: each user keeps its connection through Toxiproxy with
WebPageTest's 4G (170 ms round trip, 9 Mbit/s each way) and idles 5 s between its requests, so about 2,000 requests
a second are asked of 10,000 open connections. The nginx stack is pinned to CPU 1 as compare.py pins it (one worker,
worker_connections 20000); the client and its proxy to CPU 0. Printed: whether every user was served (each one's
requests answered, none failed, the counts exact), the client's and the proxy's CPU per request, each one's peak
memory (resident set, sampled twice a second from /proc: the client's processes and the proxy's apart), and whether
either was flagged as the bottleneck (client-bound, network-bound). A benchmark, not a test: it asserts nothing.

The client raises its own open-file limit to the hard one (`load.run.limits.raise_nofile`), and so does this script
for the proxy it starts. The proxy holds two descriptors per user (the user's connection and its own to nginx) and a
few of its own (PROXY_FILES), so 10,000 users need a hard limit above 20,000: below it the proxy's last connections
fail, and their users reset and retry (said before the row, and in its failures).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, pinned

PROXY_FILES = 64
"""Open files the proxy keeps besides its users' (its listeners, its API, epoll, Go's runtime): a margin."""
PROXY = "toxiproxy"
"""The start of the proxy's process name (/proc/PID/comm: `toxiproxy-serv`)."""


def _tree(root: int) -> list[int]:
    """`root` and every process below it (from /proc's children lists)."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                todo += [int(x) for x in task.read_text().split()]
            except OSError:
                continue
    return out


def _rss_kib(pid: int) -> tuple[str, int]:
    """A process's name and resident set (KiB; 0 once it is gone)."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS:"))
        return name, int(line.split()[1])
    except (OSError, StopIteration, ValueError):
        return "", 0


@contextmanager
def peak_memory(root: int) -> Iterator[dict[str, int]]:
    """The peak resident set (KiB) of the client's processes (`client`: loadcmp and its workers, not the proxy)
    and of the proxy's (`proxy`) under `root`, each summed per sample, sampled every 0.5 s until the block ends."""
    peaks = {"client": 0, "proxy": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            now = {"client": 0, "proxy": 0}
            for pid in _tree(root):  # taskset execs loadcmp: `root` is loadcmp, the proxy and workers below it
                name, kib = _rss_kib(pid)
                now["proxy" if name.startswith(PROXY) else "client"] += kib
            for k, v in now.items():
                peaks[k] = max(peaks[k], v)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        yield peaks
    finally:
        done.set()
        t.join()


def run_scale(url: str, clients: int, t: int, warmup: int) -> tuple[dict[str, Any], dict[str, int]]:
    """One pinned `loadcmp bench --net 4g --think 5s -k`: its --json and the peak memory of client and proxy."""
    cmd = pinned([PY, "-m", "loadcmp", "bench", url, "--net", "4g", "--think", "5s", "-k", "-c", str(clients),
                  "-t", str(t), "--warmup", str(warmup), "--timeout", "30s", "--json", "--client-cpus", "0"])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "LOADCMP_PURE_PYTHON": "0"})
    with peak_memory(proc.pid) as peaks:  # taskset execs loadcmp: the pid is loadcmp's, the proxy its child
        out, err = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"loadcmp bench exited with {proc.returncode}: {err.strip()[-2000:]}")
    return json.loads(out), peaks


def print_scale(doc: dict[str, Any], peaks: dict[str, int], clients: int) -> None:
    """What the scale row shows, in lines."""
    net = doc.get("net") or {}
    exact = doc["ok"] + doc["failed"] + doc["unfinished"] == doc["started"]
    unanswered = doc.get("users_unanswered")
    print(f"\nscale: --net 4g --think 5s -k -c {clients:,} against nginx (one worker) on CPU 1; client and proxy on "
          f"CPU 0; {doc.get('warmup_s', 0):g} s warm-up, {doc['duration_s']:g} s window")
    print(f"  {doc['rps']:,.0f} req/s (about {clients / 5:,.0f} asked); started {doc['started']:,}, ok {doc['ok']:,}, "
          f"failed {doc['failed']:,} {({k: v for k, v in doc['failures'].items() if v})}, unfinished "
          f"{doc['unfinished']:,}; counts exact: {exact}; users with no answer in the window: {unanswered}; "
          f"p50 {doc['latency_ms']['p50']:,.0f} ms, p99 {doc['latency_ms']['p99']:,.0f} ms")
    print(f"  client: {doc.get('client_cpu_us')} us CPU per request, peak memory {peaks['client'] / 1024:,.0f} MiB; "
          f"proxy ({net.get('proxy', PROXY)}): {net.get('proxy_cpu_us')} us CPU per request, CPU "
          f"{net.get('proxy_cpu_pct')}% (busy {net.get('proxy_busy_pct')}% of its CPU), peak memory "
          f"{peaks['proxy'] / 1024:,.0f} MiB")
    print(f"  bottleneck flagged: client-bound {bool(doc.get('client_bound'))}, network-bound "
          f"{bool(net.get('network_bound'))}" + (f" ({doc['client_bound_reason']})" if doc.get("client_bound") else ""))
    seen = net.get("seen") or {}
    print(f"  round trip seen {seen.get('rtt_ms')} ms (asked {(net.get('asked') or {}).get('rtt_ms')} ms)")
    for w in doc.get("warnings", []):
        print(f"  warning: {w}")


def on_nginx(clients: int, t: int, warmup: int, page: str) -> None:
    """The scale row against the nginx stack pinned as compare.py pins it."""
    from loadcmp.lab import containers as lab, planning
    from loadcmp.lab import stacks as st

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * clients + PROXY_FILES:
        print(f"note: the open-file limit is {hard:,} (hard): the proxy holds two per user, {2 * clients:,} for "
              f"{clients:,} users and its own besides, so its last connections fail")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by loadcmp and its proxy
    overrides = st.parse_overrides(["nginx.worker_processes=1", "nginx.worker_connections=20000",
                                    "nginx.keepalive_requests=100000000"])
    with lab.up(planning.plan_deployment(st.get_stack("nginx"), cpus="1", overrides=overrides)) as dep:
        doc, peaks = run_scale(f"http://127.0.0.1:{dep.port}{page}", clients, t, warmup)
    print_scale(doc, peaks, clients)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--time", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--page", default="/plaintext")
    args = ap.parse_args()
    on_nginx(args.clients, args.time, args.warmup, args.page)


if __name__ == "__main__":
    main()
