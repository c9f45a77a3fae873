"""Journeys: the file's grammar and its wrong inputs (file:line, all at once), and the engine against an
in-process site with a login form, a CSRF token, a session cookie and a nonce (tests/helpers/sessionsite.py):
extracts carried from step to step, cookies per virtual user, think time, a weighted mix, a journey that
fails with its step named."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from loadcmp.errors import ConfigError, PrimerError, UsageError
from loadcmp.load.driver import LoadSpec
from loadcmp.load.schedules import Closed
from loadcmp.load.record.summary import result_doc
from loadcmp.load.target import make_target
from loadcmp.load.run.workers import run_load
from loadcmp.traffic.journeys import Journey, JourneyMix, fill, load_mix, parse_mix, read_journey
from loadcmp.traffic.sessions import JourneyPlan, prime_journeys

from helpers.sessionsite import PASSWORD, USER, running

AUTHOR = f"""
description = "log in, see the dashboard, post a comment"

[[steps]]
name = "form"
path = "/login"
extract = {{ csrf = 'name="csrf" value="([0-9a-f]+)"' }}

[[steps]]
name = "login"
method = "POST"
path = "/login"
body = {{ user = "{USER}", pwd = "{PASSWORD}", csrf = "{{csrf}}" }}
expect = 200

[[steps]]
name = "dash"
path = "/dash"
extract = {{ nonce = 'name="nonce" value="([0-9a-f]+)"' }}

[[steps]]
name = "comment"
method = "POST"
path = "/comment"
body = {{ nonce = "{{nonce}}", text = "comment {{unique}}" }}
"""

READER = """
[[steps]]
name = "home"
path = "/"
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


def journey_load(url: str, mix: JourneyMix, clients: int = 4, duration: float = 1.0, seed: int = 7):
    spec = LoadSpec(make_target(url + "/", keepalive=True), Closed(clients), duration, engine="aiohttp",
                    traffic=JourneyPlan(mix, seed))
    return run_load(spec)


# --- the file -----------------------------------------------------------------------------------------


def test_a_journey_reads_with_its_steps(tmp_path):
    j = read_journey(write(tmp_path, "author", AUTHOR))
    assert isinstance(j, Journey) and j.name == "author"
    assert [s.name for s in j.steps] == ["form", "login", "dash", "comment"]
    login = j.steps[1]
    assert login.method == "POST" and login.expect == 200 and dict(login.body)["csrf"] == "{csrf}"  # type: ignore[arg-type]
    assert j.steps[0].extract[0].var == "csrf"
    assert fill("/p?t={csrf}&x={json}", {"csrf": "ab"}) == "/p?t=ab&x={json}"


def test_a_bad_regex_is_named_with_its_line(tmp_path):
    p = write(tmp_path, "bad", '[[steps]]\nname = "a"\npath = "/"\nextract = { t = "value=(" }\n')
    with pytest.raises(ConfigError) as e:
        read_journey(p)
    assert str(e.value).startswith(f"{p}:4: step 'a': extract t: bad regex")


def test_every_problem_at_once_with_its_line(tmp_path):
    text = ('[[steps]]\nname = "a"\npath = "/"\ncolour = "red"\n\n'
            '[[steps]]\nname = "b"\nmethod = "POST"\npath = "/x?t={token}"\nthink = "soon"\n'
            '\n[[steps]]\nname = "c"\npath = "/"\nextract = { t = "(a)(b)", u = { cookie = "sid" } }\n')
    p = write(tmp_path, "many", text)
    with pytest.raises(ConfigError) as e:
        read_journey(p)
    msgs = e.value.messages
    assert f"{p}:4: step 'a': unknown key 'colour' (a step has name, method, path, body, headers, extract, " \
           "expect, think)" in msgs
    assert f"{p}:6: step 'b' uses {{token}} before any step extracts it" in msgs
    assert any(m.startswith(f"{p}:10: step 'b': think:") for m in msgs)
    assert f"{p}:15: step 'c': extract t: the regex must have one group, not 2" in msgs
    assert len(msgs) == 4


def test_a_variable_extracted_later_is_still_too_late(tmp_path):
    text = '[[steps]]\nname = "a"\npath = "/{x}"\n[[steps]]\nname = "b"\npath = "/"\nextract = { x = "(.)" }\n'
    with pytest.raises(ConfigError, match=r":1: step 'a' uses \{x\} before any step extracts it"):
        read_journey(write(tmp_path, "late", text))


