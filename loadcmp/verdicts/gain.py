"""A tuning study's answer in words: the best settings against the baseline's, and the block to paste.

The comparison (`sweep.tune`) measures both again at one level, alternately, and judges each side's
target with 95 % intervals (`verdicts.slo.confirm_level`); this module turns the two sides into a
verdict (better, not better, unsure) and says why.

A trial says nothing of a setting that never took effect: `not_reached` holds the setting that caps
the busy workers (a stack's `busy_limit`, php-fpm's `fpm.max_children`) against the busy workers its
status page counted where the target was missed, while the server's log said its pool was still
growing. A pool that grows on demand (`pm = dynamic`) may not have grown to it within a short probe;
such a trial says so, and `unreached` keeps the study's answer from reading it as a finding about the
parameter.
"""

from __future__ import annotations

from typing import Any

from ..records import ServerInfo, TrialRecord, TuneDoc, TuneGainDoc, TuneSideDoc, TuneTrialDoc
from .slo import Target, confirm_level

GROWING = frozenset({"fpm.seems_busy"})
"""Log causes (`observe.evidence`) that say a pool had no idle worker and was still starting more: php-fpm's
'seems busy ... spawning'. With fewer workers busy than the setting and the clients allow, they show a pool
that had not grown to its setting in the window (a pool that had grown has idle workers, and says nothing)."""


def settings_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "the defaults"


def ready_block(stack: str, settings: dict[str, Any]) -> str:
    """The settings as an experiment file's `[variants.tuned]` table."""
    def toml(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v) if isinstance(v, int) else '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
    sets = ", ".join(f'"{k}" = {toml(v)}' for k, v in settings.items())
    return f'[variants.tuned]\nstack = "{stack}"\nset = {{ {sets} }}'


def valued(t: TuneTrialDoc, doc: TuneDoc) -> str:
    if t["value"] is None:
        return "no value"
    v = f"{t['value']:,.0f} {doc['unit']}"
    return f"at least {v} (client-bound)" if t["client_bound"] else v


def gain(level: int, base: TuneSideDoc, best: TuneSideDoc, t0: TuneTrialDoc, t1: TuneTrialDoc, objective: str,
          unit: str) -> TuneGainDoc:
    """Whether the best beats the baseline at the level, in words, with the figures that decide it."""
    if objective == "capacity":
        v0, v1 = t0["value"] or 0.0, t1["value"] or 0.0
        gain = v1 / v0 - 1 if v0 else None
        # each capacity from one quick search (probes judged alone): the verdict rests on the comparison's trials
        head = (f"{settings_text(t1['params'])} holds about {v1:,.0f} {unit} against the baseline's {v0:,.0f} "
                "(quick searches)")
        if best["verdict"] == "missed":
            verdict, why = "not better", (f"at {level:,} {unit} the best misses the target over {best['n']} "
                                          "trials")
        elif best["verdict"] == "met" and base["verdict"] == "missed":
            verdict, why = "better", (f"at {level:,} {unit} the best meets the target over {best['n']} trials and "
                                      f"the baseline misses it")
        elif "unsure" in (best["verdict"], base["verdict"]):
            verdict, why = "unsure", f"at {level:,} {unit} an interval straddles the target (more --confirm trials)"
        else:
            verdict, why = "not better", (f"at {level:,} {unit} the best {best['verdict']} the target and the "
                                          f"baseline {base['verdict']} it over {best['n']} trials each")
    else:
        r0, r1 = base["rps"], best["rps"]
        gain = r1["mean"] / r0["mean"] - 1 if r0["mean"] and r1["mean"] is not None else None
        head = (f"{settings_text(t1['params'])} gives {r1['shown']} at {level:,} clients against the baseline's "
                f"{r0['shown']}")
        if best["verdict"] == "met" and base["verdict"] == "missed":
            verdict, why = "better", "the best meets the target there and the baseline misses it"
        elif best["verdict"] == "missed":
            verdict, why = "not better", "the best misses the target there"
        elif best["verdict"] == "unsure":
            verdict, why = "unsure", "whether the best meets the target there is unsure (an interval straddles it)"
        elif None not in (r0["high"], r1["low"]) and r1["low"] > r0["high"]:  # type: ignore[operator]
            verdict, why = "better", "the 95 % intervals do not overlap"
        elif None not in (r0["low"], r1["high"]) and r1["high"] < r0["low"]:  # type: ignore[operator]
            verdict, why = "not better", "the baseline's interval lies above the best's"
        else:
            verdict, why = "unsure", "the 95 % intervals overlap"
    pct = "" if gain is None else f" ({gain:+.0%})"
    return TuneGainDoc(level=level, base=base, best=best, gain=gain, verdict=verdict,  # type: ignore[typeddict-item]
                       text=f"{verdict}: {head}{pct}; {why}")


