"""What a tuning study is: which settings of which stack it searches, over what ranges, for what, how long.

From `loadcmp tune`'s flags over an experiment file's `[tune]` table (`params`, `trials`,
`budget`, `clients`, `seed`); every problem at once. A parameter is a tunable of the stack
being tuned, as `--set` takes it, with a range or a list of values:

    --param fpm.max_children=5..200      whole numbers from 5 to 200
    --param fpm.pm=static,dynamic        one of these

A range is searched on a log scale when its top is ten times its bottom or more (worker
counts matter by their ratio, not by their difference). The objective is the capacity
under the target (`experiment.capacity`), or with `-c N` the requests/s at N clients
among the settings that meet the target there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError, Problems, StoreError, UsageError
from ..lab.model import Stack, Tunable
from ..records import TuneDoc
from ..traffic.source import DEFAULTS
from ..units import Setting, parse_duration
from ..verdicts.slo import parse_slo
from .capacity import CapacitySpec
from .spec import RunSpec

KEYS = ("params", "trials", "budget", "clients", "seed")
"""What an experiment file's [tune] table may hold."""

TRIALS = 20
"""Trials of a study when neither --trials nor --budget is given."""
LOG_RATIO = 10
"""A range whose top is this many times its bottom or more is searched on a log scale."""
RANGE_RX = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")


@dataclass(frozen=True)
class Param:
    """One setting the study varies: a range of whole numbers, or a list of values."""

    key: str
    low: int | None = None
    high: int | None = None
    choices: tuple[Setting, ...] = ()
    text: str = ""
    """As the user wrote it (`fpm.max_children=5..200`)."""

    @property
    def log(self) -> bool:
        return self.low is not None and self.high is not None and self.low > 0 and self.high >= LOG_RATIO * self.low

    def holds(self, value: object) -> bool:
        """Whether a value (the stack's default, say) is one the study could try."""
        if self.choices:
            return value in self.choices
        return isinstance(value, int) and not isinstance(value, bool) and self.low is not None \
            and self.high is not None and self.low <= value <= self.high

    def describe(self) -> str:
        if self.choices:
            return f"{self.key} in {', '.join(map(str, self.choices))}"
        return f"{self.key} from {self.low:,} to {self.high:,}{' (log scale)' if self.log else ''}"


def parse_param(text: str, stack: Stack, where: str = "--param") -> Param:
    """`KEY=LOW..HIGH` or `KEY=A,B,...` for one of the stack's tunables, each value as `--set` would take it."""
    if "=" not in text:
        raise UsageError(f"{where} {text!r}: expected KEY=LOW..HIGH or KEY=A,B (e.g. fpm.max_children=5..200)")
    key, raw = (s.strip() for s in text.split("=", 1))
    tunable = _tunable(stack, key, where)
    m = RANGE_RX.match(raw)
    if m:
        if isinstance(tunable.default, bool) or not isinstance(tunable.default, int):
            raise UsageError(f"{where} {text!r}: {tunable.key} is not a number; list its values: "
                             f"{tunable.key}={','.join(tunable.choices or ('A', 'B'))}")
        try:
            low, high = (int(tunable.parse(x)) for x in m.groups())  # a whole number: its default is one
        except ConfigError as e:
            raise UsageError(f"{where} {text!r}: {e}") from None
        if low >= high:
            raise UsageError(f"{where} {text!r}: the range must go up (LOW..HIGH with LOW < HIGH)")
        return Param(tunable.key, low, high, text=f"{tunable.key}={low}..{high}")
    values = list(dict.fromkeys(v.strip() for v in raw.split(",") if v.strip()))
    if len(values) < 2:
        raise UsageError(f"{where} {text!r}: give a range LOW..HIGH or two values or more (A,B)")
    parsed: list[Setting] = []
    for v in values:
        try:
            parsed.append(tunable.parse(v))
        except ConfigError as e:
            raise UsageError(f"{where} {text!r}: {e}") from None
    choices = tuple(dict.fromkeys(parsed))
    if len(choices) < 2:  # `yes,on` are one value of an on/off setting
        raise UsageError(f"{where} {text!r}: these are one value ({choices[0]}): give two values or more")
    return Param(tunable.key, choices=choices, text=f"{tunable.key}={','.join(map(str, choices))}")


