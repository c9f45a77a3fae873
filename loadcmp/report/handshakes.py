"""TLS handshakes in words and figures, per cell: what a handshake cost the client beside the server when
the client set the pace, the `tls_error` failures by reason, and a cell's TLS facts for `--json`.

Read from stored results only (`store.handshakes`: where a trial keeps its TLS facts). A full handshake
makes the client verify the server's certificate chain and its signature, which with an ECDSA key costs
more than the signing the server does; so a load of new connections over TLS is often client-bound,
and the figures here say by how much (docs/https.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..records import TrialRecord
from ..store.reader import ClientBound, tls_of
from ..store.handshakes import handshake_rate


SAME = 1.1
"""Within this factor, the client's CPU per handshake and the server's are said to be about the same."""


def _per_trial(total: float, n: int) -> str:
    mean = total / max(1, n)
    return f"{mean:,.0f}" if mean >= 10 or mean.is_integer() else f"{mean:,.1f}"


def errors_said(trials: list[TrialRecord]) -> str:
    """The `tls_error` failures of a cell's trials by reason, per trial: '10 eof during handshake,
    2 alert handshake failure' ('' when there were none, or no reason was stored)."""
    reasons: Counter[str] = Counter()
    for t in trials:
        if r := t.get("result"):
            reasons.update(r.get("tls_errors") or {})
    return ", ".join(f"{_per_trial(n, len(trials))} {why}" for why, n in reasons.most_common() if n)


def tls_errors_per_trial(trials: list[TrialRecord]) -> float:
    """The mean `tls_error` failures per trial of a cell."""
    counts = [(r["failures"].get("tls_error", 0)) for t in trials if (r := t.get("result"))]
    return sum(counts) / len(counts) if counts else 0.0


def bound_said(bound: ClientBound) -> str | None:
    """Why a client-bound https cell with full handshakes was the client's: each side's CPU per handshake,
    and what raises the client's ceiling; None for plain http or resumed handshakes only."""
    cost = bound.handshakes
    if cost is None or not cost.full:
        return None
    share = cost.full / cost.handshakes
    text = (f"{share:.0%} of its {cost.handshakes:,} TLS handshakes were full"
            if share < 0.995 else f"all {cost.handshakes:,} of its TLS handshakes were full")
    if cost.client_us is not None and cost.server_us is not None:
        text += (f"; the client spent {cost.client_us:,.0f} µs of CPU per handshake, the server "
                 f"{cost.server_us:,.0f} µs (each side's CPU in the window over its handshakes)")
        times = cost.client_us / max(cost.server_us, 1e-9)
        if times >= SAME:
            text += (f": a handshake cost the client {times:.1f}× what it cost the server (on a full one the "
                     "client verifies the certificate chain and the server's signature)")
        elif times > 1 / SAME:
            text += ": about as much on each side"
    elif cost.client_us is not None:
        text += f"; the client spent {cost.client_us:,.0f} µs of CPU per handshake"
    return (text + ". More client cores raise its ceiling (--workers N on cores the server does not use, or "
            "--cluster for other machines' cores), and so do resumed sessions where the experiment allows "
            "them (--tls-resume F)")


def facts(trials: list[TrialRecord], primed: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """A cell's TLS facts over its trials for `--json`: the most common version, cipher and ALPN, the mean
    full and resumed handshakes per trial, handshakes per second, the resumed share and `tls_errors` by
    reason (means per trial); None over plain http. A window that opened no connection (each one from the
    warm-up, as h2's few long ones are) saw no handshake: its version, cipher and ALPN are then the primer's
    (`primed`, run.json's `servers[label].tls`), said by `seen_by: "primer"`."""
    got = [(tls, r) for t in trials if (tls := tls_of(t)) is not None and (r := t.get("result"))]
    if not got:
        return None
    n = len(got)
    full = sum(tls["full"] for tls, _ in got)
    resumed = sum(tls["resumed"] for tls, _ in got)
    reasons: Counter[str] = Counter()
    for _, r in got:
        reasons.update(r.get("tls_errors") or {})

    def common(key: str) -> str:
        return Counter(str(tls.get(key, "")) for tls, _ in got).most_common(1)[0][0]

    rate = sum(handshake_rate(t) or 0.0 for t in trials if tls_of(t) is not None and t.get("result")) / n
    said = {k: common(k) for k in ("version", "cipher", "alpn")}
    if not said["version"] and primed and primed.get("version"):
        said = {k: str(primed.get(k) or "") for k in said} | {"seen_by": "primer"}
    return {**said,
            "full": round(full / n, 1), "resumed": round(resumed / n, 1), "handshakes_per_s": round(rate, 1),
            "resumed_share": round(resumed / (full + resumed), 4) if full + resumed else None,
            "tls_errors": {k: round(v / n, 1) for k, v in reasons.most_common()}}
