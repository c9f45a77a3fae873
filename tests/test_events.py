"""Events in a trial (`--event`): read, checked against each stack's data, fired on time, and costed from stored
seconds (docs/events.md)."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pandas as pd
import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import LabError, UsageError
from loadcmp.events import actions, fire
from loadcmp.events.plan import parse, timing_problems
from loadcmp.facts import EventDoc
from loadcmp.lab.stacks import catalog
from loadcmp.load.record.outcomes import KINDS
from loadcmp.report.events import cost, recovery, recovery_cell

SERVERS = {"reload": ["nginx", "apache-prefork", "apache-worker", "apache-event", "nginx-apache", "caddy", "lighttpd"],
           "restart": ["nginx", "apache-prefork", "apache-worker", "apache-event", "nginx-apache", "caddy", "lighttpd"],
           "reload php": ["nginx", "apache-prefork", "apache-worker", "apache-event", "nginx-apache", "caddy",
                          "lighttpd"]}


def test_at_and_every_are_read_and_give_the_times_inside_the_window():
    a = parse("3s reload")
    assert (a.at, a.every, a.action, a.times(12)) == (3.0, None, "reload", [3.0])
    e = parse("every 4s reload php")
    assert (e.action, e.times(12)) == ("reload php", [4.0, 8.0])  # 12 s is the window's end: not inside it
    p = parse("8s pause db 3s")
    assert (p.action, p.hold, p.words) == ("pause db", 3.0, ("pause", "db", "3s"))
    assert parse("500ms kill worker").at == 0.5


@pytest.mark.parametrize("text", ["reload", "every reload", "x reload", "every 0s reload", "1s pause db",
                                  "1s pause db soon"])
def test_an_event_that_is_not_at_action_is_refused_in_one_line(text):
    with pytest.raises(UsageError) as e:
        parse(text)
    assert "\n" not in str(e.value) and ("--event" in str(e.value))


def test_an_event_after_the_window_is_a_problem():
    assert timing_problems(parse("20s reload"), 12) == ["--event '20s reload': 20 s is not inside the 12 s window"]
    assert timing_problems(parse("every 15s reload"), 12)
    assert not timing_problems(parse("every 5s reload"), 12)


def test_every_stack_s_actions_are_well_formed_and_each_server_has_its_own():
    cat = catalog()
    for name in cat.names():
        stack = cat.get(name)
        assert actions.data_problems(stack) == [], name
        for a in actions.names(stack):
            if "DURATION" in a or "KEY=VALUE" in a:
                continue
            got = actions.resolve(stack, parse(f"1s {a}"))
            assert got.role in [r.name for r in stack.roles] and (got.exec or got.docker), (name, a)
    for action, servers in SERVERS.items():
        for name in servers:
            assert action in actions.names(cat.get(name)), (name, action)
    # nginx-apache: nginx's reload on its front, Apache's (and so mod_php's) on its backend
    na = cat.get("nginx-apache")
    assert actions.resolve(na, parse("1s reload")).exec[0] == "nginx"
    assert actions.resolve(na, parse("1s reload php")).role == "backend"


def test_a_stack_without_the_command_refuses_it_and_a_generic_action_needs_the_role():
    caddy = catalog().get("caddy")
    with pytest.raises(UsageError, match="caddy has no command for 'kill worker' in its data"):
        actions.resolve(caddy, parse("1s kill worker"))
    with pytest.raises(UsageError, match="caddy has no role 'db'"):
        actions.resolve(caddy, parse("1s pause db 2s"))
    got = actions.resolve(caddy, parse("1s pause web 2s"))
    assert (got.docker, got.hold, got.role) == ("pause", 2.0, "web")


def test_malformed_events_tables_are_said():
    said = actions.table_problems("x.toml", {"reload": {"exec": "nginx -s reload"}, "restart": {"docker": "kill"},
                                             "a": {"exec": ["true"], "docker": "restart", "when": 1},
                                             "pause web": {"docker": "restart"}})
    assert any("exec must be a command as a list" in s for s in said)
    assert any("docker must be one of restart" in s for s in said)
    assert any("unknown key(s) when" in s for s in said) and any("one of them" in s for s in said)
    assert any("pause is every stack's own" in s for s in said)
    said = actions.table_problems("x.toml", {"reload": {"exec": ["true"], "settings": "nginx"},
                                             "set x": {"exec": ["true"]}})
    assert any("settings must be a list of the tunables' sections" in s for s in said)
    assert any("set is every stack's own" in s for s in said)


@pytest.mark.parametrize("event,said", [("2s frobnicate", "no command for 'frobnicate'"),
                                        ("1s set nginx.no_such=1", "nginx has no setting 'nginx.no_such'"),
                                        ("1s set nginx.worker_connections=lots", "expected a whole number"),
                                        ("1s set nginx.worker_connections", "'set KEY=VALUE'"),
                                        ("20s reload", "not inside the 5 s window"),
                                        ("4s pause web 2s", "the 2 s pause at 4 s runs past the 5 s window"),
                                        ("1s pause db 2s", "has no role 'db'")])
def test_bad_events_stop_the_run_in_one_line_before_anything_starts(tmp_path, event, said):
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-t", "5s", "--event", event,
                                   "--out", str(tmp_path)])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert said in res.output and len(res.output.strip().splitlines()) == 1, res.output
    assert not any(tmp_path.iterdir())  # no results folder: nothing ran


def test_experiment_files_take_events_tables(tmp_path):
    from loadcmp.experiment.spec import load_experiment

    f = tmp_path / "x.toml"
    f.write_text('servers = ["nginx"]\n[[events]]\nat = "3s"\naction = "reload"\n'
                 '[[events]]\nevery = "5s"\naction = "reload php"\n')
    fields, _ = load_experiment(str(f))
    assert fields["events"] == ("3s reload", "every 5s reload php")


def test_events_fire_within_100_ms_of_their_time_even_beside_a_slow_one():
    stack = catalog().get("nginx")
    planned = fire.plan(("every 0.3s reload", "0.45s restart"), stack, 1.0)
    seen: list[float] = []

    def slow(dep, a, cut):  # a restart takes long; the events after it stay on time (a thread each)
        seen.append(time.monotonic())
        time.sleep(0.5 if a.name == "restart" else 0.01)
        return True, None, "said"

    wall0 = time.time() + 0.05

    class Logs:  # the containers' lines as Docker gives them, stamped: nginx's at 0.35 s, another server's at 5 s
        def log_lines(self, since, until):
            for at, text in ((0.35, "[notice] 1#1: signal 1 (SIGHUP) received, reconfiguring"), (5.0, "reconfiguring")):
                yield datetime.fromtimestamp(wall0 + at, timezone.utc).isoformat() + " " + text

    f = fire.Firer(Logs(), planned, time.monotonic() + 0.05, wall0, run=slow)  # type: ignore[arg-type]
    f.start()
    time.sleep(1.2)
    docs = f.finish()
    assert [d["at_s"] for d in docs] == [0.3, 0.45, 0.6, 0.9]
    for d in docs:
        assert 0 <= d["start_s"] - d["at_s"] < 0.1 and "late" not in d, d
        assert d["ok"] and d["evidence"][0] == "said"
    # the line stamped in the first reload's time is its evidence; the one seconds later is no event's
    assert docs[0]["evidence"][1:] == ["[notice] 1#1: signal 1 (SIGHUP) received, reconfiguring"]
    assert all(len(d["evidence"]) == 1 for d in docs[2:])
    restart = next(d for d in docs if d["action"] == "restart")
    assert restart["end_s"] - restart["start_s"] >= 0.49  # (each rounded to the ms)


def test_a_failed_event_is_one_line_of_the_trial():
    doc = EventDoc(asked="3s reload", action="reload", role="web", at_s=3.0, start_s=3.01, end_s=3.2, ok=False,
                   said="nginx -s reload exited 1: bad config", evidence=[])
    assert fire.failures([doc]) == ["event '3s reload' at 3.01 s failed: nginx -s reload exited 1: bad config"]


def _timeline(ok: list[int], failed_at: dict[int, dict[str, int]], p99: list[float]) -> pd.DataFrame:
    rows = []
    for i, n in enumerate(ok):
        row = {"second": i, "ok": n, "dropped": 0, "p99_ms": p99[i], **{k: 0 for k in KINDS if k != "ok"}}
        row.update(failed_at.get(i, {}))
        rows.append(row)
    return pd.DataFrame(rows)


def test_an_event_s_cost_from_a_made_up_timeline():
    # 100/s for 6 s, a reload at 6.3 s: 20 ok and resets in its second, 60 the next, back to 95 at second 8
    ok = [100] * 6 + [20, 60, 95, 100, 100]
    tl = _timeline(ok, {6: {"reset": 30, "http_5xx": 5}, 7: {"reset": 2}}, [10.0] * 6 + [300.0, 120.0] + [10.0] * 3)
    sv = pd.DataFrame({"second": range(11), "mem_bytes": [2**20] * 6 + [3 * 2**20] * 2 + [2**20] * 3,
                       "procs": [5] * 6 + [9, 7] + [5] * 3})
    ev = EventDoc(asked="6.3s reload", action="reload", role="web", at_s=6.3, start_s=6.3, end_s=6.5, ok=True,
                  said=None, evidence=["signal process started"])
    c = cost(ev, 1, tl, sv)
    assert c["recovery_s"] == pytest.approx(1.7)  # second 8 is the first back within 10 %: 8 - 6.3
    assert c["failures"] == {"http_5xx": 5, "reset": 32} and c["failed"] == 37
    assert (c["p99_before_ms"], c["p99_during_ms"]) == (10.0, 300.0)
    assert (c["mem_before_bytes"], c["mem_peak_bytes"]) == (2**20, 3 * 2**20)
    assert (c["procs_before"], c["procs_peak"]) == (5, 9)
    assert c["took_s"] == pytest.approx(0.2) and c["evidence"] == ["signal process started"]


def test_recovery_is_under_a_second_when_its_own_second_kept_up_and_none_when_never_back():
    ok = pd.Series([100, 100, 100, 95, 100, 100, 100])
    assert recovery(ok, 3.2, 3.4) == (0.0, 5)  # its second and 2 s after its command returned
    assert recovery(ok, 3.2, 3.4, until=4) == (0.0, 3)  # the next event's second ends its window
    assert recovery(pd.Series([100, 100, 10, 10, 10]), 2.0, 2.1) == (None, 4)
    # a server that acts on the signal a second after the command returned: the dip is still the event's
    late = pd.Series([100] * 5 + [100, 100, 30, 100, 100])
    assert recovery(late, 5.5, 5.7) == (2.5, 7)


def test_the_next_event_s_second_ends_a_window_even_before_this_one_recovered():
    # every 2s: the first event's dip lasts until second 6, but the next event fires at 4 s and its window is its own
    ok = pd.Series([100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100], dtype=float)
    ok[[2, 3, 4, 5]] = 10
    assert recovery(ok, 2.0, 2.1) == (4.0, 5)  # alone: back at second 6, its window to 5
    assert recovery(ok, 2.0, 2.1, until=4) == (4.0, 3)  # the recovery as measured; the window ends at 3
    assert recovery(pd.Series([100, 100, 10, 10, 10, 10]), 2.0, 2.1, until=3) == (None, 2)  # never back: capped too
    tl = _timeline([100, 100, 10, 10, 10, 100, 100], {2: {"reset": 7}, 4: {"reset": 5}}, [10.0] * 7)
    first = EventDoc(asked="every 2s reload", action="reload", role="web", at_s=2.0, start_s=2.0, end_s=2.1,
                     ok=True, said=None, evidence=[])
    assert cost(first, 1, tl, pd.DataFrame(), until=4)["failed"] == 7  # second 4's resets are the next event's


def _reload(at: float) -> EventDoc:
    return EventDoc(asked=f"{at}s reload", action="reload", role="web", at_s=at, start_s=at, end_s=at + 0.1, ok=True,
                    said=None, evidence=[])


def test_an_event_with_no_second_before_it_has_no_baseline_not_a_recovery_that_never_came():
    tl = _timeline([100, 100, 100, 100, 100, 100], {}, [10.0] * 6)
    c = cost(_reload(0.5), 1, tl, pd.DataFrame())
    assert (c["recovery_s"], c["recovery_why"], c["baseline_s"]) == (None, "no baseline", 0)
    assert recovery_cell(c) == "-"
    late = cost(_reload(2.3), 1, tl, pd.DataFrame())
    assert (late["recovery_s"], late["recovery_why"], late["baseline_s"]) == (0.0, None, 2)
    assert recovery_cell(late) == "< 1 s (2 s before)"  # two seconds of baseline, not BEFORE_S, and it says so
    gone = cost(_reload(2.3), 1, _timeline([100, 100, 5, 5, 5, 5], {}, [10.0] * 6), pd.DataFrame())
    assert (gone["recovery_why"], recovery_cell(gone)) == ("not back", "not back (2 s before)")


def test_a_pause_that_would_outlast_the_window_is_a_problem():
    assert timing_problems(parse("8s pause db 3s"), 10) == [
        "--event '8s pause db 3s': the 3 s pause at 8 s runs past the 10 s window"]
    assert timing_problems(parse("every 4s pause db 3s"), 10)  # the one at 8 s
    assert not timing_problems(parse("7s pause db 3s"), 10) and not timing_problems(parse("every 4s pause db 1s"), 10)


class _Paused:
    """A stand-in for a role's container (Docker is not run by these tests): what was done to it, in order."""

    def __init__(self) -> None:
        self.did: list[str] = []
        self.attrs = {"State": {"Status": "running"}}

    def pause(self) -> None:
        self.did.append("pause")

    def unpause(self) -> None:
        self.did.append("unpause")

    def reload(self) -> None:
        pass


