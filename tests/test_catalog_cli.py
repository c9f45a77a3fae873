"""`loadcmp compare`, `loadcmp history`, `serve`'s pages and `smoke --history`'s verdicts through the catalog
itself, over synthetic results folders (`tests/helpers/synthetic.py`; no Docker)."""

from __future__ import annotations

import asyncio
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.synthetic import Plan, make_runs
from loadcmp.cli import cli


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """The index in a cache folder of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def loadcmp(*args: str | Path) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, [str(a) for a in args])
    if res.exception and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def change_in(line: str) -> float:
    """The first signed change in % a line shows."""
    m = re.search(r"([+-]\d+\.\d) %", line)
    assert m, line
    return float(m[1])


def one_line_exit_2(args: list[str | Path], says: str) -> None:
    code, out, err = loadcmp(*args)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("error:") and says in err and "Traceback" not in err, err


def test_compare_names_the_changed_setting_first_then_the_worse_cells(tmp_path):
    a, b = make_runs(tmp_path / "r", 2, step_at=1, step=-0.3)
    code, out, _ = loadcmp("compare", a, b)
    assert code == 0, out
    assert out.index("What differs") < out.index("req/s (higher is better)")
    assert "nginx: fpm.max_children 8 → 4" in out and "web/php-fpm.conf changed" in out
    assert "-pm.max_children = 8" in out and "+pm.max_children = 4" in out
    rps = next(line for line in out.splitlines() if line.startswith("│ nginx@10"))
    assert "worse" in rps and "*" in rps and -40 < change_in(rps) < -20


def test_compare_json_is_the_comparison(tmp_path):
    a, b = make_runs(tmp_path / "r", 2, step_at=1, step=-0.3)
    code, out, _ = loadcmp("compare", a, b, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["a"]["path"] == str(a) and doc["b"]["state"] == "complete"
    assert {"kind": "setting", "scope": "nginx", "key": "fpm.max_children", "before": "8", "after": "4",
            "diff": ""} in doc["differences"]
    deltas = {d["metric"]: d for d in doc["rows"][0]["deltas"]}
    assert deltas["rps"]["verdict"] == "worse" and deltas["rps"]["ratio_high"] < 1
    assert deltas["mem_peak"]["verdict"] in ("no difference", "better", "worse")


def test_compare_says_too_few_trials_rather_than_guess(tmp_path):
    a, b = make_runs(tmp_path / "r", 2, step_at=1, step=-0.3, plan=Plan(trials=2))
    code, out, _ = loadcmp("compare", a, b)
    assert code == 0 and "too few trials: n=2 vs 2" in out and "worse" not in out


def test_compare_of_the_same_setup_names_no_difference(tmp_path):
    a, b = make_runs(tmp_path / "r", 2)
    code, out, _ = loadcmp("compare", a, b)
    cells = [line for line in out.splitlines() if line.startswith("│")]
    assert code == 0 and "nothing in the set-up" in out and cells and not any(" * " in c for c in cells)


def test_compare_bad_input_is_one_line_and_exit_2(tmp_path):
    a, = make_runs(tmp_path / "r", 1)
    (other,) = make_runs(tmp_path / "s", 1, plan=Plan(labels=("caddy",)))
    (tmp_path / "empty").mkdir()
    one_line_exit_2(["compare", a, tmp_path / "empty"], "empty")
    one_line_exit_2(["compare", a, other], "share no cell")


def test_history_finds_the_step_and_names_the_setting(tmp_path):
    make_runs(tmp_path / "r", 8, step_at=4, step=-0.3, broken=1, abandoned=1)
    code, out, _ = loadcmp("history", tmp_path / "r")
    assert code == 0, out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert len(rows) == 8 and all("± " in r for r in rows)
    assert [i for i, r in enumerate(rows) if "▶" in r] == [4] and -40 < change_in(rows[4]) < -20
    assert "change point at run-00004" in out and "fpm.max_children 8 → 4" in out
    assert "broken-000  broken" in out and "abandoned-000  abandoned" in out


def test_history_of_runs_without_a_step_finds_none(tmp_path):
    make_runs(tmp_path / "r", 8)
    code, out, _ = loadcmp("history", tmp_path / "r", "--metric", "p99", "--rebuild")
    assert code == 0 and "no change point" in out and "▶" not in out and "p99, oldest first" in out


def test_history_json_and_figure(tmp_path):
    make_runs(tmp_path / "r", 8, step_at=4, step=-0.3)
    fig = tmp_path / "trend.png"
    code, out, _ = loadcmp("history", tmp_path / "r", "--label", "nginx", "--json", "--figure", fig)
    doc = json.loads(out)
    assert code == 0 and doc["query"]["label"] == "nginx"
    [series] = doc["series"]
    assert [p["run"]["path"] for p in series["points"]] == sorted(p["run"]["path"] for p in series["points"])
    [cp] = series["change_points"]
    assert cp["index"] == 4 and cp["direction"] == "worse" and cp["differences"]
    assert fig.read_bytes()[:4] == b"\x89PNG"


def test_history_bad_input_is_one_line_and_exit_2(tmp_path):
    make_runs(tmp_path / "r", 2)
    one_line_exit_2(["history", tmp_path / "r", "--metric", "speed"], "speed")
    one_line_exit_2(["history", tmp_path / "r", "--label", "caddy"], "caddy")
    one_line_exit_2(["history", tmp_path / "nowhere"], "nowhere")


def test_smoke_history_fails_a_change_for_the_worse_at_this_run(tmp_path):
    from loadcmp.catalog.gate import history_verdicts
    from loadcmp.verdicts.smoke import junit_xml

    paths = make_runs(tmp_path / "r", 8, step_at=7, step=-0.3)
    verdicts, said = history_verdicts(tmp_path / "r", paths[-1])
    failed = [v for v in verdicts if not v.passed]
    assert not said and "rps" in {v.check.split(" ")[0] for v in failed}
    rps = next(v for v in failed if v.check.startswith("rps"))
    assert "req/s changed for the worse at this run" in rps.message and "fpm.max_children 8 → 4" in rps.message
    xml = ET.fromstring(junit_xml(verdicts, 1.0, str(paths[-1])))
    assert len(xml.findall(".//failure")) == len(failed)


def test_smoke_history_passes_a_run_like_the_others_and_says_too_little_history(tmp_path):
    from loadcmp.catalog.gate import MIN_HISTORY, history_verdicts

    paths = make_runs(tmp_path / "r", 8)
    verdicts, said = history_verdicts(tmp_path / "r", paths[-1])
    assert not said and verdicts and all(v.passed for v in verdicts)
    few = make_runs(tmp_path / "few", MIN_HISTORY - 1, step_at=MIN_HISTORY - 2, step=-0.5)
    verdicts, said = history_verdicts(tmp_path / "few", few[-1])
    assert verdicts == [] and len(said) == 1 and "too little history" in said[0]
    verdicts, said = history_verdicts(tmp_path / "none", few[-1])  # a first CI job: no history yet
    assert verdicts == [] and "no such folder yet" in said[0]  # a mistyped path is not "too little history"


def test_the_summary_names_the_change_and_the_history_said(tmp_path):
    from loadcmp.catalog.gate import history_verdicts
    from loadcmp.store.reader import load_results
    from loadcmp.verdicts.smoke import summary_md

    paths = make_runs(tmp_path / "r", 8, step_at=7, step=-0.3)
    verdicts, _ = history_verdicts(tmp_path / "r", paths[-1])
    text = summary_md(verdicts, load_results(paths[-1]), False, 1.0, ["a line said"])
    assert "**rps history (change point)**" in text and "fpm.max_children 8 → 4" in text and "- a line said" in text


def test_serve_compares_and_follows_synthetic_runs(tmp_path):
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from loadcmp.live.storedruns import serve_routes

    make_runs(tmp_path / "r", 8, step_at=4, step=-0.3)

    async def go() -> list[tuple[int, str]]:
        app = web.Application()
        serve_routes(tmp_path / "r", None, 0)(app)
        async with TestClient(TestServer(app)) as client:
            return [(r.status, await r.text()) for r in [
                await client.get(p) for p in ("/api/compare?a=run-00003&b=run-00004", "/api/history?metric=rps",
                                              "/compare?a=run-00003&b=run-00004")]]

    (s1, cmp), (s2, hist), (s3, page) = asyncio.run(go())
    assert s1 == 200 and json.loads(cmp)["rows"][0]["deltas"][0]["verdict"] == "worse"
    assert s2 == 200 and json.loads(hist)["series"][0]["change_points"][0]["index"] == 4
    assert s3 == 200 and "fpm.max_children 8 → 4" in page


def test_smoke_history_through_the_command_exits_3_and_names_the_change(tmp_path, monkeypatch):
    """`smoke --history` as CI runs it, its sweep replaced by a synthetic run stored beside the history: a run
    30 % slower than the 7 before it fails (exit 3) and the JUnit XML and the summary say why."""
    import random
    import types

    import loadcmp.cli.smoke as smoke_cli
    from helpers.synthetic import run_doc, write_run

    root = tmp_path / "results"
    make_runs(root, 7)

    def stored_run(spec, **kw):
        folder = write_run(root / "run-00007", run_doc(7, Plan(), True, -0.3, random.Random(7)))
        return types.SimpleNamespace(path=str(folder), status="complete", signum=None, problems=[])

    monkeypatch.setattr(smoke_cli, "sweep", stored_run)
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    code, out, err = loadcmp("smoke", "--server", "nginx", "--check", "failed_rate<1%", "--out", root,
                             "--history", root, "--junit", junit, "--summary", summary)
    assert code == 3, (out, err)
    assert "rps history (change point)" in out and "FAIL" in out
    failures = ET.parse(junit).findall(".//failure")
    assert any("req/s changed for the worse" in (f.get("message") or "") and "fpm.max_children 8 → 4"
               in (f.get("message") or "") for f in failures)
    assert "**rps history (change point)**" in summary.read_text()


def test_smoke_history_with_too_little_history_says_so_and_passes(tmp_path, monkeypatch):
    import types

    import loadcmp.cli.smoke as smoke_cli

    root = tmp_path / "results"
    (run,) = make_runs(root, 1)
    monkeypatch.setattr(smoke_cli, "sweep", lambda spec, **kw: types.SimpleNamespace(
        path=str(run), status="complete", signum=None, problems=[]))
    code, out, err = loadcmp("smoke", "--server", "nginx", "--check", "failed_rate<1%", "--out", root,
                             "--history", root)
    assert code == 0, (out, err)
    assert "too little history" in err and err.count("too little history") == 1


def test_the_history_page_draws_the_series_and_marks_the_change_in_chromium(tmp_path):
    """`serve`'s history page in Debian's Chromium (as tests/test_live.py drives it): one uPlot chart whose points
    are /api/history's, the change point listed with the setting, the folders without a point named."""
    import socket

    from playwright.sync_api import sync_playwright

    from loadcmp.catalog.history import history
    from loadcmp.catalog.model import HistoryQuery
    from loadcmp.live.storedruns import serve_routes
    from loadcmp.live.server import LiveServer

    root = tmp_path / "r"
    make_runs(root, 8, step_at=4, step=-0.3, abandoned=1)
    want = [p.value.mean for p in history(root, HistoryQuery("rps")).series[0].points]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    problems: list[str] = []
    with LiveServer(None, port, routes=serve_routes(root, None, port)) as server, sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        try:
            page = b.new_page()
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(server.url + "history?metric=rps")
            page.wait_for_selector(".plot canvas", timeout=30_000)
            drawn = page.evaluate("() => window.loadcmpHistory.map(u => Array.from(u.data[1]))")
            listed = page.inner_text(".change-points")
            unread = page.inner_text("#unread")
        finally:
            b.close()
    assert not problems, problems
    assert drawn == [pytest.approx(want)]
    assert "change point at run-00004" in listed and "fpm.max_children 8 → 4" in listed and "worse" in listed
    assert "abandoned-000: abandoned" in unread


