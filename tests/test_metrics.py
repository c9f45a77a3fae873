"""The server-side parsers, from text fixtures (no Docker), and the sampler's error reporting."""

from __future__ import annotations

from types import SimpleNamespace

import json
import logging
import os
import shutil
import socket
import threading
import time
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typing import Any

from loadcmp.observe import metrics, statuspages

FIX = Path(__file__).parent / "fixtures" / "metrics"


def files(version: str) -> dict[str, str | None]:
    return {p.name: p.read_text() for p in (FIX / version).iterdir()}


# --- cgroups ----------------------------------------------------------------------------


def test_cgroup_v1():
    s = metrics.parse_cgroup_v1(files("cgroup-v1"))
    assert s == {
        "cpu_ns": 387640170343,
        "mem_bytes": 40382464 - 5480448,  # usage minus total_inactive_file
        "mem_rss_bytes": 2174976,
        "mem_max_usage_bytes": 100024320,
        "mem_limit_hits": 3,
        "oom_kills": 1,
        "threads": 29,
        "procs": 6,
    }


def test_cgroup_v2():
    s = metrics.parse_cgroup_v2(files("cgroup-v2"))
    assert s == {
        "cpu_ns": 370995569 * 1000,
        "mem_bytes": 45604864 - 2809856,  # memory.current minus inactive_file
        "mem_rss_bytes": 31285248,  # anon
        "mem_max_usage_bytes": 100024320,
        "mem_limit_hits": 17,  # memory.events max
        "oom_kills": 1,
        "threads": 29,
        "procs": 6,
    }


@pytest.mark.parametrize("parse", [metrics.parse_cgroup_v1, metrics.parse_cgroup_v2])
def test_cgroup_missing_files_are_none(parse):
    s = parse({})
    assert set(s.values()) == {None}


def test_cgroup_v2_without_memory_peak_and_pids_max():
    f = files("cgroup-v2")
    f["memory.peak"] = None  # kernels before 5.19 have no memory.peak
    f["pids.current"] = "max\n"  # not a number: read as unknown, not as an error
    s = metrics.parse_cgroup_v2(f)
    assert s["mem_max_usage_bytes"] is None and s["threads"] is None and s["cpu_ns"] == 370995569000


def test_cgroup_files_are_read_where_docker_puts_them(tmp_path, monkeypatch):
    cid = "f" * 64
    for name, ctrl in metrics.CGROUP_V1_FILES.items():
        d = tmp_path / ctrl / "docker" / cid
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIX / "cgroup-v1" / name, d / name)
    monkeypatch.setattr(metrics, "CG", tmp_path)
    cg = metrics.Cgroup(cid)
    assert cg.v1 and cg.available()
    assert cg.read() == metrics.parse_cgroup_v1(files("cgroup-v1"))
    cg.reset_peak()
    assert (tmp_path / "memory" / "docker" / cid / "memory.max_usage_in_bytes").read_text() == "0"

    v2 = tmp_path / "v2"
    scope = v2 / "system.slice" / f"docker-{cid}.scope"
    shutil.copytree(FIX / "cgroup-v2", scope)
    monkeypatch.setattr(metrics, "CG", v2)
    cg = metrics.Cgroup(cid)
    assert not cg.v1 and cg.available()
    assert cg.read() == metrics.parse_cgroup_v2(files("cgroup-v2"))


# --- sockets -----------------------------------------------------------------------------


def test_ss_output_counted_by_state():
    raw = (FIX / "ss-sport-8080.txt").read_text()
    counted = subprocess.run(["sh", "-c", metrics.COUNT_BY_STATE], input=raw, capture_output=True, text=True,
                             check=True).stdout
    states = metrics.parse_state_counts(counted)
    assert states == {"LISTEN": 1, "ESTAB": 4, "SYN-RECV": 1, "TIME-WAIT": 5, "FIN-WAIT-1": 1, "FIN-WAIT-2": 1,
                      "CLOSE-WAIT": 1, "LAST-ACK": 1}
    assert metrics.parse_state_counts("") == {}
    with pytest.raises(ValueError):
        metrics.parse_state_counts("ESTAB many\n")


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss")
def test_tcp_states_sees_a_listener():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert metrics.tcp_states(s.getsockname()[1]) == {"LISTEN": 1}


# --- status pages -----------------------------------------------------------------------


def _nginx() -> Any:
    from loadcmp.lab.stacks import get_stack

    return get_stack("nginx")


