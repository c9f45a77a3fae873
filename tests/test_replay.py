"""A log made a replay: what is sent, when (1x, 2x, max), what each expects, its pages; the Replay schedule."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest

from loadcmp.errors import UsageError
from loadcmp.load.schedules import Replay
from loadcmp.traffic.logs import read_log
from loadcmp.traffic.logreplay import OTHER, parse_methods, parse_speed, plan_replay


def _line(second: int, request: str, status: int = 200, host: str = "") -> str:
    vhost = f"{host} " if host else ""
    return f'{vhost}127.0.0.1 - - [26/Nov/2026:01:24:{second:02d} +0000] "{request}" {status} 10 "-" "-"'


def _log(tmp_path: Path, lines: list[str]):
    p = tmp_path / "access.log"
    p.write_text("\n".join(lines) + "\n")
    return read_log(p)


def test_speeds_and_methods():
    assert parse_speed("1x") == 1.0 and parse_speed("10X") == 10.0 and parse_speed(" 2.5x ") == 2.5
    assert parse_speed("max") is None and parse_speed("MAX") is None
    for bad in ("0x", "x", "2", "fast", "-1x", "infx"):
        with pytest.raises(UsageError, match="bad --replay-speed"):
            parse_speed(bad)
    assert parse_methods("get, head,POST,GET") == ("GET", "HEAD", "POST")
    with pytest.raises(UsageError, match="bad --replay-methods"):
        parse_methods(",")


def test_one_seconds_requests_are_spread_over_it_at_1x_and_2x(tmp_path):
    log = _log(tmp_path, [_line(10, "GET /a HTTP/1.1"), _line(10, "GET /b HTTP/1.1"), _line(10, "GET /a HTTP/1.1"),
                          _line(10, "GET /a HTTP/1.1"), _line(12, "GET /c HTTP/1.1")])
    one = plan_replay(log, 1.0)
    assert list(one.dues or ()) == [0.0, 0.25, 0.5, 0.75, 2.0]
    assert one.span == 3.0 and one.mean_rate() == pytest.approx(5 / 3)  # seconds 10, 11, 12 of the log
    two = plan_replay(log, 2.0)
    assert list(two.dues or ()) == [0.0, 0.125, 0.25, 0.375, 1.0] and two.span == 1.5
    assert plan_replay(log, None).dues is None  # max: the closed loop's pace


def test_subsecond_times_are_kept_and_the_order_is_the_logs_by_time(tmp_path):
    rows = [{"msec": "100.500", "request": "GET /late HTTP/1.1", "status": 200},
            {"msec": "100.250", "request_time": "0.150", "request": "GET /early HTTP/1.1", "status": 200},
            {"msec": "101.000", "request": "GET /last HTTP/1.1", "status": 200}]
    p = tmp_path / "a.json"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    plan = plan_replay(read_log(p), 1.0)
    assert [plan.requests[i].path for i in plan.order] == ["/early", "/late", "/last"]  # started 100.1, 100.5, 101
    assert list(plan.dues or ()) == pytest.approx([0.0, 0.4, 0.9])
    assert plan.span == pytest.approx(0.9 + 0.45)  # one mean gap after the last


def test_what_is_left_out_is_counted_and_named(tmp_path):
    site, other = "www.example.org", "evil.example"
    log = _log(tmp_path, [_line(1, "GET / HTTP/1.1", host=site), _line(1, "POST /wp-login.php HTTP/1.1", host=site),
                          _line(2, "GET /x HTTP/1.1", host=site), _line(2, "GET / HTTP/1.1", host=other),
                          _line(2, "OPTIONS * HTTP/1.1", host=site), _line(3, "\\x16\\x03", 400, host=site),
                          _line(3, "HEAD / HTTP/1.1", host=site)])
    plan = plan_replay(log, 1.0)
    assert [(r.method, r.path) for r in plan.requests] == [("GET", "/"), ("GET", "/x"), ("HEAD", "/")]
    assert plan.left_out == {"method": 2, "host": 1, "not a request": 1}
    assert plan.left_out_named["method"] == [("POST", 1), ("OPTIONS", 1)]  # ties: as they came
    assert plan.left_out_named["host"] == [(other, 1)]
    allowed = plan_replay(log, 1.0, parse_methods("GET,HEAD,POST,OPTIONS"))
    assert allowed.left_out == {"host": 1, "not a path": 1, "not a request": 1}
    assert allowed.left_out_named["not a path"] == [("OPTIONS *", 1)]
    assert "POST /wp-login.php" in allowed.page_names


def test_nothing_left_to_send_is_bad_input(tmp_path):
    log = _log(tmp_path, [_line(1, "POST /a HTTP/1.1"), _line(1, "PUT /b HTTP/1.1")])
    with pytest.raises(UsageError, match=r"access.log: nothing to replay: all 2 requests are left out \(2 method\); "
                                         r"--replay-methods allows more methods"):
        plan_replay(log, 1.0)


def test_each_request_expects_the_status_the_log_gave(tmp_path):
    log = _log(tmp_path, [_line(1, "GET /a HTTP/1.1"), _line(1, "GET /gone HTTP/1.1", 404),
                          _line(2, "GET /a HTTP/1.1", 304), _line(2, "GET /a HTTP/1.1")])
    plan = plan_replay(log, 1.0)
    sent = [(plan.requests[i].path, plan.requests[i].status) for i in plan.order]
    assert sent == [("/a", 200), ("/gone", 404), ("/a", 304), ("/a", 200)]
    assert plan.page_names == ("/a", "/gone")  # the same page whatever it answered


def test_many_urls_are_grouped_as_other(tmp_path):
    lines = [_line(1, "GET /top HTTP/1.1")] * 5 + [_line(1, "GET /second HTTP/1.1")] * 3
    lines += [_line(2, f"GET /p/{i} HTTP/1.1") for i in range(500)]
    plan = plan_replay(_log(tmp_path, lines), None, top=2)
    assert plan.page_names == ("/top", "/second", OTHER) and plan.grouped == 500 and len(plan.requests) == 502
    assert [plan.page_names[plan.page_of[i]] for i in plan.order[:9]] == ["/top"] * 5 + ["/second"] * 3 + [OTHER]


def test_the_replay_schedule_says_when_each_request_is_due():
    s = Replay(array("d", [0.0, 0.25, 0.5, 0.75, 2.0]), 10)
    assert [s.due(k) for k in range(5)] == [0.0, 0.25, 0.5, 0.75, 2.0] and s.due(5) == float("inf")
    assert [s.count_before(t) for t in (0.0, 0.1, 0.5, 0.76, 1.9, 2.01, 99)] == [0, 1, 2, 4, 4, 5, 5]
    assert s.describe() == {"kind": "replay", "rate": 2.0, "max_inflight": 10}  # no "requests": that is -n's
    assert s.connections == 10


def test_a_replay_split_over_workers_deals_every_nth_request_and_loses_none():
    dues = array("d", [i / 7 for i in range(23)])
    parts = Replay(dues, 5).split(3)
    assert [p.max_inflight for p in parts] == [2, 2, 1]
    got = sorted(p.due(k) for p in parts for k in range(p.total))
    assert got == list(dues) and [p.total for p in parts] == [8, 8, 7]
    for p in parts:  # each part's count of what is due agrees with its own due times
        for t in (0.0, 0.5, 1.0, 2.9, 3.2, 4.0):
            assert p.count_before(t) == sum(1 for k in range(p.total) if p.due(k) < t)
    with pytest.raises(UsageError):
        Replay(array("d"), 1)


@pytest.mark.parametrize("args, message", [
    (["--replay-speed", "fast"], "bad --replay-speed 'fast'"),
    (["--replay-methods", "G3T"], "bad --replay-methods 'G3T'"),
    (["--mix", "/=1"], "--replay and --mix"),
    (["--schedule", "rate", "--rate", "5"], "--replay and --schedule"),
    (["--warmup", "5s"], "lasts 3 s at 1x, no longer than the 5 s warm-up"),
])
def test_run_refuses_a_replay_it_cannot_do_before_anything_starts(tmp_path, args, message):
    from click.testing import CliRunner

    from loadcmp.cli import cli

    log = _log(tmp_path, [_line(s, "GET / HTTP/1.1") for s in (1, 2, 3)])
    out = CliRunner().invoke(cli, ["run", "--server", "nginx", "--replay", log.file, "-c", "2", *args])
    assert out.exit_code == 2 and message in out.output, out.output
    assert "Traceback" not in out.output


def test_run_refuses_a_bad_log_with_its_first_bad_line(tmp_path):
    from click.testing import CliRunner

    from loadcmp.cli import cli

    p = tmp_path / "access.log"
    p.write_text(_line(1, "GET / HTTP/1.1") + "\nnot a line\n" + _line(2, "GET / HTTP/1.1") + "\n")
    out = CliRunner().invoke(cli, ["run", "--server", "nginx", "--replay", str(p)])
    assert out.exit_code == 2 and f"{p}:2: not a combined log line: not a line (1 of 3 lines" in out.output
    assert len(out.output.strip().splitlines()) == 1


def test_an_experiment_file_names_its_log_beside_itself(tmp_path):
    from loadcmp.experiment.flags import build_spec
    from loadcmp.traffic.source import ReplayTraffic

    log = _log(tmp_path, [_line(s, "GET /x HTTP/1.1") for s in range(10)] + [_line(3, "POST /y HTTP/1.1")])
    f = tmp_path / "replay.toml"
    f.write_text('servers = ["nginx"]\nreplay = "access.log"\nreplay_speed = "2x"\nreplay_methods = ["GET", "POST"]\n'
                 'warmup = "1s"\n')
    spec = build_spec(str(f), {})
    assert spec.traffic == ReplayTraffic(log.file, "2x", ("GET", "POST"))
    assert spec.page == "/x" and spec.duration == 4.0  # 10 s at 2x, less the warm-up
    plan = spec.traffic.planned
    assert plan.sent == 11 and "POST /y" in plan.page_names
    assert isinstance(spec.schedule_for(50), Replay) and spec.schedule_for(50).connections == 50
