"""The catalog over a results root: every folder listed with its state, the index a cache that can go."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loadcmp.catalog.folder import FORMAT, entry
from loadcmp.catalog.index import cache_file, open_catalog
from helpers.synthetic import make_runs
from loadcmp.errors import UsageError
from loadcmp.lab import provenance
from loadcmp.store import writer

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("LOADCMP_CATALOG_CACHE", raising=False)
    return tmp_path / "cache"


def test_the_catalog_reads_the_stores_format():
    assert FORMAT == writer.FORMAT


def test_every_folder_is_listed_with_its_state(tmp_path: Path):
    root = tmp_path / "results"
    make_runs(root, 3, broken=3, abandoned=1, running=1)
    (root / "notes.txt").write_text("a file, not a folder")
    (root / ".hidden").mkdir()
    with open_catalog(root) as cat:
        states = {r.path.name: (r.state, r.reason) for r in cat.runs}
    assert set(states) == {"run-00000", "run-00001", "run-00002", "broken-000", "broken-001", "broken-002",
                           "abandoned-000", "running-000"}
    assert [states[f"run-0000{i}"][0] for i in range(3)] == ["complete"] * 3
    assert states["broken-000"] == ("broken", "no run.json")
    assert states["broken-001"][0] == "broken" and "not JSON" in (states["broken-001"][1] or "")
    assert states["broken-002"][0] == "broken" and "format 0" in (states["broken-002"][1] or "")
    assert states["abandoned-000"][0] == "abandoned"
    assert "ended before the run did" in (states["abandoned-000"][1] or "")
    assert states["running-000"][0] == "running"


def test_runs_come_oldest_first_whatever_their_names(tmp_path: Path):
    root = tmp_path / "results"
    paths = make_runs(root, 3)
    paths[0].rename(root / "zzz-oldest")
    with open_catalog(root) as cat:
        assert [r.path.name for r in cat.runs] == ["zzz-oldest", "run-00001", "run-00002"]
        assert cat.run(root / "zzz-oldest") == cat.runs[0] and cat.run(tmp_path / "zzz-oldest") is None


def test_a_stored_fixture_is_read_with_its_cells(tmp_path: Path):
    root = tmp_path / "results"
    root.mkdir()
    shutil.copytree(FIXTURES / "run-2x3x2", root / "run-2x3x2")
    shutil.copytree(FIXTURES / "run-tls", root / "run-tls")
    with open_catalog(root) as cat:
        assert {r.state for r in cat.runs} <= {"complete", "interrupted"}
        found = cat.values("rps")
    protocols = {(path.name, cell.protocol) for path, cell, _ in found}
    assert ("run-2x3x2", "http") in protocols and ("run-tls", "https") in protocols
    assert all(v.mean is not None and v.mean > 0 and v.n >= 1 for _, _, v in found)


def test_the_index_is_kept_outside_the_results_and_can_be_deleted(tmp_path: Path, cache: Path):
    root = tmp_path / "results"
    make_runs(root, 4)
    before = sorted(p.name for p in root.rglob("*"))
    with open_catalog(root) as cat:
        first = cat.values("rps")
        assert cat.where == str(cache_file(root)) and Path(cat.where).is_relative_to(cache)
    assert sorted(p.name for p in root.rglob("*")) == before  # nothing written into the results
    cache_file(root).unlink()
    with open_catalog(root) as cat:
        assert cat.values("rps") == first
    with open_catalog(root, rebuild=True) as cat:
        assert cat.values("rps") == first


def test_a_changed_folder_is_read_again_and_an_unchanged_one_is_not(tmp_path: Path):
    root = tmp_path / "results"
    paths = make_runs(root, 3)
    with open_catalog(root) as cat:
        assert [v.n for _, _, v in cat.values("rps")] == [3, 3, 3]
    doc = json.loads((paths[1] / "run.json").read_text())
    doc["trials"] = doc["trials"][:1]
    (paths[1] / "run.json").write_text(json.dumps(doc))
    stamp = (paths[2] / "run.json").stat()
    (paths[2] / "run.json").write_text("{}" + " " * (stamp.st_size - 2))  # same size ...
    os.utime(paths[2] / "run.json", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # ... and time: not re-read
    shutil.rmtree(paths[0])
    with open_catalog(root) as cat:
        assert [v.n for _, _, v in cat.values("rps")] == [1, 3]
        assert [r.path.name for r in cat.runs] == ["run-00001", "run-00002"]


def test_a_run_whose_owner_dies_becomes_abandoned_without_its_folder_changing(tmp_path: Path):
    root = tmp_path / "results"
    make_runs(root, 1, running=1)
    folder = root / "running-000"
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        doc = json.loads((folder / "run.json").read_text())
        doc["owner"] = f"{owner.pid}:{provenance._started(owner.pid)}"
        (folder / "run.json").write_text(json.dumps(doc))
        with open_catalog(root) as cat:
            assert [r.state for r in cat.runs] == ["complete", "running"]
        stamp = (folder / "run.json").stat()
    finally:
        owner.kill()
        owner.wait()
    with open_catalog(root) as cat:
        assert [r.state for r in cat.runs] == ["complete", "abandoned"]
    assert (folder / "run.json").stat().st_mtime_ns == stamp.st_mtime_ns


def test_entry_of_a_folder_that_is_not_a_results_folder(tmp_path: Path):
    with pytest.raises(UsageError, match="is not a results folder"):
        entry(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"is not a results folder \(no run.json\)"):
        entry(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "run.json").write_text("[")
    assert entry(tmp_path / "bad").state == "broken"


def test_a_root_that_is_not_a_folder(tmp_path: Path):
    with pytest.raises(UsageError, match="not a folder of results folders"):
        open_catalog(tmp_path / "nowhere")
    (tmp_path / "results.txt").write_text("")
    with pytest.raises(UsageError, match=r"results.txt is not a folder of results folders \(a file\)"):
        open_catalog(tmp_path / "results.txt")


def test_an_index_held_by_another_process_is_built_in_memory(tmp_path: Path, cache: Path):
    root = tmp_path / "results"
    make_runs(root, 2)
    with open_catalog(root) as cat:
        expected = cat.values("rps")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from loadcmp.catalog.index import "
         "open_catalog; c = open_catalog(Path(sys.argv[1])); print('open', flush=True); time.sleep(60)", str(root)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with open_catalog(root) as cat:
            assert cat.where == ":memory:" and cat.values("rps") == expected
    finally:
        holder.kill()
        holder.wait()


def test_a_damaged_index_is_made_anew(tmp_path: Path):
    root = tmp_path / "results"
    make_runs(root, 2)
    with open_catalog(root) as cat:
        expected = cat.values("rps")
    cache_file(root).write_bytes(b"not a database")
    with open_catalog(root) as cat:
        assert cat.where == str(cache_file(root)) and cat.values("rps") == expected


def test_a_cache_folder_that_cannot_be_made_keeps_the_index_in_memory(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "results"
    make_runs(root, 2)
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    with open_catalog(root) as cat:
        assert cat.where == ":memory:" and [v.n for _, _, v in cat.values("rps")] == [3, 3]


def test_a_root_that_is_itself_a_results_folder_is_its_one_run(tmp_path: Path):
    (path,) = make_runs(tmp_path / "results", 1)
    with open_catalog(path) as cat:
        assert [(r.path, r.state) for r in cat.runs] == [(path, "complete")]
        assert [(p, c.label, v.n) for p, c, v in cat.values("p99", label="nginx")] == [(path, "nginx", 3)]
        assert cat.values("p99", label="apache") == []
        with pytest.raises(TypeError, match="no filter colour"):
            cat.values("rps", colour="blue")


def test_catalogs_opened_in_threads_at_once_agree(tmp_path: Path):
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path / "results"
    make_runs(root, 20)

    def answer(_: int) -> list[Any]:
        with open_catalog(root) as cat:
            return cat.values("rps")

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(answer, range(8)))
    assert all(a == answers[0] for a in answers) and len(answers[0]) == 20


def test_a_trial_that_cannot_be_read_makes_its_folder_broken_not_the_catalog_fail(tmp_path: Path):
    root = tmp_path / "results"
    paths = make_runs(root, 3)
    doc = json.loads((paths[1] / "run.json").read_text())
    doc["trials"][0]["level"] = "ten"  # a hand-edited or damaged run.json
    (paths[1] / "run.json").write_text(json.dumps(doc))
    with open_catalog(root) as cat:
        states = {r.path.name: (r.state, r.reason or "") for r in cat.runs}
        assert len(cat.values("rps")) == 2
    assert states["run-00001"][0] == "broken" and "trial that cannot be read" in states["run-00001"][1]
    assert entry(paths[1]).state == "broken"
    from loadcmp.catalog.compare import compare

    with pytest.raises(UsageError, match="trial that cannot be read"):
        compare(paths[1], paths[0])


def test_a_write_ups_runs_are_read_one_level_further_and_its_summary_is_no_run(tmp_path: Path):
    """As `serve` lists them: the runs of a folder that holds runs, an empty folder broken, and a folder of
    other files (the summary `seeds` writes beside its runs) no run at all."""
    root = tmp_path / "r"
    make_runs(root, 2)
    make_runs(root / "writeup", 2, seed=1)
    summary = root / "seeds-20261125-120000"
    summary.mkdir()
    (summary / "summary.md").write_text("# the write-ups\n")
    (root / "died").mkdir()
    with open_catalog(root) as cat:
        listed = {e.path.relative_to(root).as_posix(): e.state for e in cat.runs}
        found = {p.relative_to(root).as_posix() for p, _, _ in cat.values("rps")}
    assert listed == {"run-00000": "complete", "run-00001": "complete", "writeup/run-00000": "complete",
                      "writeup/run-00001": "complete", "died": "broken"}
    assert found == {"run-00000", "run-00001", "writeup/run-00000", "writeup/run-00001"}
