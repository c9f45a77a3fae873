"""`loadcmp serve`'s compare and history pages and their JSON, through aiohttp's test client (no browser).

The catalog answers here with the hand-made values of tests/test_catalog_faces.py: these tests hold the pages,
not the catalog (tests/test_catalog_cli.py runs both over synthetic folders)."""

from __future__ import annotations

import asyncio
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
    from loadcmp.live.replay import serve_routes
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
