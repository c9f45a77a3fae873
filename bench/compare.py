"""The load engine measured against wrk and ab on the same pinned server, in one run.

    .venv/bin/python bench/compare.py [--time 5] [--rounds 5] [--levels 50,1000] [--page /plaintext]
                                      [--rows http,https,h2] [--live]

Starts the `nginx` stack pinned to CPU 1, with one worker for its one CPU (the stack's
`auto` counts the machine's CPUs, and two workers on one CPU take turns) and
worker_connections raised so 1000 clients fit, and loads `/plaintext`: the least work
nginx does for a request (a `return`, no file). Against a static file nginx's one core
is the limit of any keep-alive client here (it spends 1.2-1.7x what wrk does on a
request), and the ratio then measures the server twice. Every client is pinned to CPU 0,
its whole process, and measured as wrk and ab measure themselves: from its start, no
warm-up (`--warmup 0`), the connect storm of 1000 clients included.

At each level it alternates wrk vs `loadcmp bench --keepalive` and ab vs `loadcmp bench`
(a new connection per request), in rounds of A B, then B A, so that a machine that
speeds up or slows down within a round favours neither; each ratio is the median of the
rounds' ratios, with their range. Short runs in many rounds: a run's rate moves by
±15 % here from one run to the next whatever the client. The aiohttp engine's ratio is
printed too, and without keep-alive the pure-Python loop's (LOADCMP_PURE_PYTHON=1, the
fallback of the compiled one). Beside each rate: the client's CPU per request (wrk
and ab: their process's user + system time; loadcmp: its load thread's, inside the
window) and each CPU's busy share (the median of half-second samples over the run), which
say which side was the limit: when the server's CPU is full, the ratio measures the
server under each client, not the clients. Last, a 15000-client closed loop for 20 s:
exact counts and the client's peak memory. A benchmark, not a test: it prints ratios
and asserts nothing.

With --live, each round also runs loadcmp's bench with `--live PORT`, a scraper of its `/metrics` once a second
(as Prometheus), and a headless Chromium on its page (one browser, started before the rounds, opens each page
as soon as it answers; not pinned: a browser on this machine takes its CPU where the system puts it), so that
one run gives the ratios with and without the page, and the ratio of the two, round by round.

Then the https rows (`tls_rows`): the same stack started again, pinned the same way, serving https, with wrk
(keep-alive), ab (a new connection per request) and `h2load --h1` against loadcmp. `--rows https` runs only
those; `--rows http` only the plain ones. Then the h2 rows (`h2_rows`): the same stack serving h2 over TLS and
h2c, h2load against `loadcmp bench --proto h2|h2c -m M` at -c 50 -m 10 and -c 1000 -m 1 (`--rows h2`).

Then the mix rows (`mix_rows`): one page against a 3-page weighted mix of pages nginx answers alike, in
rounds of A B, then B A (the bar: the mix at >= 0.95x one page), over HTTP/1.1 (`--rows mix`) and over h2 at
-c 50 -m 10 (`--rows mix-h2`).

Then the trace rows (`trace_rows`): the same engine with `--trace-sample 1` against it untraced, in rounds of A B,
then B A (the bar: traced >= 0.95x), and the bytes per request of the requests.parquet each traced run writes
(`--rows trace`).

Last, the scale row (`scale_rows`): `--net 4g --think 5s -k -c 10000` against the same nginx, 10,000 users each
idling 5 s between requests on a kept-alive connection through Toxiproxy: whether every user was served, the
client's and the proxy's CPU per request and peak memory, and whether either was flagged as the bottleneck
(`--rows scale`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from common import PY, Run, free_port, measured, median, pinned, run_ab, run_wrk

from loadcmp.lab import containers as lab, planning
from loadcmp.lab import stacks as st

CHROMIUM = "/usr/bin/chromium"
WRK_LUA = """
done = function(summary, latency, requests)
  local secs = summary.duration / 1e6
  io.write(string.format('{"requests": %d, "seconds": %.6f, "errors": %d}\\n', summary.requests, secs,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status
    + summary.errors.timeout))
