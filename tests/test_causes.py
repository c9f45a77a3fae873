"""A trial's causes are stored as records and said in words in one place (`report.causes`); the notes an older
run.json holds as sentences read as records that say them word for word, and report as the records do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.lab.stacks import effective_settings, get_stack
from loadcmp.observe import evidence as ev
from loadcmp.records import TrialRecord
from loadcmp.report.causes import head, note
from loadcmp.store.reader import causes_of, load_results

FIXTURES = Path(__file__).parent / "fixtures"


def test_an_older_note_reads_as_a_record_that_says_it_word_for_word() -> None:
    for name in ("pphc-2022", "run-2x2x3", "capacity-2x"):
        run = json.loads((FIXTURES / name / "run.json").read_text())
        for t in run["trials"]:
            recs = causes_of(t)
            if recs:  # a note is read where a request failed or the logs were read (older runs noted the config)
                assert [note(c, t["result"]["failures"]) for c in recs] == t["notes"], name
                assert [head(c) for c in recs] == [n.split(" — ")[0] for n in t["notes"]]
    # the same cause in two trials is one cause, whatever its figures
    a, b = (TrialRecord(server="s", level=1, trial=i, stack="nginx", keepalive=False, status="ok", reason=None,
                        result={"failed": 1, "failures": {"reset": 1}},  # type: ignore[typeddict-item]
                        notes=[f"nginx had no free connection (nginx.worker_connections {n}) — '{n} worker_connections "
                               f"are not enough' logged {n:,} times"]) for i, n in ((1, 768), (2, 1024)))
    assert causes_of(a)[0]["cause"] == causes_of(b)[0]["cause"]
    assert causes_of(a)[0]["said"] == "'768 worker_connections are not enough' logged 768 times"
    del a["result"]
    assert causes_of(a) == []  # no measurement, nothing it explains


def test_a_record_says_what_the_evidence_showed_with_the_trials_failures() -> None:
    stack = get_stack("nginx")
    tally = ev.tally("[pool www] server reached pm.max_children setting (5), consider raising it\n",
                     causes=stack.causes)
    seen = ev.Seen(tally, {}, {"fpm_max_children_reached": 1.0})
    (rec,) = ev.trial_causes(stack, effective_settings(stack, {}), seen)
    assert rec == {"cause": "fpm.max_children", "setting": "fpm.max_children", "value": 5,
                   "phrase": "php-fpm ran all the workers it may; further PHP requests queued on its socket",
                   "quote": "[pool www] server reached pm.max_children setting (5)", "logged": 1,
                   "rose": 1.0, "rose_said": "fpm-status counted 'max children reached' {times}",
                   "kinds": ["http_5xx", "timeout"]}
    assert note(rec, {"timeout": 3, "reset": 1}).endswith(
        "'[pool www] server reached pm.max_children setting (5)' logged once; fpm-status counted 'max children "
        "reached' once; the failures included 3 timeout (of 4)")
    json.dumps(rec)  # stored as it is


def test_records_and_the_older_sentences_give_the_same_report(tmp_path: Path) -> None:
    """run-2x2x3 as stored (sentences), and with each note replaced by the record today's loadcmp stores for the
    same evidence: report.md is the same, word for word."""
    stack = get_stack("nginx")
    tally = ev.tally("[pool www] server reached pm.max_children setting (5)\n", causes=stack.causes)
    (rec,) = ev.trial_causes(stack, effective_settings(stack, {}), ev.Seen(tally, {}, {"fpm_max_children_reached": 1}))
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(FIXTURES / "run-2x2x3", old)
    shutil.copytree(FIXTURES / "run-2x2x3", new)
    run = json.loads((new / "run.json").read_text())
    changed = 0
    for t in run["trials"]:
        if t.get("notes"):
            assert t.pop("notes") == [note(rec, t["result"]["failures"])]
            t["causes"] = [rec]
            changed += 1
    assert changed
    (new / "run.json").write_text(json.dumps(run))
    reports = []
    for folder in (old, new):
        res = CliRunner().invoke(cli, ["report", str(folder), "--out", str(tmp_path / f"{folder.name}-out"),
                                       "--format", "md"])
        assert res.exit_code == 0, res.output
        reports.append((tmp_path / f"{folder.name}-out" / "report.md").read_text())
    assert reports[0] == reports[1]
    assert "php-fpm ran all the workers it may" in reports[0]
    assert load_results(new).trials[0].get("causes") == [rec]
