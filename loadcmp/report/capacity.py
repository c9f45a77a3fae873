"""A capacity search's results for the report and `--json`, from run.json's `capacity` only.

Each label's capacity is the highest level that met the target, bracketed by the first level
above it that missed: its interval is [met, missed), to the search's resolution. Where the client
was the limit at the edge, or the search stopped before a miss, it is a lower bound ("at least");
where the first level missed, an upper one ("below"). Where a confirmation at the edge stayed unsure
(`unsure`), it is no capacity: the edge lies between the highest level met below it and the lowest
missed above it, either end possibly open. A search stored before loadcmp went on while a
confirmation was unsure may end `capacity` with one unsure: it is shown as unsure too.
"""

from __future__ import annotations

from typing import Any

from ..records import CapacityDoc, CapacityServerDoc
from ..store.reader import Results
from .streams import streams_of

HEADER = ["server", "capacity", "interval (met – missed)", "at the level found", "at the level above",
          "what broke at the edge"]


def undecided(doc: CapacityServerDoc) -> list[int]:
    """The levels at the edge whose stored confirmation stayed unsure (a check unsure, none missed)."""
    out = []
    for lv in (doc["level"], doc["missed"]):
        checks = doc["confirmed"].get(str(lv)) if lv is not None else None
        said = {c["verdict"] for c in checks or []}
        if "unsure" in said and "missed" not in said:
            out.append(lv)
    return [lv for lv in out if lv is not None]


def value(doc: CapacityServerDoc, search: CapacityDoc) -> str:
    """The capacity as a reader takes it: `440`, `≥ 440 (client-bound)`, `< 10`, `unsure (100 – 178)`."""
    kind, lv = doc["kind"], doc["level"]
    if kind == "unsure":
        iv = interval(doc)
        return "unsure" if iv is None else f"unsure ({_span(iv)})"
    if kind in ("capacity", "at_least", "below_start") and undecided(doc):
        return f"{_plain(kind, lv, doc, search)}, unsure"
    return _plain(kind, lv, doc, search)


def _plain(kind: str, lv: int | None, doc: CapacityServerDoc, search: CapacityDoc) -> str:
    if kind == "capacity" and lv is not None:
        return f"{lv:,}"
    if kind == "at_least" and lv is not None:
        return f"≥ {lv:,} (client-bound)"
    if kind == "not_reached" and lv is not None:
        return f"≥ {lv:,} (never missed)"
    if kind == "below_start":
        return f"< {doc['missed'] or search['start']:,}"
    return kind


def interval(doc: CapacityServerDoc) -> tuple[float, float] | None:
    """Where the edge lies: from the level met to the level missed (open-ended for a lower bound)."""
    kind, lv, up = doc["kind"], doc["level"], doc["missed"]
    if kind in ("capacity", "at_least") and lv is not None:
        return float(lv), float(up) if up is not None and kind == "capacity" else float("inf")
    if kind == "not_reached" and lv is not None:
        return float(lv), float("inf")
    if kind == "below_start" and up is not None:
        return 0.0, float(up)
    if kind == "unsure" and (lv is not None or up is not None):
        return float(lv or 0), float(up) if up is not None else float("inf")
    return None


def _span(iv: tuple[float, float]) -> str:
    return f"{iv[0]:,.0f} – {iv[1]:,.0f}" if iv[1] != float("inf") else f"{iv[0]:,.0f} and up"


def _confirmed(doc: CapacityServerDoc, level: int | None, named: bool = False) -> str:
    """A level's confirmation, check by check (`named`: led by the level, which is not the column's)."""
    checks = doc["confirmed"].get(str(level)) if level is not None else None
    if not checks:
        return "-"
    return (f"{level:,}: " if named else "") + "; ".join(f"{c['check']}: {c['shown']} {c['verdict']}" for c in checks)


def capacity_rows(res: Results) -> tuple[list[str], list[list[str]]]:
    """One row per label that was searched (none: no capacity search in these results)."""
    rows = []
    for label, (search, doc) in res.capacity.items():
        unit: str = search["unit"]
        streams = streams_of(res, label)
        if unit == "clients" and streams > 1:  # each client a connection carrying -m streams: say both
            unit = f"clients (connections × {streams} streams)"
        iv = interval(doc)
        shown = "-" if iv is None else (f"{iv[0]:,.0f} – {iv[1]:,.0f} {unit}" if iv[1] != float("inf")
                                        else f"{iv[0]:,.0f} {unit} and up")
        if doc["kind"] == "unsure":
            shown += f" (unsure at {', '.join(f'{lv:,}' for lv in doc.get('undecided', []))})"
        if doc["kind"] == "below_start":
            shown = f"below {doc['missed'] or search['start']:,} {unit}"
        found, above = doc["level"], doc["missed"]
        if doc["kind"] == "unsure" and (und := doc.get("undecided")):  # the figures of the levels left undecided
            found, above = und[0], und[-1] if len(und) > 1 else above
        rows.append([label, value(doc, search), shown, _confirmed(doc, found, doc["kind"] == "unsure"),
                     _confirmed(doc, above, doc["kind"] == "unsure"), doc["cause"] or "-"])
    return HEADER, rows


def capacity_lines(res: Results) -> list[str]:
    """The search in words: what was asked, each label's sentence and its notes."""
    searches = {id(s): s for s, _ in res.capacity.values()}
    out = [f"Target {s['target']}, by {s['unit']}: from {s['start']:,}, x{s['factor']:g} until a {s['probe_s']:g} s "
           f"probe missed, then halved to {s['resolution']:.0%}; " + (
               f"{s['confirm']} trials confirmed the level found and the one above (95 % intervals)" if s["confirm"]
               else "each probe judged alone, as a tuning study's trials are (no confirmation trials)")
           + f". It could go up to {s['max']:,}: {s['max_reason']}." for s in searches.values()]
    for label, (search, doc) in res.capacity.items():
        out.append(doc["text"])
        out += [f"{label}: {n}" for n in doc["notes"]]
        if doc["kind"] in ("capacity", "at_least", "below_start") and (lvs := undecided(doc)):
            out.append(f"{label}: unsure: the confirmation at {' and '.join(f'{lv:,}' for lv in lvs)} did not "
                       f"decide (an interval straddles the target), so {value(doc, search).split(',')[0]} is no "
                       "firm figure; search again: a confirmation that cannot decide gets more trials "
                       "(--max-confirm)")
    return out


def capacity_json(res: Results) -> dict[str, Any] | None:
    """`capacity` of `--json`: per label its capacity (or bound), interval, cause and the search's path."""
    if not res.capacity:
        return None
    servers: dict[str, Any] = {}
    for label, (search, doc) in res.capacity.items():
        iv = interval(doc)
        lv = doc["level"]
        servers[label] = {
            "kind": doc["kind"], "unit": search["unit"],
            "capacity": lv if doc["kind"] == "capacity" else None,
            "unsure": doc.get("undecided") or undecided(doc),
            "at_least": lv if doc["kind"] in ("at_least", "not_reached") else None,
            "below": (doc["missed"] or search["start"]) if doc["kind"] == "below_start" else None,
            "interval": None if iv is None else [iv[0], None if iv[1] == float("inf") else iv[1]],
            "cause": doc["cause"], "evidence": doc["evidence"], "notes": doc["notes"], "text": doc["text"],
            "confirmed": doc["confirmed"], "path": doc["path"],
        }
    first = next(iter(res.capacity.values()))[0]
    return {"target": first["target"], "unit": first["unit"], "resolution": first["resolution"],
            "confirm": first["confirm"], "servers": servers}
