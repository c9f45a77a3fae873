"""The report's mix section: each page of a weighted mix counted on its own, beside Table 1's row for the mix
as a whole (`--mix`, `[mix]`).

Only a run whose spec has a mix (`spec.mix` in run.json) has this section: a replay's and a journey's trials
count their pages too, but those are a log's pages and a journey's steps, not a mix's.
"""

from __future__ import annotations


from ..records import PageSummary, TrialRecord
from ..store.pagecells import mix_pages, page_label
from ..store.reader import Results, pooled_latency
from ..traffic.fits import traffic_of
from ..traffic.mix import sent_of
from ..units import ms

HEADER = ["clients", "server", "page", "weight", "sent share", "requests", "answered share", "ok/s", "status codes",
          "p50 ms", "p99 ms"]
LEGEND = ("Each page of the mix counted on its own (its row in Table 1 is the mix as a whole, and these add up to "
          "it): sent share, its share of the requests the window sent, what the weights control (the positions of "
          "the mix's drawn sequence the window's requests took: every engine walks it in order; - where one client "
          "process did not walk it alone); requests, the mean per trial of those that ended in the window, and "
          "answered share, its share of those: a slow page's requests still out at the close make its answered "
          "share less than its sent one; ok/s, "
          "its successful responses per second; status codes, summed over the trials; p50 and p99, from the "
          "page's own latency histogram pooled over the trials. A finding names a page as nginx[/?p=1042] and the "
          "mix as nginx[mix].")


def _codes(trials: list[TrialRecord]) -> str:
    got: dict[str, int] = {}
    for t in trials:
        r = t.get("result")
        for code, n in (r.get("status_codes") or {} if r else {}).items():
            got[code] = got.get(code, 0) + n
    return " · ".join(f"{code}: {n:,}" for code, n in sorted(got.items())) or "-"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{ms(v, 2):,.2f}"


def _sent_share(data: Results, label: str, level: int, page: str) -> float | None:
    """A page's share of the requests a cell's trials sent (`sent_of`), over the trials; None: not known."""
    run, _ = data.origin.get(label, (data.runs[0], label))
    sent = [s for t in data.cell(label, level) if (s := sent_of(run.doc["spec"], t)) is not None]
    total = sum(sum(s.values()) for s in sent)
    return sum(s.get(page, 0) for s in sent) / total if sent and total else None


def _weights(data: Results, label: str) -> dict[str, float]:
    """The mix of the run a label's trials come from ({} when that run sent none: a replay, journeys)."""
    run, _ = data.origin.get(label, (data.runs[0], label))
    return dict(run.doc["spec"].get("mix") or {})


def mix_rows(data: Results) -> tuple[list[str], list[list[str]]]:
    """One row per server, level and page of a mix; empty when no run sent one."""
    rows: list[list[str]] = []
    for level in data.levels:
        for label in data.servers:
            weights = _weights(data, label)
            total = sum(weights.values()) or 1.0
            for page in mix_pages(data.of_server(label), label) if weights else []:
                trials = data.cell(page_label(label, page), level)
                if not trials:
                    continue
                done = [t["result"]["completed"] for t in trials if t.get("result")]
                shares = [d["share"] for d in _page_docs(data, label, level, page)]
                h = pooled_latency(trials)
                sent = _sent_share(data, label, level, page)
                rows.append([f"{level:,}", label, page, f"{weights[page] / total:.0%}" if page in weights else "-",
                             "-" if sent is None else f"{sent:.1%}", f"{sum(done) / len(done):,.0f}",
                             f"{sum(shares) / max(1, len(shares)):.1%}",
                             f"{sum(t['result']['rps'] for t in trials) / len(trials):,.0f}", _codes(trials),
                             _ms(h.percentile(50)), _ms(h.percentile(99))])
    return (HEADER, rows) if rows else ([], [])


def _page_docs(data: Results, label: str, level: int, page: str) -> list[PageSummary]:
    """The page's own summary (`records.PageSummary`) in each trial of the cell."""
    out = []
    for t in data.cell(label, level):
        r = t.get("result")
        got = next((p for p in (r.get("pages") or [] if r else []) if p["page"] == page), None)
        if got is not None:
            out.append(got)
    return out


def mix_lines(data: Results) -> list[str]:
    """The mix in words: its pages and weights, and the seed its sequence was drawn with."""
    out = []
    for run in data.runs:
        out += traffic_of(run.doc["spec"])[0].lines(run.name)
    return out
