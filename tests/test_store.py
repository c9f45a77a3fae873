"""Results folders: writing, reading back, refusing old formats (loadcmp.store.writer)."""

from __future__ import annotations

import json

import pytest

from loadcmp.errors import StoreError
from loadcmp.load.summary import result_doc
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


def test_old_results_say_workers_for_what_they_stored_as_mpm():
    """run.json once stored Apache's word (`mpm`) for how a server handles connections; it reads as `workers`."""
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "run-2x2x3"
    assert '"mpm": "prefork"' in (fixture / "run.json").read_text()
    results = load_results(fixture)
    infos = {s: results.info(s)[1] for s in results.servers}  # type: ignore[index]
    assert {s: i.get("workers") for s, i in infos.items()} == {"nginx": None, "apache-prefork": "prefork"}
    assert not any("mpm" in i for i in infos.values())
