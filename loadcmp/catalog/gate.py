"""`smoke --history DIR`: this run held to the stored history, each change point for the worse a failed check.

No threshold is set by hand: a regression is a change point (history.regressions) at this run. The verdicts
are smoke's own (`verdicts.smoke.Verdict`, kind "history"), so the JUnit XML and the step summary carry them
as they carry the other checks, with the metric, the change and the set-up differences in the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..verdicts.smoke import Verdict
from .model import ChangePoint
from .words import NAMES, change_percent, change_text, differences_text, number

MIN_HISTORY = 5
"""Stored runs (this one included) below which no change point can be told from noise: said, not failed."""


def history_verdicts(root: Path, run: Path, metrics: Sequence[str] = ("rps", "p99")
                     ) -> tuple[list[Verdict], list[str]]:
    """The verdicts of this run (`run`) against the history under `root`, and what is said instead of judging
    (too little history). One failed verdict per change point for the worse; one passed per metric without."""
    from .history import regressions

    if not root.is_dir():  # a first CI job has no history yet; a mistyped path says so every time
        return [], [f"--history {root}: no such folder yet, so no history to judge against (the run is stored "
                    "there only when --out names it too); not judged"]
    stored, cell = _fewest(root, run)
    have = stored + 1
    if have < MIN_HISTORY:
        where = f" in {cell}" if cell else ""
        return [], [f"--history {root}: {have} stored run(s) with this one{where}, too little history to find a "
                    f"change point (it needs {MIN_HISTORY}); not judged"]
    found = regressions(root, run, metrics=tuple(metrics))
    out: list[Verdict] = []
    for metric in metrics:
        mine = [cp for cp in found if cp.metric == metric]
        out += [regression_verdict(metric, cp) for cp in mine]
        if not mine:
            out.append(Verdict("history", f"{metric}: no change point for the worse", None, "-", True,
                               f"{NAMES[metric]}: this run is no change point for the worse against {have - 1} "
                               "stored runs", "history"))
    return out, []


def regression_verdict(metric: str, cp: ChangePoint) -> Verdict:
    """A change point for the worse as a failed check: the metric, the change, the set-up differences named."""
    shown = f"{number(metric, cp.before)} → {number(metric, cp.after)} ({change_percent(cp)})"
    message = (f"{cp.cell.text()}: {NAMES[metric]} changed for the worse at this run: {change_text(metric, cp)}, "
               f"p = {cp.pvalue:.3g}; set-up differences: {differences_text(cp.differences, most=5)}")
    return Verdict(cp.cell.label, f"{metric} history (change point)", cp.after, shown, False, message, "history")


def _fewest(root: Path, run: Path) -> tuple[int, str]:
    """The fewest stored runs (other than `run`) that measured one of `run`'s cells, and that cell: a cell no
    stored run shares has no history to be judged against, whatever else the root holds."""
    from .folder import cell_key, cell_row, load, measured
    from .index import open_catalog

    doc = load(run)[1]
    cells = sorted({cell_key(t, doc) for t in measured(doc)})
    with open_catalog(root) as cat:
        counts = [(len(cat.values("rps", exclude=run, **cell_row(c))), c.text()) for c in cells]
    return min(counts) if counts else (0, "")
