"""WordPress's shipped journeys in real containers: the author logs in, posts comments that are then rows in
MariaDB (asked in the database's own container), and a run reports the journeys' completion rate with each
step as a page; an extract that never matches stops the run with the step named."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.experiment.journeys import JOURNEYS_FOLDER
from loadcmp.lab import cleanup
from loadcmp.lab.apps import get_app
from loadcmp.load.driver import LoadSpec
from loadcmp.load.schedules import Closed
from loadcmp.load.record.summary import result_doc
from loadcmp.load.target import make_target
from loadcmp.load.run.workers import run_load
from loadcmp.report.build import build
from loadcmp.store.reader import load_results
from loadcmp.traffic.journeys import load_mix, shipped_journeys
from loadcmp.traffic.sessions import JourneyPlan, prime_journeys

pytestmark = pytest.mark.docker

COUNT = ("mariadb --batch --skip-column-names -e \"SELECT COUNT(*) FROM wordpress.wp_comments "
         "WHERE comment_content LIKE 'loadcmp journey comment %' AND comment_approved = '1'\"")


def test_the_author_journey_posts_comments_that_are_in_mariadb(tmp_path, docker_client):
    shipped = shipped_journeys(get_app("wordpress").home / JOURNEYS_FOLDER)
    res = CliRunner().invoke(cli, ["up", "--server", "nginx", "--app", "wordpress", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    try:
        url = doc["url"].rstrip("/")
        (db,) = [c for c in cleanup.labelled(docker_client, doc["run_id"]) if c.labels.get("loadcmp.role") == "db"]
        before = int(db.exec_run(["sh", "-c", COUNT]).output.decode().strip())
        mix = load_mix("author", shipped)
        prime_journeys(mix, make_target(url + "/"))  # one author, one comment
        spec = LoadSpec(make_target(url + "/", keepalive=True), Closed(3), 4.0, engine="aiohttp",
                        traffic=JourneyPlan(mix, 1))
        summary = result_doc(run_load(spec))
        after = int(db.exec_run(["sh", "-c", COUNT]).output.decode().strip())
        author = summary["journeys"]["author"]
        assert author["completed"] >= 1 and author["failed"] == 0, author
        assert summary["journey_completion"] == 1.0
        # the primer's comment and one per completed journey (and those of journeys cut after their comment)
        assert 1 + author["completed"] <= after - before <= 1 + author["started"], (before, after, author)
        pages = {p["page"]: p for p in summary["pages"]}
        assert pages["author/comment"]["status_codes"] == {"200": pages["author/comment"]["ok"]}

        broken = tmp_path / "author.toml"
        broken.write_text(shipped["author"].read_text().replace("_wp_unfiltered_html_comment_disabled", "_wp_nonce_x"))
        with pytest.raises(Exception, match=r"failed at its step 'post' \(GET /\?p=1100\): extract nonce .* "
                                            r"found nothing"):
            prime_journeys(load_mix(str(broken), {}), make_target(url + "/"))
    finally:
        cleanup.down(docker_client, run_id=doc["run_id"])


def test_a_run_of_journeys_reports_their_completion_and_a_broken_one_stops_it(tmp_path, docker_client):
    before = {c.name for c in cleanup.labelled(docker_client)}
    res = CliRunner().invoke(cli, ["run", "--app", "wordpress", "--server", "nginx", "--journey", "reader=1,author=1",
                                   "-c", "4", "-t", "4", "--warmup", "1", "--keepalive", "--out", str(tmp_path / "r"),
                                   "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    (r,) = [x for x in out["results"] if x["page"] == "mix"]  # the whole; each step's row after it
    steps = [x for x in out["results"] if x["page"] != "mix"]
    assert {x["page"] for x in steps} >= {"reader/home", "author/login", "author/comment"}
    assert sum(x["totals"]["ok"] for x in steps) == r["totals"]["ok"]
    assert set(r["journeys"]) == {"reader", "author"}
    assert r["journey_completion"] is not None and r["journey_completion"] > 0.9, r["journeys"]
    (t,) = load_results(out["results_dir"]).trials
    pages = t["result"]["pages"]
    assert {p["page"] for p in pages} >= {"reader/home", "author/login", "author/comment"}
    assert sum(p["completed"] for p in pages) == t["result"]["completed"]  # the steps add up to the load
    text = build([out["results_dir"]], tmp_path / "report", formats={"md"})["report.md"].read_text()
    assert "## Journeys" in text and "author/comment" in text

    broken = tmp_path / "author.toml"
    shipped = shipped_journeys(get_app("wordpress").home / JOURNEYS_FOLDER)
    broken.write_text(shipped["author"].read_text().replace("action=logout", "action=logoff"))
    res = CliRunner().invoke(cli, ["run", "--app", "wordpress", "--server", "nginx", "--journey", str(broken),
                                   "-c", "2", "-t", "2", "--out", str(tmp_path / "b")])
    assert res.exit_code == 1
    assert "the journey 'author' failed at its step 'login' (POST /wp-login.php): extract logout" in res.output
    assert "Traceback" not in res.output
    assert {c.name for c in cleanup.labelled(docker_client)} == before


def test_laravels_session_form_takes_its_csrf_token_and_refuses_a_post_without_it(tmp_path, docker_client):
    forged = tmp_path / "forged.toml"
    forged.write_text('[[steps]]\nname = "form"\npath = "/form"\n\n'
                      '[[steps]]\nname = "post"\nmethod = "POST"\npath = "/form"\nbody = { note = "no token" }\n'
                      'expect = 419\n')
    res = CliRunner().invoke(cli, ["run", "--app", "laravel", "--server", "nginx", "--journey", f"note=1,{forged}=1",
                                   "-c", "2", "-t", "3", "--warmup", "0.5", "--keepalive", "--out", str(tmp_path / "r"),
                                   "--json"])
    assert res.exit_code == 0, res.output
    (r,) = [x for x in json.loads(res.stdout)["results"] if x["page"] == "mix"]
    note, no_token = r["journeys"]["note"], r["journeys"]["forged"]
    assert note["completed"] > 0 and note["failed"] == 0, note  # the token taken from the form, the session kept
    assert no_token["completed"] > 0 and no_token["failed"] == 0, no_token  # every post without it: 419
    assert r["status_codes"].get("419", 0) >= no_token["completed"]
