"""Causes from evidence (loadcmp.observe.evidence): the log parser on lines the lab's servers really
wrote (tests/fixtures/logs/, `docker logs -t` of overloaded stacks), the notes drawn from it,
and a real overloaded trial whose stored record names php-fpm's limit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from loadcmp.observe import evidence as ev
from loadcmp.errors import LabError
from loadcmp.lab.stacks import Stack, effective_settings, get_stack
from loadcmp.report.causes import note

LOGS = Path(__file__).parent / "fixtures" / "logs"
EVERY_STACK = {"kernel", "status"}
"""The prefix of the causes every stack gets (configs/every-stack.toml), whatever its parts."""

EXPECTED = {
    "nginx-fpm-worker-connections.log": {"nginx.worker_connections": 34, "fpm.max_children": 1},
    "nginx-worker-connections-reuse.log": {"nginx.worker_connections_reuse": 7},
    "nginx-fpm-upstream-eagain.log": {"nginx.upstream_connect_eagain": 28, "fpm.max_children": 1},
    "nginx-fpm-upstream-timeout.log": {"fpm.max_children": 1, "nginx.upstream_timeout": 1},
    "nginx-fpm-seems-busy.log": {"fpm.seems_busy": 1},
    "nginx-fpm-ondemand-max-children.log": {"fpm.max_children": 1},
    "nginx-apache-web-upstream-timeout.log": {"nginx.upstream_timeout": 2, "nginx.upstream_connect_timeout": 3},
    "nginx-apache-backend.log": {"apache.max_request_workers": 1},
    "apache-prefork-max-request-workers.log": {"apache.max_request_workers": 1},
    "apache-worker-fpm.log": {"apache.max_request_workers": 1, "fpm.max_children": 1},
    "apache-event-fpm.log": {"apache.max_request_workers": 1, "fpm.max_children": 1},
    "caddy-fpm-dial-eagain.log": {"caddy.fpm_dial_eagain": 150, "fpm.max_children": 1},
    "caddy-fpm-gone.log": {"fpm.max_children": 1, "caddy.fpm_eof": 40, "caddy.fpm_gone": 3},
    "caddy-fpm-max-children.log": {"fpm.max_children": 1, "caddy.fpm_dial_eagain": 100},
    "caddy-too-many-open-files.log": {"caddy.too_many_open_files": 154},
    "lighttpd-fpm-backlog-full.log": {"lighttpd.fpm_queue_full": 40, "fpm.max_children": 1},
    "lighttpd-fpm-gone.log": {"lighttpd.fpm_down": 1, "lighttpd.all_handlers_down": 1},
    "lighttpd-fpm-max-children.log": {"fpm.max_children": 1, "lighttpd.fpm_queue_full": 40},
    "lighttpd-max-connections.log": {"lighttpd.connection_limit": 100},
    "nginx-tls-handshake.log": {"nginx.tls_handshake": 4, "nginx.plain_http_on_https": 1},
    # plain http on the https port is its own cause, not a failed handshake (as nginx's)
    "apache-prefork-tls-handshake.log": {"apache.tls_handshake": 4, "apache.plain_http_on_https": 1},
    "caddy-tls-handshake.log": {"caddy.tls_handshake": 4},
    "lighttpd-tls-handshake.log": {"lighttpd.tls_handshake": 4},
    "lighttpd-too-many-open-files.log": {"lighttpd.out_of_fds": 100, "lighttpd.too_many_open_files": 100,
                                         "fpm.seems_busy": 1},
}


def read(name: str) -> str:
    return (LOGS / name).read_text()


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_on_real_logs(name: str) -> None:
    assert ev.tally(read(name)).counts == EXPECTED[name]


def test_every_fixture_is_checked_and_every_line_is_counted_once() -> None:
    assert sorted(p.name for p in LOGS.glob("*.log")) == sorted(EXPECTED)
    text = read("nginx-fpm-upstream-eagain.log")
    assert ev.tally(text).lines == len(text.splitlines())


def test_quotes_are_the_servers_own_words() -> None:
    t = ev.tally(read("apache-worker-fpm.log"))
    assert t.quotes == {"fpm.max_children": "[pool www] server reached pm.max_children setting (5)",
                        "apache.max_request_workers": "AH00286: server reached MaxRequestWorkers setting"}
    assert ev.tally(read("nginx-fpm-worker-connections.log")).quotes["nginx.worker_connections"] == (
        "768 worker_connections are not enough")


def test_only_lines_of_the_window_count() -> None:
    text = read("nginx-fpm-upstream-timeout.log")  # fpm's warning at 12:22:31, nginx's timeout at 12:23:31
    assert ev.tally(text, since=epoch("2026-11-23T12:23:00Z")).counts == {"nginx.upstream_timeout": 1}
    assert ev.tally(text, until=epoch("2026-11-23T12:23:00Z")).counts == {"fpm.max_children": 1}
    assert ev.tally(text, since=epoch("2026-11-23T12:22:31.36Z"), until=epoch("2026-11-23T12:22:31.37Z")).lines == 1


def test_stamp() -> None:
    t, rest = ev.stamp("2026-11-23T12:19:25.217966187Z 2026/11/23 12:19:25 [warn] 15#15: x")
    assert t == pytest.approx(epoch("2026-11-23T12:19:25.217966Z")) and rest.startswith("2026/11/23")
    assert ev.stamp("[warn] no stamp here") == (None, "[warn] no stamp here")


def test_every_cause_names_a_real_setting() -> None:
    from loadcmp.lab.stacks import catalog

    seen = 0
    for stack in catalog():
        for c in stack.causes:
            seen += 1
            assert c.key.split(".")[0] in {p.split("-")[0] for p in stack.parts} | {stack.name} | EVERY_STACK, c.key
            s = stack.setting_of(c)
            assert s is None or s in stack.tunables or s.split(".")[0] not in stack.sections, (stack.name, c.key)
    assert seen


# --- notes ---------------------------------------------------------------------------------


def notes(stack: str, failures: dict[str, int], log: str | None = "", peaks: dict[str, float] | None = None,
          **kw: Any) -> list[str]:
    s = get_stack(stack)
    seen = ev.Seen(None if log is None else ev.tally(read(log) if log else ""), failures, peaks or {}, **kw)
    return [note(c, failures) for c in ev.trial_causes(s, effective_settings(s, {}), seen)]


def test_each_stack_counts_its_own_causes_only() -> None:
    """A stack reads its log with its own causes: lighttpd's lines are no news on nginx, and the reverse."""
    text = read("lighttpd-max-connections.log")
    assert ev.tally(text, causes=get_stack("lighttpd").causes).counts == {"lighttpd.connection_limit": 100}
    assert ev.tally(text, causes=get_stack("nginx").causes).counts == {}
    out = notes("lighttpd", {"connect_timeout": 80}, "lighttpd-max-connections.log")
    assert out == ["lighttpd had server.max-connections open and stopped accepting; new connections waited in the "
                   "kernel's accept queue (lighttpd.max_connections 0) — '[note] sockets disabled, connection limit "
                   "reached' logged 100 times; the failures were 80 connect_timeout"]
    caddy = notes("caddy", {"http_5xx": 9}, "caddy-fpm-dial-eagain.log")
    assert any(n.startswith("Caddy found php-fpm's socket") for n in caddy), caddy