class _Dep:
    def __init__(self) -> None:
        self.host, self.c = type("Host", (), {"name": "local"})(), _Paused()

    def container_of(self, role):
        return self.c

    def log_lines(self, since, until):
        return iter(())


def test_an_unforeseen_error_is_the_event_s_failure_in_one_line_and_a_held_pause_ends_with_the_load():
    def broken(dep, a, cut):
        raise RuntimeError("boom\nsecond line")

    planned = fire.plan(("0.05s reload",), catalog().get("nginx"), 1.0)
    f = fire.Firer(_Dep(), planned, time.monotonic(), time.time(), run=broken)
    f.start()
    time.sleep(0.3)
    [doc] = f.finish()
    assert (doc["ok"], doc["said"]) == (False, "RuntimeError: boom")
    assert fire.failures([doc]) == ["event '0.05s reload' at " + f"{doc['start_s']:g} s failed: RuntimeError: boom"]
    # a 30 s pause still held when the load ends is unpaused by finish, not left to outlive the trial
    dep = _Dep()
    held = fire.plan(("0.05s pause web 30s",), catalog().get("nginx"), 60.0)
    f = fire.Firer(dep, held, time.monotonic(), time.time())
    f.start()
    time.sleep(0.3)
    t = time.monotonic()
    [doc] = f.finish()
    assert time.monotonic() - t < 5 and dep.c.did == ["pause", "unpause"] and doc["ok"], doc