end
"""


def run_loadcmp(url: str, c: int, t: int, keepalive: bool, engine: str = "fast", pure: bool = False,
                live: bool = False) -> tuple[Run, str]:
    """One `loadcmp bench`, and which loop ran (`engine_path`); `live`: with its page watched by a browser."""
    cmd = [PY, "-m", "loadcmp", "bench", url, "-c", str(c), "-t", str(t), "--warmup", "0", "--json",
           "--client-cpus", "0", "--engine", engine] + (["-k"] if keepalive else [])
    env = {**os.environ, "LOADCMP_PURE_PYTHON": "1" if pure else "0"}
    if live:
        port = free_port()
        with BROWSER[0].on(port), scraping(port):
            out, _, b0, b1 = measured(pinned([*cmd, "--live", str(port)]), check=True, env=env)
    else:
        out, _, b0, b1 = measured(pinned(cmd), check=True, env=env)
    doc = json.loads(out)
    return Run(doc["completions_per_s"], doc.get("client_cpu_us") or float("nan"), b0, b1), doc.get("engine_path", "?")


class Browser:
    """One headless Chromium for the whole benchmark, started before the first round (its start-up, seconds of
    both CPUs, is no page's cost), which opens each live page as soon as it answers and leaves it after.
    Playwright's async API on a loop in a thread of its own: the rounds' subprocesses block the main thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self._call(self._start())

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    async def _start(self) -> None:
        from playwright.async_api import async_playwright

        self.pw = await async_playwright().start()
        self.browser = await self.pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        self.page = await self.browser.new_page()

    @contextlib.contextmanager
    def on(self, port: int) -> Iterator[None]:
        done = threading.Event()

        def attach() -> None:
            while not done.is_set():
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                except OSError:
                    time.sleep(0.02)
                    continue
                self._call(self.page.goto(f"http://127.0.0.1:{port}/", wait_until="commit"))
                return

        t = threading.Thread(target=attach, daemon=True)
        t.start()
        try:
            yield
        finally:
            done.set()
            t.join()
            self._call(self.page.goto("about:blank"))

    def close(self) -> None:
        self._call(self.browser.close())
        self._call(self.pw.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)


@contextlib.contextmanager
def scraping(port: int, every: float = 1.0) -> Iterator[None]:
    """A scraper of the live page's /metrics once a second, as Prometheus would, while the page is watched."""
    done = threading.Event()

    def scrape() -> None:
        while not done.wait(every):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()

    t = threading.Thread(target=scrape, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()


BROWSER: list[Browser] = []
"""--live: the one browser (made in `main`)."""


class Compared(NamedTuple):
    """The rounds of one level and mode: each runner's runs, round by round."""

    ref: list[Run]
    fast: list[Run]
    pure: list[Run]
    live: list[Run]

    @staticmethod
    def ratios(ours: list[Run], ref: list[Run]) -> list[float]:
        return [o.rps / r.rps for o, r in zip(ours, ref, strict=True)]


def compare(rounds: int, ref: Callable[[], Run], fast: Callable[[], Run], pure: Callable[[], Run] | None,
            live: Callable[[], Run] | None = None) -> Compared:
    """`rounds` rounds of the reference and loadcmp, in the order A B, then B A."""
    got = Compared([], [], [], [])
    for i in range(rounds):
        order = [(got.ref, ref), (got.fast, fast)] + ([(got.pure, pure)] if pure is not None else []) + \
            ([(got.live, live)] if live is not None else [])
        for runs, run in order if i % 2 == 0 else order[::-1]:
            runs.append(run())
    return got


class Row(NamedTuple):
    c: int
    mode: str
    ref: str
    ratio: float
    aiohttp: float
    pure: float | None
    path: str
    live: float | None = None
    """With --live and a browser: loadcmp's ratio to the reference."""
    with_without: list[float] | None = None
    """With --live: each round's rate with the page over the one without."""


def one_level(url: str, c: int, keepalive: bool, t: int, rounds: int, lua: str, live: bool = False) -> Row:
    """The rounds at one level and mode, printed as they end."""
    paths: set[str] = set()

    def ours(pure: bool = False, watched: bool = False) -> Run:
        run, path = run_loadcmp(url, c, t, keepalive, pure=pure, live=watched)
        if not pure:
            paths.add(path)
        return run

    ref_name = "wrk" if keepalive else "ab"
    got = compare(rounds, (lambda: run_wrk(url, c, t, lua)) if keepalive else (lambda: run_ab(url, c, t)), ours,
                  None if keepalive else (lambda: ours(pure=True)), (lambda: ours(watched=True)) if live else None)
    aio = run_loadcmp(url, c, t, keepalive, "aiohttp")[0].rps
    fast_r = Compared.ratios(got.fast, got.ref)
    pure_r = Compared.ratios(got.pure, got.ref) if got.pure else []
    r = median([x.rps for x in got.ref])
    live_r = Compared.ratios(got.live, got.ref) if got.live else []
    row = Row(c, "keep-alive" if keepalive else "new conn", ref_name, median(fast_r), aio / r,
              median(pure_r) if pure_r else None, "/".join(sorted(paths)), median(live_r) if live_r else None,
              Compared.ratios(got.live, got.fast) if got.live else None)
    py = f"   python loop {median([x.rps for x in got.pure]):8.0f} ({median(pure_r):.2f}x)" if pure_r else ""
    fast_rps = median([x.rps for x in got.fast])
    print(f"c={c:<5} {row.mode:<10} {ref_name:>3} {r:9.0f} req/s   loadcmp fast {fast_rps:9.0f} "
          f"({row.ratio:.2f}x, {min(fast_r):.2f}-{max(fast_r):.2f}, rounds {' '.join(f'{x:.2f}' for x in fast_r)}, "
          f"{row.path}){py}   aiohttp {aio:8.0f} ({row.aiohttp:.2f}x)", flush=True)
    print(f"        client CPU per request: {ref_name} {median([x.cpu_us for x in got.ref]):.1f} us, loadcmp "
          f"{median([x.cpu_us for x in got.fast]):.1f} us (its load thread); CPU busy, client / server: with "
          f"{ref_name} {median([x.client_busy for x in got.ref]):.0f} / "
          f"{median([x.server_busy for x in got.ref]):.0f} %, "
          f"with loadcmp {median([x.client_busy for x in got.fast]):.0f} / "
          f"{median([x.server_busy for x in got.fast]):.0f} %", flush=True)
    if row.with_without:
        print(f"        with --live, a browser and a scraper: {median([x.rps for x in got.live]):.0f} req/s "
              f"({row.live:.2f}x); "
              f"with / without, round by round: {' '.join(f'{x:.3f}' for x in row.with_without)} "
              f"(median {median(row.with_without):.3f})", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=5, help="seconds per run (default 5)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per level and mode (default 5)")
    ap.add_argument("--levels", default="50,1000")
    ap.add_argument("--page", default="/plaintext", help="what to load (default /plaintext)")
    ap.add_argument("--big", type=int, default=15000)
    ap.add_argument("--live", action="store_true", help="also run loadcmp with --live and a headless Chromium on "
                    "its page, in the same rounds")
    ap.add_argument("--rows", default="http,https,h2,mix,mix-h2,trace,scale", help="which rows: http (and the big "
                    "closed loop), https, h2 (h2 and h2c against h2load), mix (a 3-page mix against one page), mix-h2 "
                    "(the same over h2), trace (--trace-sample 1 against untraced), scale (10,000 users through 4g, "
                    "thinking 5 s), comma-separated (default all seven)")
    args = ap.parse_args()
    rows_asked = set(args.rows.split(","))
    if not rows_asked or rows_asked - {"http", "https", "h2", "mix", "mix-h2", "trace", "scale"}:
        sys.exit(f"--rows {args.rows}: give http, https, h2, mix, mix-h2, trace, scale or several, comma-separated")
    if args.live:
        if not Path(CHROMIUM).exists():
            sys.exit(f"--live needs {CHROMIUM}: run `make setup`")
        BROWSER.append(Browser())
    for tool in ("wrk", "ab", "taskset") + (("h2load",) if rows_asked & {"https", "h2"} else ()):
        if not shutil.which(tool):
            sys.exit(f"bench needs {tool}: run `make setup` (installs wrk, apache2-utils and nghttp2-client)")
    levels = [int(x) for x in args.levels.split(",")]
    stack = st.get_stack("nginx")
    overrides = st.parse_overrides(["nginx.worker_processes=1", "nginx.worker_connections=20000",
                                    "nginx.keepalive_requests=100000000"])
    with tempfile.TemporaryDirectory() as tmp:
        lua = str(Path(tmp) / "report.lua")
        Path(lua).write_text(WRK_LUA)
        if "http" in rows_asked:
            plain_rows(stack, overrides, levels, args, lua)
        if "https" in rows_asked:
            import tls_rows

            tls_rows.print_tls_ratios(tls_rows.https_rows(stack, overrides, Path(tmp), levels, args.time,
                                                          args.rounds, args.page, lua))
        if "h2" in rows_asked:
            import h2_rows

            h2_rows.print_h2_ratios(h2_rows.h2_rows(stack, overrides, Path(tmp), args.time, args.rounds, args.page))
        if rows_asked & {"mix", "mix-h2"}:
            import mix_rows

            protos = tuple(p for p, row in (("h1", "mix"), ("h2", "mix-h2")) if row in rows_asked)
            mix_rows.mix_rows(stack, overrides, levels[:1], args.time, args.rounds, protos)
        if "trace" in rows_asked:
            import trace_rows

            trace_rows.on_nginx(levels[:1], args.time, args.rounds)
        if "scale" in rows_asked:
            import scale_rows

            scale_rows.on_nginx(10000, 20, 15, args.page)
    if BROWSER:
        BROWSER[0].close()


def plain_rows(stack: st.Stack, overrides: dict[str, Any], levels: list[int], args: argparse.Namespace,
               lua: str) -> None:
    """The plain-http rows and the big closed loop, on their own deployment."""
    plan = planning.plan_deployment(stack, cpus="1", overrides=overrides)
    with lab.up(plan) as dep:
        url = f"http://127.0.0.1:{dep.port}{args.page}"
        print(f"server: nginx stack (one worker) on CPU 1 at {url}; clients on CPU 0; {args.time} s per run, "
              f"{args.rounds} rounds (A B, then B A)\n")
        rows = [one_level(url, c, keepalive, args.time, args.rounds, lua, args.live)
                for c in levels for keepalive in (True, False)]
        print("\nratios (loadcmp / reference, the median of the rounds'):")
        for row in rows:
            py = "" if row.pure is None else f"  python loop {row.pure:.2f}x"
            live = "" if row.live is None else \
                f"  with --live {row.live:.2f}x (with / without {median(row.with_without or []):.3f})"
            print(f"  c={row.c:<5} {row.mode:<10} vs {row.ref}: fast {row.ratio:.2f}x ({row.path}){py}  "
                  f"aiohttp {row.aiohttp:.2f}x{live}")
        big_loop(url, args.big)


def big_loop(url: str, big: int) -> None:
    """A `big`-client closed loop for 20 s: exact counts and the client's peak memory."""
    argv = [PY, "-m", "loadcmp", "bench", url, "-c", str(big), "-t", "20", "--json", "--client-cpus", "0"]
    keys = ("started", "ok", "failed", "failures", "unfinished", "rps", "peak_rss_kib", "warnings")
    code = ("import resource,subprocess,sys,json;"
            f"p=subprocess.run({argv!r},"
            "capture_output=True,text=True);d=json.loads(p.stdout);"
            "d['peak_rss_kib']=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
            f"print(json.dumps({{k:d[k] for k in {keys!r}}}))")
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