def page(stack: str, kind: str):
    from loadcmp.lab.stacks import get_stack

    return next(p for p in get_stack(stack).status if p.kind == kind)


@pytest.mark.parametrize("name, busy, idle, scoreboard", [
    ("mod_status-prefork.txt", 21, 4, {"reading": 1, "writing": 20, "keepalive": 1}),
    ("mod_status-event.txt", 48, 2, {"writing": 48}),
    # captured from apache-prefork holding 12 kept-alive connections idle and 3 half-sent requests (its page on a W)
    ("mod_status-prefork-keepalive.txt", 16, 0, {"reading": 3, "writing": 1, "keepalive": 12, "starting": 1})])
def test_mod_status_auto(name, busy, idle, scoreboard):
    parsed = statuspages.parse_page(page("apache-prefork", "apache"), (FIX / name).read_text())
    states = {f"apache_{k}": float(scoreboard.get(k, 0)) for k in ("reading", "writing", "keepalive", "closing",
                                                                     "starting", "other")}
    assert parsed == {"apache_busy": busy, "apache_idle": idle, **states}


def test_lighttpd_scoreboard_counts_connections_by_state():
    """Captured from lighttpd holding 12 kept-alive connections idle and 3 half-sent requests: one character per
    connection (its own status request handled: h), then _ per free slot, which no column counts."""
    parsed = statuspages.parse_page(page("lighttpd", "lighttpd"), (FIX / "lighttpd-status.txt").read_text())
    assert parsed == {"lighttpd_busy": 16, "lighttpd_idle": 1349, "lighttpd_accesses": 1, "lighttpd_reading": 3,
                      "lighttpd_handling": 1, "lighttpd_writing": 0, "lighttpd_keepalive": 12, "lighttpd_closing": 0}


def test_a_page_without_its_scoreboard_gives_no_counts():
    assert statuspages.parse_page(page("apache-prefork", "apache"), "BusyWorkers: 3\nIdleWorkers: 2\n") == {
        "apache_busy": 3, "apache_idle": 2}


def test_every_state_a_stack_shows_is_a_column_of_its_pages():
    from loadcmp.lab.stacks import get_stack

    for name in ("apache-prefork", "apache-event", "nginx", "nginx-apache", "lighttpd"):
        pages = get_stack(name).status
        states = {col for p in pages for col, _ in p.states}
        assert states and states <= {col for p in pages for col, _ in p.fields}, name


def test_nginx_stub_status():
    assert statuspages.parse_page(page("nginx", "nginx"), (FIX / "stub_status.txt").read_text()) == {
        "nginx_active": 291, "nginx_reading": 6, "nginx_writing": 179, "nginx_waiting": 106}


def test_fpm_status_json():
    fpm = page("nginx", "fpm")
    assert statuspages.parse_page(fpm, (FIX / "fpm-status.json").read_text()) == {
        "fpm_active": 4, "fpm_idle": 1, "fpm_queue": 3, "fpm_max_children_reached": 2}
    with pytest.raises(ValueError):
        statuspages.parse_page(fpm, "<html>File not found.</html>")
    with pytest.raises(ValueError):
        statuspages.parse_page(fpm, json.dumps([1, 2]))


def test_prometheus_metrics_are_summed_over_their_labels():
    text = """# HELP caddy_http_requests_in_flight Number of requests currently handled by this server.
# TYPE caddy_http_requests_in_flight gauge
caddy_http_requests_in_flight{handler="subroute",server="srv0"} 3
caddy_http_requests_in_flight{handler="reverse_proxy",server="srv0"} 4
caddy_http_requests_in_flight_total 99
go_goroutines 12
"""
    fields = (("in_flight", "caddy_http_requests_in_flight"), ("goroutines", "go_goroutines"), ("none", "absent"))
    assert statuspages.parse_prometheus(text, fields) == {"in_flight": 7.0, "goroutines": 12.0}


def test_busy_workers_front_server_first():
    both = ("apache_busy", "fpm_active")
    assert statuspages.with_busy_workers({"apache_busy": 3.0, "fpm_active": 7.0}, both)["busy_workers"] == 3.0
    assert statuspages.with_busy_workers({"nginx_active": 9.0, "fpm_active": 7.0}, both)["busy_workers"] == 7.0
    assert "busy_workers" not in statuspages.with_busy_workers({"nginx_active": 9.0}, both)


