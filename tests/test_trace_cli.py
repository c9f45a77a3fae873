"""--trace and --trace-sample as a user gives them: a bad share refused in one line (exit 2, nothing started) on
every command that loads, from a file too; the run.json of a traced bench keeps both, and its requests.parquet
one row per counted request (docs/tracing.md)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.experiment.spec import RunSpec, load_experiment
from loadcmp.errors import ConfigError


@pytest.mark.parametrize("command", [["run", "--server", "nginx"], ["smoke", "--server", "nginx"],
                                     ["capacity", "--server", "nginx"], ["tune", "--server", "nginx"],
                                     ["bench", "http://127.0.0.1:9/"]])
@pytest.mark.parametrize("share", ["2", "0", "-0.5"])
def test_a_share_out_of_bounds_is_one_line_and_exit_2(command, share):
    res = CliRunner().invoke(cli, [*command, "--trace-sample", share])
    assert res.exit_code == 2, res.output
    assert f"--trace-sample {float(share):g}: a share of the requests" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_a_file_traces_and_refuses_a_bad_share(tmp_path):
    f = tmp_path / "exp.toml"
    f.write_text('servers = ["nginx"]\ntrace = true\ntrace_sample = 0.25\n')
    spec = RunSpec(**load_experiment(f)[0])
    assert spec.trace and spec.trace_share == 0.25
    assert spec.to_dict()["trace"] is True and spec.to_dict()["trace_sample"] == 0.25
    assert RunSpec().trace_share == 0.0
    f.write_text('servers = ["nginx"]\ntrace = true\ntrace_sample = 2\n')
    with pytest.raises(ConfigError, match="exp.toml:3: trace_sample: expected a share of the requests"):
        load_experiment(f)


def test_a_traced_bench_stores_its_rows(faulty, tmp_path):
    import pyarrow.parquet as pq

    res = CliRunner().invoke(cli, ["bench", faulty.url("/ok"), "-c", "4", "-t", "1s", "-k", "--trace-sample", "0.5",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    folder = next(tmp_path.iterdir())
    run = json.loads((folder / "run.json").read_text())
    assert run["spec"]["trace"] is True and run["spec"]["trace_sample"] == 0.5
    result = run["trials"][0]["result"]
    table = pq.read_table(folder / "requests.parquet")
    assert table.num_rows == result["traced"] > 0
    kinds = table.column("kind").to_pylist()
    assert kinds.count("ok") <= result["ok"] and set(kinds) <= {"ok", "unfinished"}
    assert result["traced"] < result["started"]  # about half of them


def test_a_json_row_says_how_many_requests_were_traced():
    from loadcmp.load.record.summary import over_trials

    docs = [{"started": 100, "ok": 100, "traced": 10}, {"started": 100, "ok": 100, "traced": 21}]
    row = over_trials(docs)  # type: ignore[arg-type]
    assert row["traced"] == 15.5 and row["totals"]["traced"] == 31
    assert "traced" not in over_trials([{"started": 1, "ok": 1}])  # type: ignore[list-item]
