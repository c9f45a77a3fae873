"""`loadcmp tune` without Docker: the study driven through the trial machinery on a model server whose
capacity depends on its settings (`tests/helpers/fakeprobe.py`), its parameters and bad inputs, pruning,
resuming, Ctrl-C, the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from helpers.fakeprobe import Model
from loadcmp.cli import cli
from loadcmp.errors import ConfigError, UsageError
from loadcmp.experiment.spec import RunSpec
from loadcmp.experiment.tune import parse_param, tune_spec
from loadcmp.lab import stacks
from loadcmp.store.writer import RunWriter, new_run_doc
from loadcmp.sweep.trial import Planned, Sweep

SLO = "p99<500ms, failed_rate<1%"
NGINX = stacks.get_stack("nginx")


# --- parameters -----------------------------------------------------------------------------------


def test_a_range_is_whole_numbers_searched_on_a_log_scale_when_it_spans_ten_times():
    p = parse_param("fpm.max_children=5..200", NGINX)
    assert (p.key, p.low, p.high, p.log) == ("fpm.max_children", 5, 200, True)
    assert not parse_param("fpm.max_children=50..200", NGINX).log
    assert p.holds(5) and p.holds(200) and not p.holds(201) and "log scale" in p.describe()


def test_a_list_is_values_as_set_takes_them():
    p = parse_param("fpm.pm=static,dynamic,static", NGINX)
    assert p.choices == ("static", "dynamic") and p.holds("static") and not p.holds("ondemand")


@pytest.mark.parametrize("text, needle", [
    ("fpm.max_childs=5..10", "not a setting of stack nginx"),
    ("max_children=5..10", "did you mean fpm.max_children"),
    ("fpm.pm=1..5", "fpm.pm is not a number; list its values"),
    ("fpm.max_children=50..5", "the range must go up"),
    ("fpm.max_children=5", "give a range LOW..HIGH or two values or more"),
    ("fpm.pm=static,forever", "expected one of"),
    ("fpm.max_children", "expected KEY=LOW..HIGH or KEY=A,B"),
    ("fpm.max_children=5,5", "give a range LOW..HIGH or two values or more"),
    ("nginx.multi_accept=yes,on", "these are one value (True)"),
])
def test_a_bad_param_says_what_is_wrong(text, needle):
    with pytest.raises(UsageError) as e:
        parse_param(text, NGINX)
    assert needle in str(e.value)


def test_the_file_table_then_the_flags_and_every_problem_at_once():
    t = tune_spec("nginx", NGINX, {"params": {"fpm.max_children": "5..50", "fpm.pm": ["static", "dynamic"]},
                                   "budget": "10m", "clients": 200},
                  {"params": ("fpm.max_children=10..100",), "trials": None, "budget": None, "clients": None,
                   "seed": 3})
    assert [p.text for p in t.params] == ["fpm.max_children=10..100", "fpm.pm=static,dynamic"]
    assert (t.trials, t.budget_s, t.clients, t.seed, t.objective) == (None, 600.0, 200, 3, "rps")
    with pytest.raises(ConfigError) as e:
        tune_spec("nginx", NGINX, {"params": {"nope": "1..2"}, "trial": 3, "clients": 0}, {})
    assert len(e.value.messages) == 3
    with pytest.raises(UsageError, match="nothing to tune"):
        tune_spec("nginx", NGINX, {}, {})


# --- the study on a model server -----------------------------------------------------------------


class Tuned(Model):
    """A server whose capacity peaks at fpm.max_children 40: 400 clients, against 295 at Debian's 5."""

    def __call__(self, sweep: Sweep, p: Planned, spec: RunSpec) -> Any:
        children = NGINX.effective(spec.settings_for(p.label))["fpm.max_children"]
        self.capacity[p.server] = max(20, 400 - 3 * abs(children - 40))
        return super().__call__(sweep, p, spec)


