"""Bad input tried as a new user would: one line, exit 1 or 2, no traceback, and no load
sent (so nothing measured is lost to a mistake found afterwards)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli

pytestmark = pytest.mark.usefixtures("loop_path")  # both closed loops (conftest)


def _one_line(res, code: int) -> str:
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    lines = [x for x in res.output.strip().splitlines() if x.strip()]
    assert len(lines) == 1, res.output
    return lines[0]


@pytest.mark.parametrize("url", ["http://127.0.0.1:0/", "http://127.0.0.1:99999/", "http://127.0.0.1:-1/"])
def test_a_port_outside_1_to_65535_is_refused(url):
    assert "the port is not a number in 1..65535" in _one_line(CliRunner().invoke(cli, ["bench", url, "-t", "1"]), 2)


def test_an_equals_sign_after_a_short_flag_is_not_part_of_the_value():
    line = _one_line(CliRunner().invoke(cli, ["bench", "http://127.0.0.1:1/", "-c=-5", "-t", "1"]), 2)
    assert "bad concurrency '-5'" in line and "'=" not in line


@pytest.mark.parametrize("rate", ["nan", "inf", "-inf", "0"])
def test_a_rate_that_is_no_finite_positive_number_is_refused(rate):
    res = CliRunner().invoke(cli, ["bench", "http://127.0.0.1:1/", "--schedule", "rate", "--rate", rate, "-t", "1"])
    assert "--rate" in _one_line(res, 2)


def test_absurdly_many_clients_get_no_workers_advice():
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no open-file limit here")
    line = _one_line(CliRunner().invoke(cli, ["bench", "http://127.0.0.1:1/", "-c", "99999999999", "-t", "1"]), 1)
    assert "99,999,999,999 clients are more than this machine can hold open" in line and "use fewer clients" in line
    assert "--workers" not in line


def test_an_unwritable_out_is_refused_before_any_request(faulty):
    res = CliRunner().invoke(cli, ["bench", faulty.url("/ok"), "-c", "2", "-t", "1", "--out", "/proc/nope/x"])
    assert "--out /proc/nope/x" in _one_line(res, 2)
    assert faulty.requests == 0, "no load may be sent before the output is known to be writable"


@pytest.mark.parametrize("flag", ["--junit", "--summary"])
def test_smoke_refuses_an_unwritable_report_file_before_starting(flag, monkeypatch, tmp_path):
    import loadcmp.cli.smoke as smoke_cli

    monkeypatch.setattr(smoke_cli, "sweep", lambda *a, **k: pytest.fail("the sweep must not start"))
    line = _one_line(CliRunner().invoke(cli, ["smoke", flag, "/proc/nope/out.xml"]), 2)
    assert f"{flag} /proc/nope/out.xml" in line
    folder = tmp_path / "a-folder"
    folder.mkdir()
    res = CliRunner().invoke(cli, ["smoke", flag, str(folder)])
    assert res.exit_code == 2 and "Traceback" not in res.output


NO_ENGINE = "unix:///nonexistent/loadcmp-test-docker.sock"
"""A Docker engine that is not there: a command that asked it anything would fail with exit 1, not 2."""

OUTPUTS = [
    ["run", "--server", "nginx", "-c", "1", "-t", "1", "--out", "/proc/nope"],
    ["capacity", "--server", "nginx", "--slo", "p99<1s", "--out", "/proc/nope"],
    ["tune", "--server", "nginx", "--param", "fpm.max_children=2..20", "--slo", "p99<1s", "--trials", "2",
     "--out", "/proc/nope"],
    ["smoke", "--server", "nginx", "--out", "/proc/nope"],
    ["smoke", "--server", "nginx", "--junit", "/proc/nope/j.xml"],
    ["smoke", "--server", "nginx", "--summary", "/proc/nope/summary.md"],
    ["report", "tests/fixtures/run-2x3x2", "--out", "/proc/nope"],
    ["seeds", "--out", "/proc/nope"],
    ["seeds", "--docs", "/proc/nope/seeds.md"],
    ["bench", "http://127.0.0.1:9/", "-t", "1", "--out", "/proc/nope"],
    ["run", "--server", "nginx", "-c", "1", "-t", "1", "--out", f"/tmp/{'a' * 300}/x"],  # a name too long (an OSError)
    ["smoke", "--server", "nginx", "--junit", f"/tmp/{'a' * 300}/j.xml"],
]


@pytest.mark.parametrize("args", OUTPUTS, ids=lambda a: " ".join(a[:1] + a[-2:-1]))
def test_every_output_path_is_exit_2_before_any_container_or_load(args, monkeypatch):
    """docs/commands.md: output paths are bad usage, checked before anything starts. The engine named
    here does not exist, so a command that reached it (an image check, a container) would exit 1."""
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    monkeypatch.delenv("LOADCMP_CLUSTER", raising=False)
    line = _one_line(CliRunner().invoke(cli, args), 2)
    assert line.startswith("error: ") and args[-1] in line and args[-2] in line


def test_a_folder_check_leaves_nothing_behind(tmp_path, monkeypatch):
    """A bad run after a good --out leaves no folder made for it (the check makes and removes one)."""
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    out = tmp_path / "deep" / "results"
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "0", "--out", str(out)])
    assert res.exit_code == 2 and not (tmp_path / "deep").exists()
    (tmp_path / "afile").write_text("x")
    line = _one_line(CliRunner().invoke(cli, ["report", "tests/fixtures/run-2x3x2", "--out",
                                              str(tmp_path / "afile" / "sub")]), 2)
    assert "is a file, so no folder can be made under it" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_bench_where_every_request_failed_says_so_and_exits_1(faulty):
    res = CliRunner().invoke(cli, ["bench", faulty.url("/404"), "-c", "2", "-t", "1", "--json"])
    assert res.exit_code == 1, res.output
    assert "every request failed (" in res.stderr and "http_4xx)" in res.stderr
    doc = json.loads(res.stdout)  # the measurement is printed all the same
    assert doc["ok"] == 0 and doc["failures"]["http_4xx"] > 0
    ok = CliRunner().invoke(cli, ["bench", faulty.url("/ok"), "-c", "2", "-t", "1"])
    assert ok.exit_code == 0 and "every request failed" not in ok.output


def test_a_load_where_no_request_ended_says_so(faulty):
    """A server that never answers within the window: not a table of zeros and exit 0."""
    res = CliRunner().invoke(cli, ["bench", faulty.url("/stall"), "-c", "2", "-t", "0.5", "--timeout", "5"])
    assert res.exit_code == 1, res.output
    assert "no request ended within the 0.5 s measured (all 2 requests were still unanswered)" in res.stderr


@pytest.mark.parametrize("flag", ["-n", "--trials", "--workers"])
def test_a_count_too_large_for_any_counter_is_one_line_not_an_overflow(flag, tmp_path):
    cmd = ["bench", "http://127.0.0.1:1/", "-t", "1"] if flag != "--trials" else ["run", "-t", "1"]
    res = CliRunner().invoke(cli, [*cmd, flag, "99999999999999999999"])
    assert "must be at most 1,000,000,000,000,000" in _one_line(res, 2)


def test_a_count_too_large_in_an_experiment_file_is_one_line(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('servers = ["nginx"]\nrequests = 9223372036854775807\n')
    res = CliRunner().invoke(cli, ["run", str(f)])
    assert res.exit_code == 2 and "must be at most 1,000,000,000,000,000" in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize("args, needle", [
    (["--docker-host", "tcp://127.0.0.1:9", "--tlscacert", "/nope/ca.pem"], "--tlscacert /nope/ca.pem: no readable"),
    (["--docker-host", "tcp://127.0.0.1:9", "--tlsverify"], "no ca.pem in "),
    (["--docker-host", "ssh://me@127.0.0.1", "--tlsverify"], "are for a tcp:// --docker-host, not ssh://"),
    (["--tlsverify"], "are for a tcp:// --docker-host, not the local socket"),
])
def test_tls_to_a_docker_engine_without_what_it_needs_is_one_line(args, needle, tmp_path, monkeypatch):
    """Before any engine is asked: a certificate file not there is named; TLS where nothing would use it is refused."""
    for var in ("DOCKER_HOST", "DOCKER_TLS_VERIFY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path))  # an empty folder: no ca.pem, cert.pem, key.pem
    for command in (["down"], ["run", "--server", "nginx", "-t", "1"]):
        assert needle in _one_line(CliRunner().invoke(cli, [*command, *args]), 2)


def test_server_cpus_this_machine_lacks_are_refused_only_for_this_machines_engine(monkeypatch):
    """Another machine's engine is asked for its own CPUs (tests/test_remote_engine.py); here none answers."""
    import os

    monkeypatch.delenv("DOCKER_HOST", raising=False)
    many = str(os.cpu_count() or 1)
    assert "this machine has CPUs" in _one_line(CliRunner().invoke(cli, ["run", "--server-cpus", many, "-t", "1"]), 2)
    res = CliRunner().invoke(cli, ["run", "--server-cpus", many, "-t", "1", "--docker-host", "ssh://me@127.0.0.1:9"])
    assert res.exit_code == 1 and "no Docker engine answers at ssh://me@127.0.0.1:9" in res.output, res.output
    assert "Traceback" not in res.output


