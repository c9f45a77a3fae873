"""The report's https section: per label and level, the TLS handshakes the server completed (full and
resumed, per second and per core of its CPU), the resumed share, the handshake's own time and the
`tls_error` failures; then what each label negotiated, the resumption asked for and the failures by
reason.

Only a run that used TLS has this section (`Results.tls`): a plain run's report is as it was.
"""

from __future__ import annotations

from collections import Counter

from .. import protocols
from ..records import ServerTls, TrialRecord
from ..store.reader import Results, metrics_of, spec_tls, tls_of
from ..store.handshakes import handshake_rate
from .handshakes import errors_said, tls_errors_per_trial
from .jsonrows import proto_of
from .streams import clients, streams_of
from .tables import CLIENT_BOUND_MARK, Estimate, cell_estimate

HEADER = ["clients", "server", "handshakes/s", "resumed", "handshakes/s per core", "handshake ms", "tls_error"]
LEGEND = ("handshakes/s: the TLS handshakes the server completed per second of the window, full and resumed, "
          "the mean over the trials (± half the 95 % interval from 3 trials, else their range); resumed: the "
          "share of them that resumed a session; per core: divided by the server CPU the trial used (100 % = "
          "one core); handshake ms: the handshake's own time, the geometric mean of the trials' means; "
          "tls_error: handshakes that failed, per trial; ≥ … ‡: client-bound, as in Table 1.")


def _rate(t: TrialRecord) -> float | None:
    """A trial's handshakes per second of its window (`store.handshakes.handshake_rate`)."""
    return handshake_rate(t)


def _per_core(t: TrialRecord) -> float | None:
    rate, cpu = _rate(t), metrics_of(t).get("cpu_pct")
    return None if rate is None or not cpu or cpu <= 0 else rate / (cpu / 100)


def _handshake_ms(t: TrialRecord) -> float | None:
    r = t.get("result")
    phase = (r.get("phases_ms") or {}).get("handshake") if r else None
    return phase["mean"] if phase else None


def _resumed(trials: list[TrialRecord]) -> str:
    full = sum(tls["full"] for t in trials if (tls := tls_of(t)))
    resumed = sum(tls["resumed"] for t in trials if (tls := tls_of(t)))
    return f"{resumed / (full + resumed):.0%}" if full + resumed else "-"


def tls_rows(data: Results) -> tuple[list[str], list[list[str]]]:
    """The handshake table, one row per label and level that measured handshakes; empty over plain http."""
    if not data.tls:
        return [], []
    rows = []
    for level in data.levels:
        for s in data.servers:
            cell = data.cell(s, level)
            if not any(tls_of(t) for t in cell):
                continue
            ms = Estimate.of([v for t in cell if (v := _handshake_ms(t)) is not None], skewed=True)
            errors = tls_errors_per_trial(cell)
            rate = cell_estimate(data, s, level, _rate).text()
            if data.client_bound(s, level) is not None:  # the client's limit: the server completed at least this
                rate = f"≥ {rate}{CLIENT_BOUND_MARK}"
            rows.append([f"{level:,}", s, rate, _resumed(cell),
                         cell_estimate(data, s, level, _per_core).text(),
                         "-" if ms.mean is None else f"{ms.mean:,.2f}", f"{errors:,.0f}" if errors else "0"])
    return (HEADER, rows) if rows else ([], [])


def _negotiated(primed: ServerTls | None, trials: list[TrialRecord], proto: str) -> str | None:
    """What a label's handshakes agreed: the primer's (with the key and the chain), else the load's. A load
    that made no handshake in its window (kept-alive connections opened in the warm-up) says nothing of it.
    An h3 label's clients shake hands over QUIC: a primer's handshake over TCP (stored before the primer made
    the QUIC one) is not theirs, so the load's say what was negotiated."""
    seen = Counter((tls["version"], tls["cipher"], tls.get("alpn", "")) for t in trials
                   if (tls := tls_of(t)) and tls["full"] + tls["resumed"] and tls["version"])
    load = seen.most_common(1)[0][0] if seen else None
    row = protocols.find(proto)
    quic_alpn = row.alpn if row is not None and row.transport == "udp" else None  # its clients shake hands over QUIC
    quic = " QUIC" if quic_alpn is not None else ""
    if quic_alpn is not None and primed and primed.get("alpn") not in quic_alpn:
        primed = None
    if primed and primed.get("version"):
        text = f"{primed['version']}, {primed.get('cipher', '?')}"
        text += f", ALPN {primed['alpn']}" if primed.get("alpn") else ""
        text += f", an {primed['key']} certificate" if primed.get("key") else ""
        if "chain_ok" in primed:
            text += (", its chain verified against the run's CA" if primed["chain_ok"]
                     else ", its chain NOT verified against the run's CA")
        text += f" (the primer's{quic} handshake)"
        if load is not None and load[:2] != (primed["version"], primed.get("cipher")):
            text += f"; the load's handshakes mostly agreed {load[0]}, {load[1]}"
        return text
    if load is None:
        return None
    return f"{load[0]}, {load[1]}" + (f", ALPN {load[2]}" if load[2] else "") + f" (the load's{quic} handshakes)"


def _per_connection(data: Results, s: str) -> list[str]:
    """A label whose connections carry -m streams each (h2): what its handshakes per second count, per level.
    A handshake opens a connection, not a request; one the window made none on was kept from the warm-up."""
    if streams_of(data, s) == 1:
        return []
    out = []
    for level in data.levels:
        got = [(tls["full"] + tls["resumed"], r["completed"]) for t in data.cell(s, level)
               if (tls := tls_of(t)) is not None and (r := t.get("result"))]
        if not got:
            continue
        shakes, done = (sum(x) / len(got) for x in zip(*got, strict=True))
        where = f"{s} at {clients(data, s, level)}"
        if not shakes:
            out.append(f"{where}: no TLS handshake in the window: its connections were opened in the warm-up and "
                       f"kept, each carrying its streams ({done:,.0f} requests per trial over them).")
            continue
        out.append(f"{where}: {shakes:,.0f} TLS handshakes per trial for {done:,.0f} requests (one per "
                   f"{done / shakes:,.0f}): each opened a connection that carries its streams, a new one after "
                   "each GOAWAY or close, so handshakes/s counts new connections, not requests.")
    return out


def tls_lines(data: Results) -> list[str]:
    """The section in words: each label's negotiated TLS, the resumption asked for and `tls_error` by reason
    (a client-bound cell's handshake cost is in Table 1's notes, `tables.notes`); empty over plain http."""
    if not data.tls:
        return []
    out = []
    for s in data.servers:
        found = data.info(s)
        said = _negotiated(found[1].get("tls") if found else None, data.of_server(s), proto_of(data, s))
        if said:
            out.append(f"{s}: {said}.")
        out += _per_connection(data, s)
    for run in data.runs:
        resume = spec_tls(run.doc["spec"])[1]
        if resume is not None:
            where = f" ({run.name})" if len(data.runs) > 1 else ""
            out.append(f"The client asked to resume a TLS session on {resume:.0%} of its new connections "
                       f"(--tls-resume {resume:g}){where}; a server resumes only what its session cache "
                       "or tickets allow.")
    for level in data.levels:
        for s in data.servers:
            cell = data.cell(s, level)
            if errors := tls_errors_per_trial(cell):
                why = errors_said(cell)
                out.append(f"{s} at {clients(data, s, level)}: {errors:,.0f} tls_error per trial"
                           + (f" ({why})" if why else "") + ".")
    return out

