"""`loadcmp seeds` without Docker: the budget cut (pure), the summary and docs/seeds.md from stored
fixture runs, and the command with its sweep replaced by stored runs."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from helpers.stored import FIXTURES, client_bound, stored_run
from loadcmp.cli import cli
from loadcmp.errors import UsageError
from loadcmp.experiment.spec import RunSpec
from loadcmp.writeups import plan
from loadcmp.writeups.summary import SeedRun, markdown, summarize, write_page, write_summary
from loadcmp.store.reader import load_results

PPHC = FIXTURES / "pphc-2022"
LEVELS = (50, 100, 250, 500, 1000, 1500, 2000, 3000, 4000, 6000, 8000, 10000, 15000)


def _five() -> list[tuple[str, Path, RunSpec]]:
    from loadcmp.cli.seeds import seed_files

    return seed_files("results")


# --- the budget ------------------------------------------------------------------------------


def test_a_runs_estimate_is_its_trials_windows_and_server_starts() -> None:
    spec = RunSpec(servers=("nginx", "apache-prefork"), levels=(50, 100), duration=10.0, warmup=2.0, trials=3)
    trials = 2 * 2 * 3
    assert plan.estimate(spec) == trials * (10 + 2 + plan.TRIAL_S) + trials * plan.START_S + plan.REPORT_S
    kept = replace(spec, reuse_server=True)  # one start per server for the whole run
    assert plan.estimate(kept) == trials * (10 + 2 + plan.TRIAL_S) + 2 * plan.START_S + plan.REPORT_S
    n = replace(spec, requests=5000, duration=60.0)  # -n: its requests at the assumed rate, at most -t
    assert plan.estimate(n) == trials * (5000 / plan.ASSUMED_RPS + 2 + plan.TRIAL_S) + trials * plan.START_S \
        + plan.REPORT_S
    assert plan.estimate(replace(n, duration=1.0)) < plan.estimate(n)


def test_levels_kept_spread_over_the_range() -> None:
    assert plan.spread(LEVELS, 7) == (50, 250, 1000, 2000, 4000, 8000, 15000)
    assert plan.spread(LEVELS, 2) == (50, 15000)
    assert plan.spread(LEVELS, 1) == (15000,)
    assert plan.spread((100, 200), 5) == (100, 200)


def test_shrink_cuts_levels_and_windows_in_proportion_and_says_so() -> None:
    spec = RunSpec(servers=("nginx",), levels=LEVELS, duration=30.0)
    assert plan.shrink(spec, 1.0) == ({}, [])
    over, cuts = plan.shrink(spec, 0.5)
    assert over == {"levels": (50, 250, 1000, 2000, 4000, 8000, 15000), "duration": 15.0}
    assert cuts == ["-c 50,100,250,500,1000,1500,2000,3000,4000,6000,8000,10000,15000 -> "
                    "50,250,1000,2000,4000,8000,15000 (6 of 13 levels left out: 100,500,1500,3000,6000,10000)",
                    "-t 30s -> 15s"]
    assert plan.shrink(spec, 0.01)[0] == {"levels": (15000,), "duration": plan.MIN_WINDOW}
    ramp = RunSpec(servers=("nginx",), levels=(5000,), duration=100.0, schedule="ramp", ramp_up=50.0, pace=5.0)
    assert plan.shrink(ramp, 0.1) == ({"duration": 60.0}, ["-t 1m40s -> 1m"])  # the ramp-up and two paces stay
    n = RunSpec(servers=("nginx",), levels=(100, 200, 300), duration=60.0, requests=10000)
    assert plan.shrink(n, 0.5) == ({"levels": (100, 300)}, ["-c 100,200,300 -> 100,300 (1 of 3 levels left out: 200)"])


def test_the_five_are_cut_by_one_share_to_fit_the_budget() -> None:
    files = _five()
    assert [n for n, _, _ in files] == list(plan.SEEDS)
    whole = sum(plan.estimate(s) for _, _, s in files)
    cuts = plan.fit(files, 30 * 60)
    total = sum(c.estimate_s for c in cuts)
    assert whole > 30 * 60 >= total > 0.85 * 30 * 60, (whole, total)  # the budget held, and used
    assert all(c.full_s == plan.estimate(s) for c, (_, _, s) in zip(cuts, files, strict=True))
    for c in cuts:  # what each cut says is what it changes
        assert bool(c.cuts) == bool(c.overrides)
        assert c.estimate_s == plan.estimate(replace(c.spec, **c.overrides))
        assert c.spec.trials == replace(c.spec, **c.overrides).trials and "requests" not in c.overrides
    shares = [len(c.overrides.get("levels", c.spec.levels)) / len(c.spec.levels)
              for c in cuts if len(c.spec.levels) > 3]
    assert max(shares) - min(shares) < 0.2, shares  # in proportion: the same share of every file's levels
    roomy = plan.fit(files, whole + 60)
    assert all(not c.cuts and not c.overrides for c in roomy)
    with pytest.raises(UsageError, match=r"a budget of 5m cannot hold the 5 write-ups: .* give --budget \d+m or more"):
        plan.fit(files, 5 * 60)


# --- the summary and the page, from stored runs -----------------------------------------------


def _judged(folder: Path, findings: list[dict[str, str]]) -> Path:
    from loadcmp.cli.run import judge_findings

    judge_findings(str(folder), RunSpec(servers=("nginx", "apache-prefork"), findings=tuple(findings)))
    return folder


STATIC = {"nginx": [16800.0, 17000.0, 17200.0], "apache-prefork": [8300.0, 8461.0, 8622.0]}


def test_each_claim_with_its_words_measurement_verdict_and_the_servers_evidence() -> None:
    s = summarize([SeedRun("pphc-2022", "configs/experiments/pphc-2022.toml", PPHC, ("-t 1m40s -> 1m",), 400.0)],
                  "loadcmp seeds --budget 30m", 1800.0, 1700.0)
    run = json.loads((PPHC / "run.json").read_text())
    (seed,) = s["seeds"]
    assert seed["run_id"] == run["run_id"] and seed["cuts"] == ["-t 1m40s -> 1m"] and seed["status"] == "complete"
    assert [c["claim"] for c in seed["claims"]] == [f["claim"] for f in run["findings"]]
    assert s["verdicts"] == {"supported": 1, "not supported": 1, "inconclusive": 1}
    proxy = seed["claims"][1]  # judged on the app's page, /sleep (Laravel), of the two the run loaded
    assert proxy["text"] == run["findings"][1]["text"] and "2.41× (1.89–3.07)" in proxy["text"]
    assert proxy["measured"] == ["proxy-article /sleep 221 req/s (167–274) against prefork-article /sleep 92 req/s "
                                 "(89–94) at 5,000 clients"]
    # the causes are the servers' notes of this run, for the labels the claim names only
    named = ("proxy-article /sleep", "prefork-article /sleep")
    notes = {n.split(" — ")[0] for t in run["trials"] if t["server"] in named for n in t["notes"]}
    assert notes and all(any(n in c for c in proxy["causes"]) for n in notes), proxy["causes"]
    assert all(c.startswith(named) for c in proxy["causes"]), proxy["causes"]
    assert any("its CPU was saturated" in c for c in proxy["causes"])  # the framework's CPU, where sleep.php's is not
    assert s["machine"] == run["machine"] and (s["from"], s["to"]) == (run["started"], run["ended"])


def test_the_cause_follows_the_data_not_a_fixed_sentence(tmp_path: Path) -> None:
    def louder(t: dict[str, Any]) -> None:
        t["notes"] = [n.replace("logged once", "logged 4,321 times") for n in t["notes"]]

    folder = stored_run(tmp_path / "run", None, louder, PPHC)
    (seed,) = summarize([SeedRun("pphc-2022", "f.toml", folder)], "x")["seeds"]
    assert any("logged 4,321 times" in c for c in seed["claims"][0]["causes"])
    assert not any("logged once" in c for c in seed["claims"][0]["causes"])


def test_a_client_bound_static_page_is_judged_one_sided_in_the_summary(tmp_path: Path) -> None:
    folder = _judged(stored_run(tmp_path / "run", STATIC, client_bound("nginx", reason="busy 99%")),
                     [{"claim": "Nginx serves more static pages per second than Apache.",
                       "check": "nginx:rps@50 > apache-prefork:rps"}])
    (seed,) = summarize([SeedRun("cnblogs-2014", "f.toml", folder)], "x")["seeds"]
    (c,) = seed["claims"]
    assert c["verdict"] == "supported" and "nginx ≥ 17,000 req/s (16,503–17,497, client-bound)" in c["text"]
    assert c["measured"] == ["nginx 17,000 req/s (16,503–17,497) ‡ against apache-prefork 8,461 req/s (8,061–8,861) "
                             "at 50 clients"]
    assert "nginx was client-bound at 10, 50, 200 clients (busy 99%): its rate there is a lower bound." in c["causes"]


def test_webbench_counting_and_memory_per_process_come_from_the_stored_figures(tmp_path: Path) -> None:
    def error_pages(t: dict[str, Any]) -> None:
        r = t["result"]
        if t["server"] == "nginx" and t["level"] == 200:
            r["failures"]["http_5xx"] = 1000
            r["failed"] += 1000
            r["webbench"]["susceed"] = r["ok"] + 1000
        t["server_metrics"].update(mem_peak_bytes=3 * 2**20 * t["level"], procs_peak=3 * t["level"])

    folder = _judged(stored_run(tmp_path / "run", None, error_pages),
                     [{"claim": "Nginx fails nothing.", "check": "nginx:failed_rate < 1%"},
                      {"claim": "Apache uses more memory.", "check": "apache-prefork:mem_peak > 2 * nginx:mem_peak"}])
    (seed,) = summarize([SeedRun("paper-2013", "f.toml", folder)], "x")["seeds"]
    fails, mem = seed["claims"]
    assert ("nginx: webbench would count 1,000 of the 1,000 requests loadcmp failed at 200 clients as successes (it "
            "reads an error page to its end as one; 1 level differ).") in fails["causes"]
    assert "apache-prefork: peak memory 600.0 MiB with 600 processes at 200 clients, about 1.0 MiB a process." \
        in mem["causes"]
    assert not any("webbench" in c for c in mem["causes"] if c.startswith("apache-prefork"))


def test_the_page_names_the_machine_the_date_the_command_and_every_claim(tmp_path: Path) -> None:
    seeds = [SeedRun("pphc-2022", "configs/experiments/pphc-2022.toml", PPHC, ("-t 1m40s -> 1m",)),
             SeedRun("windows-2025", "configs/experiments/windows-2025.toml", None, problem="the engine went away")]
    s = summarize(seeds, "loadcmp seeds --budget 30m", 1800.0, 1750.0)
    md = markdown(s)
    run = json.loads((PPHC / "run.json").read_text())
    m = run["machine"]
    assert f"| machine | {m['cores']} CPUs ({m['cpu_model']}), 23.5 GiB memory, kernel {m['kernel']} |" in md
    assert f"| runs | {run['started']} to {run['ended']} |" in md and "`loadcmp seeds --budget 30m`" in md
    assert "| budget | 30 min 0 s; took 29 min 10 s |" in md
    assert "| verdicts | 1 supported, 1 not supported, 1 inconclusive |" in md
    assert f"stored in `{PPHC}` (run {run['run_id']}, complete)" in md and "`-t 1m40s -> 1m`" in md
    assert "## windows-2025" in md and "- problem: the engine went away" in md
    rows = [line for line in md.splitlines() if line.startswith("| ") and "**" in line]
    assert len(rows) == 3 and all(f"**{f['verdict']}**" in r for f, r in zip(run["findings"], rows, strict=True))
    js, summary_md = write_summary(s, tmp_path / "seeds")
    assert json.loads(js.read_text()) == json.loads(json.dumps(s)) and summary_md.read_text() == md
    # another machine's run makes another page: nothing in it is typed by hand
    other = stored_run(tmp_path / "other", None, None, PPHC)
    doc = json.loads((other / "run.json").read_text())
    doc["machine"].update(cores=64, cpu_model="Some Other CPU", kernel="7.0.0")
    (other / "run.json").write_text(json.dumps(doc))
    page = write_page(summarize([SeedRun("pphc-2022", "f.toml", other)], "x"), tmp_path / "seeds.md")
    assert "| machine | 64 CPUs (Some Other CPU), 23.5 GiB memory, kernel 7.0.0 |" in page.read_text()


# --- the command -------------------------------------------------------------------------------


@pytest.mark.parametrize("budget, says", [("soon", "bad --budget 'soon'"), ("0", "must be positive"),
                                          ("5m", "cannot hold the 5 write-ups")])
def test_a_bad_budget_is_one_line_and_exit_2(budget: str, says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import loadcmp.cli.seeds as cmd

    monkeypatch.setattr(cmd, "run_seed", lambda *a, **k: pytest.fail("nothing may run"))
    res = CliRunner().invoke(cli, ["seeds", "--budget", budget])
    assert res.exit_code == 2, res.output
    assert says in res.output and len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_a_dry_run_says_the_cuts_and_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import loadcmp.cli.seeds as cmd

    monkeypatch.setattr(cmd, "run_seed", lambda *a, **k: pytest.fail("nothing may run"))
    res = CliRunner().invoke(cli, ["seeds", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "cut: -t 30s -> 15s" in res.output and "within a budget of 30.0 min" in res.output
    assert all(name in res.output for name in plan.SEEDS)


def test_seeds_run_each_file_as_run_would_and_write_the_reports_summary_and_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep replaced by a stored run (no Docker): what reaches it is the file as cut, its findings
    are judged as `loadcmp run` judges them, and each write-up gets its report, the five one summary and page."""
    import loadcmp.cli.run as run_cli
    from loadcmp.sweep.runner import SweepOutcome

    seen: list[RunSpec] = []

    def stored_sweep(spec: RunSpec, *, as_json: bool = False, table: bool = True, live: object = None,
                     command: str = "run") -> SweepOutcome:
        seen.append(spec)
        folder = Path(spec.out) / spec.name
        shutil.copytree(PPHC, folder)
        if spec.findings:
            run_cli.judge_findings(str(folder), spec)
        return SweepOutcome(str(folder), "failed" if spec.name == "windows-2025" else "complete",
                            ["the engine went away"] if spec.name == "windows-2025" else [])

    import loadcmp.cli.seeds as cmd

    built: list[list[str]] = []
    monkeypatch.setattr(run_cli, "sweep", stored_sweep)
    monkeypatch.setattr(cmd, "build_all", lambda cuts: built.append([c.name for c in cuts]))
    page = tmp_path / "docs" / "seeds.md"
    page.parent.mkdir()
    out = tmp_path / "results"
    res = CliRunner().invoke(cli, ["seeds", "--out", str(out), "--docs", str(page), "--format", "md"])
    assert res.exit_code == 1, res.output  # one write-up failed: said, and the rest still summarised
    assert "windows-2025: the engine went away" in res.output
    cuts = {c.name: c for c in plan.fit(_five(), 30 * 60)}
    assert [s.name for s in seen] == list(plan.SEEDS) and built == [list(plan.SEEDS)]  # built before they ran
    for spec in seen:
        want = replace(cuts[spec.name].spec, **cuts[spec.name].overrides)
        assert (spec.levels, spec.duration, spec.trials) == (want.levels, want.duration, want.trials)
        assert (out / spec.name / "report" / "report.md").is_file()
    (folder,) = out.glob("seeds-*")
    summary = json.loads((folder / "seeds.json").read_text())
    assert [s["name"] for s in summary["seeds"]] == list(plan.SEEDS)
    assert summary["command"] == "loadcmp seeds --budget 30m" and summary["budget_s"] == 1800
    pphc = summary["seeds"][1]
    assert [c["verdict"] for c in pphc["claims"]] == ["supported", "inconclusive", "not supported"]
    assert pphc["cuts"] == list(cuts["pphc-2022"].cuts)
    assert page.read_text() == (folder / "seeds.md").read_text()
    assert "- problem: the engine went away" in page.read_text()
    assert load_results(out / "pphc-2022").run["findings"][2]["verdict"] == "not supported"
