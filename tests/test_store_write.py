"""Writing results: RunWriter's methods and a bench stored with a run's layout (no Docker)."""

from __future__ import annotations

from dataclasses import replace

import json

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import StoreError

from loadcmp.lab import render
from loadcmp.lab import stacks as st
from loadcmp.load.record.summary import result_doc, timeline_rows
from loadcmp.sweep.runner import plan_sweep
from loadcmp.sweep.trial import Planned
from loadcmp.experiment.spec import RunSpec
from loadcmp.store.reader import load_results
from loadcmp.records import RunDoc, ServerInfo, SpecDoc, TrialRecord, missing_keys
from loadcmp.store.writer import FORMAT, RunWriter, new_run_doc
from loadcmp.load.record.outcomes import OK
from loadcmp.load.record.recorder import Recorder, Result


def simulate(n: int = 50) -> Result:
    """A 2-second window with `n` requests a second, each 5 ms."""
    rec = Recorder(100.0, 2.0)
    for i in range(2 * n):
        t = 100.0 + i / n
        rec.start(t)
        rec.done(OK, t, t, t + 0.005, 100)
        rec.tick(t + 0.005)
    return rec.close()


def test_run_writer_builds_run_json_through_its_methods(tmp_path):
    doc = new_run_doc("run", "t", RunSpec().to_dict(), {"kernel": "k"}, "0")
    w = RunWriter.create(tmp_path, "t", doc)
    assert json.loads((w.path / "run.json").read_text())["status"] == "running"
    w.add_server("a", ServerInfo(stack="nginx", page="/x"))
    w.add_server("a", ServerInfo(stack="apache-prefork"))  # stored once: the first one stays
    res = simulate()
    w.add_trial(TrialRecord(server="a", level=5, trial=1, stack="nginx", keepalive=False, status="ok", reason=None,
                            result=result_doc(res)),
                [{"server": "a", "level": 5, "trial": 1, **row} for row in timeline_rows(res)], [])
    w.finish("interrupted", ["stopped by Ctrl-C before a at 10 clients, trial 1"])
    run = json.loads((w.path / "run.json").read_text())
    assert run["format"] == FORMAT and run["servers"] == {"a": {"stack": "nginx", "page": "/x"}}
    assert run["status"] == "interrupted" and run["problems"] == ["stopped by Ctrl-C before a at 10 clients, trial 1"]
    assert len(w.trials) == 1 and w.trials is not w.run["trials"]
    r = load_results(w.path)
    assert r.status == "interrupted" and r.summary.iloc[0].ok == run["trials"][0]["result"]["ok"]


