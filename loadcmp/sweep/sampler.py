"""What a tuning study tells Optuna and reads back from it: each parameter's distribution, the
target as a constraint, which parameters mattered, and how large a space of lists is. Optuna is
passed in (imported only when a study runs), so this stays a few pure functions.
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import TYPE_CHECKING

from ..experiment.tune import Param
from ..records import TuneTrialDoc

if TYPE_CHECKING:
    from optuna import Study
    from optuna.distributions import BaseDistribution


def violation(t: TuneTrialDoc) -> float:
    """Optuna's constraint (<= 0: feasible): the target missed at the level is infeasible."""
    return 1.0 if t["met"] is False else -1.0


def distribution(optuna: ModuleType, p: Param) -> BaseDistribution:
    if p.choices:
        return optuna.distributions.CategoricalDistribution(list(p.choices))
    return optuna.distributions.IntDistribution(p.low, p.high, log=p.log)


def importance(optuna: ModuleType, study: Study) -> dict[str, float]:
    """How much each parameter decides whether a trial is among the best (PED-ANOVA); {} with too few trials."""
    evaluator = optuna.importance.PedAnovaImportanceEvaluator()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = optuna.importance.get_param_importances(study, evaluator=evaluator)
    except (RuntimeError, ValueError, ZeroDivisionError):
        return {}
    return {k: round(float(v), 3) for k, v in found.items()}


def space(params: tuple[Param, ...]) -> int | None:
    """How many settings the parameters allow when every one is a list (None: a range makes it large)."""
    n = 1
    for p in params:
        if not p.choices:
            return None
        n *= len(p.choices)
    return n


def exhausted(params: tuple[Param, ...], trials: list[TuneTrialDoc]) -> bool:
    """Whether every setting of a finite space has been measured or refused (asking again would only repeat)."""
    n = space(params)
    seen = {tuple(sorted(t["params"].items())) for t in trials}
    return n is not None and len(seen) >= n
