"""What got no answer, shown (issue 49): a status page unanswered because every worker is held is evidence (the
sampler marks each second whose busy-worker count did not come, `busy_unread`, and the shared cause
`status.unanswered` says it, for a stack whose pages count busy workers); the users who got no answer in the
window are said in the report and in `--json`'s rows.
"""

from __future__ import annotations

from loadcmp.lab.model import StatusPage
from loadcmp.lab.stacks import effective_settings, get_stack
from loadcmp.observe import evidence as ev
from loadcmp.observe import statuspages
from loadcmp.observe.metrics import summarize
from loadcmp.report.causes import note

APACHE = StatusPage("apache", "/server-status?auto", "regex", (("apache_busy", r"^BusyWorkers: (\d+)"),))


def test_a_second_without_its_busy_count_is_marked_only_where_a_page_read_counts_them():
    cols = ["apache_busy"]
    assert statuspages.with_busy_workers({}, cols, [APACHE]) == {statuspages.BUSY_UNREAD: 1.0}
    assert statuspages.with_busy_workers({"apache_busy": 150.0}, cols, [APACHE]) == {"apache_busy": 150.0,
                                                                                       "busy_workers": 150.0}
    assert statuspages.with_busy_workers({}, cols, []) == {}  # no page read counts them (left out): no evidence
    assert statuspages.with_busy_workers({}, [], [APACHE]) == {}  # a stack without busy workers


def _rows(unread: list[bool]) -> list[dict[str, object]]:
    return [{"server": "apache-prefork", "second": k, **({"busy_unread": 1.0} if u else {"apache_busy": 40.0,
                                                                                          "busy_workers": 40.0})}
            for k, u in enumerate(unread)]


def test_a_window_of_unanswered_status_pages_makes_the_cause_and_its_sentence():
    stack = get_stack("apache-prefork")
    settings = effective_settings(stack, {})
    rows = _rows([True] * 10)
    assert summarize(rows)["busy_workers_peak"] is None  # what the report had before: an empty column
    peaks = ev.status_peaks(rows, stack.causes)
    (rec,) = ev.trial_causes(stack, settings, ev.Seen(None, {}, peaks, scope="host"))  # not a kernel counter
    assert rec["cause"] == "status.unanswered" and rec["rose"] == 10
    assert rec["setting"] == "prefork.MaxRequestWorkers" and rec["value"] == 150
    said = note(rec, {})
    assert said.startswith("every worker was held, so its status page went unanswered (prefork.MaxRequestWorkers "
                           "150) — ")
    assert "went unanswered 10 times (sampled once a second)" in said
    # every page answered: no cause
    assert ev.trial_causes(stack, settings, ev.Seen(None, {}, ev.status_peaks(_rows([False] * 10), stack.causes),
                                                    scope="host")) == []


class Stored:
    """What the report's section reads of stored results: cells of trials, the servers and levels."""

    def __init__(self, trials: list[dict[str, object]]) -> None:
        self.trials = trials
        self.servers = sorted({str(t["server"]) for t in trials})
        self.levels = sorted({int(t["level"]) for t in trials})  # type: ignore[call-overload]

    def cell(self, server: str, level: int) -> list[dict[str, object]]:
        return [t for t in self.trials if t["server"] == server and t["level"] == level and t.get("result")]

    def info(self, label: str) -> None:
        return None


def _trial(server: str, held: int | None, trial: int = 1) -> dict[str, object]:
    result: dict[str, object] = {"schedule": {"kind": "ramp", "users": 600, "ramp_up_s": 0.0, "pace_s": 2.0}}
    if held is not None:
        result["users_unanswered"] = held
    return {"server": server, "level": 600, "trial": trial, "result": result}


def test_the_report_says_how_many_users_got_no_answer_and_only_where_some_did():
    from loadcmp.report.waiting import waiting

    data = Stored([_trial("apache-prefork", 450), _trial("nginx-apache", None)])
    lines = waiting(data)  # type: ignore[arg-type]
    assert lines[0] == "apache-prefork at 600 clients: 450 of 600 users got no answer in the window."
    assert len(lines) == 2 and "counted by kind and as unfinished" in lines[1]  # what they are counted as, said once
    trials = Stored([_trial("apache-prefork", 440, 1), _trial("apache-prefork", 450, 2)])
    assert waiting(trials)[0].endswith("440–450 of 600 users got no answer in the window (per trial, over 2 "  # type: ignore[arg-type]
                                       "trials).")
    assert waiting(Stored([_trial("nginx-apache", None)])) == []  # type: ignore[arg-type]


def test_a_json_row_holds_the_users_unanswered_per_trial_only_where_a_trial_stored_them():
    from loadcmp.load.record.summary import over_trials

    docs = [{"started": 10, "ok": 4, "failed": 0, "unfinished": 6, "users_unanswered": 450},
            {"started": 10, "ok": 4, "failed": 0, "unfinished": 6, "users_unanswered": 440}]
    row = over_trials(docs)  # type: ignore[arg-type]
    assert row["users_unanswered"] == 445 and row["totals"]["users_unanswered"] == 890
    assert "users_unanswered" not in over_trials([{"started": 1, "ok": 1, "failed": 0, "unfinished": 0}])  # type: ignore[list-item]
