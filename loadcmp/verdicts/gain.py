"""A tuning study's answer in words: the best settings against the baseline's, and the block to paste.

The comparison (`sweep.tune`) measures both again at one level, alternately, and judges each side's
target with 95 % intervals (`verdicts.slo.confirm_level`); this module turns the two sides into a
verdict (better, not better, unsure) and says why.
"""

from __future__ import annotations

from typing import Any

from ..records import TrialRecord, TuneDoc, TuneGainDoc, TuneSideDoc, TuneTrialDoc
from .slo import Target, confirm_level


def settings_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "the defaults"


def ready_block(stack: str, settings: dict[str, Any]) -> str:
    """The settings as an experiment file's `[variants.tuned]` table."""
    def toml(v: Any) -> str:
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