def test_evidence_names_the_limit_and_quotes_it() -> None:
    out = notes("nginx", {"http_5xx": 12010}, "nginx-fpm-upstream-eagain.log")
    fpm = next(n for n in out if "fpm.max_children" in n)
    assert fpm == ("php-fpm ran all the workers it may; further PHP requests queued on its socket (fpm.max_children 5)"
                   " — '[pool www] server reached pm.max_children setting (5)' logged once;"
                   " the failures were 12,010 http_5xx")
    eagain = next(n for n in out if "fpm.listen_backlog" in n)
    assert "logged 28 times" in eagain and "the failures were 12,010 http_5xx" in eagain


def test_a_reachable_limit_without_evidence_is_not_news() -> None:
    # 5000 clients would exceed worker_connections and every worker cap: no line, no busy page, no note
    for stack in ("nginx", "apache-prefork", "apache-event", "nginx-apache"):
        assert notes(stack, {"reset": 100, "timeout": 50}) == []
    assert notes("nginx", {}, "nginx-fpm-seems-busy.log") == [
        "php-fpm had no idle worker and started more (fpm.start_servers 2) — '[pool www] seems busy' logged once"]


def test_failures_of_another_kind_are_not_blamed() -> None:
    # all http_5xx from php-fpm: nothing may say connections were dropped or reset
    out = notes("nginx", {"http_5xx": 12010}, "nginx-fpm-upstream-eagain.log")
    assert not any("worker_connections" in n or "reset" in n for n in out)
    # worker_connections logged, but the failures were 502s: the note says it made none of them
    out = notes("nginx", {"http_5xx": 500}, "nginx-worker-connections-reuse.log")
    assert out == ["nginx had no free connection and closed idle keep-alive ones to make room "
                   "(nginx.worker_connections 768) — '768 worker_connections are not enough, reusing connections' "
                   "logged 7 times; it makes none of the failures seen (500 http_5xx)"]
    out = notes("nginx", {"reset": 20180, "http_5xx": 3}, "nginx-fpm-worker-connections.log")
    assert "the failures included 20,180 reset (of 20,183)" in out[0]


