"""`loadcmp serve`'s compare and history pages and their JSON, through aiohttp's test client (no browser).

The catalog answers here with the hand-made values of tests/test_catalog_faces.py: these tests hold the pages,
not the catalog (tests/test_catalog_cli.py runs both over synthetic folders)."""

from __future__ import annotations

import asyncio
import html
import json
import re
import shutil
import types
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from helpers.catalogvalues import comparison, history
from loadcmp.errors import UsageError

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Two stored runs the list names (copies of the checked-in fixture's run.json)."""
    for name in ("run-a", "run-b"):
        (tmp_path / name).mkdir()
        shutil.copy(FIXTURES / "run-2x3x2" / "run.json", tmp_path / name / "run.json")
    return tmp_path


@pytest.fixture
def answers(monkeypatch):
    """The catalog's compare and history, answering with hand-made values; what they were asked kept."""
    asked: list[tuple] = []

    def compare(a: Path, b: Path):
        asked.append(("compare", a, b))
        if a == b:
            raise UsageError(f"{a} and {b} share no cell")
        return comparison()

    def history_of(root: Path, q, rebuild: bool = False):
        asked.append(("history", root, q))
        return history()

    import loadcmp.catalog as pkg

    for name, fn in (("compare", compare), ("history", history_of)):
        mod = types.ModuleType(f"loadcmp.catalog.{name}")
        setattr(mod, name, fn)
        monkeypatch.setitem(__import__("sys").modules, mod.__name__, mod)
        monkeypatch.setattr(pkg, name, mod, raising=False)
    return asked


def fetch(root: Path, *paths: str) -> list[tuple[int, str]]:
    """GET each path from `loadcmp serve`'s routes over `root`: its status and body."""
    from loadcmp.live.storedruns import serve_routes
    from loadcmp.live.server import STATIC

    async def go() -> list[tuple[int, str]]:
        app = web.Application()
        app.router.add_static("/static/", STATIC)
        serve_routes(root, None, 0)(app)
        async with TestClient(TestServer(app)) as client:
            out = []
            for p in paths:
                resp = await client.get(p)
                out.append((resp.status, await resp.text()))
            return out

    return asyncio.run(go())


def test_the_list_links_the_compare_and_history_pages(root, answers):
    [(status, body)] = fetch(root, "/")
    assert status == 200 and "href=\"/compare\"" in body and "href=\"/history\"" in body


def test_the_compare_page_chooses_from_the_list_and_shows_differences_then_rows(root, answers):
    (s1, empty), (s2, page) = fetch(root, "/compare", "/compare?a=run-a&b=run-b")
    assert s1 == 200 and "Choose two runs" in empty and not answers[:-1]
    assert {"<option selected>run-a</option>", "<option selected>run-b</option>"} <= set(
        re.findall(r"<option[^>]*>[^<]*</option>", empty))  # the newest but one against the newest, at first
    assert s2 == 200 and answers[-1] == ("compare", root / "run-a", root / "run-b")
    assert page.index("What differs (2)") < page.index("<h3>req/s</h3>")
    assert "fpm.max_children 40 → 8" in page and "<pre>--- a/php/www.conf" in page
    assert "too few trials: n=2 vs 2" in page and "nginx@50 /index.html (http) *" in page
    assert "only in A: caddy@50" in page and "<option selected>run-b</option>" in page


def test_compare_json_is_compare_json(root, answers):
    from loadcmp.catalog.tojson import plain

    [(status, body)] = fetch(root, "/api/compare?a=run-a&b=run-b")
    assert status == 200 and json.loads(body) == plain(comparison())


def test_compare_refuses_a_run_not_in_the_list_and_says_the_catalogs_problem(root, answers):
    (s1, page), (s2, api), (s3, same), (s4, half) = fetch(
        root, "/compare?a=run-a&b=../etc", "/api/compare?a=/etc&b=run-b", "/api/compare?a=run-a&b=run-a",
        "/api/compare?a=run-a")
    assert s1 == 400 and "no stored run &#x27;../etc&#x27;" in page
    assert s2 == 400 and "no stored run '/etc'" in json.loads(api)["error"]
    assert s3 == 400 and "share no cell" in json.loads(same)["error"]
    assert s4 == 400 and "give two runs" in json.loads(half)["error"]
    assert [a[0] for a in answers] == ["compare"]  # the path was never handed to the catalog


def test_the_history_page_draws_the_api_with_uplot(root, answers):
    (s1, page), (s2, api), (s3, js) = fetch(root, "/history?metric=p99&label=nginx&level=50",
                                            "/api/history?metric=p99&label=nginx&level=50", "/static/history.js")
    assert s1 == 200 and "uPlot.iife.min.js" in page and "/static/history.js" in page
    assert "<option value='p99' selected>" in page and "value='nginx'" in page
    assert s2 == 200 and json.loads(api)["series"][0]["change_points"][0]["direction"] == "worse"
    q = answers[-1][2]
    assert (q.metric, q.label, q.level, q.stack) == ("p99", "nginx", 50, None)
    assert s3 == 200 and "new uPlot" in js and "/api/history" in js and "change_points" in js


def test_history_json_refuses_an_unknown_metric_and_a_level_not_a_number(root, answers):
    (s1, bad), (s2, level) = fetch(root, "/api/history?metric=speed", "/api/history?level=many")
    assert s1 == 400 and "unknown metric 'speed'" in json.loads(bad)["error"]
    assert s2 == 400 and "not a number" in json.loads(level)["error"]
    assert not answers


def test_the_list_names_every_folder_with_its_state_as_history_does(tmp_path: Path):
    """8 runs, an abandoned one, an empty folder, a damaged run.json and a foreign one: each listed, with the
    catalog's state and reason; a broken one has no links, and its page's events say why in one line."""
    from loadcmp.catalog.index import open_catalog
    from helpers.synthetic import make_runs
    from loadcmp.live.storedruns import stored_runs

    root = tmp_path / "results"
    make_runs(root, 8, broken=3, abandoned=1)  # broken-000 empty, -001 not JSON, -002 format 0
    (root / "foreign").mkdir()
    (root / "foreign" / "run.json").write_text(json.dumps({"name": "another tool's run", "version": 2}))
    with open_catalog(root, cache=tmp_path / "index.duckdb") as cat:
        judged = {r.path.relative_to(root).as_posix(): (r.state, r.reason) for r in cat.runs}
    listed = {r.name: (r.state, r.reason) for r in stored_runs(root)}
    assert listed == judged and len(listed) == 13
    assert [s for s, _ in listed.values()].count("complete") == 8 and listed["abandoned-000"][0] == "abandoned"
    assert listed["broken-000"] == ("broken", "no run.json") and "not JSON" in str(listed["broken-001"][1])
    assert "format None" in str(listed["foreign"][1])
    (status, page), (s2, why), (s3, drawn) = fetch(root, "/", "/runs/broken-001/events", "/runs/run-00003/events")
    assert status == 200
    rows = dict(re.findall(r"<tr><td>(?:<a href='runs/[^']+/'>)?([^<]+)(?:</a>)?</td>(.*?)</tr>", page))
    assert set(rows) == set(listed)
    for name, (state, reason) in listed.items():
        assert f"<td class='st-{state}'>{state}" in rows[name], name
        assert (reason is None) or html.escape(reason) in rows[name], name
        assert (f"href='runs/{name}/report/'" in rows[name]) == (state != "broken"), name
    assert s2 == 404 and why.strip() == f"broken-001: cannot be drawn: broken: {listed['broken-001'][1]}"
    assert s3 == 200 and drawn.count("data: ") > 3, "a run beside broken folders is drawn"
