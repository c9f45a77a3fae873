"""The mix rows of the benchmark (bench/compare.py): a 3-page weighted mix against one page, same server, over
HTTP/1.1 and over h2.

    .venv/bin/python bench/mix_rows.py [--time 5] [--rounds 5] [--levels 50] [--protos h1,h2]
    (or compare.py --rows mix, mix-h2)

The nginx stack pinned to CPU 1 as compare.py pins it, the client to CPU 0. One page is `/plaintext`; the
mix is `/plaintext=50,/plaintext?a=1=30,/plaintext?b=2=20`: three pages nginx answers with the same
`location = /plaintext` (the query aside), so the server's work per request is the same and the ratio is what
the mix costs the client: its sequence walked per request (in C on the compiled loop) and each page counted on
its own. Both runs go through the same code (`run_load` in a pinned process, no warm-up), in rounds of A B,
then B A; the ratio is the median of the rounds' (the bar: >= 0.95). The mix's per-page counts are checked to
add up to its total. Over h2 the same, on a deployment speaking h2 over TLS (`h2_rows.speaking_h2`, a CA made
here) at -c 50 -m 10: the compiled h2 loop walks the sequence per stream. A benchmark, not a test: it prints
ratios and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, Run, measured, median, pinned

from loadcmp.lab import containers as lab, planning
from loadcmp.lab import stacks as st

MIX = "/plaintext=50,/plaintext?a=1=30,/plaintext?b=2=20"
ONE = "/plaintext"
RUNNER = """
import json, sys
from loadcmp.load.driver import LoadSpec
from loadcmp.load.schedules import Closed
from loadcmp.load.record.summary import result_doc
from loadcmp.load.target import TlsOptions, make_target
from loadcmp.load.run.workers import run_load
from loadcmp.load.engines import engine_path
from loadcmp.traffic.mix import mix_pages, parse_mix
url, c, t, ka, mix = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1", sys.argv[5]
proto, m, cafile = sys.argv[6], int(sys.argv[7]), sys.argv[8] or None
target = make_target(url, keepalive=ka, proto=proto, streams=m, tls=TlsOptions(cafile=cafile))
pages = mix_pages(parse_mix(mix), 1, target) if mix else None
d = result_doc(run_load(LoadSpec(target, Closed(c), t, pages=pages)))
print(json.dumps({"rps": d["completions_per_s"], "cpu_us": d.get("client_cpu_us"), "completed": d["completed"],
                  "pages": [p["completed"] for p in d.get("pages", [])],
                  "path": engine_path("fast", True, target.scheme == "https", proto)}))
