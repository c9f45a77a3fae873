"""`loadcmp serve`: the stored runs of a results folder, each one's page replayed and its report.

The list is every folder the catalog finds, judged as `history` judges it (name, date, stacks,
levels, state and why, machine): a broken folder is listed with its reason, never left out. A run's page
gets the events `feed` makes, built from the folder through `store.reader.load_results`:
the same page, drawn from the same records, as the command's own when it ran. A report is
the run's `report/report.html` when it has one, else one built on demand into a temporary
folder (the results folder is only read).
"""

from __future__ import annotations

import asyncio
import html
import logging
import shutil
import sys
import tempfile
import urllib.parse
from datetime import datetime
from dataclasses import dataclass, field
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from ..catalog.folder import judge, started_of
from ..catalog.index import run_folders
from ..catalog.model import RunState
from ..errors import LoadcmpError
from ..store.reader import load_results
from ..store.traceparts import read_matches
from ..store.writer import Row
from .catalogpages import catalog_routes
from .feed import ended, hello, parts, progress, stored, trial_started
from .hub import Event, encode
from .server import cookie_name, page_response

KEYS = ("server", "level", "trial")
log = logging.getLogger("loadcmp.live")


@dataclass(frozen=True)
class StoredRun:
    """One line of the list: a run, or a folder that is none any more (`state` broken, `reason` why)."""

    name: str
    path: Path
    date: str
    stacks: list[str]
    levels: list[int]
    state: RunState
    machine: str
    kind: str
    reason: str | None = None
    """Why it is broken, abandoned or interrupted, in the catalog's words (`catalog.folder.judge`)."""

    @property
    def drawable(self) -> bool:
        return self.state != "broken"


def stored_runs(root: Path) -> list[StoredRun]:
    """Every results folder under `root` as the catalog finds and judges it (`catalog.index.run_folders`,
    `catalog.folder.judge`: one level further for a write-up's runs; empty, damaged and foreign ones listed as
    broken, with why), newest first."""
    out = []
    for path in run_folders(root):
        found, doc, _ = judge(path)
        doc = doc or {}
        spec, machine = doc.get("spec") or {}, doc.get("machine") or {}
        out.append(StoredRun(
            name=_name(root, path), path=path, date=str(doc.get("started", "")),
            stacks=list(spec.get("servers") or []),
            levels=sorted({t["level"] for t in doc.get("trials") or [] if "level" in t})
            or list(spec.get("levels") or []),
            state=found.state, reason=found.reason,
            machine=f"{machine.get('hostname', '?')}, {machine.get('cores', '?')} cores" if machine else "",
            kind=str(doc.get("kind", "run")) if doc else ""))
    return sorted(out, key=lambda r: _when(r.date, r.path), reverse=True)


def _name(root: Path, path: Path) -> str:
    """A run's name in the list and its URLs: its folder under `root` (the root's own name when `root` is a
    results folder itself)."""
    return path.relative_to(root).as_posix() if path != root else path.resolve().name


def _when(stamp: str, path: Path) -> float:
    """run.json's `started` (local time with its offset) as a moment: strings of two offsets do not sort; a
    folder without one sorts by its own time."""
    try:
        d = datetime.fromisoformat(stamp)
    except ValueError:
        return started_of(path, None)[1]
    return (d if d.tzinfo else d.astimezone()).timestamp()


def events(path: Path) -> list[Event]:
    """A stored run as the page's events: each trial with its stored rows, each traced trial's parts, then the
    progress and the end."""
    res = load_results(path)
    run = res.run
    out: list[Event] = [hello(run.get("kind", "run"), f"{res.name} (stored)")]
    tl, sv = _by_key(res.timeline), _by_key(res.server)
    for i, rec in enumerate(run.get("trials", [])):
        key = (rec["server"], rec["level"], rec["trial"])
        out.append(trial_started(*key, i=i, n=len(run["trials"])))
        out.append(stored(rec, tl.get(key, []), sv.get(key, [])))
    out += [ev for m in read_matches(path) if (ev := parts(m)) is not None]  # --trace: each trial's, in order
    out.append(progress(run, path))
    out.append(ended(run, path, "report/"))
    return out


def _by_key(df: Any) -> dict[tuple[Any, ...], list[Row]]:
    if df is None or df.empty or not all(k in df.columns for k in KEYS):
        return {}
    return {tuple(_plain(k) for k in key): g.sort_values("second").to_dict("records")
            for key, g in df.groupby(list(KEYS), sort=False)}


def _plain(v: object) -> Any:
    return v.item() if hasattr(v, "item") else v


@dataclass
class Reports:
    """Each run's report: its own report.html, or one built into a folder of its own (`mkdtemp`).

    A build is keyed on the run's folder and run.json's mtime: a run still being written gets a new
    report once run.json changes, never one built mid-run for good. Two requests for one key share one
    build (one future); the build is `loadcmp report` in a process of its own, so matplotlib never runs
    beside a load in the command's process."""

    root: Path | None = None
    """A temporary folder made at the first build, gone at `close`."""
    builds: dict[tuple[Path, int], asyncio.Future[Path]] = field(default_factory=dict)

    async def response(self, path: Path) -> web.StreamResponse:
        own = path / "report" / "report.html"
        if own.is_file():
            return web.FileResponse(own)
        try:
            key = (path, (path / "run.json").stat().st_mtime_ns)
        except OSError:
            raise web.HTTPNotFound(text=f"no run.json in {path}\n") from None
        if key not in self.builds:
            self.builds[key] = asyncio.ensure_future(self._build(path))
        try:
            return web.FileResponse(await asyncio.shield(self.builds[key]))
        except LoadcmpError as e:
            self.builds.pop(key, None)  # the next request tries again
            raise web.HTTPNotFound(text=f"no report: {e}\n") from None

    async def _build(self, path: Path) -> Path:
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="loadcmp-reports-"))
        out = Path(tempfile.mkdtemp(dir=self.root))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "loadcmp", "report", str(path), "--out", str(out), "--format", "html",
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            _, errs = await proc.communicate()
        except asyncio.CancelledError:  # the server is stopping: the build goes with it
            proc.kill()
            await proc.wait()
            raise
        if proc.returncode != 0 or not (out / "report.html").is_file():
            lines = errs.decode(errors="replace").strip().splitlines()
            raise LoadcmpError(lines[-1] if lines else f"loadcmp report exited {proc.returncode}")
        return out / "report.html"

    async def close(self) -> None:
        """Builds under way stopped (their processes killed and waited for), the folders gone."""
        for fut in self.builds.values():
            fut.cancel()
        await asyncio.gather(*self.builds.values(), return_exceptions=True)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)


