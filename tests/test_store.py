"""Results folders: writing, reading back, refusing old formats (loadcmp.store.writer)."""

from __future__ import annotations

import json
import platform

import pytest

from helpers.stored import killed_owner
from loadcmp.errors import StoreError
from loadcmp.lab.provenance import this_host, this_process
from loadcmp.load.record.summary import result_doc
from loadcmp.store.reader import load_results
from loadcmp.experiment.spec import RunSpec
from loadcmp.store.writer import RunWriter, new_run_doc


def test_store_roundtrip_and_old_format(tmp_path, simulate):
    w = RunWriter.create(tmp_path, "t", new_run_doc("run", "t", RunSpec().to_dict(), {}, "0"))
    res = simulate(3)
    doc = result_doc(res)
    w.add_trial({"server": "a", "level": 5, "trial": 1, "status": "ok", "result": doc},
                [{"server": "a", "level": 5, "trial": 1, "second": 0, "ok": 1}], [])
    w.finish("complete")
    r = load_results(w.path)
    assert r.status == "complete" and r.summary.iloc[0].ok == doc["ok"] and len(r.timeline) == 1
    assert not list(w.path.glob(".*")), "no temp files left behind"
    run = json.loads((w.path / "run.json").read_text())
    run["format"] = 0
    (w.path / "run.json").write_text(json.dumps(run))
    with pytest.raises(StoreError) as e:
        load_results(w.path)
    assert "format" in str(e.value)
    with pytest.raises(StoreError):
        load_results(tmp_path / "nothing")


def _folder_of(tmp_path, **doc) -> RunWriter:
    w = RunWriter.create(tmp_path, "t", new_run_doc("run", "t", RunSpec().to_dict(), {}, "0"))
    w.run.update(doc)  # type: ignore[typeddict-item]
    w.flush()
    return w


def test_the_owner_of_a_run_is_known_gone_running_or_elsewhere(tmp_path):
    gone = _folder_of(tmp_path, owner=killed_owner(), host=this_host())
    run = load_results(gone.path).runs[0]
    assert run.owner is not None and run.owner.state == "gone" and run.status == "abandoned"
    assert run.owner.pid == gone.run["owner"].split(":")[0] and run.owner.machine == platform.node()
    alive = load_results(_folder_of(tmp_path, owner=this_process(), host=this_host()).path).runs[0]
    assert alive.owner is not None and alive.owner.state == "running" and alive.status == "running"
    away = load_results(_folder_of(tmp_path, owner="1:1", host="elsewhere/boot/ns").path).runs[0]
    assert away.owner is not None and (away.owner.state, away.owner.machine) == ("elsewhere", "elsewhere")
    assert away.status == "running"
    assert load_results(_folder_of(tmp_path).path).runs[0].owner is None


def test_a_missing_or_damaged_per_second_table_is_named_and_the_rest_read(tmp_path, simulate):
    w = RunWriter.create(tmp_path, "t", new_run_doc("run", "t", RunSpec().to_dict(), {}, "0"))
    keys = {"server": "a", "level": 5, "trial": 1, "second": 0}
    w.add_trial({"server": "a", "level": 5, "trial": 1, "status": "ok", "result": result_doc(simulate(3))},
                [{**keys, "ok": 1}], [{**keys, "cpu_pct": 50.0}])
    w.finish("complete")
    whole = (w.path / "server.parquet").read_bytes()
    (w.path / "server.parquet").write_bytes(whole[: len(whole) // 2])  # truncated
    r = load_results(w.path)
    assert len(r.trials) == 1 and len(r.timeline) == 1 and r.server.empty
    [u] = r.unread
    assert u.file == w.path / "server.parquet" and u.table == "server" and u.damage
    assert str(u.file) not in u.damage, "the path is said once, by whoever names the file"
    (w.path / "timeline.parquet").unlink()
    (w.path / "server.parquet").write_bytes(whole)
    r = load_results(w.path)
    assert [(u.table, u.damage) for u in r.unread] == [("timeline", None)]
    assert r.timeline.empty and len(r.server) == 1 and len(r.trials) == 1


def test_old_results_say_workers_for_what_they_stored_as_mpm():
    """run.json once stored Apache's word (`mpm`) for how a server handles connections; it reads as `workers`."""
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "run-2x2x3"
    assert '"mpm": "prefork"' in (fixture / "run.json").read_text()
    results = load_results(fixture)
    infos = {s: results.info(s)[1] for s in results.servers}  # type: ignore[index]
    assert {s: i.get("workers") for s, i in infos.items()} == {"nginx": None, "apache-prefork": "prefork"}
    assert not any("mpm" in i for i in infos.values())
