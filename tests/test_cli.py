"""The command line's edges: one line and the documented exit code for every mistake."""

from __future__ import annotations

import os
import signal
import time

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.cli.app import stop_on_sigint


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
    with stop_on_sigint(Stopper()) as stopper:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert stopper.requested
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
    assert signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_after_a_load_still_interrupts(faulty):
    """A load must leave no signal handler behind (uvloop's outlived the loop once)."""
    from loadcmp.load.workers import Stopper, run_load
    from loadcmp.load.engine import LoadSpec, make_target
    from loadcmp.load.schedules import Closed

    spec = LoadSpec(make_target(faulty.url("/ok"), keepalive=True), Closed(2), 0.5)
    before = signal.getsignal(signal.SIGINT)
    with stop_on_sigint(Stopper()) as stopper:
        run_load(spec, stopper=stopper)
    assert signal.getsignal(signal.SIGINT) is before
    run_load(spec)
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)
