"""The TLS facts of stored trials: where a trial keeps them, and what a handshake cost each side.

Read by the writer (summary.csv's TLS columns) and the reader (`Results.tls`, a client-bound cell's
handshake cost); the report says them in words (`loadcmp.report.handshakes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from ..records import SpecDoc, TlsFacts, TrialRecord


def handshake_rate(trial: TrialRecord) -> float | None:
    """A trial's TLS handshakes (full and resumed) per second of its window; None over plain http or with no
    window."""
    tls, r = tls_of(trial), trial.get("result")
    if tls is None or not r or not r["duration_s"]:
        return None
    return (tls["full"] + tls["resumed"]) / r["duration_s"]


def tls_of(trial: TrialRecord) -> TlsFacts | None:
    """A trial's TLS facts: its own `tls`, else its result's (as a bench stores it); None over plain http and
    for results stored before https was measured."""
    if trial.get("tls"):
        return trial["tls"]
    result = trial.get("result")
    return (result.get("tls") or None) if result else None


def spec_tls(spec: SpecDoc) -> tuple[bool, float | None]:
    """Whether a run asked for https (`tls`), and the share of new connections it asked to resume
    (`tls_resume`; None: not said). Read as plain keys: run.json's spec of an older run has neither."""
    doc = cast(Mapping[str, Any], spec)
    resume = doc.get("tls_resume")
    return bool(doc.get("tls")), None if resume is None else float(resume)


@dataclass(frozen=True)
class HandshakeCost:
    """What TLS handshakes cost each side in some trials: all of each side's CPU in the window over the
    handshakes of the window (the requests' own work is counted in, so it is an upper bound per handshake)."""

    handshakes: int  #: full + resumed
    full: int
    client_us: float | None  #: the client's CPU µs per handshake (None: not measured)
    server_us: float | None  #: the server's CPU µs per handshake (None: not sampled, e.g. on another machine)





def handshake_cost(trials: list[TrialRecord]) -> HandshakeCost | None:
    """Each side's CPU per TLS handshake over these trials; None without a handshake (plain http)."""
    full = resumed = 0
    client_s = server_s = 0.0
    client_known = server_known = True
    for t in trials:
        tls, r = tls_of(t), t.get("result")
        if tls is None or not r:
            continue
        full, resumed = full + tls["full"], resumed + tls["resumed"]
        cost, cpu = r.get("client_cpu_us"), (t.get("server_metrics") or {}).get("cpu_pct")
        client_known = client_known and cost is not None
        server_known = server_known and cpu is not None
        client_s += (cost or 0.0) * r["completed"] / 1e6
        server_s += (cpu or 0.0) / 100 * r["duration_s"]
    n = full + resumed
    if not n:
        return None
    return HandshakeCost(n, full, client_s / n * 1e6 if client_known else None,
                         server_s / n * 1e6 if server_known else None)