class Listing:
    """`stored_runs` for each request, read again only when the folders or a run.json among them changed (in
    the executor, off the server's loop)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.stamp: tuple[tuple[str, int], ...] | None = None
        self.runs: list[StoredRun] = []

    def _read(self) -> list[StoredRun]:
        stamp = tuple(sorted((str(p), _mtime(p / "run.json")) for p in run_folders(self.root)))
        if stamp != self.stamp:
            self.runs, self.stamp = stored_runs(self.root), stamp
        return self.runs

    async def get(self) -> list[StoredRun]:
        return await asyncio.get_running_loop().run_in_executor(None, self._read)


def _mtime(p: Path) -> int:
    try:
        return p.stat().st_mtime_ns
    except OSError:
        return -1


def serve_routes(root: Path, token: str | None, port: int) -> Callable[[web.Application], None]:
    """The routes of `loadcmp serve` over `root`."""
    reports = Reports()
    listing = Listing(root)
    told: set[str] = set()

    async def find(request: web.Request) -> StoredRun:
        name = request.match_info["name"]
        run = next((r for r in await listing.get() if r.name == name), None)
        if run is None:
            raise web.HTTPNotFound(text=f"no stored run {name!r} under {root}\n")
        return run

    async def index(request: web.Request) -> web.StreamResponse:
        resp = web.Response(text=runs_page(root, await listing.get()), content_type="text/html")
        if token is not None:
            resp.set_cookie(cookie_name(port), token, httponly=True, samesite="Strict")
        return resp

    async def page(request: web.Request) -> web.StreamResponse:
        await find(request)
        return page_response(request, token, port)

    async def replay(request: web.Request) -> web.StreamResponse:
        run = await find(request)
        try:
            if not run.drawable:
                raise LoadcmpError(f"broken: {run.reason}")
            evs = await asyncio.get_running_loop().run_in_executor(None, events, run.path)
        except (LoadcmpError, KeyError, ValueError, TypeError, OSError) as e:
            why = str(e) if type(e) is LoadcmpError else f"{type(e).__name__}: {e}"
            line = f"{run.name}: cannot be drawn: {why}"
            if line not in told:  # once, without a traceback: the folder is the user's, not a bug here
                told.add(line)
                log.warning("%s", line)
            raise web.HTTPNotFound(text=line + "\n") from None
        body = "".join(f"data: {encode(e)}\n\n" for e in evs) + "event: end\ndata: {}\n\n"
        return web.Response(text=body, content_type="text/event-stream", headers={"Cache-Control": "no-store"})

    async def report(request: web.Request) -> web.StreamResponse:
        return await reports.response((await find(request)).path)

    async def names() -> list[str]:
        return [r.name for r in await listing.get() if r.drawable and r.path == root / r.name]

    def add(app: web.Application) -> None:
        catalog_routes(root, names)(app)
        app.router.add_get("/", index)
        app.router.add_get(r"/runs/{name:.+?}/events", replay)
        app.router.add_get(r"/runs/{name:.+?}/report/", report)
        app.router.add_get(r"/runs/{name:.+?}/", page)
        app.on_cleanup.append(cleanup)

    async def cleanup(app: web.Application) -> None:
        await reports.close()

    return add


def runs_page(root: Path, runs: list[StoredRun]) -> str:
    """The list of stored runs, as a plain HTML table: a broken folder without links, its reason said."""
    e = html.escape

    def q(name: str) -> str:
        return e(urllib.parse.quote(name))

    def row(r: StoredRun) -> str:
        name = f"<a href='runs/{q(r.name)}/'>{e(r.name)}</a>" if r.drawable else e(r.name)
        report = f"<a href='runs/{q(r.name)}/report/'>report</a>" if r.drawable else ""
        why = f"<br><span class='why'>{e(r.reason)}</span>" if r.reason else ""
        return (f"<tr><td>{name}</td><td>{e(r.date)}</td><td>{e(r.kind)}</td>"
                f"<td>{e(', '.join(r.stacks))}</td><td>{e(', '.join(map(str, r.levels)))}</td>"
                f"<td class='st-{e(r.state)}'>{e(r.state)}{why}</td><td>{e(r.machine)}</td><td>{report}</td></tr>")

    rows = "".join(row(r) for r in runs)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>loadcmp: stored runs</title>
<link rel="stylesheet" href="/static/live.css"></head><body>
<h1>loadcmp: stored runs in {e(str(root))}</h1>
<p class="nav"><a href="/compare">compare two runs</a> · <a href="/history">history of a metric</a></p>
<table class="runs"><thead><tr><th>run</th><th>date</th><th>kind</th><th>stacks</th><th>levels</th><th>state</th>
<th>machine</th><th></th></tr></thead><tbody>{rows or "<tr><td colspan=8>no stored runs</td></tr>"}</tbody></table>
</body></html>"""