def test_busy_workers_at_the_cap_are_evidence() -> None:
    out = notes("apache-prefork", {"timeout": 7}, peaks={"apache_busy": 150.0})
    assert out == ["Apache ran all the workers it may; further connections waited in its listen backlog "
                   "(prefork.MaxRequestWorkers 150) — server-status showed all 150 workers busy "
                   "(its own request on one of them); "
                   "the failures were 7 timeout"]
    assert notes("apache-prefork", {"timeout": 7}, peaks={"apache_busy": 149.0}) == []
    out = notes("apache-event", {}, "apache-event-fpm.log", peaks={"fpm_active": 5.0, "fpm_max_children_reached": 2})
    assert any("event.MaxRequestWorkers 150" in n and "AH00484" in n for n in out)
    fpm = next(n for n in out if "fpm.max_children" in n)
    assert "logged once; fpm-status counted 'max children reached' 2 times; no request failed" in fpm
    # php-fpm's own status request takes a worker: all 5 busy is no evidence by itself
    assert notes("nginx", {}, peaks={"fpm_active": 5.0}) == []
    assert "fpm.max_children 5" in notes("nginx", {}, peaks={"fpm_max_children_reached": 1})[0]


def _seconds(busy_keepalive: list[tuple[float, float, float] | None]) -> list[dict[str, float]]:
    """A prefork server's samples: (busy workers, of them idle in keep-alive, of them starting) per second; None: its
    page unanswered."""
    return [{"busy_unread": 1.0} if s is None else {
        "busy_workers": s[0], "apache_busy": s[0], "apache_keepalive": s[1], "apache_starting": s[2],
        "apache_writing": s[0] - s[1] - s[2]} for s in busy_keepalive]


def test_workers_held_by_idle_keep_alive_connections() -> None:
    """Users ramping up over a kept-alive prefork server: keep-alive held the most busy workers at the fullest second
    its page answered, then every worker was held and the page went unanswered."""
    prefork = get_stack("apache-prefork")

    def held(rows: list[tuple[float, float, float] | None]) -> dict[str, tuple[float, float, int]]:
        return ev.held_at(_seconds(rows), prefork.causes, prefork.status)

    assert held([(40, 36, 0), (95, 60, 30), (131, 72, 50), None, None]) == {"apache_keepalive": (72.0, 131.0, 2)}
    out = notes("apache-prefork", {}, held=held([(40, 36, 0), (131, 72, 50), None, None]))
    ka = next(n for n in out if "keep-alive" in n)
    assert ka == ("its workers were all held, most of them by idle keep-alive connections, so further clients waited "
                  "for one (prefork.MaxRequestWorkers 150, apache.KeepAliveTimeout 5) — server-status showed 72 of its "
                  "131 busy workers idle in keep-alive, more than in any other state, at the fullest second it "
                  "answered; no request failed: they waited")
    # at the limit though the page answered (its own request on the last worker)
    assert any("keep-alive" in n for n in notes("apache-prefork", {}, held=held([(149, 140, 0)])))
    # not all held, or held mostly in another state (starting, writing): no note
    assert notes("apache-prefork", {}, held=held([(100, 90, 0)])) == []
    assert held([(149, 60, 80), None]) == held([(149, 20, 0), None]) == {}
    # never answered: no count of any state, so nothing said of keep-alive
    assert held([None, None]) == {}
    # nginx has no such cause: its waiting connections hold no worker
    assert ev.held_at([{"busy_workers": 5.0, "nginx_waiting": 900.0}], get_stack("nginx").causes) == {}