def _tunable(stack: Stack, key: str, where: str) -> Tunable:
    lower = {k.lower(): k for k in stack.tunables}
    found = stack.tunables.get(key) or stack.tunables.get(lower.get(key.lower(), ""))
    if found is None:
        near = [k for k in stack.tunables if k.split(".")[-1].lower() == key.split(".")[-1].lower()]
        hint = f" (did you mean {', '.join(near)}?)" if near else "; see `loadcmp servers --tunables`"
        raise UsageError(f"{where} {key!r}: not a setting of stack {stack.name}{hint}")
    return found


@dataclass(frozen=True)
class TuneSpec:
    """A study's own settings (the load's are the RunSpec's, the target's the CapacitySpec's)."""

    label: str
    """The server label tuned; its trials run as `LABEL-tN`, the baseline as `LABEL-base`."""
    stack: str
    params: tuple[Param, ...]
    trials: int | None = TRIALS
    budget_s: float | None = None
    clients: int | None = None
    """None: the objective is the capacity; N: the requests/s at N clients while meeting the target."""
    seed: int | None = None

    @property
    def objective(self) -> Literal["capacity", "rps"]:
        return "capacity" if self.clients is None else "rps"

    def trial_label(self, n: int) -> str:
        return f"{self.label}-t{n}"

    @property
    def base_label(self) -> str:
        return f"{self.label}-base"


def tune_spec(label: str, stack: Stack, table: dict[str, Any], flags: dict[str, Any],
              where: str = "[tune]") -> TuneSpec:
    """The file's [tune] table, then the flags given; all problems at once.

    `flags`: params (a tuple of texts), trials, budget (seconds), clients, seed; None when not given."""
    problems = Problems()
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        problems.add(f"{where} has unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})")
    texts: list[tuple[str, str]] = []
    raw = table.get("params", {})
    if not isinstance(raw, dict):
        problems.add(f"{where} params: expected a table like {{ \"fpm.max_children\" = \"5..200\" }}")
    else:
        texts += [(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}", f"{where} params") for k, v in
                  raw.items()]
    texts += [(t, "--param") for t in flags.get("params") or ()]
    params: dict[str, Param] = {}
    for text, source in texts:
        try:
            p = parse_param(text, stack, source)
            params[p.key] = p  # a flag for the same key wins over the file
        except UsageError as e:
            problems.take(e)
    values: dict[str, Any] = {}
    for key in ("trials", "clients", "seed"):
        v = table.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < (0 if key == "seed" else 1)):
            problems.add(f"{where} {key}: expected a whole number{'' if key == 'seed' else ' of 1 or more'}, "
                          f"got {v!r}")
        elif v is not None:
            values[key] = v
    if "budget" in table:
        try:
            values["budget"] = parse_duration(table["budget"], f"{where} budget", allow_zero=False)
        except UsageError as e:
            problems.take(e)
    problems.raise_if_any()
    values.update({k: v for k, v in flags.items() if v is not None and k != "params"})
    if not params:
        raise UsageError("nothing to tune: give --param KEY=LOW..HIGH or KEY=A,B (e.g. fpm.max_children=5..200; "
                         "`loadcmp servers --tunables` lists them)")
    trials = values.get("trials")
    budget = values.get("budget")
    return TuneSpec(label, stack.name, tuple(params.values()), trials if trials or budget else TRIALS, budget,
                    values.get("clients"), values.get("seed"))


