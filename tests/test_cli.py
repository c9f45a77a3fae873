"""The command line: one line and the documented exit code for every mistake; `servers --json`; Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import time

import click
import pytest
from click.testing import CliRunner

from loadcmp.lab import stacks as st
from loadcmp.cli import cli
from loadcmp.cli.app import stop_on_signals
from loadcmp.errors import Interrupted


def test_cli_run_reports_every_problem_exit_2(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('servers = 3\nwarp = 9\n')
    res = CliRunner().invoke(cli, ["run", str(f)])
    assert res.exit_code == 2
    assert "bad.toml:1" in res.output and "bad.toml:2" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(
    "args, needle",
    [
        (["up", "--server", "iis"], "unknown server"),
        (["up", "--server", "nginx", "--set", "nginx.bogus=1"], "unknown setting"),
        (["up", "--server", "nginx", "--server-memory", "lots"], "bad --server-memory 'lots'"),
        (["up", "--server", "nginx", "--server-memory", "900g"], "more than this machine has"),
        (["run", "--server", "nginx", "-c", "0"], "clients"),
        (["run", "--server", "nginx", "--server-cpus", "7"], "CPU"),
    ],
)
def test_cli_usage_errors(args, needle):
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output


def test_servers_json():
    res = CliRunner().invoke(cli, ["servers", "--json"])
    doc = json.loads(res.stdout)
    assert [s["name"] for s in doc["servers"]] == st.catalog().names()
    assert all(s["description"] for s in doc["servers"])


@pytest.mark.parametrize(
    "args, needle",
    [
        (["up", "--server", "nginx", "--server-cpus", "5-2"], "backwards"),
        (["run", "--server", "nginx", "--server-cpus", "5-2"], "backwards"),
        (["bench", "http://127.0.0.1:9/", "--client-cpus", "3-1"], "backwards"),
        (["run", "--server", "nginx", "-t", "250us", "--warmup", "2d"], "--warmup"),
    ],
)
def test_cli_unit_errors_are_one_line_before_anything_starts(args, needle):
    """Issue 14: a descending CPU set used to pass as an empty set and end in Docker's 400 and a traceback."""
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(
    "args, needle",
    [
        (["bench", "http://127.0.0.1:1/", "--schedule", "rate", "--rate", "nan"], "--rate"),
        (["bench", "http://127.0.0.1:1/", "--schedule", "rate", "--rate", "inf"], "--rate"),
        (["bench", "http://127.0.0.1:1/", "--schedule", "rate", "--rate", "-5"], "--rate"),
        (["bench", "http://127.0.0.1:1/", "-t", "soon"], "-t/--time"),
        (["bench", "http://127.0.0.1:1/", "--workers", "0"], "--workers"),
        (["bench", "http://127.0.0.1:1/", "-c", "10,20"], "one concurrency level"),
        (["bench", "http://127.0.0.1:1/", "--bogus"], "No such option"),
        (["run", "--trials", "0"], "--trials"),
        (["run", "--warmup", "-1s"], "--warmup"),
        (["up", "--server", "nginx", "--port", "70000"], "--port"),
        (["smoke", "-c", "x"], "concurrency"),
    ],
)
def test_bad_flags_are_one_line_exit_2(args, needle):
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output


def test_help_and_version_exit_0():
    assert CliRunner().invoke(cli, ["--help"]).exit_code == 0
    res = CliRunner().invoke(cli, ["--version"])
    assert res.exit_code == 0 and "loadcmp" in res.output