def test_oom_kills_and_unreadable_logs() -> None:
    out = notes("apache-prefork", {"reset": 40}, None, oom_kills=3, memory=64 * 2**20)
    assert out == ["the kernel killed server processes at the memory cap of 64 MiB — 3 server process(es) killed "
                   "(the cgroup's oom_kill count); the failures were 40 reset"]


def test_status_peaks_from_samples() -> None:
    rows = [{"fpm_active": 3.0, "fpm_max_children_reached": 4.0}, {"fpm_active": float("nan")},
            {"fpm_active": 5.0, "apache_busy": 20.0, "fpm_max_children_reached": 6.0}]
    causes = get_stack("apache-event").causes
    assert ev.status_peaks(rows, causes) == {"apache_busy": 20.0, "fpm_max_children_reached": 2.0}
    assert ev.status_peaks([], causes) == {}
    assert ev.status_peaks(rows, get_stack("nginx-apache").causes) == {"apache_busy": 20.0}


class FakeDeployment:
    def __init__(self, stack: Stack, lines: list[str] | None) -> None:
        self.stack, self.settings, self.lines = stack, effective_settings(stack, {}), lines
        self.plan = SimpleNamespace(own={})

    def log_lines(self, since: float, until: float) -> Iterator[str]:
        if self.lines is None:
            raise LabError("loadcmp-x-web: its log is unreadable (gone)")
        yield from self.lines


def test_examine_counts_the_window_and_says_when_it_cannot() -> None:
    lines = read("nginx-apache-web-upstream-timeout.log").splitlines()
    window = (epoch("2026-11-23T12:23:31.6Z"), epoch("2026-11-23T12:23:33Z"))
    found = ev.examine(FakeDeployment(get_stack("nginx-apache"), lines), window, {"http_5xx": 3}, [])  # type: ignore[arg-type]
    assert found.log_evidence == {"nginx.upstream_connect_timeout": 3} and found.warnings == []
    assert note(found.causes[0], {"http_5xx": 3}).endswith("logged 3 times; the failures were 3 http_5xx")
    found = ev.examine(FakeDeployment(get_stack("nginx"), None), window, {}, [])  # type: ignore[arg-type]
    assert found.log_evidence is None and found.causes == []
    assert found.warnings == ["server logs: loadcmp-x-web: its log is unreadable (gone); "
                              "no cause could be read from them"]


# --- a real trial --------------------------------------------------------------------------


@pytest.mark.docker
def test_overloaded_fpm_is_found_in_the_stored_trial(tmp_path, images, docker_client) -> None:  # type: ignore[no-untyped-def]
    from loadcmp.lab import cleanup
    from loadcmp.cli import cli
    from loadcmp.store.reader import load_results

    # 40 clients on a page that holds a worker 200 ms: php-fpm's 5 workers are all busy at once. All 5 start
    # at once (dynamic pm adds 1, 2, 4 ... a second), so its next check, within a second, finds them busy
    spares = [f"--set=fpm.{k}=5" for k in ("start_servers", "min_spare_servers", "max_spare_servers")]
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "40", "-t", "2", "--warmup", "0", *spares,
                                   "--page", "/sleep.php?ms=200", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    trial = load_results(json.loads(res.stdout)["results_dir"]).trials[0]
    assert trial["log_evidence"].get("fpm.max_children", 0) >= 1, trial
    assert not any(k.startswith("nginx.worker_connections") for k in trial["log_evidence"])
    rec = next(c for c in trial["causes"] if c["cause"] == "fpm.max_children")
    assert rec["setting"] == "fpm.max_children" and rec["value"] == 5 and rec["logged"] >= 1, rec
    said = note(rec, trial["result"]["failures"])
    assert "(fpm.max_children 5)" in said and "'[pool www] server reached pm.max_children setting (5)' logged" in said
    assert cleanup.labelled(docker_client) == []