def test_bench_is_stored_with_the_run_layout(tmp_path, faulty):
    url = faulty.url("/ok") + "?x=1"
    out = CliRunner().invoke(cli, ["bench", url, "-c", "7", "-t", "1", "--keepalive", "--warmup", "0.2",
                                   "--timeout", "5", "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    (path,) = tmp_path.iterdir()
    run = json.loads((path / "run.json").read_text())
    assert run["kind"] == "bench" and run["status"] == "complete"
    assert not missing_keys(run, RunDoc) and not missing_keys(run["spec"], SpecDoc)
    run_keys = set(RunSpec().to_dict())
    assert {k for k in run["spec"] if k != "url"} <= run_keys
    label = url.split("/")[2]
    assert run["spec"]["duration"] == 1.0 and run["spec"]["warmup"] == 0.2 and run["spec"]["timeout"] == 5.0
    assert run["spec"]["levels"] == [7] and run["spec"]["servers"] == [label] and run["spec"]["url"] == url
    assert run["spec"]["page"] == "/ok?x=1" and run["spec"]["keepalive"] == [True]
    assert run["servers"] == {label: {"url": url, "keepalive": True, "page": "/ok?x=1"}}
    (trial,) = run["trials"]
    assert trial["server"] == label and trial["level"] == 7 and trial["status"] == "ok"
    assert "service_hist" in trial and trial["result"]["ok"] > 0
    r = load_results(path)
    assert len(r.timeline) >= 1 and set(r.timeline.level) == {7}


def test_a_run_json_without_what_every_run_has_is_refused_in_one_line(tmp_path):
    w = RunWriter.create(tmp_path, "t", new_run_doc("run", "t", RunSpec().to_dict(), {}, "0"))
    w.finish("complete")
    assert load_results(w.path).status == "complete"
    run = json.loads((w.path / "run.json").read_text())
    del run["spec"]["levels"], run["machine"]
    (w.path / "run.json").write_text(json.dumps(run))
    with pytest.raises(StoreError, match=r"not a complete run.json \(no machine\)"):
        load_results(w.path)
    run["machine"] = {}
    (w.path / "run.json").write_text(json.dumps(run))
    with pytest.raises(StoreError, match=r"\(no spec.levels\)"):
        load_results(w.path)


def test_the_spec_document_names_every_field_of_the_spec():
    """run.json's `spec` is typed as SpecDoc: a RunSpec field it does not name would be read untyped."""
    fields = set(RunSpec().to_dict())
    assert fields == set(SpecDoc.__annotations__) - {"url"}
    assert all(not isinstance(v, tuple) for v in RunSpec().to_dict().values()), "tuples are stored as lists"


def test_deployment_plan_renders_once_for_its_ports():
    stack = st.get_stack("nginx-apache")
    plan = replace(render.render_plan(stack, {"prefork.MaxRequestWorkers": 200}, {"backend": 9001, "web": 9002}),
                   cpus="1")
    assert plan.port == 9002 and plan.cpus == "1" and plan.settings["prefork.MaxRequestWorkers"] == 200
    files = plan.config_files()
    assert "MaxRequestWorkers 200" in files["backend/apache2.conf"]
    assert "127.0.0.1:9001" in files["web/nginx.conf"] and "9002" in files["web/nginx.conf"]


def test_sweep_order_alternates_per_trial():
    spec = RunSpec(servers=("nginx", "apache-prefork"), levels=(5,), trials=2)
    order = [(p.trial, p.server) for p in plan_sweep(spec)]
    assert order == [(1, "nginx"), (1, "apache-prefork"), (2, "apache-prefork"), (2, "nginx")]
    assert all(isinstance(p, Planned) for p in plan_sweep(spec))


def test_a_write_that_fails_is_a_store_error_and_keeps_the_file_as_it_was(tmp_path):
    """A full disk or a results folder removed under a run: one line, not a traceback."""
    import shutil

    from loadcmp.store.writer import _atomic_write, write_json

    target = tmp_path / "run.json"
    write_json(target, {"a": 1})

    def fill_the_disk(tmp: str) -> None:
        with open(tmp, "w") as f, open("/dev/full", "w") as full:  # /dev/full: every write is ENOSPC
            f.write("half")
            full.write("x" * 65536)
            full.flush()

    with pytest.raises(StoreError, match="cannot write .*run.json: No space left on device; the file as it was"):
        _atomic_write(target, fill_the_disk)
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"], "no half-written file left beside it"
    shutil.rmtree(tmp_path)
    with pytest.raises(StoreError, match="No such file or directory"):
        write_json(target, {"a": 2})


def _stored_run(tmp_path) -> RunWriter:
    """A run with one trial and its seconds, ended `interrupted` with a problem (as a study stopped by Ctrl-C)."""
    w = RunWriter.create(tmp_path, "t", new_run_doc("tune", "t", RunSpec().to_dict(), {}, "0"))
    res = simulate()
    w.add_trial(TrialRecord(server="a", level=5, trial=1, stack="nginx", keepalive=False, status="ok", reason=None,
                            result=result_doc(res)),
                [{"server": "a", "level": 5, "trial": 1, **row} for row in timeline_rows(res)],
                [{"server": "a", "level": 5, "trial": 1, "second": 0, "cpu_pct": 50.0}])
    w.finish("interrupted", ["stopped during trial 2 of the study"])
    return w


def test_a_resumed_run_keeps_its_earlier_problems_and_adds_its_own(tmp_path):
    path = _stored_run(tmp_path).path
    again = RunWriter.reopen(path)
    assert len(again.timeline) == 2 and len(again.server) == 1, "the tables as they were"
    again.finish("interrupted", ["stopped during trial 5 of the study", "stopped during trial 2 of the study"])
    run = json.loads((path / "run.json").read_text())
    assert run["problems"] == ["stopped during trial 2 of the study", "stopped during trial 5 of the study"]
    RunWriter.reopen(path).finish("complete")
    assert json.loads((path / "run.json").read_text())["problems"] == run["problems"]


def test_a_resumed_run_with_a_damaged_table_goes_on_and_says_so(tmp_path):
    path = _stored_run(tmp_path).path
    damaged = b"PAR1 not a parquet file"
    (path / "server.parquet").write_bytes(damaged)
    again = RunWriter.reopen(path)
    assert len(again.timeline) == 2 and again.server == [], "the table that reads is kept, the other begun anew"
    assert (path / "server.parquet.damaged").read_bytes() == damaged, "set aside, never written over"
    run = json.loads((path / "run.json").read_text())
    assert run["status"] == "running" and run["problems"][0] == "stopped during trial 2 of the study"
    (said,) = run["problems"][1:]
    assert said.startswith("server.parquet could not be read when the run was resumed (") and "magic" in said
    assert "kept as server.parquet.damaged" in said
    again.finish("complete")
    assert json.loads((path / "run.json").read_text())["problems"] == run["problems"]
    r = load_results(path)
    assert len(r.timeline) == 2 and r.server.empty and not r.unread
