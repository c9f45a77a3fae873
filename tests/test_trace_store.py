"""--trace's tables in the results folder (`store.traceparts`, `store.trialfiles`): requests.parquet and
parts.parquet hold a file per trial, a trial added leaves the others' files untouched, a trial written again
replaces its own rows, and an older run's single files are read as they are (and moved in when a trial is added)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.store import traceparts, trialfiles
from loadcmp.trace import join
from loadcmp.trace.rows import TraceRows, row_dtype

from test_trace_join import lines_of, requests_frame

FIXTURES = Path(__file__).parent / "fixtures"


def rows(n: int, first: int = 1) -> TraceRows:
    """n answered requests, 2 ms each, as a compiled loop hands them over."""
    a = np.zeros(n, dtype=row_dtype())
    a["seq"] = np.arange(first, first + n)
    a["t_intended"] = a["t_start"] = np.arange(n) * 0.01
    a["t_end"] = a["t_start"] + 0.002
    a["ph"] = [np.nan, 0.0, 0.01, 1.9, 0.05]
    a["status"], a["bytes"] = 200, 612
    return TraceRows.of(0xABC, 0, "h1", a.tobytes())


def stamp(f: Path) -> tuple[int, int]:
    st = f.stat()
    return st.st_ino, st.st_mtime_ns


def test_each_trial_is_a_file_and_adding_one_leaves_the_others_alone(tmp_path: Path) -> None:
    traceparts.add_requests(tmp_path, rows(50), "nginx", 8, 1)
    folder = tmp_path / traceparts.REQUESTS
    (first,) = folder.iterdir()
    before = stamp(first)
    sizes = [traceparts.add_requests(tmp_path, rows(50, 100 * t), "nginx", 8, t) for t in range(2, 6)]
    assert stamp(first) == before  # not rewritten: a trial's cost does not grow with the trials before it
    assert len(list(folder.iterdir())) == 5
    assert sizes == sorted(sizes) and sizes[-1] == sum(f.stat().st_size for f in folder.iterdir())
    table = pq.read_table(folder)  # the folder is a parquet dataset to pyarrow too
    assert table.num_rows == 250 and sorted(set(table.column("trial").to_pylist())) == [1, 2, 3, 4, 5]
    got = traceparts.read_requests(tmp_path, "nginx", 8, 3)
    assert got is not None and len(got) == 50 and set(got["trial"]) == {3}
    assert traceparts.read_requests(tmp_path, "nginx", 8, 9) is not None
    assert traceparts.read_requests(tmp_path / "none", "nginx", 8, 1) is None


def test_a_trial_written_again_replaces_its_rows(tmp_path: Path) -> None:
    traceparts.add_requests(tmp_path, rows(50), "nginx", 8, 1)
    traceparts.add_requests(tmp_path, rows(20), "nginx", 8, 1)
    traceparts.add_requests(tmp_path, rows(30), "nginx/x", 8, 1)  # a label that slugs alike: a file of its own
    assert len(traceparts.read_requests(tmp_path, "nginx", 8, 1)) == 20  # type: ignore[arg-type]
    assert len(traceparts.read_requests(tmp_path, "nginx/x", 8, 1)) == 30  # type: ignore[arg-type]


def test_nothing_half_written_is_read(tmp_path: Path) -> None:
    traceparts.add_requests(tmp_path, rows(10), "nginx", 8, 1)
    (tmp_path / traceparts.REQUESTS / ".nginx-8-2-3f0c9a1b2e.parquet").write_bytes(b"PAR1 cut")
    assert len(traceparts.read_requests(tmp_path, "nginx", 8, 1)) == 10  # type: ignore[arg-type]
    assert pq.read_table(tmp_path / traceparts.REQUESTS).num_rows == 10


def parts_of_fixture(tmp_path: Path, label: str = "nginx", level: int = 50, trial: int = 1) -> pd.DataFrame:
    req = requests_frame("nginx", tmp_path).assign(label=label, level=level, trial=trial)
    return join.join(req, lines_of("nginx"), (0, 1e12)).parts


def test_an_older_runs_single_files_are_read_and_moved_in(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(FIXTURES / "run-2x2x3", folder)
    old = parts_of_fixture(tmp_path)
    both = pd.concat([old, old.assign(trial=2)], ignore_index=True)
    both.to_parquet(folder / traceparts.PARTS, index=False, compression="zstd")  # the single file of before
    pq.write_table(pq.read_table(tmp_path / "requests.parquet"), folder / traceparts.REQUESTS)
    assert len(traceparts.read_parts(folder)) == 2 * len(old)  # type: ignore[arg-type]
    assert len(traceparts.read_requests(folder, "nginx", 4, 1)) == len(old)  # type: ignore[arg-type]
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["report", str(folder), "--out", str(out), "--format", "md"])
    assert res.exit_code == 0, res.output
    assert "- nginx at 50 clients: " in (out / "report.md").read_text()

    again = old.iloc[:10].assign(trial=2)  # trial 2 joined anew (a resumed tune): its rows replace the old ones
    traceparts.add_parts(folder, traceparts.trial_match("nginx", 50, 2, again, {}), again)
    assert (folder / traceparts.PARTS / trialfiles.LEGACY).is_file()
    parts = traceparts.read_parts(folder)
    assert parts is not None
    assert parts.groupby("trial").size().to_dict() == {1: len(old), 2: 10}
    traceparts.add_requests(folder, rows(5), "nginx", 4, 2)
    assert len(traceparts.read_requests(folder, "nginx", 4, 1)) == len(old)  # type: ignore[arg-type]
    assert len(traceparts.read_requests(folder, "nginx", 4, 2)) == 5  # type: ignore[arg-type]


def test_a_trial_written_again_leaves_the_older_runs_file_without_its_rows(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    old = parts_of_fixture(tmp_path)
    both = pd.concat([old, old.assign(trial=2)], ignore_index=True)
    both.to_parquet(folder / traceparts.PARTS, index=False, compression="zstd")  # the single file of before
    again = old.iloc[:10].assign(trial=2)
    traceparts.add_parts(folder, traceparts.trial_match("nginx", 50, 2, again, {}), again)
    table = pq.read_table(folder / traceparts.PARTS)  # the folder whole, as docs/tracing.md reads it
    got = table.select(["trial"]).to_pandas().groupby("trial").size().to_dict()
    assert got == {1: len(old), 2: 10}
    legacy = pq.read_table(folder / traceparts.PARTS / trialfiles.LEGACY)
    assert set(legacy.column("trial").to_pylist()) == {1} and legacy.num_rows == len(old)
    assert [f.name for f in (folder / traceparts.PARTS).iterdir() if f.name.startswith(".")] == []
    traceparts.add_parts(folder, traceparts.trial_match("nginx", 50, 1, again, {}), again.assign(trial=1))
    assert not (folder / traceparts.PARTS / trialfiles.LEGACY).exists()  # nothing of it left: gone
    assert pq.read_table(folder / traceparts.PARTS).num_rows == 20
