"""`loadcmp serve`'s compare and history pages, and their JSON, from the catalog's typed answers.

`/compare?a=RUN&b=RUN` chooses two runs of the list and shows what differs, then each shared cell;
`/history?metric=...` draws a metric over the stored runs with uPlot (static/history.js), its change points
marked. `/api/compare` and `/api/history` are the same answers as `compare --json` and `history --json`
(`catalog.tojson`). A run is named as the list names it (its folder under the served one), never by a path
of the browser's choosing. The catalog works in the executor, off the server's loop.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from ..catalog.model import METRICS, Comparison, HistoryQuery
from ..catalog.tojson import plain
from ..catalog.words import NAMES, NO_ROW, cell_text, delta_text, difference_text, plus_minus, verdict_text
from ..errors import UsageError

Names = Callable[[], Awaitable[list[str]]]
"""The runs of the list, by name (their folder under the served one), newest first."""
FILTERS = ("label", "stack", "level", "page", "protocol")
e = html.escape


def catalog_routes(root: Path, names: Names) -> Callable[[web.Application], None]:
    """The compare and history routes over `root`; `names` lists the runs one may choose."""

    async def run_path(request: web.Request, key: str) -> Path | None:
        name = request.query.get(key, "")
        if not name:
            return None
        if name not in await names():
            raise UsageError(f"no stored run {name!r} under {root}")
        return root / name

    async def comparison(request: web.Request) -> Comparison | None:
        from ..catalog.compare import compare

        a, b = await run_path(request, "a"), await run_path(request, "b")
        if a is None or b is None:
            return None
        return await asyncio.get_running_loop().run_in_executor(None, compare, a, b)

    async def compare_page(request: web.Request) -> web.StreamResponse:
        chosen = (request.query.get("a", ""), request.query.get("b", ""))
        try:
            body, status = comparison_html(await comparison(request)), 200
        except UsageError as err:
            body, status = f"<p class='problem'>{e(str(err))}</p>", 400
        return _page("compare two runs", choose_runs(await names(), chosen) + body, status)

    async def compare_api(request: web.Request) -> web.StreamResponse:
        try:
            c = await comparison(request)
        except UsageError as err:
            return web.json_response({"error": str(err)}, status=400)
        if c is None:
            return web.json_response({"error": "give two runs: ?a=RUN&b=RUN"}, status=400)
        return web.json_response(plain(c))

    async def history_api(request: web.Request) -> web.StreamResponse:
        from ..catalog.history import history

        try:
            q = query_of(request.query)
            h = await asyncio.get_running_loop().run_in_executor(None, history, root, q)
        except UsageError as err:
            return web.json_response({"error": str(err)}, status=400)
        return web.json_response(plain(h))

    async def history_page(request: web.Request) -> web.StreamResponse:
        return _page("history", history_form(request.query) + HISTORY_BODY, 200, script="history.js")

    def add(app: web.Application) -> None:
        app.router.add_get("/compare", compare_page)
        app.router.add_get("/history", history_page)
        app.router.add_get("/api/compare", compare_api)
        app.router.add_get("/api/history", history_api)

    return add


def query_of(args: Any) -> HistoryQuery:
    """The history filters of a request's query (empty: any); a metric not in model.METRICS is bad usage."""
    metric = args.get("metric") or "rps"
    if metric not in METRICS:
        raise UsageError(f"unknown metric {metric!r} (known: {', '.join(METRICS)})")
    given = {k: v for k in FILTERS if (v := args.get(k))}
    if "level" in given:
        try:
            given["level"] = int(given["level"])
        except ValueError:
            raise UsageError(f"level {given['level']!r} is not a number") from None
    return HistoryQuery(metric=metric, **given)


def choose_runs(names: list[str], chosen: tuple[str, str]) -> str:
    """The form that chooses run A and run B from the list (at first: the newest but one against the newest)."""
    if not any(chosen) and len(names) >= 2:
        chosen = (names[1], names[0])

    def options(pick: str) -> str:
        return "".join(f"<option{' selected' if n == pick else ''}>{e(n)}</option>" for n in names)

    return (f"<form method='get' action='/compare' class='choose'><label>A <select name='a'>{options(chosen[0])}"
            f"</select></label> <label>B <select name='b'>{options(chosen[1])}</select></label> "
            "<button>compare</button></form>")