def new_doc(t: TuneSpec, cap: CapacitySpec, base_settings: dict[str, Setting], study: str) -> TuneDoc:
    """run.json's `tune` of a new study: what it searches, for what, from which settings; no trial yet."""
    unit = cap.unit if t.objective == "capacity" else "req/s"
    return TuneDoc(
        server=t.label, stack=t.stack, objective=t.objective, target=str(cap.target), unit=unit,
        clients=t.clients, params=[{"key": p.key, "low": p.low, "high": p.high, "log": p.log,
                                    "choices": list(p.choices), "text": p.text} for p in t.params],
        search=search_doc(cap), base_settings=dict(base_settings), trials_asked=t.trials,
        budget_s=t.budget_s, seed=t.seed, sampler="", study=study, trials=[], best=None, gain=None, importance={},
        block="", text="")


# --- a stored study, to resume ------------------------------------------------------------------


def search_doc(cap: CapacitySpec) -> dict[str, Any]:
    """What `capacity_from_doc` needs to probe as the stored study did."""
    return {"slo": str(cap.target), "start": cap.start, "max": cap.max, "max_reason": cap.max_reason,
            "resolution": cap.resolution, "confirm": cap.confirm, "probe_time": cap.probe_time, "factor": cap.factor,
            "unit": cap.unit}


def capacity_from_doc(doc: dict[str, Any]) -> CapacitySpec:
    return CapacitySpec(parse_slo(doc["slo"]), doc["start"], doc["max"], doc["max_reason"], doc["resolution"],
                        doc["confirm"], doc["probe_time"], doc["factor"], doc["unit"])


def spec_from_doc(doc: dict[str, Any]) -> RunSpec:
    """run.json's `spec` back into the RunSpec it was written from (lists were tuples)."""
    known = {f.name for f in fields(RunSpec)} | set(DEFAULTS)
    return RunSpec.of({k: tuple(v) if isinstance(v, list) else v for k, v in doc.items() if k in known})


def _abandoned(run: dict[str, Any]) -> bool:
    """A study left `running` by a process that is gone (killed outright): it may go on from what it stored."""
    from ..lab.provenance import owner_gone

    return isinstance(run.get("owner"), str) and owner_gone(run["owner"], str(run.get("host", "")))


def resumed(run: Any, trials: int | None, budget_s: float | None, folder: Path | None = None
            ) -> tuple[RunSpec, CapacitySpec, TuneSpec]:
    """A stored study's spec, probes and parameters, to go on with more trials or another budget."""
    doc = run.get("tune") if isinstance(run, dict) else None
    if not isinstance(doc, dict) or run.get("kind") != "tune":
        raise UsageError("--resume: not the folder of a `loadcmp tune` study (its run.json has no `tune`)")
    if run.get("status") == "running" and not _abandoned(run):
        raise UsageError(f"--resume: this study is still running (its run.json says so, and its process "
                         f"{run.get('owner', '?')} on {str(run.get('host', '?')).split('/')[0]} is not known to be "
                         "gone); wait for it to end")
    if folder is not None and not (folder / str(doc.get("study", "study.log"))).is_file():
        if run.get("status") == "running":
            raise StoreError("--resume: this study was killed during its baseline: nothing to go on from; start a "
                             "new study instead")
        raise StoreError(f"--resume: the study's journal {folder / str(doc.get('study'))} is missing: the trials "
                         "would be numbered anew; start a new study instead")
    try:
        spec = spec_from_doc(run["spec"])
        stack = spec.catalog().get(doc["stack"])  # a study of the user's own stack too
        params = tuple(parse_param(p["text"], stack, "the stored study's parameter") for p in doc["params"])
        return spec, capacity_from_doc(doc["search"]), TuneSpec(doc["server"], stack.name, params,
                                                                 trials if trials or budget_s else TRIALS, budget_s,
                                                                 doc["clients"], doc.get("seed"))
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise StoreError(f"--resume: the stored study is not complete ({type(e).__name__}: {e}); start a new "
                         "study instead") from None