def test_requests_the_client_dropped_in_an_event_s_window_are_kept_apart_from_its_failures():
    tl = _timeline([100] * 6 + [40, 100, 100], {6: {"reset": 3, "dropped": 50}, 7: {"dropped": 4}}, [10.0] * 9)
    c = cost(_reload(6.2), 1, tl, pd.DataFrame())
    assert (c["failed"], c["failures"], c["dropped"]) == (3, {"reset": 3}, 54)  # never sent: not the server's failures


def test_the_events_doc_says_what_is_not_what_is_not_yet():
    import re
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "events.md").read_text()
    assert not re.findall(r"\b(yet|no longer|for now|so far|used to|anymore|planned|will be)\b", text, re.I)


def test_set_takes_the_action_whose_settings_name_its_section():
    cat = catalog()
    got = actions.resolve(cat.get("nginx"), parse("5s set nginx.keepalive_timeout=5"))
    assert (got.name, got.change, got.exec[0]) == ("set nginx.keepalive_timeout=5", ("nginx.keepalive_timeout", 5),
                                                   "nginx")  # nginx's reload
    got = actions.resolve(cat.get("apache-prefork"), parse("5s set php.memory_limit=256M"))
    assert "USR1" in got.exec[-1]  # mod_php: Apache's graceful
    got = actions.resolve(cat.get("nginx-apache"), parse("5s set prefork.MaxRequestWorkers=64"))
    assert got.role == "backend"
    with pytest.raises(UsageError, match="no action in caddy's data puts its caddy.\\* settings in effect"):
        actions.resolve(cat.get("caddy"), parse("5s set caddy.keepalive=off"))
    assert "set KEY=VALUE" in actions.names(cat.get("caddy"))  # its fpm.* and php.*: php-fpm's reload