def comparison_html(c: Comparison | None) -> str:
    """What differs first (each rendered config's diff folded), then one table per metric, then the cells
    only one run has."""
    if c is None:
        return "<p>Choose two runs.</p>"
    parts = [f"<p>A <code>{e(str(c.a.path))}</code> ({e(c.a.state)}, {e(c.a.started)})<br>"
             f"B <code>{e(str(c.b.path))}</code> ({e(c.b.state)}, {e(c.b.started)})</p>",
             f"<h2>What differs ({len(c.differences)})</h2>" if c.differences else "<h2>What differs: nothing</h2>",
             "<ul class='differences'>"]
    for d in c.differences:
        folded = f"<details><summary>diff</summary><pre>{e(d.diff)}</pre></details>" if d.diff else ""
        parts.append(f"<li><b>{e(d.kind)}</b> {e(difference_text(d))}{folded}</li>")
    parts.append("</ul>")
    for metric in METRICS:
        rows = [(r, d) for r in c.rows for d in r.deltas if d.metric == metric]
        if not rows:
            continue
        body = "".join(
            f"<tr><td>{e(cell_text(r, metric))}</td><td>{e(plus_minus(metric, d.a))}</td>"
            f"<td>{e(plus_minus(metric, d.b))}</td><td>{e(delta_text(d))}</td>"
            f"<td class='verdict v-{e(d.verdict.replace(' ', '-'))}'>{e(verdict_text(d))}</td></tr>"
            for r, d in rows)
        parts.append(f"<h3>{e(NAMES[metric])}</h3><table class='runs'><thead><tr><th>cell</th><th>A</th><th>B</th>"
                     f"<th>B against A</th><th>verdict</th></tr></thead><tbody>{body}</tbody></table>")
    if not c.rows:
        parts.append(f"<p>{e(NO_ROW)}</p>")
    if any(r.setup_differs for r in c.rows):
        parts.append("<p>* the set-up of this cell differs between the runs</p>")
    if any(r.client_bound for r in c.rows):
        parts.append("<p>client-bound: the client limited that side's req/s, a lower bound: judged one-sided</p>")
    for side, cells in (("A", c.only_a), ("B", c.only_b)):
        if cells:
            parts.append(f"<p>only in {side}: {e(', '.join(k.text() for k in cells))}</p>")
    return "".join(parts)


def history_form(args: Mapping[str, str]) -> str:
    """The metric and the filters, as the page was asked for them."""
    metric = args.get("metric") or "rps"
    options = "".join(f"<option value='{m}'{' selected' if m == metric else ''}>{e(NAMES[m])}</option>"
                      for m in METRICS)
    fields = "".join(f" <label>{k} <input name='{k}' size='12' value='{e(args.get(k, ''))}'></label>"
                     for k in FILTERS)
    return (f"<form method='get' action='/history' class='choose'><label>metric <select name='metric'>{options}"
            f"</select></label>{fields} <button>show</button></form>")


HISTORY_BODY = ("<p id='status'>reading the stored runs…</p><div id='series'></div>"
                "<h2 id='unread-head' hidden>Folders that gave no point</h2><ul id='unread'></ul>")


def _page(title: str, body: str, status: int, script: str | None = None) -> web.Response:
    extra = ("<link rel='stylesheet' href='/static/vendor/uplot-1.6.32/uPlot.min.css'>"
             "<script src='/static/vendor/uplot-1.6.32/uPlot.iife.min.js'></script>"
             f"<script defer src='/static/{script}'></script>") if script else ""
    text = (f"<!doctype html><html><head><meta charset='utf-8'><title>loadcmp: {e(title)}</title>"
            f"<link rel='stylesheet' href='/static/live.css'>{extra}</head><body>"
            f"<p class='nav'><a href='/'>stored runs</a> · <a href='/compare'>compare</a> · "
            f"<a href='/history'>history</a></p><h1>loadcmp: {e(title)}</h1>{body}</body></html>")
    return web.Response(text=text, content_type="text/html", status=status)