def test_mixes_and_their_wrong_weights(tmp_path):
    assert parse_mix("reader=80,author=20") == [("reader", 80.0), ("author", 20.0)]
    assert parse_mix("author") == [("author", 1.0)]
    with pytest.raises(UsageError, match="not a number"):
        parse_mix("reader=lots")
    with pytest.raises(UsageError, match="sum to 0"):
        parse_mix("reader=0,author=0")
    shipped = {"author": write(tmp_path, "author", AUTHOR)}
    mix = load_mix(f"author=1,{write(tmp_path, 'reader', READER)}=3", shipped)
    assert mix.names() == ["author", "reader"] and mix.describe() == "author=1,reader=3"
    with pytest.raises(ConfigError, match="no journey 'nobody'.*the app's journeys: author"):
        load_mix("nobody", shipped)


# --- the engine -----------------------------------------------------------------------------------------


def test_the_author_logs_in_and_posts_with_the_tokens_it_extracted(tmp_path):
    mix = load_mix(str(write(tmp_path, "author", AUTHOR)), {})
    with running() as site:
        prime_journeys(mix, make_target(site.url() + "/"))
        r = journey_load(site.url(), mix)
        comments = list(site.comments)
    doc = result_doc(r)
    author = doc["journeys"]["author"]
    assert author["completed"] > 0 and author["failed"] == 0, author
    assert doc["journey_completion"] == 1.0
    assert author["started"] == author["completed"] + author["cut"]
    assert doc.get("client_busy_pct") is not None and "client_bound" in doc  # the Python path watched as any
    # every comment posted inside the window arrived (and the primer's one, before it)
    assert len(comments) >= author["completed"] + 1
    assert len(set(comments)) == len(comments)  # {unique} differs each time
    steps = {p["page"]: p for p in doc["pages"]}
    assert set(steps) == {"author/form", "author/login", "author/dash", "author/comment"}
    assert steps["author/comment"]["ok"] == author["completed"]  # a journey completes with its comment answered
    assert sum(p["completed"] for p in steps.values()) == doc["completed"]  # the steps add up to the load
    assert doc["ok"] + doc["failed"] + doc["unfinished"] == doc["started"]


def test_user_numbers_are_the_loads_not_each_workers(tmp_path):
    """`{user}` names a user of the whole load (an author account each): two workers' four users are 0 to 3."""
    text = AUTHOR.replace('text = "comment {unique}"', 'text = "{user} {unique}"')
    assert text != AUTHOR
    mix = load_mix(str(write(tmp_path, "author", text)), {})
    with running() as site:
        spec = LoadSpec(make_target(site.url() + "/", keepalive=True), Closed(4), 1.0, engine="aiohttp",
                        traffic=JourneyPlan(mix, 7))
        run_load(spec, workers=2)
        comments = list(site.comments)
    numbers: dict[tuple[str, str], set[str]] = {}
    for c in comments:
        number, unique = c.split(" ")
        worker, user = unique.split("-")[:2]  # {unique} starts with the worker and its own user index
        numbers.setdefault((worker, user), set()).add(number)
    assert sorted(numbers) == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")], comments
    assert sorted(n for got in numbers.values() for n in got) == ["0", "1", "2", "3"], numbers


def test_an_extract_that_never_matches_fails_the_journey_at_its_step(tmp_path):
    broken = AUTHOR.replace('name="nonce"', 'name="nonse"')
    mix = load_mix(str(write(tmp_path, "author", broken)), {})
    with running() as site:
        with pytest.raises(PrimerError, match=r"the journey 'author' failed at its step 'dash' \(GET /dash\): "
                                              r"extract nonce .* found nothing"):
            prime_journeys(mix, make_target(site.url() + "/"))
        doc = result_doc(journey_load(site.url(), mix, clients=2, duration=0.6))
        assert site.comments == []
    author = doc["journeys"]["author"]
    assert author["completed"] == 0 and author["failed"] > 0
    assert set(author["failed_at"]) == {"dash: extract nonce (/name=\"nonse\" value=\"([0-9a-f]+)\"/) found nothing"}
    assert doc["journey_completion"] == 0.0
    steps = {p["page"]: p for p in doc["pages"]}
    assert steps["author/comment"]["completed"] == 0 and steps["author/dash"]["ok"] > 0  # none got past its dash