@pytest.fixture()
def model(monkeypatch):
    """The command as it is, on the model server: the sweep opens (or reopens) a folder, not an engine."""
    from loadcmp.sweep import runner, tune

    def open_sweep(spec: RunSpec, progress: Any, stopper: Any, images: Any, fleet: Any, kind: str,
                   reopen: str | None = None) -> Sweep:
        doc = new_run_doc("tune", spec.name or "tune", spec.to_dict(), {"cores": 2}, "test")
        writer = RunWriter.reopen(reopen) if reopen else RunWriter.create(spec.out, spec.name or "tune", doc)
        return Sweep(spec, None, {}, "run-test", writer, stopper, progress)

    m = Tuned({})
    monkeypatch.setattr(tune, "open_sweep", open_sweep)
    monkeypatch.setattr(tune, "run_trial", m)
    monkeypatch.setattr(runner, "clean_up", lambda sweep: None)
    return m


def tune_cli(*args: str) -> Any:
    return CliRunner().invoke(cli, ["tune", "--server", "nginx", "--slo", SLO, "--seed", "7", *args])


def test_the_study_finds_settings_that_hold_more_than_the_defaults_and_says_by_how_much(model, tmp_path):
    res = tune_cli("--param", "fpm.max_children=5..100", "--trials", "8", "--out", str(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["tune"]
    base = doc["trials"][0]
    assert base["number"] == -1 and base["label"] == "nginx-base" and base["params"] == {"fpm.max_children": 5}
    assert 270 <= base["value"] <= 295  # the defaults' quick capacity (to the 10 % resolution)
    complete = [t for t in doc["trials"] if t["number"] >= 0 and t["state"] == "complete"]
    assert len(complete) == 8
    best = doc["best"]
    assert best["value"] > base["value"] * 1.15 and 20 <= best["params"]["fpm.max_children"] <= 60
    gain = doc["gain"]
    assert gain["verdict"] == "better" and gain["gain"] > 0.15 and gain["level"] == int(best["value"])
    assert gain["best"]["verdict"] == "met" and gain["base"]["verdict"] == "missed"
    assert gain["best"]["n"] == gain["base"]["n"] == 3
    assert f'"fpm.max_children" = {best["params"]["fpm.max_children"]}' in doc["block"]
    assert doc["block"].startswith('[variants.tuned]\nstack = "nginx"')
    (folder,) = tmp_path.iterdir()
    run = json.loads((folder / "run.json").read_text())
    assert run["kind"] == "tune" and run["status"] == "complete" and (folder / "study.log").stat().st_size > 0
    for t in complete:  # each trial ran on servers of its own, with its own settings, its search stored
        assert t["label"] in run["servers"]
        assert run["capacity"]["servers"][t["label"]]["kind"] in ("capacity", "at_least")
    # the comparison: 3 new trials each at one level, alternately (A B, B A, A B), judged on those alone
    at = [t["server"] for t in run["trials"] if t["level"] == gain["level"] and t["server"] in
          (base["label"], best["label"])][-6:]
    a, b = base["label"], best["label"]
    assert at == [a, b, b, a, a, b]


def test_an_experiment_files_tune_table_is_the_study(model, tmp_path):
    exp = tmp_path / "t.toml"
    exp.write_text('servers = ["nginx"]\n[capacity]\nslo = "p99<500ms"\n[tune]\n'
                   'params = { "fpm.max_children" = "10..60" }\ntrials = 2\nseed = 1\n')
    res = CliRunner().invoke(cli, ["tune", str(exp), "--out", str(tmp_path / "r"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["tune"]
    assert [p["text"] for p in doc["params"]] == ["fpm.max_children=10..60"] and doc["target"] == "p99<500ms"
    assert len([t for t in doc["trials"] if t["number"] >= 0 and t["state"] == "complete"]) == 2
    exp.write_text('servers = ["nginx"]\n[tune]\nparams = { "fpm.max_children" = "10..60" }\nrounds = 2\n')
    res = CliRunner().invoke(cli, ["tune", str(exp), "--slo", SLO])
    assert res.exit_code == 2 and "t.toml: [tune] has unknown key(s) rounds" in res.output


def test_settings_that_do_not_move_the_edge_leave_the_baseline_best_and_nothing_mattering(model, monkeypatch,
                                                                                       tmp_path):
    from loadcmp.sweep import tune

    class Flat(Model):
        def __call__(self, sweep: Sweep, p: Planned, spec: RunSpec) -> Any:
            self.capacity[p.server] = 300  # whatever the settings
            return super().__call__(sweep, p, spec)

    monkeypatch.setattr(tune, "run_trial", Flat({}))
    res = tune_cli("--param", "fpm.max_children=5..100", "--trials", "3", "--out", str(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["tune"]
    assert doc["best"]["number"] == -1 and doc["gain"] is None and doc["importance"] == {}
    assert "every setting tried gave the same, to the search's 10% resolution" in doc["text"]


def test_settings_the_stack_refuses_are_pruned_before_anything_starts(model, tmp_path):
    res = tune_cli("--param", "fpm.max_children=1..4", "--trials", "2", "--out", str(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["tune"]
    pruned = [t for t in doc["trials"] if t["state"] == "pruned"]
    assert pruned and all(t["params"]["fpm.max_children"] < 3 for t in pruned)
    assert all("max_spare_servers (3) exceeds max_children" in t["text"] and t["label"] == "" for t in pruned)
    ran = {p.label for p in model.runs}
    assert not any(f"nginx-t{t['number']}" in ran for t in pruned)


def test_a_study_is_resumed_in_its_folder_with_more_trials(model, tmp_path):
    assert tune_cli("--param", "fpm.max_children=5..100", "--trials", "3", "--out", str(tmp_path)).exit_code == 0
    (folder,) = tmp_path.iterdir()
    first = json.loads((folder / "run.json").read_text())
    runs = len(model.runs)
    res = CliRunner().invoke(cli, ["tune", "--resume", str(folder), "--trials", "2", "--json"])
    assert res.exit_code == 0, res.output
    run = json.loads((folder / "run.json").read_text())
    numbers = [t["number"] for t in run["tune"]["trials"] if t["state"] == "complete"]
    assert len(numbers) == 6 and numbers[0] == -1 and len(set(numbers)) == 6  # baseline + 3 + 2, none twice
    assert len(run["trials"]) > len(first["trials"]) and not any(p.label == "nginx-base" and p.level == 10
                                                                 for p in model.runs[runs:])
    assert list(tmp_path.iterdir()) == [folder]


def test_a_study_whose_process_was_killed_goes_on_and_one_still_running_is_refused(model, tmp_path):
    import optuna

    from loadcmp.lab.provenance import this_host, this_process

    assert tune_cli("--param", "fpm.max_children=5..100", "--trials", "2", "--out", str(tmp_path)).exit_code == 0
    (folder,) = tmp_path.iterdir()
    run = json.loads((folder / "run.json").read_text())
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(folder / "study.log")))
    left = optuna.load_study(study_name="tune", storage=storage).ask()  # the trial the killed process was running
    (folder / "run.json").write_text(json.dumps({**run, "status": "running", "owner": this_process(),
                                                 "host": this_host()}))
    res = CliRunner().invoke(cli, ["tune", "--resume", str(folder), "--trials", "1"])
    assert res.exit_code == 2 and "still running" in res.output and f"its process {this_process()}" in res.output
    (folder / "run.json").write_text(json.dumps({**run, "status": "running", "owner": "999999999:1",
                                                 "host": this_host()}))
    res = CliRunner().invoke(cli, ["tune", "--resume", str(folder), "--trials", "1", "--json"])
    assert res.exit_code == 0, res.output
    study = optuna.load_study(study_name="tune", storage=storage)
    assert study.trials[left.number].state == optuna.trial.TrialState.FAIL
    assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
    doc = json.loads((folder / "run.json").read_text())
    assert doc["status"] == "complete" and len([t for t in doc["tune"]["trials"] if t["state"] == "complete"]) == 4
    (killed,) = [t for t in doc["tune"]["trials"] if t["number"] == left.number]  # said, not dropped
    assert killed["state"] == "interrupted" and "before any probe of it was stored" in killed["text"]
    assert f"trial {left.number} of the study was killed with its process" in doc["problems"]
    # killed during its baseline: no journal yet, nothing to go on from
    (folder / "study.log").unlink()
    (folder / "run.json").write_text(json.dumps({**doc, "status": "running", "owner": "999999999:1",
                                                 "host": this_host()}))
    res = CliRunner().invoke(cli, ["tune", "--resume", str(folder), "--trials", "1"])
    assert res.exit_code == 1 and "killed during its baseline" in res.output


def test_a_study_killed_during_its_comparison_resumes_with_the_kill_recorded_and_compares_anew(model, tmp_path):
    import shutil

    from loadcmp.lab.provenance import this_host

    left: dict[str, Path] = {}
    measure = model.__class__.__call__

    def kill_in_comparison(self: Any, sweep: Sweep, p: Planned, spec: RunSpec) -> Any:
        doc = sweep.writer.run.get("tune") or {}
        if doc.get("comparing") and "run" not in left:  # the folder as a process killed here would leave it
            left["run"] = tmp_path / "left"
            shutil.copytree(sweep.writer.path, left["run"])
        return measure(self, sweep, p, spec)

    model.__class__ = type("Killed", (model.__class__,), {"__call__": kill_in_comparison})
    assert tune_cli("--param", "fpm.max_children=5..100", "--trials", "3", "--out", str(tmp_path / "r")).exit_code == 0
    folder = left["run"]
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "running" and run["tune"]["comparing"]["level"] > 0 and run["tune"]["gain"] is None
    (folder / "run.json").write_text(json.dumps({**run, "owner": "999999999:1", "host": this_host()}))
    res = CliRunner().invoke(cli, ["tune", "--resume", str(folder), "--trials", "1", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads((folder / "run.json").read_text())
    best, level = run["tune"]["comparing"]["best"], run["tune"]["comparing"]["level"]
    assert (f"the comparison of trial {best} with the baseline at {level:,} clients was killed with its process: "
            "its trials are kept, and the comparison is made anew") in doc["problems"]
    assert doc["status"] == "complete" and "comparing" not in doc["tune"] and doc["tune"]["gain"] is not None
    assert doc["tune"]["gain"]["base"]["n"] == 3  # judged on the new comparison's trials alone


def test_a_trial_number_without_a_row_is_explained(model, tmp_path):
    from loadcmp.report.tune import gaps, tune_lines
    from loadcmp.store.reader import load_results

    # Debian's 5 lies in the range: the baseline is told to the sampler as its trial 0, which has no row
    res = tune_cli("--param", "fpm.max_children=1,2,5,8,9", "--trials", "3", "--out", str(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    (folder,) = tmp_path.iterdir()
    stored = json.loads((folder / "run.json").read_text())["tune"]
    assert 0 not in {t["number"] for t in stored["trials"]} and list(stored["unlisted"]) == ["0"]
    said = gaps(stored)
    assert said == "Trial numbers without a row: 0: the baseline, told to the sampler as a trial of its own (its " \
        "row is 'base')."
    assert said in tune_lines(load_results(folder))


def test_gaps_name_each_reason_once_and_old_studies_get_the_only_ways_a_number_is_left_out():
    from loadcmp.report.tune import gaps

    def row(n: int, state: str = "complete") -> Any:
        return {"number": n, "state": state}

    doc: Any = {"trials": [row(-1), row(1), row(2, "pruned"), row(3), row(5), row(7)],
                "unlisted": {"0": "the baseline, told to the sampler", "4": "asked again for x=2, pruned as trial 2: "
                             "not tried again", "6": "asked again for x=2, pruned as trial 2: not tried again"}}
    assert gaps(doc) == ("Trial numbers without a row: 0: the baseline, told to the sampler; 4, 6: asked again for "
                         "x=2, pruned as trial 2: not tried again.")
    old = {**doc, "unlisted": {}}  # stored before the reasons were
    assert gaps(old) == ("Trial numbers without a row: 0, 4, 6: the baseline told to the sampler, or settings "
                         "refused or broken before asked again (not tried again).")
    assert gaps({"trials": [row(-1), row(0), row(1)]}) is None


def _fpm_trial(level: int, busy: float | None, growing: bool = True) -> Any:
    """A stored trial with what the status page counted, as `observe` sums it up, and its log's causes."""
    return {"server": "nginx-t1", "level": level, "trial": 1, "stack": "nginx", "keepalive": True,
            "status": "ok", "reason": None, "result": {"rps": 64.0, "ok": 128, "failed": 0},
            "server_metrics": {"busy_workers_peak": busy, "procs_peak": 10},
            "log_evidence": {"fpm.seems_busy": 2} if growing else {}}


@pytest.mark.parametrize("cap, busy, level, pm, growing, said", [
    (54, 5.0, 40, "dynamic", True, "fpm.max_children=54 set, 5 workers were busy at most at 40 clients: the pool "
                                   "did not grow to it within the probe; lengthen --warmup or set fpm.pm=static"),
    (9, 5.0, 40, "dynamic", True, "fpm.max_children=9 set, 5 workers"),
    (54, 5.0, 40, "static", True, "lengthen --warmup"),
    (60, 15.0, 40, "dynamic", False, None),  # a pool that had grown has idle workers: its log says nothing
    (54, 39.0, 40, "dynamic", True, None),  # as many busy as the clients allow: reached
    (5, 5.0, 40, "dynamic", True, None),  # the baseline's 5 all busy
    (9, 8.0, 40, "dynamic", True, None),  # one caught between requests
    (54, 1.0, 40, "dynamic", True, None),  # only the status page's own request: the page uses no PHP worker
    (54, None, 40, "dynamic", True, None),  # no status page: nothing is said
])
def test_a_setting_the_pool_did_not_reach_is_said_from_the_stored_figures(cap, busy, level, pm, growing, said):
    from loadcmp.verdicts.gain import not_reached

    info: Any = {"stack": "nginx", "busy_limit": "fpm.max_children", "settings": {"fpm.max_children": cap,
                                                                                  "fpm.pm": pm}}
    got = not_reached(info, {"fpm.max_children"}, [_fpm_trial(level, busy, growing)])
    assert (got is None) == (said is None), got
    assert said is None or got is not None and said in got
    if pm == "static":
        assert got is not None and "fpm.pm=static" not in got
    # only a setting under study, and only the one that caps the busy workers, is held to it
    assert not_reached(info, {"fpm.listen_backlog"}, [_fpm_trial(level, busy)]) is None
    assert not_reached({**info, "busy_limit": None}, {"fpm.max_children"}, [_fpm_trial(level, busy)]) is None


def test_a_setting_not_reached_in_every_trial_or_in_the_best_is_no_finding_and_otherwise_is_named():
    from loadcmp.verdicts.gain import unreached

    def trial(n: int, short: bool) -> Any:
        t = {"number": n, "state": "complete", "params": {"fpm.max_children": 10 + n}, "value": 60.0}
        return {**t, "unreached": f"fpm.max_children={10 + n} set, 5 workers were busy at most"} if short else t

    doc: Any = {"text": "unsure: ...", "best": 1, "gain": None,
                "trials": [trial(-1, False), trial(1, False), trial(2, True)]}
    assert unreached(doc) == ("unsure: ... (the setting under study did not take effect in 1 of 3 measured "
                              "settings (trial 2: fpm.max_children=12 set, 5 workers were busy at most): those "
                              "trials say nothing of it)")
    assert unreached({**doc, "best": 2}).startswith("no answer: the setting under study did not take effect in 1 of "
                                                    "3 measured settings (trial 2: ")
    every = {**doc, "best": -1, "trials": [trial(-1, False), trial(1, True), trial(2, True)]}
    assert unreached(every).startswith("no answer: ") and unreached(every).endswith("As measured: unsure: ...")
    assert unreached({**doc, "trials": [trial(-1, False), trial(1, False)]}) == "unsure: ..."


def test_a_study_whose_setting_never_took_effect_says_so_and_draws_no_finding(model, monkeypatch, tmp_path):
    """The issue's case on the model: whatever max_children asks, 5 workers run (a pool that did not grow),
    every setting misses the target at 330 clients, and the answer is no finding about max_children."""
    from loadcmp.sweep import tune

    class Dynamic(Model):
        def __call__(self, sweep: Sweep, p: Planned, spec: RunSpec) -> Any:
            self.capacity[p.server] = 295  # the pool stays at Debian's 5, whatever the setting
            out = super().__call__(sweep, p, spec)
            out.record["server_metrics"]["busy_workers_peak"] = 5.0  # as the status page counted them
            out.record["log_evidence"] = {"fpm.seems_busy": 1}  # php-fpm: no idle worker, spawning more
            sweep.writer.run["servers"][p.label].update(  # as `trial.describe_server` stores a label's set-up
                busy_limit="fpm.max_children", settings=NGINX.effective(spec.settings_for(p.label)))
            return out

    monkeypatch.setattr(tune, "run_trial", Dynamic({}))
    res = tune_cli("--param", "fpm.max_children=20..100", "--trials", "3", "-c", "330", "--out", str(tmp_path),
                   "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["tune"]
    ran = [t for t in doc["trials"] if t["state"] == "complete" and t["number"] >= 0]
    assert ran and all("set, 5 workers were busy at most at 330 clients: the pool did not grow" in t["unreached"]
                       for t in ran)
    assert "unreached" not in doc["trials"][0]  # the baseline's 5 of 5 were all busy
    assert doc["text"].startswith("no answer: the setting under study did not take effect in 3 of 4 measured")
    assert "so this says nothing of it. As measured: no setting tried met" in doc["text"]
    from loadcmp.report.tune import tune_rows
    from loadcmp.store.reader import load_results

    (folder,) = tmp_path.iterdir()
    _, rows = tune_rows(load_results(folder))  # the console's table and the report's
    assert all(r[-1].endswith("the pool did not grow to it within the probe; lengthen --warmup or set fpm.pm=static")
               for r in rows if r[0] not in ("base",))


@pytest.mark.parametrize("args, needle", [
    ([], "nothing to tune"),
    (["--param", "fpm.max_children=5..10", "--server", "apache-prefork"], "tune takes one server"),
    (["--param", "fpm.max_children=5..10", "-c", "10,20"], "give one level"),
    (["--param", "fpm.max_children=5..10", "--reuse-server"], "fresh servers"),
    (["--param", "fpm.max_children=5..10", "-t", "10s"], "a probe lasts --probe-time"),
    (["--param", "prefork.MaxRequestWorkers=5..10"], "not a setting of stack nginx"),
    (["--param", "fpm.max_children=5..10", "--config", "nginx:web=README.md"], "a study sets the server's settings"),
])
def test_bad_inputs_are_one_line_and_exit_2(args, needle):
    res = tune_cli(*args)
    assert res.exit_code == 2, res.output
    assert needle in res.output and len(res.output.strip().splitlines()) == 1


def test_more_clients_than_the_machine_holds_are_refused_before_the_study_says_anything():
    res = tune_cli("--param", "fpm.max_children=5..10", "-c", "5000000")
    assert res.exit_code == 1 and res.output.startswith("error: 5,000,000 clients are more than this machine")


def test_the_rate_schedule_with_a_level_is_refused_from_a_file_too(tmp_path):
    exp = tmp_path / "r.toml"
    exp.write_text('servers = ["nginx"]\nschedule = "rate"\n[tune]\nparams = { "fpm.max_children" = "5..50" }\n'
                   'clients = 100\n')
    res = CliRunner().invoke(cli, ["tune", str(exp), "--slo", SLO])
    assert res.exit_code == 2 and "the rate fixes the req/s" in res.output


def test_a_budget_spent_on_the_baseline_says_so_and_a_resume_needs_the_journal(model, tmp_path):
    res = tune_cli("--param", "fpm.max_children=5..100", "--budget", "1s", "--out", str(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["tune"]
    assert "no trial ran: the budget went on the baseline" in doc["text"] and doc["gain"] is None
    (folder,) = tmp_path.iterdir()
    (folder / "study.log").unlink(missing_ok=True)
    res = CliRunner().invoke(cli, ["tune", "--resume", str(folder), "--trials", "2"])
    assert res.exit_code == 1 and "journal" in res.output and "is missing" in res.output


def test_every_setting_refused_is_said_and_a_small_space_ends_when_it_is_all_tried(model, tmp_path):
    res = tune_cli("--param", "fpm.max_children=1..2", "--trials", "3", "--out", str(tmp_path / "a"), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["tune"]
    assert "the stack refused every setting asked" in doc["text"]
    assert len([t for t in doc["trials"] if t["state"] == "pruned"]) <= 2  # each refused setting listed once
    res = tune_cli("--param", "fpm.pm=static,dynamic", "--trials", "5", "--out", str(tmp_path / "b"), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["tune"]
    assert {t["params"]["fpm.pm"] for t in doc["trials"]} == {"static", "dynamic"}
    assert len(doc["trials"]) <= 4 and doc["importance"] == {}


def test_resume_takes_only_more_trials_or_budget(tmp_path):
    res = CliRunner().invoke(cli, ["tune", "--resume", str(tmp_path), "--param", "fpm.max_children=5..10"])
    assert res.exit_code == 2 and "give only --trials or --budget" in res.output and "--param" in res.output
    res = CliRunner().invoke(cli, ["tune", "--resume", str(tmp_path), "--app", "laravel"])
    assert res.exit_code == 2 and "(not --app)" in res.output
    res = CliRunner().invoke(cli, ["tune", "--resume", str(tmp_path)])  # how much more is not said
    assert res.exit_code == 2 and "say how much more: --trials N or --budget DURATION" in res.output
    for nowhere in (tmp_path / "nowhere", tmp_path):
        res = CliRunner().invoke(cli, ["tune", "--resume", str(nowhere), "--trials", "1"])
        assert res.exit_code == 2 and "not a results folder (no run.json in it)" in res.output
    (tmp_path / "run.json").write_text(json.dumps({"kind": "run", "status": "complete"}))
    res = CliRunner().invoke(cli, ["tune", "--resume", str(tmp_path), "--trials", "1"])
    assert res.exit_code == 2 and "not the folder of a `loadcmp tune` study" in res.output


def test_ctrl_c_mid_study_keeps_the_trials_and_exits_130(model, tmp_path):
    model.interrupt_at = 14  # past the baseline's search, inside the study
    res = tune_cli("--param", "fpm.max_children=5..100", "--trials", "6", "--out", str(tmp_path))
    assert res.exit_code == 130, res.output
    (folder,) = tmp_path.iterdir()
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "interrupted" and len(run["trials"]) == 14
    assert run["tune"]["trials"][0]["number"] == -1 and run["tune"]["gain"] is None
    assert "not compared" in run["tune"]["text"] or "best so far" in run["tune"]["text"]


def test_by_requests_per_second_at_a_level_only_settings_that_meet_the_target_count(model, tmp_path):
    res = tune_cli("--param", "fpm.max_children=5..100", "--trials", "6", "-c", "330", "--out", str(tmp_path),
                   "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)["tune"]
    assert doc["objective"] == "rps" and doc["unit"] == "req/s" and doc["clients"] == 330
    assert doc["trials"][0]["met"] is False  # Debian's 5 children hold 295 clients, not 330
    assert doc["best"]["met"] is True and doc["gain"]["verdict"] == "better"
    assert {t["level"] for t in json.loads((next(tmp_path.iterdir()) / "run.json").read_text())["trials"]} == {330}


def test_the_report_opens_with_the_study_and_draws_its_history(model, tmp_path):
    assert tune_cli("--param", "fpm.max_children=5..100", "--param", "fpm.pm=static,dynamic", "--trials", "5",
                    "--out", str(tmp_path / "r")).exit_code == 0
    (folder,) = (tmp_path / "r").iterdir()
    res = CliRunner().invoke(cli, ["report", str(folder), "--out", str(tmp_path / "rep"), "--format", "html,md,png"])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.index("## Tuning") < md.index("## Capacity") < md.index("## Findings")
    assert "[variants.tuned]" in md and "PED-ANOVA" in md and "| base |" in md
    assert (tmp_path / "rep" / "0-tune.png").stat().st_size > 10_000
    assert "a tuning study" in (tmp_path / "rep" / "report.html").read_text()


# --- on real servers ---------------------------------------------------------------------------------


@pytest.mark.docker
def test_a_short_study_on_real_nginx_measures_compares_and_leaves_nothing(tmp_path, images, docker_client):
    """Two trials by req/s at 20 clients, 1 s probes: each on its own fresh servers, every request a 200,
    the comparison A B A B, the study's journal beside, no container left. The baseline's two php-fpm workers
    serve 20 clients of a 50 ms page at most 40 req/s, and any trial's 10 or more at least 200, whatever the
    noise: a trial wins and is compared."""
    from loadcmp.lab import cleanup

    res = CliRunner().invoke(cli, [
        "tune", "--server", "nginx", "--page", "/sleep.php?ms=50", "--set", "fpm.pm=static", "--set",
        "fpm.max_children=2", "--param", "fpm.max_children=10..30", "--slo", "failed_rate<1%", "-c", "20",
        "--trials", "2", "--seed", "3", "--probe-time", "1s", "--warmup", "0", "--confirm", "2", "--out",
        str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    tune = doc["tune"]
    measured = [t for t in tune["trials"] if t["state"] == "complete"]
    assert len(measured) == 3 and measured[0]["label"] == "nginx-base"  # the baseline and two trials
    assert all(t["value"] > 0 and t["met"] for t in measured)
    assert all(r["failed"] == 0 and r["ok"] > 0 for r in doc["results"])
    assert measured[0]["params"] == {"fpm.max_children": 2} and tune["best"] != -1
    gain = tune["gain"]  # the best and the baseline measured again, alternately, 2 trials each at 20 clients
    assert gain["base"]["n"] == gain["best"]["n"] == 2 and gain["level"] == 20 and gain["verdict"] == "better"
    assert tune["block"].startswith('[variants.tuned]\nstack = "nginx"')
    (folder,) = tmp_path.iterdir()
    run = json.loads((folder / "run.json").read_text())
    for t in measured:  # each label started with its own settings: its php-fpm.conf says so
        fpm = next(v for k, v in run["servers"][t["label"]]["configs"].items() if k.endswith("php-fpm.conf"))
        assert f"pm.max_children = {t['params']['fpm.max_children']}" in fpm
    assert (folder / "study.log").stat().st_size > 0
    assert cleanup.labelled(docker_client) == []


def test_resume_names_every_other_flag_given_as_typed(tmp_path):
    """The flag groups say which flags were given, once: --resume refuses them by the names a user typed."""
    res = CliRunner().invoke(cli, ["tune", "--resume", str(tmp_path), "--trials", "1", "-c", "5", "--server-cpus", "1",
                                   "--docker-host", "tcp://127.0.0.1:2375", "--set", "fpm.pm=static", "--slo",
                                   "p99<1s", "--no-keepalive"])
    assert res.exit_code == 2, res.output
    assert ("(not -c/--clients, --keepalive/--no-keepalive, --server-cpus, --set, --docker-host, --slo)"
            in " ".join(res.output.split()))


def test_flag_groups_give_runspec_fields_and_the_flags_typed():
    from loadcmp.cli.options import DockerFlags, LoadFlags, SetupFlags

    kwargs = {"levels": (5,), "keepalive": False, "page": "/a.php", "sets": ("fpm.pm=static",), "out_dir": "o",
              "stack_dirs": (), "docker_host": "tcp://h:2375", "server_address": None, "extra": 1}
    load, setup = LoadFlags.pop(kwargs), SetupFlags.pop(kwargs)
    assert kwargs == {"extra": 1}  # each group took its own, and only those
    assert load.given() == {"levels": (5,), "keepalive": (False,)}  # --no-keepalive is given
    assert setup.given() == {"page": "/a.php", "out": "o", "docker_host": "tcp://h:2375"}  # --set: with --server
    assert setup.docker == DockerFlags(docker_host="tcp://h:2375")
    assert setup.given_flags() == ["--page", "--set", "--out", "--docker-host"]
    assert setup.fields_with(("x=nginx",)) == {**setup.given(), "servers": ("x",), "stacks": {"x": "nginx"},
                                               "settings": {"fpm.pm": "static"}, "variant_settings": {}}


def test_no_best_and_a_setting_short_of_its_pool_is_no_answer_about_the_setting():
    """Nothing met the target while some trials never reached their setting: 'no setting tried met' would be a
    finding about the setting from trials that say nothing of it, so the answer is 'no answer'."""
    from loadcmp.verdicts.gain import unreached

    short = "fpm.max_children=54 set, 5 workers were busy at most at 40 clients: the pool did not grow"
    trials = [{"number": -1, "state": "complete"}, {"number": 1, "state": "complete"},
              {"number": 2, "state": "complete", "unreached": short}, {"number": 3, "state": "pruned"}]
    doc: Any = {"trials": trials, "best": None, "text": "no setting tried met p99<200ms (the baseline neither)"}
    assert unreached(doc).startswith("no answer: the setting under study did not take effect in 1 of 3")
    doc["best"] = 1  # a best that took effect: the answer stands, the short trial named after it
    doc["text"] = "trial 1 holds more"
    assert unreached(doc).startswith("trial 1 holds more (the setting under study did not take effect in 1 of 3")
