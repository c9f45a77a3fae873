"""A tuning study's results for the report, the console and `--json`, from run.json's `tune` only.

Each trial is one set of settings and what it gave: a capacity from a quick search (its probes
judged alone), or the req/s at the level. The study's answer is the comparison at the end: the
best and the baseline measured again at one level, alternately, and judged with 95 % intervals.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from ..records import TuneDoc, TuneTrialDoc
from ..store.reader import Results
from .axes import WIDTH, finish

HEADER = ["#", "settings", "value", "state", "s", "what it gave"]


def tune_doc(res: Results) -> TuneDoc | None:
    return res.run.get("tune")


def settings_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "-"


def _value(t: TuneTrialDoc, unit: str, res: Results) -> str:
    if t["value"] is None:
        return "-"
    if t["value"] == 0 and t["label"] in res.capacity:  # its search missed where it began: a bound, not a 0
        return f"< {res.capacity[t['label']][1]['missed'] or 0:,} {unit}"
    v = f"{t['value']:,.0f} {unit}"
    if t["state"] == "complete" and t["met"] is False:
        return f"{v} (target missed)"
    return f"≥ {v}" if t["client_bound"] else v


def _number(t: TuneTrialDoc) -> str:
    return "base" if t["number"] == -1 else str(t["number"])


def tune_rows(res: Results) -> tuple[list[str], list[list[str]]]:
    """One row per trial, the baseline first (none: no study in these results)."""
    doc = tune_doc(res)
    if doc is None:
        return HEADER, []
    rows = []
    for t in doc["trials"]:
        state = "best" if t["number"] == doc["best"] and t["state"] == "complete" else t["state"]
        said = t["text"] + (f"; {t.get('unreached')}" if t.get("unreached") else "")
        rows.append([_number(t), settings_text(t["params"]), _value(t, doc["unit"], res), state, f"{t['seconds']:g}",
                     said])
    return HEADER, rows


def gaps(doc: TuneDoc) -> str | None:
    """Why study trial numbers have no row: told as stored (`unlisted`), else by the only ways one is left out
    (the baseline told to the sampler, settings refused or broken before asked again)."""
    listed = {t["number"] for t in doc["trials"]}
    top = max(listed, default=-1)
    why = {int(k): v for k, v in (doc.get("unlisted") or {}).items()}
    missing = sorted((set(range(top + 1)) | set(why)) - listed)
    if not missing:
        return None
    old = "the baseline told to the sampler, or settings refused or broken before asked again (not tried again)"
    said: dict[str, list[str]] = {}
    for n in missing:
        said.setdefault(why.get(n, old), []).append(str(n))
    return "Trial numbers without a row: " + "; ".join(f"{', '.join(ns)}: {w}" for w, ns in said.items()) + "."


def tune_lines(res: Results) -> list[str]:
    """The study in words: what was tuned and how, its answer, and what mattered."""
    doc = tune_doc(res)
    if doc is None:
        return []
    what = (f"the req/s at {doc['clients']:,} clients among settings that meet {doc['target']}"
            if doc["objective"] == "rps" else f"the capacity in {doc['unit']} under {doc['target']}")
    counts: dict[str, int] = {}
    for t in doc["trials"]:
        if t["number"] >= 0:
            counts[t["state"]] = counts.get(t["state"], 0) + 1
    ran = ", ".join(f"{n} {state}" for state, n in counts.items()) or "none"
    out = [f"Tuned {doc['server']} ({doc['stack']}) for {what}, over "
           f"{'; '.join(p['text'] for p in doc['params'])}. {doc['sampler']}. Trials: {ran}; each on fresh servers"
           + (", its search starting at half the baseline's capacity, each probe judged alone"
              if doc["objective"] == "capacity" else ", one probe each")
           + "; settings the stack refuses are pruned before anything starts.",
           doc["text"] or "the study has no answer yet"]
    if (gap := gaps(doc)) is not None:
        out.append(gap)
    if doc["importance"]:
        shares = ", ".join(f"{k} {v:.0%}" for k, v in sorted(doc["importance"].items(), key=lambda kv: -kv[1]))
        out.append(f"What mattered (how much each setting decides whether a trial is among the best, PED-ANOVA): "
                   f"{shares}")
    if doc["block"]:
        out.append("The best, as an experiment file's table:\n" + doc["block"])
    return out


def tune_json(res: Results) -> dict[str, Any] | None:
    """`tune` of `--json`: the study, each trial, the best with its gain."""
    doc = tune_doc(res)
    if doc is None:
        return None
    best = next((t for t in doc["trials"] if t["number"] == doc["best"]), None)
    keys = ("server", "stack", "objective", "target", "unit", "clients", "params", "trials", "gain", "importance",
            "block", "text", "sampler")
    return {**{k: dict(doc).get(k) for k in keys}, "best": best}


def tune_history(res: Results) -> Figure | None:
    """Each trial's value in the order it ran (the baseline dashed, the best so far as a step line,
    pruned and failed trials at the foot); beside it, what mattered. None without a study."""
    doc = tune_doc(res)
    if doc is None or not doc["trials"]:
        return None
    from matplotlib import pyplot as plt

    wide = bool(doc["importance"])
    fig, axes = plt.subplots(1, 2 if wide else 1, figsize=(WIDTH, 4.2),
                             gridspec_kw={"width_ratios": [3, 1]} if wide else None, squeeze=False)
    ax = axes[0][0]
    base = next((t for t in doc["trials"] if t["number"] == -1), None)
    trials = [t for t in doc["trials"] if t["number"] >= 0]
    values = [t["value"] for t in doc["trials"] if t["value"] is not None]
    floor = 0.0
    if base is not None and base["value"] is not None:
        ax.axhline(base["value"], color="#555", ls="--", lw=1.2, label=f"baseline ({base['value']:,.0f})")
    best, xs, ys = None, [], []
    for t in trials:
        ok = t["state"] == "complete" and t["value"] is not None and t["met"] is not False
        if ok:
            best = t["value"] if best is None else max(best, t["value"] or 0.0)
        if best is not None:
            xs.append(t["number"])
            ys.append(best)
        if t["state"] in ("pruned", "failed", "interrupted"):
            ax.plot([t["number"]], [floor], "x", color="#d62728", ms=7, mew=1.6)
        elif t["value"] is not None:
            ax.plot([t["number"]], [t["value"]], "o", color="#1f77b4" if ok else "#d62728",
                    mfc="none" if t["state"] == "repeat" or not ok else "#1f77b4", ms=7)
    if xs:
        ax.step(xs, ys, where="post", color="#2ca02c", lw=1.8, label="best so far")
    if doc["best"] is not None and doc["best"] >= 0:
        b = next(t for t in trials if t["number"] == doc["best"])
        ax.plot([b["number"]], [b["value"]], "*", color="#2ca02c", ms=14, label=f"best: {settings_text(b['params'])}")
    ax.plot([], [], "o", color="#1f77b4", label="a trial's value")
    ax.plot([], [], "x", color="#d62728", label="pruned or failed")
    ax.set_xlabel("trial of the study")
    ax.set_ylabel(f"{'capacity' if doc['objective'] == 'capacity' else 'throughput'} ({doc['unit']})")
    ax.set_ylim(bottom=0, top=max(values, default=1.0) * 1.15 or 1.0)
    ax.legend(fontsize=8, loc="lower right")
    if wide:
        imp = sorted(doc["importance"].items(), key=lambda kv: kv[1])
        ia = axes[0][1]
        ia.barh([k for k, _ in imp], [v for _, v in imp], color="#1f77b4")
        ia.set_xlim(0, 1)
        ia.set_xlabel("importance (PED-ANOVA)")
        ia.set_title("what mattered", fontsize=9)
    return finish(fig, f"Tuning {doc['server']}: {doc['target']}")