def test_a_cookie_is_a_variable_and_each_user_has_its_own(tmp_path):
    text = ('[[steps]]\nname = "form"\npath = "/login"\nextract = { sid = { cookie = "sid" } }\n'
            '[[steps]]\nname = "echo"\npath = "/whoami"\nheaders = { X-Sid = "{sid}" }\n'
            'extract = { echoed = "sid header ([0-9a-f]{16})" }\n')
    mix = load_mix(str(write(tmp_path, "cookie", text)), {})
    with running() as site:
        doc = result_doc(journey_load(site.url(), mix, clients=3, duration=0.5))
        sessions = len(site.sessions)
    j = doc["journeys"]["cookie"]
    assert j["completed"] > 0 and j["failed"] == 0
    assert sessions >= j["completed"]  # a journey is a session: its cookies are cleared before it starts


def test_think_time_paces_a_user(tmp_path):
    quick = write(tmp_path, "quick", READER)
    slow = write(tmp_path, "slow", READER + 'think = "200ms"\n')
    with running() as site:
        fast_doc = result_doc(journey_load(site.url(), load_mix(str(quick), {}), clients=1, duration=1.0))
        slow_doc = result_doc(journey_load(site.url(), load_mix(str(slow), {}), clients=1, duration=1.0))
    slow_n = slow_doc["journeys"]["slow"]["started"]
    assert 1 <= slow_n <= math.ceil(1.0 / 0.2) + 1  # a user cannot start more than the think allows
    assert fast_doc["journeys"]["quick"]["started"] > 3 * slow_n


def test_a_weighted_mix_draws_by_weight_and_a_seed_repeats_it(tmp_path):
    shipped = {"reader": write(tmp_path, "reader", READER), "other": write(tmp_path, "other", READER)}
    mix = load_mix("reader=3,other=1", shipped)
    with running() as site:
        doc = result_doc(journey_load(site.url(), mix, clients=2, duration=1.0))
    n_reader, n_other = doc["journeys"]["reader"]["started"], doc["journeys"]["other"]["started"]
    assert n_reader + n_other > 100
    assert 0.65 < n_reader / (n_reader + n_other) < 0.85
    plan = JourneyPlan(mix, seed=7)
    first, again, other = plan.draw(0, 1)[1], plan.draw(0, 1)[1], plan.draw(0, 2)[1]
    seq = [first().name for _ in range(50)]
    assert seq == [again().name for _ in range(50)] and seq != [other().name for _ in range(50)]


# --- a run with journeys: its bad inputs, before anything starts -------------------------------------------


def test_the_apps_ship_journeys_that_read():
    from loadcmp.experiment.journeys import JOURNEYS_FOLDER
    from loadcmp.lab.apps import get_app
    from loadcmp.traffic.journeys import shipped_journeys

    for app, names in (("wordpress", {"reader", "author"}), ("laravel", {"note"})):
        shipped = shipped_journeys(get_app(app).home / JOURNEYS_FOLDER)
        assert set(shipped) == names
        mix = load_mix(",".join(shipped), shipped)
        assert all(j.steps for j in mix.journeys)
    author = load_mix("author", shipped_journeys(get_app("wordpress").home / JOURNEYS_FOLDER)).journeys[0]
    assert [s.name for s in author.steps] == ["login-form", "login", "post", "comment", "logout"]


@pytest.mark.parametrize("journey, needle", [
    ("BAD", "bad.toml:4: step 'a': extract t: bad regex"),
    ("nobody", "no journey 'nobody': neither one the app ships nor a file (the app's journeys: author, reader)"),
    ("reader=lots", "the weight of 'reader' is not a number"),
    ("reader=0,author=0", "the weights sum to 0"),
])
def test_run_refuses_a_bad_journey_with_one_line_and_exit_2(tmp_path, journey, needle):
    from click.testing import CliRunner

    from loadcmp.cli import cli

    bad = write(tmp_path, "bad", '[[steps]]\nname = "a"\npath = "/"\nextract = { t = "value=(" }\n')
    given = str(bad) if journey == "BAD" else journey
    res = CliRunner().invoke(cli, ["run", "--app", "wordpress", "--server", "nginx", "--journey", given,
                                   "--out", str(tmp_path / "results")])
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output
    assert not (tmp_path / "results").exists()  # nothing started, nothing stored