class _Stuck(_Paused):
    """A container whose unpause the engine never answers (cgroup v1's freezer left FREEZING)."""

    id = "0" * 64

    def unpause(self) -> None:
        self.did.append("unpause")
        time.sleep(5)


def test_an_unpause_that_never_returns_fails_the_event_in_one_line_and_the_run_goes_on(monkeypatch):
    from loadcmp.events import bounded

    monkeypatch.setattr(bounded, "PAUSE_S", 0.3)
    dep = _Dep()
    dep.c = _Stuck()
    f = fire.Firer(dep, fire.plan(("0.05s pause web 0.1s",), catalog().get("nginx"), 60.0), time.monotonic(),
                   time.time())
    f.start()
    time.sleep(0.2)
    t = time.monotonic()
    [doc] = f.finish()
    assert time.monotonic() - t < 2 and dep.c.did == ["pause", "unpause"] and not doc["ok"], doc
    assert doc["said"] == ("docker unpause of the web container did not return within 0.3 s; "
                           "its freezer cgroup was not found here"), doc
    assert "\n" not in doc["said"] and doc["end_s"] - doc["start_s"] < 2, doc


class _LatePause(_Paused):
    """A container whose pause the engine carries out only after loadcmp gave it up."""

    id = "0" * 64

    def pause(self) -> None:
        self.did.append("pause")
        time.sleep(0.6)
        self.attrs = {"State": {"Status": "paused"}}

    def unpause(self) -> None:
        self.did.append("unpause")
        self.attrs = {"State": {"Status": "running"}}


