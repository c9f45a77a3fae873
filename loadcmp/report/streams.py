"""The report's HTTP/2 section (HTTP/3's too, titled by the protocols it holds: `titled`): per label and level,
how the streams went (`LoadSummary.streams`, the engine's tally): streams per connection, connections, GOAWAYs
and the streams above their last-stream-id (and those of them retried), RST_STREAMs by code, the server's
SETTINGS_MAX_CONCURRENT_STREAMS and the most requests one connection served; then in words what each label asked
for and negotiated (the primer's check, `ServerInfo.negotiated`), a trial stopped for its protocol with its reason,
and a GOAWAY every N requests named with the tunable that sets N.

Only a run that asked for a protocol other than HTTP/1.1 has this section: an h1 run's report is as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from .. import protocols
from ..records import StreamFacts, TrialRecord
from ..store.reader import Results
from .jsonrows import proto_of

HEADER = ["clients", "server", "protocol", "streams/connection", "connections", "GOAWAY", "unprocessed", "retried",
          "RST_STREAM", "max concurrent", "most on one connection"]
LEGEND = ("streams/connection: the streams the window started per connection opened (-m streams at once, a new "
          "connection after each GOAWAY or cut); connections, GOAWAY, unprocessed (streams above a GOAWAY's "
          "last-stream-id, never processed), retried (those sent again on a new connection after a graceful GOAWAY, "
          "as browsers do: not failures) and RST_STREAM (by error code): per trial, the mean over the trials; "
          "max concurrent: the server's SETTINGS_MAX_CONCURRENT_STREAMS (0: none sent); most on one connection: "
          "the most requests one connection served.")


H3_LEGEND = (" Over h3: RST_STREAM is QUIC's RESET_STREAM (by its HTTP/3 error code), GOAWAY the HTTP/3 frame (the "
             "streams at or above its stream id unprocessed), max concurrent the server's initial_max_streams_bidi.")


def titled(rows: list[list[str]]) -> tuple[str, str]:
    """The section's title and legend for the protocols its rows ran: HTTP/2 (over TCP), HTTP/3 (over QUIC) or
    both."""
    quic = {_quic(r[2]) for r in rows}
    h3, h2 = True in quic, False in quic
    title = "HTTP/2 and HTTP/3 streams" if h3 and h2 else "HTTP/3 streams" if h3 else "HTTP/2 streams"
    return title, LEGEND + (H3_LEGEND if h3 else "")


def facts_of(t: TrialRecord) -> StreamFacts | None:
    """A trial's stream tally; None for an HTTP/1.1 trial (or one not measured)."""
    r = t.get("result")
    return r.get("streams") if r else None


def _per_trial(cell: list[StreamFacts], get: Callable[[StreamFacts], float]) -> float:
    return sum(get(f) for f in cell) / len(cell)


def streams_json(trials: list[TrialRecord]) -> dict[str, Any] | None:
    """A cell's stream tally for `--json` (its `streams`): the negotiated protocol, the counts as means per trial
    (as the section's table shows them), the resets by code per trial, and the most of `max_concurrent` and
    `max_per_connection`; None for an HTTP/1.1 cell."""
    cell = [f for t in trials if (f := facts_of(t)) is not None]
    if not cell:
        return None
    keys = ("connections", "streams", "streams_per_connection", "goaways", "goaway_unprocessed", "retried")
    resets: dict[str, float] = {}
    for f in cell:
        for code, n in (f.get("resets") or {}).items():
            resets[code] = resets.get(code, 0) + n / len(cell)
    return {"protocol": cell[0]["protocol"],
            **{k: round(sum(float(cast(Mapping[str, Any], f).get(k) or 0) for f in cell) / len(cell), 1)
               for k in keys},
            "resets": {code: round(n, 1) for code, n in sorted(resets.items())},
            "max_concurrent": max(f["max_concurrent"] for f in cell),
            "max_per_connection": max(f["max_per_connection"] for f in cell)}


def _resets(cell: list[StreamFacts]) -> str:
    codes: dict[str, float] = {}
    for f in cell:
        for code, n in (f.get("resets") or {}).items():
            codes[code] = codes.get(code, 0) + n / len(cell)
    return ", ".join(f"{code} {n:,.0f}" for code, n in sorted(codes.items())) or "0"