def test_every_stack_reads_its_busy_workers_from_its_own_pages():
    from loadcmp.lab import stacks as st

    for s in st.catalog():
        columns = {c for p in s.status for c, _ in p.fields}
        assert s.status and set(s.busy_workers) <= columns, s.name


# --- summary ----------------------------------------------------------------------------


def test_summarize():
    rows = [
        {"second": 0, "cpu_pct": 50.0, "mem_bytes": 100, "mem_max_usage_bytes": 300, "threads": 5, "procs": 2,
         "tcp_total": 10, "tcp_estab": 8, "busy_workers": 4.0, "oom_kills": 0, "mem_limit_hits": 0},
        {"second": 1, "cpu_pct": 150.0, "mem_bytes": 200, "mem_max_usage_bytes": 350, "threads": 7, "procs": 3,
         "tcp_total": 12, "tcp_estab": 9, "busy_workers": 6.0, "oom_kills": 1, "mem_limit_hits": 2},
    ]
    s = metrics.summarize(rows)
    assert s == {"cpu_pct": 100.0, "cpu_pct_max": 150.0, "mem_peak_bytes": 350, "mem_mean_bytes": 150,
                 "pids_peak": 7, "procs_peak": 3, "tcp_peak": 12, "tcp_established_peak": 9,
                 "busy_workers_peak": 6.0, "oom_kills": 1, "mem_limit_hits": 2, "samples": 2}
    no_peak = [{k: v for k, v in r.items() if k != "mem_max_usage_bytes"} for r in rows]
    assert metrics.summarize(no_peak)["mem_peak_bytes"] == 200
    assert metrics.summarize([])["samples"] == 0


# --- the sampler: errors become warnings, sampling goes on ---------------------------------------


@dataclass
class FakeContainer:
    id: str
    attrs: dict[str, Any] = field(default_factory=lambda: {"State": {"Pid": os.getpid()},
                                                           "HostConfig": {"NetworkMode": "host"}})


