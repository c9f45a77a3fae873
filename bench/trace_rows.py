"""The trace rows of the benchmark (bench/compare.py): the same engine with `--trace-sample 1` and without, same
server, same run.

    .venv/bin/python bench/trace_rows.py [--time 5] [--rounds 5] [--levels 50] [--server nginx|fast]
    (or compare.py --rows trace)

The nginx stack pinned to CPU 1 as compare.py pins it (or, `--server fast`, tests/helpers/fastserver.py pinned to
CPU 1: no Docker, and a server quick enough that the client is the limit), the client to CPU 0. Both runs go through
the same code (`run_load` in a pinned process, no warm-up), keep-alive and a new connection per request, in rounds of
A B, then B A; the ratio is the median of the rounds' (the bar: traced >= 0.95x untraced). Each traced run writes its
rows to a requests.parquet of its own, as a trial does (`store.traceparts.add_requests`), and its size per
row is printed (the bar: about 40 bytes); the rows are checked to be one per counted request. A benchmark, not a
test: it prints ratios and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, Run, measured, median, pinned

RUNNER = """
import json, sys, tempfile
from pathlib import Path
from loadcmp.load.driver import LoadSpec
from loadcmp.load.schedules import Closed
from loadcmp.load.record.summary import result_doc
from loadcmp.load.target import make_target
from loadcmp.load.run.workers import run_load
from loadcmp.load.engines import engine_path
from loadcmp.store.traceparts import add_requests
url, c, t, ka, share = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1", float(sys.argv[5])
target = make_target(url, keepalive=ka)
r = run_load(LoadSpec(target, Closed(c), t, trace=share))
d = result_doc(r)
size = rows = 0
if r.traced is not None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = len(r.traced)
        size = add_requests(Path(tmp), r.traced, "bench", c, 1)
print(json.dumps({"rps": d["completions_per_s"], "cpu_us": d.get("client_cpu_us"), "rows": rows, "bytes": size,
                  "one_each": rows == r.started - r.dropped, "path": engine_path("fast", True, False, "h1")}))
"""


class TraceRow(NamedTuple):
    c: int
    mode: str
    plain: float
    traced: float
    ratios: list[float]
    bytes_per_row: float
    one_each: bool
    path: str


def run_one(url: str, c: int, t: int, keepalive: bool, share: float) -> tuple[Run, dict[str, object]]:
    """One load through `RUNNER`, pinned to CPU 0: traced (`share` > 0) or not."""
    cmd = [PY, "-c", RUNNER, url, str(c), str(t), "1" if keepalive else "0", str(share)]
    out, _, b0, b1 = measured(pinned(cmd), check=True, env={**os.environ, "LOADCMP_PURE_PYTHON": "0"})
    doc = json.loads(out.strip().splitlines()[-1])
    return Run(doc["rps"], doc.get("cpu_us") or float("nan"), b0, b1), doc


def trace_level(url: str, c: int, keepalive: bool, t: int, rounds: int) -> TraceRow:
    """`rounds` rounds of the load untraced and traced (`--trace-sample 1`), A B then B A, printed as they end."""
    plain: list[Run] = []
    traced: list[Run] = []
    per_row: list[float] = []
    one_each, paths = True, set()
    for i in range(rounds):
        order = [(plain, 0.0), (traced, 1.0)]
        for runs, share in order if i % 2 == 0 else order[::-1]:
            run, doc = run_one(url, c, t, keepalive, share)
            runs.append(run)
            paths.add(str(doc["path"]))
            if share:
                per_row.append(int(doc["bytes"]) / max(1, int(doc["rows"])))  # type: ignore[call-overload]
                one_each = one_each and bool(doc["one_each"])
    ratios = [x.rps / p.rps for x, p in zip(traced, plain, strict=True)]
    row = TraceRow(c, "keep-alive" if keepalive else "new conn", median([r.rps for r in plain]),
                   median([r.rps for r in traced]), ratios, median(per_row), one_each, "/".join(sorted(paths)))
    print(f"c={c:<5} {row.mode:<10} untraced {row.plain:9.0f} req/s   --trace-sample 1 {row.traced:9.0f} req/s "
          f"({median(ratios):.3f}x, rounds {' '.join(f'{x:.3f}' for x in ratios)}; {row.path}); client CPU per "
          f"request {median([r.cpu_us for r in plain]):.1f} / {median([r.cpu_us for r in traced]):.1f} us; "
          f"requests.parquet {row.bytes_per_row:.1f} bytes per request; a row per request: {one_each}", flush=True)
    return row


def trace_rows(url: str, levels: list[int], t: int, rounds: int, server: str) -> list[TraceRow]:
    """The trace rows against the server at `url` (pinned by the caller), keep-alive and not, at `levels`."""
    print(f"\ntrace: {server} on CPU 1; clients on CPU 0; the same engine untraced and with --trace-sample 1; "
          f"{t} s per run, {rounds} rounds (A B, then B A)")
    rows = [trace_level(url, c, keepalive, t, rounds) for c in levels for keepalive in (True, False)]
    print("\nratios (--trace-sample 1 / untraced, the median of the rounds'; the bar is 0.95):")
    for r in rows:
        bar = "at or above" if median(r.ratios) >= 0.95 else "BELOW"
        print(f"  c={r.c:<5} {r.mode:<10} {median(r.ratios):.3f}x  ({bar} the bar; {r.path}); "
              f"{r.bytes_per_row:.1f} bytes per request in requests.parquet")
    return rows


def on_fastserver(levels: list[int], t: int, rounds: int) -> list[TraceRow]:
    """The rows against tests/helpers/fastserver.py pinned to CPU 1 (no Docker)."""
    server = Path(__file__).resolve().parent.parent / "tests" / "helpers" / "fastserver.py"
    proc = subprocess.Popen(pinned([PY, str(server)], "1"), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        return trace_rows(f"http://127.0.0.1:{port}/", levels, t, rounds, "fastserver")
    finally:
        proc.terminate()
        proc.wait()


def on_nginx(levels: list[int], t: int, rounds: int) -> list[TraceRow]:
    """The rows against the nginx stack pinned as compare.py pins it (one worker, `/plaintext`)."""
    from loadcmp.lab import containers as lab, planning
    from loadcmp.lab import stacks as st

    overrides = st.parse_overrides(["nginx.worker_processes=1", "nginx.worker_connections=20000",
                                    "nginx.keepalive_requests=100000000"])
    with lab.up(planning.plan_deployment(st.get_stack("nginx"), cpus="1", overrides=overrides)) as dep:
        return trace_rows(f"http://127.0.0.1:{dep.port}/plaintext", levels, t, rounds, "nginx (one worker)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--levels", default="50")
    ap.add_argument("--server", default="nginx", choices=["nginx", "fast"])
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    (on_fastserver if args.server == "fast" else on_nginx)(levels, args.time, args.rounds)


if __name__ == "__main__":
    main()
