"""`loadcmp serve`: the stored runs of a results folder, each one's page replayed and its report.

The list reads each run.json alone (name, date, stacks, levels, status, machine); a run's page
gets the events `feed` makes, built from the folder through `store.reader.load_results`:
the same page, drawn from the same records, as the command's own when it ran. A report is
the run's `report/report.html` when it has one, else one built on demand into a temporary
folder (the results folder is only read).
"""

from __future__ import annotations

import asyncio
import html
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from aiohttp import web

from ..errors import LoadcmpError
from ..records import RunDoc
from ..store.reader import Run, load_results
from ..store.writer import Row
from .feed import ended, hello, progress, stored, trial_started
from .hub import Event, encode
from .server import COOKIE, page_response

KEYS = ("server", "level", "trial")


@dataclass(frozen=True)
class StoredRun:
    """One line of the list."""

    name: str
    path: Path
    date: str
    stacks: list[str]
    levels: list[int]
    status: str
    machine: str
    kind: str


def stored_runs(root: Path) -> list[StoredRun]:
    """The results folders under `root` (and one level further: a write-up's runs), newest first."""
    out = []
    for rj in sorted([*root.glob("*/run.json"), *root.glob("*/*/run.json")]):
        try:
            doc = json.loads(rj.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or "spec" not in doc:
            continue
        spec, machine = doc.get("spec") or {}, doc.get("machine") or {}
        out.append(StoredRun(
            name=rj.parent.relative_to(root).as_posix(), path=rj.parent, date=str(doc.get("started", "")),
            stacks=list(spec.get("servers") or []),
            levels=sorted({t["level"] for t in doc.get("trials") or [] if "level" in t})
            or list(spec.get("levels") or []),
            status=str(Run(rj.parent, cast(RunDoc, doc), doc.get("name", "")).status),
            machine=f"{machine.get('hostname', '?')}, {machine.get('cores', '?')} cores",
            kind=str(doc.get("kind", "run"))))
    return sorted(out, key=lambda r: r.date, reverse=True)


def events(path: Path) -> list[Event]:
    """A stored run as the page's events: each trial with its stored rows, then the progress and the end."""
    res = load_results(path)
    run = res.run
    out: list[Event] = [hello(run.get("kind", "run"), f"{res.name} (stored)")]
    tl, sv = _by_key(res.timeline), _by_key(res.server)
    for i, rec in enumerate(run.get("trials", [])):
        key = (rec["server"], rec["level"], rec["trial"])
        out.append(trial_started(*key, i=i, n=len(run["trials"])))
        out.append(stored(rec, tl.get(key, []), sv.get(key, [])))
    out.append(progress(run, path))
    out.append(ended(run, path, "report/"))
    return out


def _by_key(df: Any) -> dict[tuple[Any, ...], list[Row]]:
    if df is None or df.empty or not all(k in df.columns for k in KEYS):
        return {}
    return {tuple(_plain(k) for k in key): g.sort_values("second").to_dict("records")
            for key, g in df.groupby(list(KEYS), sort=False)}


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


@dataclass
class Reports:
    """Each run's report: its own report.html, or one built once into a temporary folder."""

    built: dict[Path, Path] = field(default_factory=dict)
    tmp: tempfile.TemporaryDirectory[str] = field(default_factory=tempfile.TemporaryDirectory)

    async def response(self, path: Path) -> web.StreamResponse:
        own = path / "report" / "report.html"
        if own.is_file():
            return web.FileResponse(own)
        if path not in self.built:
            out = Path(self.tmp.name) / str(len(self.built))
            try:
                await asyncio.get_running_loop().run_in_executor(None, _build, path, out)
            except LoadcmpError as e:
                raise web.HTTPNotFound(text=f"no report: {e}\n") from None
            self.built[path] = out / "report.html"
        return web.FileResponse(self.built[path])


def _build(path: Path, out: Path) -> None:
    from ..report.build import build

    build([path], out, {"html"})


def serve_routes(root: Path, token: str | None) -> Any:
    """The routes of `loadcmp serve` over `root`."""
    reports = Reports()

    def find(request: web.Request) -> StoredRun:
        name = request.match_info["name"]
        run = next((r for r in stored_runs(root) if r.name == name), None)
        if run is None:
            raise web.HTTPNotFound(text=f"no stored run {name!r} under {root}\n")
        return run

    async def index(request: web.Request) -> web.StreamResponse:
        resp = web.Response(text=runs_page(root, stored_runs(root)), content_type="text/html")
        if token is not None:
            resp.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
        return resp

    async def page(request: web.Request) -> web.StreamResponse:
        find(request)
        return page_response(request, token)

    async def replay(request: web.Request) -> web.StreamResponse:
        run = find(request)
        evs = await asyncio.get_running_loop().run_in_executor(None, events, run.path)
        body = "".join(f"data: {encode(e)}\n\n" for e in evs) + "event: end\ndata: {}\n\n"
        return web.Response(text=body, content_type="text/event-stream", headers={"Cache-Control": "no-store"})

    async def report(request: web.Request) -> web.StreamResponse:
        return await reports.response(find(request).path)

    def add(app: web.Application) -> None:
        app.router.add_get("/", index)
        app.router.add_get(r"/runs/{name:.+?}/events", replay)
        app.router.add_get(r"/runs/{name:.+?}/report/", report)
        app.router.add_get(r"/runs/{name:.+?}/", page)
        app.on_cleanup.append(cleanup)

    async def cleanup(app: web.Application) -> None:
        reports.tmp.cleanup()

    return add


def runs_page(root: Path, runs: list[StoredRun]) -> str:
    """The list of stored runs, as a plain HTML table."""
    e = html.escape
    rows = "".join(
        f"<tr><td><a href='runs/{e(r.name)}/'>{e(r.name)}</a></td><td>{e(r.date)}</td><td>{e(r.kind)}</td>"
        f"<td>{e(', '.join(r.stacks))}</td><td>{e(', '.join(map(str, r.levels)))}</td>"
        f"<td class='st-{e(r.status)}'>{e(r.status)}</td><td>{e(r.machine)}</td>"
        f"<td><a href='runs/{e(r.name)}/report/'>report</a></td></tr>" for r in runs)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>loadcmp: stored runs</title>
<link rel="stylesheet" href="/static/live.css"></head><body>
<h1>loadcmp: stored runs in {e(str(root))}</h1>
<table class="runs"><thead><tr><th>run</th><th>date</th><th>kind</th><th>stacks</th><th>levels</th><th>status</th>
<th>machine</th><th></th></tr></thead><tbody>{rows or "<tr><td colspan=8>no stored runs</td></tr>"}</tbody></table>
</body></html>"""