def test_an_experiment_file_gives_the_mix_by_level(tmp_path):
    from loadcmp.experiment import journeys
    from loadcmp.experiment.flags import build_spec
    from loadcmp.traffic.source import JourneyTraffic

    f = tmp_path / "mix.toml"
    f.write_text('app = "wordpress"\nservers = ["nginx"]\nclients = [10, 40]\n'
                 '[journeys]\nreader = 80\nauthor = 20\n[journeys.levels]\n40 = { reader = 60, author = 40 }\n')
    spec = build_spec(str(f), {})
    traffic = spec.traffic
    assert isinstance(traffic, JourneyTraffic)
    assert (traffic.at(10), traffic.at(40)) == ("reader=80,author=20", "reader=60,author=40")
    assert spec.to_dict()["journey_levels"] == {"40": "reader=60,author=40"}  # run.json carries the spec
    plan = traffic.plan(40, 0, journeys.shipped(spec.app))
    assert plan is not None and [j.weight for j in plan.mix.journeys] == [60, 40]
    assert build_spec(str(f), {"levels": (10,)}).traffic == traffic  # -c over it: the same mix by level
    f.write_text(f.read_text().replace("40 = {", "many = {"))
    with pytest.raises(ConfigError, match=r"\[journeys.levels\] 'many': a level is a number of clients"):
        build_spec(str(f), {})
    f.write_text('app = "wordpress"\nservers = ["nginx"]\nrate = 100\nschedule = "rate"\njourney = "reader"\n')
    with pytest.raises(ConfigError, match="journeys run on the closed loop"):
        build_spec(str(f), {})


# --- the metric, the report's section -------------------------------------------------------------------


def _trial(server: str, level: int, journeys: dict, pages: list | None = None) -> dict:
    return {"server": server, "level": level, "trial": 1, "status": "ok",
            "result": {"journeys": journeys, "pages": pages or [], "ok": 1, "failed": 0, "started": 1,
                       "unfinished": 0, "rps": 1.0}}


def _journey(started: int, completed: int, failed_at: dict, cut: int = 0) -> dict:
    return {"started": started, "completed": completed, "failed": sum(failed_at.values()), "cut": cut,
            "completion_rate": None, "failed_at": failed_at}


def test_completion_is_a_metric_of_checks_and_findings():
    from loadcmp.verdicts.checks import check_metric, measure, show, threshold

    trials = [_trial("nginx", 10, {"reader": _journey(10, 9, {"home: HTTP 500": 1}),
                                   "author": _journey(6, 3, {"post: extract nonce found nothing": 2}, cut=1)}),
              _trial("nginx", 10, {"reader": _journey(4, 4, {})})]
    assert check_metric("completion>=95%", "completion", None) is None
    assert threshold("completion>=95%", "completion", 95, "%") == 0.95
    assert measure("completion", None, trials) == pytest.approx((9 + 3 + 4) / (10 + 5 + 4))  # the cut left out
    assert show("completion", 16 / 19) == "84.21%"
    assert measure("completion", None, [_trial("nginx", 10, {})]) is None  # a load of pages: no data


def test_the_reports_journeys_section_and_json():
    from loadcmp.report.journeys import journey_rows, journeys_json, step_rows

    page = {"page": "author/comment", "ok": 3, "failed": 1, "latency_ms": {"p50": 12.0, "p99": 80.5}}
    cell = [_trial("nginx", 10, {"author": _journey(6, 3, {"post: extract nonce found nothing": 2}, cut=1)},
                   [page])]

    class Data:
        levels, servers = [10], ["nginx"]

        def cell(self, server, level):
            return cell

        def client_bound(self, server, level):
            return "bound"

    header, rows = journey_rows(Data(), " ‡")  # type: ignore[arg-type]
    assert rows == [["10", "nginx", "author", "6", "3", "60.0% ‡", "post: extract nonce found nothing (2)"]]
    assert step_rows(Data())[1] == [["10", "nginx", "author/comment", "3", "1", "12.0", "80.5"]]  # type: ignore[arg-type]
    assert journeys_json(cell)["journey_completion"] == 0.6
    assert journeys_json([_trial("nginx", 10, {})]) == {}
