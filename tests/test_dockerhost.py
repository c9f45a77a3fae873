"""Stacks on another Docker engine (issue 12, part 3): which engine, where the servers
are reached, and the figures read through the Docker API alone (`apimetrics`)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from loadcmp.observe.apimetrics import inside_script, parse_answer, parse_proc_states, parse_stats, split_inside
from loadcmp.cli import cli
from loadcmp.lab.dockerhost import DockerHost, host_of, resolve
from loadcmp.errors import UsageError
from loadcmp.lab.render import render_plan
from loadcmp.lab.stacks import get_stack


def test_the_default_is_this_machine(monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    h = resolve()
    assert h == DockerHost() and h.bind == "127.0.0.1" and not h.remote
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/docker.sock")  # a local socket: nothing changes
    assert resolve() == DockerHost()


@pytest.mark.parametrize("url, address, bind", [
    ("tcp://10.1.2.3:2375", "10.1.2.3", "0.0.0.0"),
    ("ssh://me@servers.example:22", "servers.example", "0.0.0.0"),
    ("unix:///var/run/docker.sock", "127.0.0.1", "127.0.0.1"),
])
def test_another_engine_is_measured_through_its_api(monkeypatch, url, address, bind):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    h = resolve(url)
    assert h.remote and h.url == url and h.address == address and h.bind == bind
    monkeypatch.setenv("DOCKER_HOST", url)
    assert resolve().remote == (not url.startswith("unix://"))  # an explicit flag or a remote DOCKER_HOST
    assert resolve(url, "127.0.0.5").address == "127.0.0.5"


@pytest.mark.parametrize("url", ["ftp://x", "tcp://", "docker.example:2375"])
def test_bad_docker_hosts(url):
    with pytest.raises(UsageError):
        host_of(url)


def test_a_server_address_needs_another_engine_and_a_plain_host(monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    with pytest.raises(UsageError, match="needs --docker-host"):
        resolve(None, "10.0.0.1")
    for bad in ("http://x", "a b", "::1", ""):
        with pytest.raises(UsageError, match="--server-address"):
            resolve("tcp://10.0.0.1:2375", bad)


def test_the_front_listens_where_the_clients_reach_it_and_the_rest_on_loopback():
    stack = get_stack("nginx-apache")
    plan = render_plan(stack, {}, {"web": 20001, "backend": 20002}, bind="0.0.0.0")
    files = plan.config_files()
    assert "listen 0.0.0.0:20001" in files["web/nginx.conf"]
    assert "Listen 127.0.0.1:20002" in files["backend/apache2.conf"]
    local = render_plan(stack, {}, {"web": 20001, "backend": 20002})
    assert "listen 127.0.0.1:20001" in local.config_files()["web/nginx.conf"]


STATS_V1 = {
    "cpu_stats": {"cpu_usage": {"total_usage": 41754491129}},
    "memory_stats": {"usage": 42008576, "max_usage": 63180800, "failcnt": 3,
                     "stats": {"total_inactive_file": 9027584, "total_rss": 23654400}},
    "pids_stats": {"current": 7},
}
STATS_V2 = {
    "cpu_stats": {"cpu_usage": {"total_usage": 5000}},
    "memory_stats": {"usage": 1000, "stats": {"inactive_file": 200, "anon": 700}},
    "pids_stats": {"current": 3},
}


def test_docker_stats_become_the_cgroup_readers_figures():
    assert parse_stats(STATS_V1) == {"cpu_ns": 41754491129, "mem_bytes": 42008576 - 9027584,
                                     "mem_rss_bytes": 23654400, "mem_limit_hits": 3, "threads": 7}
    assert parse_stats(STATS_V2) == {"cpu_ns": 5000, "mem_bytes": 800, "mem_rss_bytes": 700, "mem_limit_hits": None,
                                     "threads": 3}
    assert "mem_max_usage_bytes" not in parse_stats(STATS_V1)  # a lifetime peak is no trial's peak
    assert parse_stats({})["cpu_ns"] is None


def test_proc_net_tcp_states_are_named_as_ss_names_them():
    assert parse_proc_states("06 4120\n01 12\n0A 1\n03 5\nnoise\n") == {
        "TIME-WAIT": 4120, "ESTAB": 12, "LISTEN": 1, "SYN-RECV": 5}


def test_one_exec_reads_the_sockets_and_every_status_page():
    script = inside_script(8080, {"nginx": "/nginx_status", "fpm": "/fpm-status?json"}, "t1")
    assert script.count("/dev/tcp/127.0.0.1/8080") == 2 and ":1F90" in script and "/tmp/loadcmp-stop-t1" in script
    out = (b"01 3\n06 40\n--loadcmp-page-- nginx\nHTTP/1.1 200 OK\r\nServer: x\r\n\r\nActive connections: 3 \n"
           b"--loadcmp-page-- fpm\nHTTP/1.1 403 Forbidden\r\n\r\nno\n")
    counts, pages = split_inside(out)
    assert parse_proc_states(counts) == {"ESTAB": 3, "TIME-WAIT": 40}
    assert parse_answer(pages["nginx"]) == (200, "Active connections: 3 \n")
    assert parse_answer(pages["fpm"])[0] == 403 and parse_answer(b"")[0] == 0


def test_cli_refuses_bad_docker_flags_in_one_line():
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "--server-address", "10.0.0.1"])
    assert res.exit_code == 2 and "--server-address needs --docker-host" in res.output, res.output
    res = CliRunner().invoke(cli, ["up", "--server", "nginx", "--docker-host", "ftp://x"])
    assert res.exit_code == 2 and "bad --docker-host" in res.output, res.output


def test_an_engine_that_does_not_answer_is_one_line_exit_1():
    """One line says why, after the one line that warns of a plain-text engine."""
    res = CliRunner().invoke(cli, ["down", "--docker-host", "tcp://127.0.0.1:9"])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    warning, error = res.output.strip().splitlines()
    assert warning.startswith("warning: tcp://127.0.0.1:9 is a plain-text Docker engine"), res.output
    assert error == "error: no Docker engine answers at tcp://127.0.0.1:9 (Connection refused)", res.output


@pytest.mark.parametrize("given", ["DOCKER_HOST", "--docker-host"])
def test_no_engine_at_a_socket_names_its_url_and_why(given, tmp_path, monkeypatch):
    """docs/failures.md: `no Docker engine answers at URL (why)`, for this machine's engine too (not the name of
    docker-py's exception)."""
    url = f"unix://{tmp_path}/no-engine/docker.sock"
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    if given == "DOCKER_HOST":
        monkeypatch.setenv("DOCKER_HOST", url)
    res = CliRunner().invoke(cli, ["down", *(["--docker-host", url] if given != "DOCKER_HOST" else [])])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    (line,) = res.output.strip().splitlines()
    assert line.startswith(f"error: no Docker engine answers at {url} (No such file or directory)"), line
    assert "DockerException" not in line


def test_this_machines_engine_is_named_by_its_socket(monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert DockerHost().name == "unix:///var/run/docker.sock"


def test_cpu_time_is_read_a_little_late_between_two_readings():
    from loadcmp.observe.apimetrics import cpu_at

    pts = [(10.0, 1000), (11.0, 2000), (12.0, 4000)]
    assert cpu_at(10.5, pts) == 1500 and cpu_at(11.5, pts) == 3000
    assert cpu_at(9.0, pts) == 1000 and cpu_at(13.0, pts) == 4000
    assert cpu_at(11.5, [(10.0, 1000), (11.0, 2000), (12.0, None)]) == 2000
    assert cpu_at(11.5, [(10.0, 1000), (11.0, 2000), (12.0, 500)]) == 2000  # never backwards
    assert cpu_at(1.0, []) is None
