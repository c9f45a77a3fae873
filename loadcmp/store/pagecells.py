"""A mix's pages read as cells of their own: `nginx /?p=1042` (a finding's `nginx[/?p=1042]`) is the page's
share of each of nginx's trials, and `nginx mix` (`nginx[mix]`) the mix as a whole, so that a finding, a
check and a table read a page as they read a server (`Results.cell`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..load.record.summary import page_load_summary
from ..records import TrialRecord
from ..traffic.mix import MIX_LABEL as MIX  # the name of a mix as a whole: findings name it so


def page_label(label: str, page: str) -> str:
    """The label a page of `label`'s mix goes by (`nginx /?p=1042`; a finding writes `nginx[/?p=1042]`)."""
    return f"{label} {page}"


def page_cell(trials: Iterable[TrialRecord], servers: list[str], label: str, level: int) -> list[TrialRecord]:
    """The trials of a page label (`page_label`) at `level`: each trial of its server with its page's figures
    as the result and its page's latency histogram; [] when `label` names no page of a mix run."""
    server, _, page = label.partition(" ")
    if server not in servers or not page:
        return []
    out: list[TrialRecord] = []
    for t in trials:
        r = t.get("result")
        if t["server"] != server or t["level"] != level or not r or not r.get("pages"):
            continue
        if page == MIX:
            out.append({**t, "server": label})
            continue
        got = next((p for p in r.get("pages", []) if p["page"] == page), None)
        if got is None:
            continue
        mine: TrialRecord = {**t, "server": label, "result": page_load_summary(r, got)}
        hist = (t.get("page_hists") or {}).get(page)
        if hist is not None:
            mine["latency_hist"] = hist
        mine.pop("service_hist", None)
        out.append(mine)
    return out


def mix_pages(trials: Iterable[TrialRecord], label: str) -> list[str]:
    """The pages of `label`'s mix, in the mix's order ([] when it ran none)."""
    for t in trials:
        r = t.get("result")
        if t["server"] == label and r and r.get("pages"):
            return [p["page"] for p in r.get("pages", [])]
    return []
