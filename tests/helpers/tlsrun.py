"""The https fixture (tests/fixtures/run-tls) made from the plain run tests/fixtures/run-2x3x2: the same
trials, with the TLS facts an https run stores laid over them, so the report's https section has a
snapshot before an https run is checked in.

    python -m tests.helpers.tlsrun      # writes tests/fixtures/run-tls and run-tls-primed (again)

What is laid over: the spec's `tls` and `tls_resume` (0.5); each label's primed handshake (run.json's
`servers.LABEL.tls`); each trial's `tls` (a handshake per request, as without keep-alive, about half of them
resumed), a `handshake` phase, https URLs; apache-prefork's trials at 200 clients lose some requests to
`tls_error` (with reasons, ok + failed + unfinished == started kept), and nginx's at 200 clients are
client-bound with the client's CPU per request an https load of new connections costs. The per-second
tables stay the plain run's.

tests/fixtures/run-tls-primed has the spec's `tls` and each label's primed handshake only (https URLs, no
trial's TLS facts): the report prints the primer's facts without an empty table.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from loadcmp.store.writer import SUMMARY_COLUMNS, summary_row

FIXTURES = Path(__file__).parent.parent / "fixtures"
PRIMED = {"nginx": {"version": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384", "alpn": "http/1.1", "chain_ok": True,
                    "key": "ecdsa-p256"},
          "apache-prefork": {"version": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384", "alpn": "http/1.1",
                             "chain_ok": True, "key": "rsa-2048"}}
TLS_ERRORS = {1: {"eof during handshake": 30, "alert handshake failure": 7},
              2: {"eof during handshake": 35, "alert handshake failure": 6}}
"""apache-prefork at 200 clients: its handshakes that failed, by reason, per trial."""


def _with_tls(t: dict[str, Any]) -> None:
    """One trial as an https run stores it."""
    r = t["result"]
    if t["server"] == "apache-prefork" and t["level"] == 200:
        reasons = TLS_ERRORS[t["trial"]]
        lost = sum(reasons.values())
        r["ok"] -= lost
        r["failures"]["tls_error"] = lost
        r["failed"] += lost
        r["tls_errors"] = reasons
        r["webbench"]["susceed"] -= lost  # no answer: webbench's failure too
        r["webbench"]["failed"] += lost
        r["failed_rate"] = round(r["failed"] / max(1, r["started"] - r["unfinished"]), 6)
        r["rps"] = round(r["ok"] / r["duration_s"], 3)
    else:
        r["failures"]["tls_error"] = 0
    if t["server"] == "nginx" and t["level"] == 200:
        r.update(client_bound=True, client_busy_pct=99.0, client_cpu_us=980.0,
                 client_bound_reason="the client was busy 99% of the time (medians per second; client-bound "
                                     "from 90% busy or 100 ms lag)",
                 client_advice="the client spent 980 µs of CPU per request, so 1 load process can send at most "
                               "~1,020 req/s: the server may be able to serve more than was measured; no core "
                               "is free on this machine (the server needs its own): the client needs another "
                               "machine's cores.")
    handshakes = r["completed"] - r["failures"]["tls_error"]  # no keep-alive: a handshake per request answered
    resumed = handshakes * (47 + t["trial"]) // 100
    tls = {"version": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384", "alpn": "http/1.1",
           "full": handshakes - resumed, "resumed": resumed}
    r["tls"] = t["tls"] = tls
    mean = round(r["latency_ms"]["mean"] * 0.2, 3)
    r["phases_ms"] = {"handshake": {**{k: None for k in r["latency_ms"]}, "mean": mean}}
    r["url"] = r["url"].replace("http://", "https://")


def make(src: Path = FIXTURES / "run-2x3x2", dst: Path = FIXTURES / "run-tls", primed_only: bool = False) -> Path:
    """`dst` made from `src` (replaced if there); `primed_only`: the labels' primed handshakes, no trial's
    TLS facts."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    run = json.loads((dst / "run.json").read_text())
    run["name"] = run["spec"]["name"] = "fixture-tls-primed" if primed_only else "fixture-tls"
    run["description"] = ("run-2x3x2 with an https run's primed handshakes only" if primed_only else
                          "run-2x3x2 with an https run's TLS facts laid over it") + " (tests/helpers/tlsrun.py)"
    run["spec"].update(tls=True, tls_resume=None if primed_only else 0.5)
    for label, info in run["servers"].items():
        info["tls"] = PRIMED[label]
    for t in run["trials"]:
        if t.get("result") and primed_only:
            t["result"]["url"] = t["result"]["url"].replace("http://", "https://")
        elif t.get("result"):
            _with_tls(t)
    (dst / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    rows = [summary_row(t) for t in run["trials"]]
    import pandas as pd

    pd.DataFrame(rows, columns=SUMMARY_COLUMNS).to_csv(dst / "summary.csv", index=False)
    return dst


if __name__ == "__main__":
    print(make())
    print(make(dst=FIXTURES / "run-tls-primed", primed_only=True))