def test_a_second_ctrl_c_stops_at_once_and_the_handler_is_restored():
    from loadcmp.load.run.workers import Stopper

    before = signal.getsignal(signal.SIGINT)
    with stop_on_signals(Stopper()) as stopper:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert stopper.requested
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_as_ctrl_c_does_and_a_second_one_at_once(sig):
    from loadcmp.cli.app import StopNow, exit_code_of
    from loadcmp.load.run.workers import Stopper

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    with stop_on_signals(Stopper()) as stopper:
        os.kill(os.getpid(), sig)
        time.sleep(0.05)
        assert stopper.requested and stopper.signum == sig
        with pytest.raises(StopNow) as e:
            os.kill(os.getpid(), signal.SIGINT)  # any second signal: the first one's code stays the news
            time.sleep(0.5)
    assert {s: signal.getsignal(s) for s in before} == before
    assert exit_code_of(e.value) == 128 + signal.SIGINT
    try:  # click turns a KeyboardInterrupt into Abort (`from None`): the signal is still read
        try:
            raise StopNow(sig)
        except KeyboardInterrupt:
            raise click.Abort() from None
    except click.Abort as abort:
        assert exit_code_of(abort) == 128 + sig
    assert exit_code_of(Interrupted(signum=sig)) == 128 + sig
    assert str(Interrupted(signum=sig)) == f"interrupted by {signal.Signals(sig).name}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_bench_sent_sigterm_or_sighup_keeps_what_it_measured_and_exits_128_plus_it(sig, faulty, tmp_path):
    """What `timeout`, a cancelled CI job or a closed terminal do to a load: the figures of the
    part measured are printed and stored, `interrupted`, and the exit code names the signal."""
    import subprocess
    import sys

    before = faulty.requests  # the server is the module's: count from here
    proc = subprocess.Popen([sys.executable, "-m", "loadcmp", "bench", faulty.url("/ok"), "-c", "2", "-t", "60",
                             "--json", "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 30
        while faulty.requests < before + 20 and time.monotonic() < deadline:  # the load runs
            time.sleep(0.05)
        assert faulty.requests >= before + 20, "the load never started"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err
    assert f"interrupted by {signal.Signals(sig).name}" in err and "Traceback" not in err
    doc = json.loads(out)
    assert doc["interrupted"] and doc["ok"] > 0 and doc["duration_s"] < 30
    (folder,) = tmp_path.iterdir()
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "interrupted" and run["trials"][0]["status"] == "interrupted"


def test_ctrl_c_after_a_load_still_interrupts(faulty):
    """A load must leave no signal handler behind (uvloop's outlived the loop once)."""
    from loadcmp.load.run.workers import Stopper, run_load
    from loadcmp.load.driver import LoadSpec
    from loadcmp.load.target import make_target
    from loadcmp.load.schedules import Closed

    spec = LoadSpec(make_target(faulty.url("/ok"), keepalive=True), Closed(2), 0.5)
    before = signal.getsignal(signal.SIGINT)
    with stop_on_signals(Stopper()) as stopper:
        run_load(spec, stopper=stopper)
    assert signal.getsignal(signal.SIGINT) is before
    run_load(spec)
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)


def test_debug_flag_shows_a_crashed_workers_traceback():
    """`--debug` (or LOADCMP_DEBUG=1) is where the one-line bug message points."""
    import logging

    from loadcmp.load.run.workers import _worker_failed

    log = logging.getLogger("loadcmp")
    before, level = list(log.handlers), log.level
    try:
        r = CliRunner().invoke(cli, ["--debug", "servers", "--json"])
        assert r.exit_code == 0, r.output
        added = [h for h in log.handlers if h not in before]
        assert len(added) == 1
        records: list[str] = []
        added[0].emit = lambda rec: records.append(added[0].format(rec))  # type: ignore[method-assign]
        err = _worker_failed(1, None, "RuntimeError: boom", "Traceback (most recent call last):\n  boom")
        assert "--debug" in str(err)
        assert records and records[0].startswith("debug: load worker 1 failed") and "Traceback" in records[0]
    finally:
        log.handlers[:] = before
        log.setLevel(level)


def test_servers_tunables_name_the_stacks_that_take_each_key_and_its_bounds():
    """Not "its stacks": the stacks by name (or every stack), and the values a key takes, in the table and --json."""
    from loadcmp.lab import stacks

    res = CliRunner().invoke(cli, ["servers", "--tunables", "--json"])
    assert res.exit_code == 0, res.output
    found = json.loads(res.stdout)["tunables"]
    fpm = stacks.get_stack("nginx").tunables["fpm.max_children"]
    with_fpm = [s.name for s in stacks.catalog() if "fpm.max_children" in s.tunables]
    assert found["fpm.max_children"]["stacks"] == with_fpm and "apache-prefork" not in with_fpm
    assert (found["fpm.max_children"]["min"], found["fpm.max_children"]["max"]) == (fpm.min, fpm.max)
    assert found["fpm.pm"]["choices"] == ["static", "dynamic", "ondemand"]
    assert found["db.max_connections"]["stacks"] == [] and found["db.max_connections"]["apps"] == ["wordpress"]
    res = CliRunner().invoke(cli, ["servers", "--tunables"], env={"COLUMNS": "300"})
    assert res.exit_code == 0 and "its stack" not in res.output
    row = next(line for line in res.output.splitlines() if "fpm.max_children" in line)
    assert f"{fpm.min:,}..{fpm.max:,}" in row and ", ".join(with_fpm[:2]) in row
    row = next(line for line in res.output.splitlines() if "fpm.pm " in line)
    assert "static | dynamic | ondemand" in row
    # a stack whose checks keep a key at its default does not take it: named apart, from the stack files' data
    cat = stacks.catalog()
    for key in ("h2.max_concurrent_streams", "h2.max_workers", "tls.tickets"):
        fixed = [s.name for s in cat if key in s.tunables and s.fixes(key)]
        assert fixed and found[key]["fixed"] == fixed and not set(fixed) & set(found[key]["stacks"])
        assert found[key]["stacks"] == [s.name for s in cat if key in s.tunables and s.name not in fixed]
    assert "caddy" in found["tls.tickets"]["fixed"] and "nginx" in found["h2.max_workers"]["fixed"]
    assert "apache-event" in found["h2.max_workers"]["stacks"] and "Caddyfile" not in found["h2.window_size"]["doc"]
    row = " ".join(res.output.split("│ h2.max_workers ")[1].split("│ apache.")[0].split())
    assert "every stack" not in row and "(fixed on nginx, nginx-apache, caddy, lighttpd)" in row
    everywhere = [k for k, v in found.items() if len(v["stacks"]) == len(stacks.catalog().names())]
    assert everywhere and all("every stack" in next(x for x in res.output.splitlines() if f"│ {k} " in x)
                              for k in everywhere)


@pytest.mark.parametrize("command, hidden", [("capacity", ("-c,", "-t,", "-n,", "--rate")),
                                             ("tune", ("-t,", "-n,", "--rate"))])
def test_help_leaves_out_the_load_flags_a_search_refuses(command, hidden):
    """`capacity --help` listed -c, -t, -n and --rate, which it then refused: they are read (to say why) but
    not offered."""
    text = CliRunner().invoke(cli, [command, "--help"], env={"COLUMNS": "200"}).output
    flags = {line.split()[0] for line in text.splitlines() if line.strip().startswith("-")}
    assert not flags & set(hidden) and {"--schedule", "--slo", "-k,", "--max-inflight"} <= flags
    if command == "tune":
        assert "-c," in flags  # tune -c N: the req/s at N clients is the objective
    res = CliRunner().invoke(cli, [command, "--server", "nginx", "--slo", "p99<1s", "-t", "5"])
    assert res.exit_code == 2 and "-t/--time: a probe lasts --probe-time" in res.output


def test_a_trial_line_says_interrupted_once_and_no_latency_as_a_dash(monkeypatch):
    """"interrupted: interrupted" and "p99 0.0 ms" for a trial stopped before any request ended."""
    import io
    from types import SimpleNamespace

    from loadcmp.cli.run import SweepDisplay

    disp = SweepDisplay()
    out = io.StringIO()
    # the shared stderr console: its own `_file` (None: whatever sys.stderr is then) is put back after, so
    # that later tests' CliRunner still captures it
    monkeypatch.setattr(disp.progress.console, "_file", out)
    p = SimpleNamespace(label="nginx", level=10, trial=1)
    none = {k: None for k in ("p50", "p75", "p90", "p95", "p99", "p99_9", "max", "min", "mean")}
    result = {"ok": 0, "failed": 0, "rps": 0.0, "latency_ms": none, "failures": {}, "started": 10,
              "duration_s": 0.4, "schedule": {"kind": "closed"}}
    disp.trial_end(p, {"status": "interrupted", "reason": "interrupted", "result": result})  # type: ignore[arg-type]
    disp.trial_end(p, {"status": "oom", "reason": "the server was killed for memory (OOMKilled)",  # type: ignore
                       "result": {**result, "ok": 5, "latency_ms": {**none, "p99": 12.25}}})
    first, second = (" ".join(x.split()) for x in out.getvalue().split("#1:")[1:])
    assert first == "ok 0 failed 0 0 req/s p99 – interrupted nginx c=10"  # the next line's start
    assert second == "ok 5 failed 0 0 req/s p99 12.2 ms oom: the server was killed for memory (OOMKilled)"