def test_a_pause_given_up_and_carried_out_late_is_undone(monkeypatch):
    from loadcmp.events import bounded

    monkeypatch.setattr(bounded, "PAUSE_S", 0.3)
    dep = _Dep()
    dep.c = _LatePause()
    f = fire.Firer(dep, fire.plan(("0.05s pause web 0.1s",), catalog().get("nginx"), 60.0), time.monotonic(),
                   time.time())
    f.start()
    time.sleep(0.2)
    [doc] = f.finish()
    assert not doc["ok"] and doc["said"].startswith("docker pause of the web container did not return"), doc
    t = time.monotonic()
    while dep.c.attrs["State"]["Status"] != "running" or "unpause" not in dep.c.did:
        assert time.monotonic() - t < 5, dep.c.did  # the late pause was left in place
        time.sleep(0.05)
    assert dep.c.did == ["pause", "unpause"], dep.c.did


def test_a_docker_call_is_given_up_after_its_limit_and_its_own_error_comes_through():
    from loadcmp.events import bounded

    t = time.monotonic()
    with pytest.raises(LabError, match="sleeping did not return within 0.2 s"):
        bounded.call("sleeping", lambda: time.sleep(3), 0.2)
    assert time.monotonic() - t < 1
    assert bounded.call("adding", lambda: 1 + 1) == 2
    with pytest.raises(ZeroDivisionError):
        bounded.call("dividing", lambda: 1 / 0)


def test_an_event_fired_late_says_how_late_and_how_long_its_timer_waited_for_a_cpu():
    # the load holding Python's lock (here a regex's backtracking, which never lets go of it) delays the firer
    import re

    f = fire.Firer(_Dep(), fire.plan(("0.05s reload",), catalog().get("nginx"), 1.0), time.monotonic(), time.time(),
                   run=lambda dep, a, cut: (True, None, ""))
    f.start()
    t = time.monotonic()
    while time.monotonic() - t < 0.6:
        re.match(r"(a+)+b", "a" * 22)
    [doc] = f.finish()
    late = doc["start_s"] - doc["at_s"]
    said = re.fullmatch(r"fired (\d+\.\d\d) s after its time: its timer waited (\d+\.\d\d) s of it for a CPU",
                        doc["late"])
    assert late > fire.LATE_S and said is not None, doc
    assert float(said[1]) == pytest.approx(late, abs=0.011) and float(said[2]) <= float(said[1]) + 0.01, doc
    assert fire.failures([doc]) == [f"event '0.05s reload' {doc['late']}"]


def test_a_pause_of_the_database_is_said_as_waits_or_as_its_failures():
    from loadcmp.report.events import paused

    # 10/s, the database paused from 8.0 s to 11.1 s: nothing served for 3 s, back at second 11
    ok = [10] * 8 + [0, 0, 0, 12, 10, 10]
    sv = pd.DataFrame({"second": range(14), "procs": [37] * 14})
    ev = EventDoc(asked="8s pause db 3s", action="pause db", role="db", at_s=8.0, start_s=8.0, end_s=11.1, ok=True,
                  said=None, evidence=[])
    waited = cost(ev, 1, _timeline(ok, {}, [100.0] * 8 + [3100.0] * 6), sv)
    assert waited["recovery_s"] == 3.0 and waited["failed"] == 0
    assert paused(waited) == ("no request failed in its window: they waited on the paused db (3.1 s until it was "
                              "back); p99 100.0 ms before → 3,100.0 ms in it; throughput was back 3.0 s after it fired")
    failed = cost(ev, 1, _timeline(ok, {9: {"timeout": 20}}, [100.0] * 14), sv)
    assert paused(failed).startswith("20 requests failed in its window (timeout 20): the db's pause, the server "
                                     "waiting on its db (3.1 s until it was back)")