def test_compare_pairs_a_tuned_label_with_the_defaults(tmp_path):
    (a,) = make_runs(tmp_path / "defaults", 1)
    (b,) = make_runs(tmp_path / "tuned", 1, plan=Plan(labels=("tuned",), before=40))
    one_line_exit_2(["compare", a, b], "share no cell")
    code, out, _ = loadcmp("compare", a, b, "--pair", "nginx=tuned")
    assert code == 0, out
    assert "nginx: fpm.max_children 8 → 40" in out and "│ nginx@10 /index.php (http) *" in out
    one_line_exit_2(["compare", a, b, "--pair", "nginx"], "LABEL_A=LABEL_B")
    one_line_exit_2(["compare", a, b, "--pair", "nginx=tunde"], "run B has no label 'tunde' (its labels: tuned)")
    one_line_exit_2(["compare", a, a, "--pair", "nginx=tuned"], "run B has no label 'tuned'")  # not a silent no-op


def test_history_on_a_warm_index_loads_no_pandas_nor_scipy(tmp_path: Path):
    """What a user waits for in a new process: no `--figure` given must not load the store's writer (pandas),
    and a series already tested keeps its change points in the index (no Otava, no scipy)."""
    import os
    import subprocess
    import sys

    root = tmp_path / "results"
    make_runs(root, 6, step_at=3, step=-0.5)
    code = ("import sys; from loadcmp.cli import cli; cli.main(['history', sys.argv[1]], standalone_mode=False); "
            "print('pandas' in sys.modules, 'scipy' in sys.modules)")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for _ in range(2):  # the first builds the index (it judges each run through the store's reader)
        out = subprocess.run([sys.executable, "-c", code, str(root)], env=env, capture_output=True, text=True,
                             check=True).stdout
    assert "change point at run-00003" in out  # found the first time, kept, and said again
    assert out.strip().splitlines()[-1] == "False False"


def test_smoke_history_judges_no_cell_that_no_stored_run_shares(tmp_path: Path):
    """Six stored runs of nginx are no history for a run of apache: said, not passed as 'no change point'."""
    from loadcmp.catalog.gate import history_verdicts

    make_runs(tmp_path / "r", 6)
    (other,) = make_runs(tmp_path / "new", 1, labels=("apache",))
    verdicts, said = history_verdicts(tmp_path / "r", other)
    assert verdicts == [] and len(said) == 1 and "1 stored run(s) with this one in apache@10" in said[0]
