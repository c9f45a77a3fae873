"""Findings and smoke checks on what an action's events cost (`reload.failed`, `restart.recovery`), judged on the
stored run tests/fixtures/run-events: nginx and apache-event at 20 clients, 2 trials, each with a reload at 2 s
and a restart at 5 s (nginx's restart is its container's: connects refused; Apache's is SIGHUP: resets)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import UsageError
from loadcmp.experiment.eventspec import events_for, kept, split_label
from loadcmp.store.reader import load_results
from loadcmp.verdicts import eventmetrics, smoke
from loadcmp.verdicts.findings import Finding, parse_check
from loadcmp.verdicts.judge import evaluate
from loadcmp.verdicts.slo import parse_slo

RUN = Path(__file__).parent / "fixtures" / "run-events"


def judged(folder: Path, check: str):
    return evaluate(load_results(folder), [Finding("claim", parse_check(check))])[0]


def with_third_trial(folder: Path) -> Path:
    """The fixture with each cell's trial 2 stored again as trial 3 (run.json and both per-second tables)."""
    shutil.copytree(RUN, folder)
    run = json.loads((folder / "run.json").read_text())
    run["trials"] += [{**t, "trial": 3} for t in run["trials"] if t["trial"] == 2]
    (folder / "run.json").write_text(json.dumps(run))
    for name in ("timeline.parquet", "server.parquet"):
        df = pd.read_parquet(folder / name)
        df = pd.concat([df, df[df.trial == 2].assign(trial=3)], ignore_index=True)
        df.to_parquet(folder / name)
    return folder


@pytest.mark.parametrize("text,metric", [("reload.failed==0", "reload.failed"),
                                         ("nginx:reload_php.unanswered<=1", "reload_php.unanswered"),
                                         ("restart.recovery<2s", "restart.recovery"), ("p99.9<2s", "p")])
def test_an_event_s_figure_is_its_action_a_dot_and_its_name(text, metric):
    assert smoke.parse_check(text).metric == metric
    assert parse_check(f"nginx:{text.split(':')[-1]}").left.metric == metric


@pytest.mark.parametrize("text,said", [
    ("nginx:reload.bogus < 1", "unknown event metric 'bogus'"),
    ("nginx:reload.recovery == 0", "'==' cannot be judged from an interval"),
    ("nginx:rps == 100", "'==' cannot be judged from an interval"),
    ("nginx:reload.failed == apache-event:reload.failed", "== takes a value on the right"),
    ("nginx:reload.recovery < 2", "give the time a unit"),
    ("nginx:reload.failed < apache-event:rps", "measure different things")])
def test_bad_event_checks_are_refused_in_one_line(text, said):
    with pytest.raises(UsageError) as e:
        parse_check(text)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_a_capacity_target_refuses_an_event_s_figure():
    with pytest.raises(UsageError, match="judged by findings and smoke checks"):
        parse_slo("p99<500ms, reload.failed==0")


def test_each_trial_gives_its_events_figures_from_the_stored_seconds():
    res = load_results(RUN)
    failed, why = eventmetrics.per_trial(res, "restart.failed", "nginx", 20)
    assert why is None and len(failed) == 2 and min(failed) > 100  # its container restarted: connects refused
    table = res.timeline[(res.timeline.server == "nginx") & (res.timeline.second >= 5)]
    assert max(failed) <= table.groupby("trial")["connect_refused"].sum().max() + table["reset"].sum()
    assert eventmetrics.per_trial(res, "reload.failed", "nginx", 20) == ([0.0, 0.0], None)
    back = eventmetrics.per_trial(res, "restart.recovery", "apache-event", 20)[0]  # from when it fired
    assert back == [pytest.approx(1.0, abs=0.01)] * 2
    assert eventmetrics.per_trial(res, "reload.events", "nginx", 20) == ([1.0, 1.0], None)
    unanswered = eventmetrics.per_trial(res, "restart.unanswered", "apache-event", 20)[0]
    assert unanswered == eventmetrics.per_trial(res, "restart.failed", "apache-event", 20)[0]  # all resets
    rate = eventmetrics.per_trial(res, "restart.failed_rate", "nginx", 20)[0]
    assert all(0 < r < 1 for r in rate)


def test_no_event_of_the_action_and_one_never_back_are_said_not_passed():
    res = load_results(RUN)
    assert eventmetrics.per_trial(res, "kill_worker.failed", "nginx", 20) == (
        [], "no kill_worker event in nginx at 20 (its events: reload, restart)")
    values, why = eventmetrics.per_trial(res, "reload.recovery", "nginx", 20)
    assert values == [] and why is not None and "was not back within its window" in why


def test_findings_on_events_are_judged_with_their_reasons():
    f = judged(RUN, "apache-event:restart.failed == 0")
    assert f.verdict == "not supported" and "2 of 2 trials measured otherwise" in (f.reason or "")
    f = judged(RUN, "nginx:reload.failed == 0")
    assert f.verdict == "inconclusive" and "only 2 trials" in (f.reason or "")
    f = judged(RUN, "nginx:kill_worker.failed == 0")
    assert f.verdict == "inconclusive" and f.reason == "at 20: no kill_worker event in nginx at 20 (its events: " \
                                                       "reload, restart)"
    f = judged(RUN, "apache-event:restart.recovery < 3s")
    assert f.verdict == "supported" and "apache-event restart.recovery 0.99s" in f.text
    assert f.values["scale"] == "s" and f.values["levels"][0]["left"]["mean"] == pytest.approx(1.0, abs=0.01)
    f = judged(RUN, "nginx:restart.failed > 2 * apache-event:restart.failed")
    assert f.verdict == "supported" and "nginx/apache-event restart.failed ratio" in f.text
    f = judged(RUN, "nginx:reload.recovery < apache-event:reload.recovery")
    assert f.verdict == "inconclusive" and "was not back within its window" in (f.reason or "")


