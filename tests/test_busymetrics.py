"""Findings and smoke checks on busy workers (`busy_workers`, `busy_share`), judged on the stored run
tests/fixtures/run-2x3x2 (nginx and apache-prefork at 10, 50 and 200 clients), given a third trial and, where a
test says so, seconds whose status page went unanswered (every worker held)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from loadcmp.errors import UsageError
from loadcmp.store.reader import load_results
from loadcmp.verdicts import busymetrics, smoke
from loadcmp.verdicts.findings import Finding, parse_check
from loadcmp.verdicts.judge import evaluate

RUN = Path(__file__).parent / "fixtures" / "run-2x3x2"


def three_trials(folder: Path, held_at: int | None = None) -> Path:
    """The fixture with trial 2 stored again as trial 3; `held_at`: apache-prefork's status page unanswered in
    its first two seconds at that level (busy_unread, no busy_workers), as when every worker is held."""
    shutil.copytree(RUN, folder)
    run = json.loads((folder / "run.json").read_text())
    run["trials"] += [{**t, "trial": 3} for t in run["trials"] if t["trial"] == 2]
    (folder / "run.json").write_text(json.dumps(run))
    for name in ("timeline.parquet", "server.parquet"):
        df = pd.read_parquet(folder / name)
        df = pd.concat([df, df[df.trial == 2].assign(trial=3)], ignore_index=True)
        if name == "server.parquet" and held_at is not None:
            df["busy_unread"] = float("nan")
            held = (df.server == "apache-prefork") & (df.level == held_at) & (df.second < 2)
            df.loc[held, "busy_unread"] = 1.0
            df.loc[held, "busy_workers"] = float("nan")
        df.to_parquet(folder / name)
    return folder


def judged(folder: Path, check: str):
    return evaluate(load_results(folder), [Finding("claim", parse_check(check))])[0]


def test_each_trial_gives_its_peak_and_its_share_of_the_worker_limit(tmp_path):
    res = load_results(three_trials(tmp_path / "r", held_at=200))
    assert busymetrics.per_trial(res, "busy_workers", "apache-prefork", 10) == ([12.0] * 3, None)
    assert busymetrics.per_trial(res, "busy_share", "nginx", 10) == ([0.8] * 3, None)  # 4 of fpm.max_children 5
    # an unanswered second is every worker held: the limit, prefork.MaxRequestWorkers 150
    assert busymetrics.per_trial(res, "busy_workers", "apache-prefork", 200) == ([150.0] * 3, None)
    assert busymetrics.per_trial(res, "busy_share", "apache-prefork", 200) == ([1.0] * 3, None)


def test_findings_on_busy_workers_are_judged_with_intervals(tmp_path):
    folder = three_trials(tmp_path / "r", held_at=200)
    held = judged(folder, "apache-prefork:busy_share@200 >= 0.99")
    assert held.verdict == "supported" and "100.00%" in held.text
    assert judged(folder, "apache-prefork:busy_share@10 >= 0.99").verdict == "not supported"
    assert judged(folder, "nginx:busy_share@200 < apache-prefork:busy_share").verdict == "supported"
    assert judged(folder, "apache-prefork:busy_workers@..50 < 100").verdict == "supported"


def test_a_label_without_a_worker_limit_has_no_share_and_says_why(tmp_path):
    folder = three_trials(tmp_path / "r")
    run = json.loads((folder / "run.json").read_text())
    del run["servers"]["nginx"]["settings"]["fpm.max_children"]  # its limit's value unknown
    (folder / "run.json").write_text(json.dumps(run))
    got = judged(folder, "nginx:busy_share@10 < 0.5")
    assert got.verdict == "inconclusive" and "names no worker limit" in got.text
    assert judged(folder, "nginx:busy_workers@10 < 5").verdict == "supported"


def test_smoke_checks_take_the_peak_over_the_run(tmp_path):
    res = load_results(three_trials(tmp_path / "r", held_at=200))
    out = smoke.evaluate(res, [smoke.parse_check("apache-prefork:busy_share>=99%"),
                               smoke.parse_check("nginx:busy_workers<5")])
    assert sorted((v.server, v.passed, v.shown) for v in out) == [("apache-prefork", True, "100.00%"),
                                                                 ("nginx", True, "4.0")]


def test_a_busy_metric_takes_no_percentile():
    with pytest.raises(UsageError, match="only p\\(N\\) takes a number"):
        parse_check("nginx:busy_share(99) < 1")


def test_a_share_is_held_to_one_when_the_status_page_counts_past_the_limit(tmp_path):
    # a restart's old workers still finishing can count past MaxRequestWorkers for a second
    folder = three_trials(tmp_path / "r")
    df = pd.read_parquet(folder / "server.parquet")
    df.loc[(df.server == "apache-prefork") & (df.level == 10) & (df.second == 0), "busy_workers"] = 170.0
    df.to_parquet(folder / "server.parquet")
    res = load_results(folder)
    assert busymetrics.per_trial(res, "busy_workers", "apache-prefork", 10) == ([170.0] * 3, None)
    assert busymetrics.per_trial(res, "busy_share", "apache-prefork", 10) == ([1.0] * 3, None)
