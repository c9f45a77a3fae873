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
    from loadcmp.load.workers import Stopper

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
    from loadcmp.load.workers import Stopper

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
    from loadcmp.load.workers import Stopper, run_load
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

    from loadcmp.load.workers import _worker_failed

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