@dataclass
class FakeDeployment:
    port: int
    containers: list[FakeContainer] = field(default_factory=list)

    stack: Any = field(default_factory=_nginx)
    settings: dict[str, Any] = field(default_factory=dict)
    plan: Any = field(default_factory=lambda: SimpleNamespace(rendered=(), cafile=None))
    host: Any = field(default_factory=lambda: SimpleNamespace(remote=False))

    @property
    def front(self) -> FakeContainer:
        return self.containers[0] if self.containers else FakeContainer("f" * 64)

    @property
    def status_pages(self) -> dict[str, Any]:
        return {"nginx": page("nginx", "nginx")}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_sampler_records_errors_as_warnings_and_keeps_sampling(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(metrics, "CG", tmp_path)  # no cgroup files at all
    dep = FakeDeployment(closed_port(), [FakeContainer("a" * 64)])
    caplog.set_level(logging.DEBUG, logger="loadcmp")
    sampler = metrics.Sampler(dep, metrics.now() - 0.9, {"server": "x"}, seconds=2)  # type: ignore[arg-type]
    sampler.start()
    assert sampler._thread is not None
    sampler._thread.join(timeout=5)  # the window is 2 s from t0: let it run out
    rows = sampler.stop()
    assert [r["second"] for r in rows] == [0, 1], "every second sampled despite the errors"
    assert all(r["server"] == "x" and "tcp_total" in r for r in rows)
    w = [x for x in sampler.warnings if "ss (TCP states)" not in x]  # hosts without `ss` add one more
    assert len(w) == 2, sampler.warnings
    assert any("no cgroup files for container aaaaaaaaaaaa" in x and "(3 times)" in x for x in w)
    assert any("nginx status page: ConnectionRefusedError" in x and "(2 times)" in x for x in w)
    assert all("\n" not in x for x in w)
    tracebacks = [r for r in caplog.records if r.exc_info and "status page" in r.getMessage()]
    assert len(tracebacks) == 1, "the first of each kind is logged with its traceback"


def test_the_warm_up_is_sampled_for_the_live_page_alone(tmp_path, monkeypatch):
    """With a page to tell (`on_row`), the warm-up's seconds are sampled too, as -2 and -1, and never kept: the
    stored rows are the window's; without one, the sampler waits for the window as ever."""
    monkeypatch.setattr(metrics, "CG", tmp_path)
    dep = FakeDeployment(closed_port(), [FakeContainer("d" * 64)])
    told: list[int] = []
    sampler = metrics.Sampler(dep, metrics.now() + 2.1, {"server": "x"}, seconds=1,  # type: ignore[arg-type]
                              on_row=lambda r: told.append(r["second"]), warmup=2.0).start()
    assert sampler._thread is not None
    sampler._thread.join(timeout=10)
    assert told == [-2, -1, 0] and [r["second"] for r in sampler.stop()] == [0]
    quiet = metrics.Sampler(dep, metrics.now() + 1.1, {"server": "x"}, seconds=1, warmup=2.0).start()  # type: ignore[arg-type]
    assert quiet._thread is not None
    quiet._thread.join(timeout=10)
    assert [r["second"] for r in quiet.stop()] == [0]


def test_sampler_bug_is_reported_not_swallowed(monkeypatch):
    def broken(self: metrics.Sampler) -> None:
        raise KeyError("oops")

    monkeypatch.setattr(metrics.Sampler, "_sample_window", broken)
    sampler = metrics.Sampler(FakeDeployment(closed_port()), metrics.now(), seconds=1)  # type: ignore[arg-type]
    sampler.start()
    assert sampler.stop() == []
    assert sampler.warnings == ["server sampling: stopped after 0 samples: KeyError: 'oops'"]


def test_a_load_that_stops_inside_a_second_still_gets_its_last_part_sampled(tmp_path, monkeypatch):
    """-n often ends a trial in under a second: without this sample it would have no server figures."""
    monkeypatch.setattr(metrics, "CG", tmp_path)
    dep = FakeDeployment(closed_port(), [FakeContainer("b" * 64)])
    sampler = metrics.Sampler(dep, metrics.now(), {"server": "x"}, seconds=30).start()
    time.sleep(0.5)
    rows = sampler.stop()
    assert [r["second"] for r in rows] == [0]
    sampler = metrics.Sampler(dep, metrics.now(), {"server": "x"}, seconds=30).start()
    time.sleep(0.05)  # too short a part to say anything
    assert sampler.stop() == []


def slow_first_samples(monkeypatch: pytest.MonkeyPatch, n: int, seconds: float) -> threading.Event:
    """The first `n` samples each take `seconds` (a status page or `ss` that hangs)."""
    started = threading.Event()
    left = [n]

    def tcp_states(self: metrics.Sampler) -> dict[str, int]:
        started.set()
        if left[0] > 0:
            left[0] -= 1
            time.sleep(seconds)
        return {}

    monkeypatch.setattr(metrics.Sampler, "tcp_states", tcp_states)
    return started


def test_a_second_due_while_a_slow_sample_ran_is_still_sampled_after_stop(tmp_path, monkeypatch):
    """The load stops while second 0's sample still reads: second 1 fell due before, and is kept."""
    monkeypatch.setattr(metrics, "CG", tmp_path)
    started = slow_first_samples(monkeypatch, 1, 2.0)
    dep = FakeDeployment(closed_port(), [FakeContainer("c" * 64)])
    sampler = metrics.Sampler(dep, metrics.now() - 0.9, {"server": "x"}, seconds=30).start()
    assert started.wait(timeout=5)
    time.sleep(0.9)  # second 1 falls due now; the first sample reads for another second
    rows = sampler.stop()
    assert [r["second"] for r in rows] == [0, 1]


def test_a_sampler_behind_takes_one_last_sample_after_stop_not_every_second_it_missed(tmp_path, monkeypatch):
    """Samples slower than a second put the sampler ever further behind: stop must still end it."""
    monkeypatch.setattr(metrics, "CG", tmp_path)
    started = slow_first_samples(monkeypatch, 100, 1.1)
    dep = FakeDeployment(closed_port(), [FakeContainer("d" * 64)])
    sampler = metrics.Sampler(dep, metrics.now() - 0.9, {"server": "x"}).start()  # no end of its own
    assert started.wait(timeout=5)
    time.sleep(3.0)  # three slow samples: seconds 0-1 taken, 2 under way, 3 and 4 due or nearly
    t = metrics.now()
    rows = sampler.stop()
    assert metrics.now() - t < 3.0, "stop waits for at most the sample under way and one more"
    assert sampler._thread is not None and not sampler._thread.is_alive()
    n = len(rows)
    assert [r["second"] for r in rows] == list(range(n)) and 2 <= n <= 5
    time.sleep(1.2)
    assert len(sampler.rows) == n, "no sample after stop returned"
