"""A weighted mix end to end on a plain stack: each page counted, the pages adding up, the seed stored,
a finding naming a page, the report's section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.store.reader import load_results

pytestmark = pytest.mark.docker


def newest(root: Path) -> Path:
    return max(root.iterdir(), key=lambda p: p.stat().st_mtime)


def test_a_mix_on_nginx_counts_each_page_and_stores_its_seed(tmp_path, images, docker_client):
    exp = tmp_path / "mix.toml"
    exp.write_text('servers = ["nginx"]\nclients = 5\ntime = "2s"\nwarmup = "0.5s"\nseed = 5\n'
                   '[mix]\n"/index.html" = 3\n"/info.php" = 1\n"/nope.html" = 0\n'
                   '[[findings]]\nclaim = "the static page is fast"\ncheck = "nginx[/index.html]:p(99) < 1000ms"\n'
                   '[[findings]]\nclaim = "the mix does not fail"\ncheck = "nginx[mix]:failed_rate < 1%"\n')
    res = CliRunner().invoke(cli, ["run", str(exp), "--out", str(tmp_path / "out"), "--json"])
    assert res.exit_code == 0, res.output
    folder = newest(tmp_path / "out")
    run = json.loads((folder / "run.json").read_text())
    assert run["spec"]["seed"] == 5 and run["spec"]["mix"] == {"/index.html": 3.0, "/info.php": 1.0, "/nope.html": 0.0}
    (trial,) = run["trials"]
    r = trial["result"]
    pages = {p["page"]: p for p in r["pages"]}
    assert sum(p["completed"] for p in pages.values()) == r["completed"] > 100
    assert pages["/nope.html"]["completed"] == 0  # weight 0: never sent (the primer does not ask for it either)
    share = pages["/index.html"]["completed"] / (pages["/index.html"]["completed"] + pages["/info.php"]["completed"])
    assert abs(share - 0.75) < 0.05, pages
    assert pages["/index.html"]["status_codes"] == {"200": pages["/index.html"]["ok"]}
    assert set(trial["page_hists"]) == set(pages)
    verdicts = {f["check"]: f["verdict"] for f in run["findings"]}
    assert verdicts == {"nginx[/index.html]:p(99) < 1000ms": "supported", "nginx[mix]:failed_rate < 1%": "supported"}
    data = load_results(folder)
    assert set(data.pages["page"]) == {"/index.html", "/info.php", "/nope.html"} and "page" not in data.timeline
    report = CliRunner().invoke(cli, ["report", str(folder), "--format", "md"])
    assert report.exit_code == 0, report.output
    md = next(folder.rglob("report.md")).read_text()
    assert "## Pages of the mix" in md and "drawn with seed 5" in md
