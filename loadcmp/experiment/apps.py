"""A run with an application (`--app NAME`, `app = "NAME"`): which pages run on it, the stack and
settings each of them starts with, the images a run needs, and what is wrong with the pages asked for.

The app's own pages (its app.toml's `[[pages]]`) run on each stack with the app laid over it; any
other page (a demo page such as sleep.php beside it) runs on the stack as it is, so the framework's
cost and the bare script's can be compared in one run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ..errors import Problems, UsageError
from ..lab import apps
from ..lab.stacks import Catalog
from ..lab.model import App, Image, Stack
from ..lab.www import page_file
from ..traffic.source import OnePage, Traffic



class RunSpec(Protocol):
    """What this module reads of a `spec.RunSpec` (which imports it)."""

    @property
    def app(self) -> str | None: ...

    @property
    def www(self) -> str | None: ...

    @property
    def servers(self) -> tuple[str, ...]: ...

    @property
    def all_pages(self) -> tuple[str, ...]: ...

    def catalog(self) -> Catalog: ...

    def stack_of(self, label: str) -> str: ...

    def settings_for(self, label: str) -> dict[str, Any]: ...


def app_of(spec: RunSpec) -> App | None:
    """The run's app, if it has one (UsageError for a name no app has)."""
    return apps.get_app(spec.app) if spec.app else None


def stack_for(spec: RunSpec, label: str, page: str) -> tuple[Stack, App | None]:
    """The stack one label runs for one page, with the app laid over it when the page is the app's."""
    stack = spec.catalog().get(spec.stack_of(label))
    app = apps.applies(app_of(spec), page)
    return (apps.on_stack(app, stack) if app else stack), app


def overrides_for(spec: RunSpec, label: str, page: str) -> dict[str, Any]:
    """The settings a label's server starts with for a page: the app's (when it runs), then the user's."""
    app = apps.applies(app_of(spec), page)
    return {**(app.settings if app else {}), **spec.settings_for(label)}


def images_needed(spec: RunSpec) -> list[Image]:
    """Every image the run's servers and pages need (an app's built over its stacks' images)."""
    out: list[Image] = []
    for label in spec.servers:
        for page in spec.all_pages:
            out += stack_for(spec, label, page)[0].images
    return list(dict.fromkeys(out))


def with_default_pages(fields: dict[str, Any], traffic: Traffic | None = None) -> dict[str, Any]:
    """The run's page: the one given, else its traffic's own (a mix's first page, a replay's most sent answered
    page; `Traffic.page_for`). With an app and no page at all, the run loads every page of the app, or, when its
    traffic says its own requests (journeys), the app runs behind its first page."""
    traffic = traffic or OnePage()
    if (page := traffic.page_for(fields.get("page"))) is not None:
        return {**fields, "page": page}
    if fields.get("app") and not fields.get("pages"):
        try:
            app = apps.get_app(fields["app"])
        except UsageError:
            return fields  # `validate` says why, beside every other problem
        paths = tuple(p.path for p in app.pages)
        return {**fields, **({"page": paths[0]} if len(paths) == 1 or traffic.own_requests else {"pages": paths})}
    return fields


def page_errors(spec: RunSpec) -> list[str]:
    """What is wrong with the app and the pages asked for (--www and --app as well), all at once. With both
    --www and --app, that is the problem: which pages each of them lacks follows from it and is not said."""
    p = Problems()
    both = spec.app is not None and spec.www is not None
    if spec.app is not None:
        app = p.attempt(lambda: apps.get_app(spec.app or ""))
        if app is not None and not both and not any(app.page_for(page) for page in spec.all_pages):
            p.add(f"--app {app.name}: no page asked for is one of its pages "
                  f"({', '.join(x.path for x in app.pages)}); give --page with one of them")
    if both:
        p.add("--www and --app: give one (the app brings its own pages)")
    elif spec.www is not None:
        www = Path(spec.www)
        if not www.is_dir():
            p.add(f"--www {spec.www}: no such folder")
        else:
            missing = [page for page in spec.all_pages if page.startswith("/") and page_file(www, page) is None]
            p.extend(f"page {page!r} is not in --www {spec.www} (no such file, nor an index.html or index.php "
                     "for a folder)" for page in missing)
    return p.messages
