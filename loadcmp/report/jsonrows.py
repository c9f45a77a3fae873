"""What a `--json` row says of its workload, and the rows a load of several pages adds (ARCHITECTURE.md's contract).

Every command that prints results (`run`, `smoke`, `capacity`, `tune`) prints `tables.summary_doc`'s rows: one
per label x level, carrying `proto` (the protocol the label asked for: h1, h2, h2c, h3) and `page` (the page it
loaded; `mix` for the whole of a load of several pages: a mix, a replayed log, journeys). After such a whole, one
row per page (a journey's step: `journey/step`), each page's share of the same trials (`store.pagecells`), so
that the pages' counts add up to the whole's: their `ok` exactly, their `failed` but for the requests that were
the load's and no page's (dropped by the rate schedule).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from .. import protocols
from ..load.record.summary import over_trials
from ..store.pagecells import MIX, page_label
from ..store.reader import Results
from ..units import ms
from ..traffic.mix import sent_of

ROW_KEYS = ("server", "level", "proto", "page", "trials", "ok", "failed", "failures", "unfinished", "started",
            "rps", "duration_s", "bytes", "latency_ms", "webbench")
"""The keys every `--json` row carries, a page's as the whole's (ARCHITECTURE.md's "Results folder and JSON
keys" names them; tests/test_json_rows.py reads them there)."""


def proto_of(res: Results, label: str) -> str:
    """The protocol a label of a results folder asked for (`protocols.asked_of` over its run.json and first trial)."""
    found = res.info(label)
    if found is None:
        return protocols.DEFAULT
    return protocols.asked_of(found[0].doc, label, next((t for t in res.trials if t["server"] == label), None))[0]


def pages_of(res: Results, label: str, level: int) -> list[str]:
    """The pages of a cell's loads, in the order its trials first counted them ([]: a load of one page)."""
    out: dict[str, None] = {}
    for t in res.cell(label, level):
        for p in t["result"].get("pages") or []:
            out.setdefault(p["page"], None)
    return list(out)


def whole(res: Results, label: str, level: int) -> dict[str, Any]:
    """A label x level row's `proto` and `page`: its trials' page, or `mix` for a load of several pages."""
    cell = res.cell(label, level)
    found = res.info(label)
    page = MIX if pages_of(res, label, level) else next(
        (t["page"] for t in cell if t.get("page")), (found[1].get("page") if found else None) or "")
    return {"proto": proto_of(res, label), "page": page}


def _mean(values: list[float]) -> float | int | None:
    if not values:
        return None
    m = sum(values) / len(values)
    return int(m) if float(m).is_integer() else round(m, 3)


def page_rows(res: Results, label: str, level: int) -> list[dict[str, Any]]:
    """One row per page of a cell's loads (none for a load of one page): the page's figures in each trial,
    their means, its latency pooled over the trials' requests, and `totals` summed as the whole's are. Its
    `trials` and `measured_trials` are the whole's: the trials run, and those measured that the means are over.
    A mix's page also says what its window sent (`traffic.mix.sent_of`): `sent` per trial and `sent_share`, beside
    `share`, of the requests answered."""
    out = []
    ran = sum(1 for t in res.trials if t["server"] == label and t["level"] == level)  # the whole's `trials`
    found = res.info(label)
    spec: Mapping[str, Any] = found[0].doc["spec"] if found else {}
    for page in pages_of(res, label, level):
        name = page_label(label, page)
        docs = [t["result"] for t in res.cell(name, level)]
        said = cast("list[Mapping[str, Any]]", docs)
        counts = {k: [float(d.get(k) or 0) for d in said]
                  for k in ("ok", "failed", "unfinished", "started", "completed", "rps", "duration_s", "bytes")}
        kinds = sorted({k for d in docs for k in d["failures"]})
        hist = res.pooled_latency(name, level)
        latency = {f"p{q}": ms(hist.percentile(q), 3) for q in (50, 90, 99)} | {
            "max": ms(hist.max_s, 3), "mean": ms(hist.mean, 3), "pooled": True} if hist.count else {
            k: _mean([float(v) for d in said if (v := d["latency_ms"].get(k)) is not None])
            for k in docs[0]["latency_ms"]}  # no histogram stored: the trials' mean of each
        row: dict[str, Any] = {"server": label, "level": level, "proto": proto_of(res, label), "page": page,
                               "trials": ran, "measured_trials": len(docs), **{k: _mean(v) for k, v in counts.items()},
                               "failures": {k: _mean([float(d["failures"].get(k, 0)) for d in docs]) for k in kinds},
                               "share": _mean([float(p["share"]) for t in res.cell(label, level)
                                               for p in t["result"].get("pages") or [] if p["page"] == page]),
                               "latency_ms": latency,
                               "webbench": {"susceed": _mean([float(d["webbench"]["susceed"]) for d in docs]),
                                            "failed": _mean([float(d["webbench"]["failed"]) for d in docs])}}
        if sent := [s for t in res.cell(label, level) if (s := sent_of(spec, t)) is not None]:
            total = sum(sum(s.values()) for s in sent)
            row["sent"] = _mean([float(s.get(page, 0)) for s in sent])
            row["sent_share"] = round(sum(s.get(page, 0) for s in sent) / total, 6) if total else None
        out.append({**row, **over_trials(docs)})
    return out
