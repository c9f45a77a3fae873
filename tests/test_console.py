"""What a user gave reaches the console as given: rich reads `[h2]` as markup and would drop it, so a label
`nginx[h2]`, a page `/a[b]` and a name `[bold]` are tried on every face that prints them (Table 1, the trial
lines, compare, history, capacity, smoke, bench)."""

from __future__ import annotations

import ast
import io
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from rich.text import Text

from loadcmp.cli import cli
from loadcmp.cli import display

from helpers.stored import FIXTURES

LABEL, PAGE, NAME = "nginx[h2]", "/a[b]", "[bold]"


def _stored(folder: Path, fixture: str = "run-2x3x2", started: str = "2026-11-01T10:00:00+00:00") -> Path:
    """A checked-in run copied with nginx labelled `nginx[h2]`, its pages `/a[b]` and its name `[bold]`."""
    shutil.copytree(FIXTURES / fixture, folder)
    doc = json.loads((folder / "run.json").read_text().replace('"nginx"', json.dumps(LABEL)))
    doc.update(name=NAME, run_id=f"{doc.get('run_id', 'id')}-{folder.name}", started=started)
    for t in doc["trials"]:
        t["page"] = PAGE
    (folder / "run.json").write_text(json.dumps(doc))
    return folder


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """stdout's and stderr's consoles written to one buffer (their own `_file` is put back after the test)."""
    buf = io.StringIO()
    for console in (display.out, display.err):
        monkeypatch.setattr(console, "_file", buf)
    return buf


def test_table1_shows_the_labels_and_the_runs_name_as_given(tmp_path, captured):
    from loadcmp.cli.run import print_table1

    print_table1(str(_stored(tmp_path / "run")))
    text = captured.getvalue()
    assert f"{NAME} — successful / failed requests per server (Table 1)" in text
    assert LABEL in text and "\\[" not in text


def test_the_long_form_of_table1_shows_the_labels_too(tmp_path, captured, monkeypatch):
    from loadcmp.cli.run import print_table1

    monkeypatch.setattr(display.out, "_width", 60)  # too narrow for the paper's layout: one row per server
    print_table1(str(_stored(tmp_path / "run")))
    assert LABEL in captured.getvalue()


def test_a_trial_line_and_its_bar_show_the_label_and_pages_as_given(captured):
    from loadcmp.cli.run import SweepDisplay

    disp = SweepDisplay()
    p = SimpleNamespace(label=LABEL, level=10, trial=1)
    lat = {k: 1.0 for k in ("p50", "p75", "p90", "p95", "p99", "p99_9", "max", "min", "mean")}
    result = {"ok": 5, "failed": 0, "rps": 5.0, "latency_ms": lat, "failures": {}, "started": 5, "duration_s": 1.0,
              "schedule": {"kind": "closed"},
              "pages": [{"page": PAGE, "completed": 5, "share": 1.0, "latency_ms": lat}]}
    disp.trial_end(p, {"status": "failed", "reason": f"{NAME} broke", "result": result})
    text = " ".join(captured.getvalue().split())  # as wide as the terminal is
    assert f"{LABEL} c=10 #1:" in text and f"{PAGE} 5 (100.0%" in text and f"failed: {NAME} broke" in text
    # the bar's description is rich markup (TextColumn): what it shows is the label as given
    assert Text.from_markup(disp.description(p)).plain == f"{LABEL} c=10 #1"
    disp.say(f"results: /tmp/{NAME}/x")
    assert f"results: /tmp/{NAME}/x" in captured.getvalue()


def test_compare_and_history_show_labels_pages_and_folders_as_given(tmp_path):
    a = _stored(tmp_path / "runs" / "a", started="2026-11-01T10:00:00+00:00")
    b = _stored(tmp_path / "runs" / f"b{NAME}", started="2026-11-02T10:00:00+00:00")
    res = CliRunner().invoke(cli, ["compare", str(a), str(b)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert f"B  {b}" in res.output and f"{LABEL}@10 {PAGE} (http)" in res.output
    res = CliRunner().invoke(cli, ["history", str(tmp_path / "runs"), "--label", LABEL], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert f"{LABEL}@10 {PAGE} (http): req/s" in res.output and f"b{NAME}" in res.output


def test_report_names_its_files_under_a_folder_as_given(tmp_path):
    out = tmp_path / f"report{NAME}"
    res = CliRunner().invoke(cli, ["report", str(_stored(tmp_path / "run")), "--out", str(out), "--format", "md"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0] == str(out / "report.md") and (out / "report.md").is_file()


def test_the_capacity_table_shows_the_labels_as_given(tmp_path, captured):
    from loadcmp.cli.capacity import print_capacity
    from loadcmp.store.reader import load_results

    print_capacity(load_results(str(_stored(tmp_path / "cap", fixture="capacity-2x"))))
    text = captured.getvalue()
    assert f"{NAME} — capacity" in text and LABEL in text


def test_the_smoke_table_shows_labels_and_messages_as_given(captured):
    from loadcmp.cli.smoke import _print
    from loadcmp.verdicts.smoke import Verdict

    _print([Verdict(LABEL, "p99 < 1s", 2.0, "2 s [x]", False, f"{LABEL}: p99 2 s, not < 1s",
                    client_bound_reason="the client was busy")], False, 1.0, False, "results")
    text = captured.getvalue()
    assert LABEL in text and "2 s [x]" in text and f"failed: {LABEL}: p99 2 s" in text
    assert f"client-bound: {LABEL}: the client was busy" in text


def test_bench_shows_its_url_as_given(faulty, tmp_path):
    url = faulty.url(f"/ok?q={NAME}")
    res = CliRunner().invoke(cli, ["bench", url, "-c", "1", "-n", "5", "--out", str(tmp_path / f"out{NAME}")],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert url in res.output and f"stored in {tmp_path}/out{NAME}" in res.output


def test_a_run_stopped_before_any_trial_ended_says_so_not_an_empty_table(tmp_path, monkeypatch):
    """Ctrl-C while the first trial's server starts: what was stored stays, exit 130, and no empty Table 1."""
    import loadcmp.cli.run as run_cli
    from loadcmp.sweep.runner import SweepOutcome

    def stopped(spec: Any, *rest: Any) -> SweepOutcome:
        folder = Path(spec.out) / "stopped"
        shutil.copytree(FIXTURES / "run-2x3x2", folder)
        doc = json.loads((folder / "run.json").read_text())
        (folder / "run.json").write_text(json.dumps({**doc, "trials": [], "status": "interrupted"}))
        return SweepOutcome(str(folder), "interrupted")

    monkeypatch.setattr(run_cli, "_run_sweep", stopped)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/loadcmp-test-docker.sock")
    monkeypatch.delenv("LOADCMP_CLUSTER", raising=False)
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "1", "-t", "1", "--out", str(tmp_path)])
    assert res.exit_code == 130, res.output
    assert "fixture-2x3x2: no trial finished, so there is no Table 1" in res.output
    assert "Table 1)" not in res.output and "┃" not in res.output
    assert json.loads((tmp_path / "stopped" / "run.json").read_text())["status"] == "interrupted"


def test_user_strings_reach_rich_only_through_the_display_edge():
    """One place escapes: no command module calls rich's `escape` or builds a rich `Table` of its own (whose
    strings rich would read as markup); they use `display.markup` and `display.PlainTable`."""
    folder = Path(display.__file__).parent
    for path in sorted(folder.glob("*.py")):
        if path.name == "display.py":
            continue
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith(
            "rich") for a in n.names}
        assert not imported & {"escape", "Table"}, f"{path.name} imports {imported & {'escape', 'Table'}} from rich"