def streams_of(data: Results, label: str) -> int:
    """The requests a label's connections each kept in flight: -m on h2, h2c and h3, one on HTTP/1.1."""
    found = data.info(label)
    if found is None or not _multiplexed(proto_of(data, label)):
        return 1
    return int(found[0].doc["spec"].get("streams") or 1)


def clients(data: Results, label: str, level: int) -> str:
    """A level of a label in words: '20 clients', or '20 connections × 4 streams' where each carries -m."""
    return f"{level:,} {unit_of(data, label)}"


def unit_of(data: Results, label: str) -> str:
    """What a label's level counts: 'clients', or 'connections × 4 streams' where each carries -m."""
    m = streams_of(data, label)
    return "clients" if m == 1 else f"connections × {m} streams"


def asked_protocols(data: Results) -> dict[str, tuple[str, str]]:
    """Each label that asked for a protocol: (asked, negotiated) as the primer saw it."""
    out = {}
    for s in data.servers:
        found = data.info(s)
        if found and "proto" in found[1]:
            out[s] = (found[1]["proto"], found[1].get("negotiated", ""))
    return out


def stream_rows(data: Results) -> tuple[list[str], list[list[str]]]:
    """The streams table, one row per label and level whose trials carry a stream tally; empty otherwise."""
    rows = []
    protos = asked_protocols(data)
    for level in data.levels:
        for s in data.servers:
            cell = [f for t in data.cell(s, level) if (f := facts_of(t)) is not None]
            if not cell:
                continue
            proto = protos.get(s, ("", cell[0].get("protocol", "")))[1] or cell[0].get("protocol", "")
            rows.append([f"{level:,}", s, proto, f"{_per_trial(cell, lambda f: f['streams_per_connection']):,.1f}",
                         f"{_per_trial(cell, lambda f: f['connections']):,.0f}",
                         f"{_per_trial(cell, lambda f: f['goaways']):,.0f}",
                         f"{_per_trial(cell, lambda f: f['goaway_unprocessed']):,.0f}",
                         f"{_per_trial(cell, lambda f: f.get('retried', 0)):,.0f}", _resets(cell),
                         f"{max(f['max_concurrent'] for f in cell):,}",
                         f"{max(f['max_per_connection'] for f in cell):,}"])
    return (HEADER, rows) if rows else ([], [])


def stream_lines(data: Results) -> list[str]:
    """The section in words: what each label asked for and negotiated, a trial stopped for its protocol, and a
    GOAWAY every N requests with its tunable; empty for an HTTP/1.1 run."""
    protos = asked_protocols(data)
    if not any(_multiplexed(asked) for asked, _ in protos.values()):
        return []
    out = [f"{s}: asked for {asked}, the server negotiated {got or 'nothing the primer could see'} (the "
           "primer's check before the load)." for s, (asked, got) in protos.items() if _multiplexed(asked)]
    for t in data.trials:
        if t["status"] == "wrong_protocol":
            out.append(f"{t['server']} at {clients(data, t['server'], t['level'])} was not measured: "
                       f"{t.get('reason', '')}.")
    for level in data.levels:
        for s in data.servers:
            out += _goaway_line(data, s, level)
    return out


def _goaway_line(data: Results, s: str, level: int) -> list[str]:
    """A GOAWAY every N requests, with the tunable that sets N (the stack's `goaway_after`, as stored)."""
    cell = [f for t in data.cell(s, level) if (f := facts_of(t)) is not None]
    goaways = _per_trial(cell, lambda f: f["goaways"]) if cell else 0
    if not goaways:
        return []
    most = max(f["max_per_connection"] for f in cell)
    found = data.info(s)
    info = found[1] if found else None
    knob = info.get("goaway_after") if info else None
    value = info["settings"].get(knob) if info and knob else None
    said = (f": its per-connection limit {knob} = {value:,}" if knob and isinstance(value, int) else
            "; the stack names no tunable for it")
    return [f"{s} at {clients(data, s, level)}: the server sent {goaways:,.0f} GOAWAY per trial, closing "
            f"connections after at most {most:,} requests each{said}; every new connection costs the client its "
            "handshake and window again."]


def _multiplexed(proto: str) -> bool:
    """Whether a stored protocol carries -m streams per connection (a name this table does not hold: it does)."""
    row = protocols.find(proto)
    return row is None or row.multiplexed


def _quic(proto: str) -> bool:
    """Whether a stored protocol (as asked or negotiated) runs over QUIC."""
    row = protocols.find(proto)
    return row is not None and row.transport == "udp"
