"""A run's traffic checked with what the lab knows: the app's pages (a mix's pages all on the app or all
off it) and its shipped journeys (`--journey reader`). What goes with what is `traffic.fits`'; this module
only hands it the lab's part.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import UsageError
from ..lab import apps as lab_apps
from ..traffic.fits import Beside, problems
from ..traffic.source import Traffic
from .journeys import shipped


def source_errors(traffic: Traffic, run: Beside) -> list[str]:
    """Every problem of the run's traffic (its own, and beside the rest of the run), the app's part added to
    `run`. An app that is not known is `apps.page_errors`' to say."""
    try:
        app = lab_apps.get_app(run.app) if run.app else None
    except UsageError:
        app = None
    applies = None if app is None else (lambda page: lab_apps.applies(app, page) is not None)
    return problems(traffic, replace(run, applies=applies, shipped=shipped(run.app)))