"""


class MixRow(NamedTuple):
    c: int
    mode: str
    one: float
    mix: float
    ratios: list[float]
    exact: bool
    path: str


class Over(NamedTuple):
    """The protocol a row loads with: h1 (its keep-alive or not), or h2 with -m streams over TLS (`cafile`)."""

    proto: str = "h1"
    m: int = 1
    cafile: str = ""


def run_one(base: str, c: int, t: int, keepalive: bool, mix: str, over: Over) -> tuple[Run, dict[str, Any]]:
    """One load through `RUNNER`, pinned to CPU 0: one page (`mix` empty) or the mix."""
    cmd = [PY, "-c", RUNNER, base + ONE, str(c), str(t), "1" if keepalive else "0", mix, over.proto, str(over.m),
           over.cafile]
    out, _, b0, b1 = measured(pinned(cmd), check=True, env={**os.environ, "LOADCMP_PURE_PYTHON": "0"})
    doc = json.loads(out.strip().splitlines()[-1])
    return Run(doc["rps"], doc.get("cpu_us") or float("nan"), b0, b1), doc


def mix_level(base: str, c: int, keepalive: bool, t: int, rounds: int, over: Over = Over()) -> MixRow:
    """`rounds` rounds of one page and the mix, A B then B A, printed as they end."""
    ones: list[Run] = []
    mixes: list[Run] = []
    exact, paths = True, set()
    for i in range(rounds):
        order = [(ones, ""), (mixes, MIX)]
        for runs, mix in order if i % 2 == 0 else order[::-1]:
            run, doc = run_one(base, c, t, keepalive, mix, over)
            runs.append(run)
            paths.add(doc["path"])
            if mix:
                exact = exact and sum(doc["pages"]) == doc["completed"]
    ratios = [m.rps / o.rps for m, o in zip(mixes, ones, strict=True)]
    mode = f"h2 -m {over.m}" if over.proto != "h1" else "keep-alive" if keepalive else "new conn"
    row = MixRow(c, mode, median([r.rps for r in ones]),
                 median([r.rps for r in mixes]), ratios, exact, "/".join(sorted(paths)))
    print(f"c={c:<5} {row.mode:<10} one page {row.one:9.0f} req/s   3-page mix {row.mix:9.0f} req/s "
          f"({median(ratios):.3f}x, rounds {' '.join(f'{x:.3f}' for x in ratios)}; {row.path}); client CPU per "
          f"request {median([r.cpu_us for r in ones]):.1f} / {median([r.cpu_us for r in mixes]):.1f} us; "
          f"pages add up to the total: {exact}", flush=True)
    return row


def mix_rows(stack: st.Stack, overrides: dict[str, Any], levels: list[int], t: int, rounds: int,
             protos: tuple[str, ...] = ("h1", "h2")) -> list[MixRow]:
    """The mix rows on their own deployments of `stack`, pinned as compare.py pins it: over HTTP/1.1 (keep-alive
    and not) at `levels`, and over h2 at -c 50 -m 10."""
    rows = []
    if "h1" in protos:
        with lab.up(planning.plan_deployment(stack, cpus="1", overrides=overrides)) as dep:
            base = f"http://127.0.0.1:{dep.port}"
            print(f"\nmix: nginx (one worker) on CPU 1; clients on CPU 0; one page {ONE} against the mix {MIX}; "
                  f"{t} s per run, {rounds} rounds (A B, then B A)")
            rows += [mix_level(base, c, keepalive, t, rounds) for c in levels for keepalive in (True, False)]
    if "h2" in protos:
        rows.append(_h2_row(stack, overrides, t, rounds))
    print("\nratios (3-page mix / one page, the median of the rounds'; the bar is 0.95):")
    for r in rows:
        bar = "at or above" if median(r.ratios) >= 0.95 else "BELOW"
        print(f"  c={r.c:<5} {r.mode:<10} {median(r.ratios):.3f}x  ({bar} the bar; {r.path})")
    return rows


def _h2_row(stack: st.Stack, overrides: dict[str, Any], t: int, rounds: int) -> MixRow:
    """The mix over h2 (-c 50 -m 10) against one page over h2, on a deployment speaking h2 over TLS."""
    from tempfile import TemporaryDirectory

    from h2_rows import speaking_h2

    from loadcmp.lab.certs import RunCA

    with TemporaryDirectory() as tmp:
        ca = RunCA(Path(tmp))
        with lab.up(speaking_h2(planning.plan_deployment(stack, cpus="1", overrides=overrides, tls=ca), None)) as dep:
            print(f"\nmix over h2: the same nginx serving h2 over TLS on CPU 1; -c 50 -m 10; one page {ONE} against "
                  f"the mix {MIX}; {t} s per run, {rounds} rounds (A B, then B A)")
            return mix_level(f"https://127.0.0.1:{dep.port}", 50, True, t, rounds, Over("h2", 10, ca.cafile))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--levels", default="50")
    ap.add_argument("--protos", default="h1,h2", help="h1 (the HTTP/1.1 rows), h2 (the mix over h2), or both")
    args = ap.parse_args()
    stack = st.get_stack("nginx")
    overrides = st.parse_overrides(["nginx.worker_processes=1", "nginx.worker_connections=20000",
                                    "nginx.keepalive_requests=100000000"])
    mix_rows(stack, overrides, [int(x) for x in args.levels.split(",")], args.time, args.rounds,
             tuple(args.protos.split(",")))


if __name__ == "__main__":
    main()