TWICE = [
    (["run", "--server", "nginx", "-c", "5,5"], "concurrency level 5 is given twice"),
    (["smoke", "--server", "nginx", "-c", "10,20,10"], "concurrency level 10 is given twice"),
    (["run", "--server", "nginx", "--proto", "h1,h1"], "protocol h1 is given twice"),
    (["smoke", "--server", "nginx", "--tls", "--proto", "h1,h2,h2"], "protocol h2 is given twice"),
    (["capacity", "--server", "nginx", "--slo", "p99<1s", "--proto", "h1,H1"], "protocol h1 is given twice"),
    (["tune", "--server", "nginx", "--param", "fpm.max_children=2..20", "--slo", "p99<1s", "--proto", "h1,h1"],
     "protocol h1 is given twice"),
    (["run", "--app", "wordpress", "--server", "nginx", "--journey", "reader=1,reader=2"], "names 'reader' twice"),
]


@pytest.mark.parametrize("args, needle", TWICE, ids=lambda a: " ".join(a[-2:]) if isinstance(a, list) else "")
def test_a_level_protocol_or_journey_given_twice_is_one_line_before_anything_starts(args, needle, monkeypatch):
    """Given twice, a level or a protocol would run two trials of one cell, both #1, merged as if repeated: bad
    usage, said before any engine is asked (the one named here is not there: reaching it would be exit 1)."""
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    monkeypatch.delenv("LOADCMP_CLUSTER", raising=False)
    assert needle in _one_line(CliRunner().invoke(cli, args), 2)


@pytest.mark.parametrize("body, needle", [
    ("clients = [5, 10, 5]", "concurrency level 5 is given twice"),
    ('proto = ["h1", "h1"]', "protocol h1 is given twice"),
    ('app = "wordpress"\njourney = "reader=80,author=10,reader=10"', "names 'reader' twice"),
    ('[variants.fast]\nstack = "nginx"\nproto = ["h1", "h1"]', "protocol h1 is given twice"),
])
def test_an_experiment_file_that_gives_one_twice_is_refused_too(body, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    monkeypatch.delenv("LOADCMP_CLUSTER", raising=False)
    f = tmp_path / "x.toml"
    f.write_text(f'servers = ["nginx"]\n{body}\n')
    res = CliRunner().invoke(cli, ["run", str(f)])
    assert res.exit_code == 2 and needle in res.output and "Traceback" not in res.output, res.output