def side(target: Target, label: str, level: int, trials: list[TrialRecord]) -> TuneSideDoc:
    """One side of the comparison: its trials at the level judged against the target, and its req/s."""
    from ..report.tables import Estimate

    c = confirm_level(target, level, trials)
    e = Estimate.of([t["result"]["rps"] for t in trials if t.get("result")])
    return TuneSideDoc(label=label, n=c.n, verdict=c.verdict,
                       checks=[{"check": x.check, "mean": x.mean, "low": x.low, "high": x.high, "n": x.n,
                                "verdict": x.verdict, "shown": x.shown} for x in c.checks],
                       rps={"check": "rps", "mean": e.mean, "low": e.low, "high": e.high, "n": e.n,
                            "verdict": "unsure", "shown": e.text() + " req/s"})


def not_reached(info: ServerInfo | None, studied: set[str], trials: list[TrialRecord]) -> str | None:
    """Where a setting under study that caps the busy workers (the stack's `busy_limit`) was not reached:
    at the highest level of `trials` (closed-loop clients, where the target was missed) fewer workers
    were busy at most than the setting and the clients allow, while the server's log said its pool was
    still growing (GROWING); one line, else None. Nothing is said without the status page's count, or
    where no worker but the status page's own was busy."""
    key = (info or {}).get("busy_limit")
    settings = (info or {}).get("settings") or {}
    if key is None or key not in studied or not isinstance(settings.get(key), int):
        return None
    ran = [t for t in trials if t.get("result") and (t.get("server_metrics") or {}).get("busy_workers_peak")
           is not None]
    if not ran:
        return None
    level = max(t["level"] for t in ran)
    at = [t for t in ran if t["level"] == level]
    busy = max(float(t["server_metrics"]["busy_workers_peak"] or 0) for t in at)
    cap = int(settings[key])
    growing = any(GROWING & set(t.get("log_evidence") or {}) for t in at)
    if busy <= 1 or busy >= min(cap, level) - 1 or not growing:  # the status request itself keeps one busy
        return None
    hint = " or set fpm.pm=static" if key.startswith("fpm.") and settings.get("fpm.pm") != "static" else ""
    return (f"{key}={cap} set, {busy:,.0f} workers were busy at most at {level:,} clients: the pool did not grow "
            f"to it within the probe; lengthen --warmup{hint}")


def unreached(doc: TuneDoc) -> str:
    """The study's answer with the settings that never took effect (`not_reached`) named: where none of the
    study's trials took effect, or it has no best (no trial met the target), or its best did not take effect,
    it is no finding about the setting ("no answer: ..."); otherwise the answer stands, and the trials that
    did not are named after it."""
    ran = [t for t in doc["trials"] if t["state"] == "complete"]
    short = [t for t in ran if t.get("unreached")]
    if not short:
        return doc["text"]
    first = short[0]
    said = (f"the setting under study did not take effect in {len(short)} of {len(ran)} measured settings "
            f"({name(first).replace('baseline', 'the baseline')}: {first.get('unreached')})")
    tried = [t for t in ran if t["number"] >= 0]
    best = next((t for t in ran if t["number"] == doc["best"]), None)
    if all(t.get("unreached") for t in tried) or best is None or best.get("unreached"):
        return f"no answer: {said}, so this says nothing of it. As measured: {doc['text']}"
    return f"{doc['text']} ({said}: those trials say nothing of it)"


def best_of(trials: list[TuneTrialDoc], rps: bool) -> TuneTrialDoc | None:
    """The trial with the most (by req/s: among those that met the target); the earlier of equals."""
    ok = [t for t in trials if t["state"] == "complete" and t["value"] is not None and (not rps or t["met"])]
    return max(ok, key=lambda t: (t["value"], -t["number"]), default=None)


def no_answer(doc: TuneDoc, measured_base: bool) -> str:
    """Why a study has no best to compare: stopped in its baseline, nothing met the target, nothing measured."""
    if not measured_base:
        return "stopped during the baseline: nothing to compare"
    if doc["clients"] is not None and any(t["value"] is not None for t in doc["trials"]):
        return f"no setting tried met {doc['target']} at {doc['clients']:,} clients (the baseline neither)"
    return "no trial measured a value: nothing to compare"


def no_trial(doc: TuneDoc) -> str:
    """Why the study measured no trial of its own."""
    rows = [t for t in doc["trials"] if t["number"] >= 0]
    if rows and all(t["state"] == "pruned" for t in rows):
        return f"no trial ran: the stack refused every setting asked ({rows[0]['text'].split(': ', 1)[-1]})"
    if doc["budget_s"] is not None and not rows:
        return "no trial ran: the budget went on the baseline (give a larger --budget)"
    return "no trial ran"


def tied(trials: list[TuneTrialDoc], resolution: float) -> bool:
    """Whether every capacity found lies within the search's resolution of the others: then no parameter moved
    the edge, and an importance would rank noise."""
    done = [t for t in trials if t["state"] == "complete" and t["value"] is not None]
    values = [float(t["value"] or 0.0) for t in done]
    settings = {tuple(sorted(t["params"].items())) for t in done}
    return len(settings) >= 2 and max(values) <= min(values) * (1 + resolution)


def rps_text(v: float | None) -> str:
    return "nothing measured" if v is None else f"{v:,.0f} req/s"


def name(t: TuneTrialDoc) -> str:
    return "baseline" if t["number"] == -1 else f"trial {t['number']}"
