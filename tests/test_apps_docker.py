"""The laravel app in real containers: the same app behind two stacks, every request answered by it,
and an app whose page dies with a PHP fatal stopping the run in one line with nothing left running."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.lab import cleanup
from loadcmp.lab.fetch import http_get
from loadcmp.lab.stacks import configs_dir
from loadcmp.store.reader import load_results

pytestmark = pytest.mark.docker


def test_laravel_behind_two_stacks_answers_every_request_with_its_page(tmp_path, docker_client):
    res = CliRunner().invoke(cli, ["run", "--app", "laravel", "--server", "nginx", "--server", "apache-prefork",
                                   "--page", "/hello", "-c", "4", "-t", "2", "--warmup", "0.5",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [r["server"] for r in doc["results"]] == ["nginx", "apache-prefork"]
    for r in doc["results"]:
        assert r["ok"] > 10 and r["failed"] == 0, r
    stored = load_results(doc["results_dir"])
    for t in stored.trials:  # every request answered 200 (the primer checked the page's own text)
        assert t["status"] == "ok" and t["result"]["status_codes"] == {"200": t["result"]["ok"]}, t["server"]
    run = stored.run
    for label in ("nginx", "apache-prefork"):
        info = run["servers"][label]
        assert info["app"] == "laravel" and info["settings"].get("fpm.max_children", 64) == 64
    assert run["spec"]["app"] == "laravel"
    configs = "\n".join(run["servers"]["apache-prefork"]["configs"].values())
    assert "FallbackResource /index.php" in configs


def test_an_app_left_up_serves_its_pages_and_its_own_404(docker_client):
    res = CliRunner().invoke(cli, ["up", "--server", "lighttpd", "--app", "laravel", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    try:
        port = int(doc["url"].rsplit(":", 1)[1].strip("/"))
        code, body = http_get(port, "/sleep", timeout=5)
        assert code == 200 and b"slept 500 ms" in body and b"Laravel 8." in body
        code, body = http_get(port, "/no-such-route", timeout=5)
        assert code == 404 and b"Not Found" in body  # Laravel's own page: the rewrite reached it
        assert http_get(port, "/robots.txt")[1].startswith(b"User-agent")
    finally:
        cleanup.down(docker_client, run_id=doc["run_id"])


def test_a_php_fatal_in_an_app_page_stops_the_run_in_one_line_with_nothing_left(tmp_path, docker_client,
                                                                                 monkeypatch):
    apps_dir = tmp_path / "apps"
    broken = apps_dir / "broken"
    shutil.copytree(configs_dir() / "apps" / "laravel", broken)
    controller = broken / "code" / "app" / "Http" / "Controllers" / "PageController.php"
    controller.write_text(controller.read_text().replace("return view('page', ['title' => 'hello'",
                                                         "return no_such_function(['title' => 'hello'"))
    monkeypatch.setenv("LOADCMP_APPS", str(apps_dir))
    before = {c.name for c in cleanup.labelled(docker_client)}
    res = CliRunner().invoke(cli, ["run", "--app", "broken", "--server", "nginx", "--page", "/hello", "-c", "2",
                                   "-t", "1", "--out", str(tmp_path / "out")])
    assert res.exit_code == 1, res.output
    line = next(x for x in res.output.splitlines() if x.startswith("error:"))
    assert re.search(r"GET /hello answered HTTP 500, not the page; the app broken logged: .*no_such_function", line)
    assert {c.name for c in cleanup.labelled(docker_client)} == before
    assert not [p for p in Path(tmp_path).glob("out/*/run.json") if '"status": "complete"' in p.read_text()]
