"""The stored fixtures report exactly as recorded in tests/fixtures/reports/ (no Docker).

A change to the code that moves a word or a figure of report.md fails here; a change meant to
alter the report regenerates the snapshots (`LOADCMP_SNAPSHOT=write pytest tests/test_report_snapshot.py`)
and says why in its commit.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli

FIXTURES = Path(__file__).parent / "fixtures"
SNAPSHOTS = FIXTURES / "reports"
RUNS = ["capacity-2x", "pphc-2022", "run-2x2x3", "run-2x3x2", "run-tls", "run-tls-primed"]


@pytest.mark.parametrize("name", RUNS)
def test_report_md_is_as_recorded(name: str, tmp_path: Path) -> None:
    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["report", str(folder), "--out", str(out), "--format", "md"])
    assert res.exit_code == 0, res.output
    got = (out / "report.md").read_text()
    snapshot = SNAPSHOTS / f"{name}.md"
    if os.environ.get("LOADCMP_SNAPSHOT") == "write":
        snapshot.write_text(got)
    assert got == snapshot.read_text(), f"report.md of {name} differs from {snapshot}"
