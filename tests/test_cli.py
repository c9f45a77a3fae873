"""The command line: usage errors are one line and exit 2; `servers --json`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from loadcmp import stacks as st
from loadcmp.cli import cli


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
        (["up", "--server", "nginx", "--server-memory", "lots"], "bad size"),
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
    assert [s["name"] for s in doc["servers"]] == st.stack_names()
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