def test_an_equality_holds_on_three_trials_each_exactly_it(tmp_path):
    folder = with_third_trial(tmp_path / "run")
    assert judged(folder, "nginx:reload.failed == 0").verdict == "supported"
    assert judged(folder, "apache-event:reload.failed == 0").verdict == "supported"
    assert judged(folder, "nginx:restart.failed == 0").verdict == "not supported"


def test_an_event_that_failed_leaves_its_figures_unmeasured(tmp_path):
    folder = shutil.copytree(RUN, tmp_path / "run")
    run = json.loads((folder / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "nginx" and t["trial"] == 2:
            t["events"][0].update(ok=False, said="nginx -s reload exited 1: invalid config")
    (folder / "run.json").write_text(json.dumps(run))
    f = judged(folder, "nginx:reload.failed == 0")
    assert f.verdict == "inconclusive" and "failed: nginx -s reload exited 1: invalid config" in (f.reason or "")
    got = smoke.evaluate(load_results(folder), smoke.parse_checks(["reload.failed==0"]))
    nginx = next(v for v in got if v.server == "nginx")
    assert not nginx.passed and "exited 1: invalid config" in nginx.message


def test_smoke_checks_on_events_pass_fail_and_say_when_there_were_none():
    got = smoke.evaluate(load_results(RUN), smoke.parse_checks(
        ["reload.failed==0", "restart.failed==0", "kill_worker.failed==0", "apache-event:restart.recovery<2s"]))
    by = {(v.server, v.check): v for v in got}
    assert by["nginx", "reload.failed==0"].passed and by["apache-event", "reload.failed==0"].passed
    assert not by["nginx", "restart.failed==0"].passed and by["nginx", "restart.failed==0"].measured > 100
    none = by["nginx", "kill_worker.failed==0"]
    assert not none.passed and none.message == ("nginx: kill_worker.failed==0: not measured (no kill_worker event "
                                                "in this run (its events: reload, restart))")
    assert by["apache-event", "apache-event:restart.recovery<2s"].shown == "0.99s"


def test_a_smoke_run_with_an_event_check_and_no_event_says_so_in_the_summary(tmp_path):
    res = load_results(Path(__file__).parent / "fixtures" / "run-2x3x2")
    got = smoke.evaluate(res, smoke.parse_checks(["reload.failed==0"]))
    assert got and all(not v.passed and "(it had no events)" in v.message for v in got)


def test_an_event_for_one_label_fires_there_beside_the_run_s():
    events = ("every 5s reload", "tuned: 3s restart", "other: 1s kill worker")
    assert split_label("tuned: 3s restart") == ("tuned", "3s restart")
    assert split_label("every 5s reload") == (None, "every 5s reload")
    assert events_for(events, "tuned") == ("every 5s reload", "3s restart")
    assert events_for(events, "nginx") == ("every 5s reload",)
    assert kept(events, ["tuned"]) == ("every 5s reload", "tuned: 3s restart")


def test_variants_take_events_and_a_label_nobody_has_is_refused(tmp_path):
    from loadcmp.experiment.flags import build_spec

    f = tmp_path / "x.toml"
    f.write_text('time = "8s"\n[variants.calm]\nstack = "nginx"\n'
                 '[variants.reloaded]\nstack = "nginx"\nevents = ["every 3s reload"]\n'
                 '[variants.gone]\nstack = "apache-event"\nevents = ["2s restart"]\n'
                 '[[events]]\nat = "1s"\naction = "reload php"\n')
    spec = build_spec(str(f), {"servers": ("calm", "reloaded")})
    assert spec.events == ("1s reload php", "reloaded: every 3s reload")  # `gone` was left out by --server
    assert events_for(spec.events, "calm") == ("1s reload php",)
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-t", "5s", "--event", "nosuch: 1s reload",
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "no server is labelled 'nosuch'" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_a_variant_s_event_is_checked_against_its_own_stack(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('time = "8s"\n[variants.c]\nstack = "caddy"\nevents = ["every 3s kill worker"]\n')
    res = CliRunner().invoke(cli, ["run", str(f), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "caddy has no command for 'kill worker'" in res.output, res.output


def test_capacity_fires_events_in_its_probes_whose_times_must_fall_inside_one():
    from loadcmp.experiment.flags import search_spec

    base, cap, _ = search_spec(None, {"servers": ("nginx",), "events": ("every 5s reload",)},
                               {"slo": "p99<500ms", "probe_time": 12.0})
    assert base.events == ("every 5s reload",) and cap.probe_time == 12.0
    assert [t for t in cap.probe_spec(base, 40).events] == ["every 5s reload"]  # every probe and confirmation
    with pytest.raises(UsageError, match="every 5 s never comes inside the 5 s window"):
        search_spec(None, {"servers": ("nginx",), "events": ("every 5s reload",)}, {"slo": "p99<500ms"})
    res = CliRunner().invoke(cli, ["capacity", "--server", "caddy", "--slo", "p99<500ms", "--probe-time", "8s",
                                   "--event", "2s kill worker"])
    assert res.exit_code == 2 and "caddy has no command for 'kill worker'" in res.output, res.output
