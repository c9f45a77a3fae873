"""`compare` on made-up runs: verdicts from the findings' statistics, the set-up differences first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from loadcmp.catalog.compare import compare
from loadcmp.catalog.model import METRICS
from loadcmp.catalog.setup import differences
from helpers.synthetic import Plan, make_runs
from loadcmp.errors import UsageError

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def verdicts(a: Path, b: Path) -> dict[str, str]:
    (row,) = compare(a, b).rows
    return {d.metric: d.verdict for d in row.deltas}


def test_a_30_percent_drop_in_rps_is_worse_and_back_is_better(tmp_path: Path):
    paths = make_runs(tmp_path / "r", 2, step_at=1, step=-0.3)
    assert verdicts(paths[0], paths[1])["rps"] == "worse"
    assert verdicts(paths[0], paths[1])["p99"] == "worse"  # a closed loop waits longer
    assert verdicts(paths[1], paths[0])["rps"] == "better"
    assert verdicts(paths[1], paths[0])["p99"] == "better"
    (row,) = compare(paths[0], paths[1]).rows
    rps = next(d for d in row.deltas if d.metric == "rps")
    assert rps.ratio is not None and rps.ratio_low is not None and rps.ratio_high is not None
    assert rps.ratio_low < rps.ratio < rps.ratio_high < 1 and abs(rps.ratio - 0.7) < 0.05


def test_no_step_is_no_difference(tmp_path: Path):
    paths = make_runs(tmp_path / "r", 2, seed=4)
    v = verdicts(paths[0], paths[1])
    assert set(v) == set(METRICS)
    assert v == {m: "no difference" for m in METRICS}


def test_two_trials_a_side_are_too_few(tmp_path: Path):
    paths = make_runs(tmp_path / "r", 2, step_at=1, step=-0.3, trials=2)
    v = verdicts(paths[0], paths[1])
    assert v["rps"] == "too few trials"
    (row,) = compare(paths[0], paths[1]).rows
    rps = next(d for d in row.deltas if d.metric == "rps")
    assert rps.ratio is not None and rps.ratio_low is None and rps.a.low is None and rps.a.n == 2


def test_a_side_without_a_value_is_not_measured(tmp_path: Path):
    paths = make_runs(tmp_path / "r", 2)
    doc = json.loads((paths[1] / "run.json").read_text())
    for t in doc["trials"]:
        t["server_metrics"] = {}
    (paths[1] / "run.json").write_text(json.dumps(doc))
    v = verdicts(paths[0], paths[1])
    assert v["mem_peak"] == "not measured" and v["cpu_per_request"] == "not measured"
    assert v["rps"] == "no difference"


def test_failures_where_there_were_none_are_worse(tmp_path: Path):
    paths = make_runs(tmp_path / "r", 2)
    doc = json.loads((paths[1] / "run.json").read_text())
    for k, t in enumerate(doc["trials"]):
        t["result"]["failed_rate"] = 0.05 + 0.002 * k
    (paths[1] / "run.json").write_text(json.dumps(doc))
    assert verdicts(paths[0], paths[1])["failed_rate"] == "worse"
    assert verdicts(paths[1], paths[0])["failed_rate"] == "better"


def test_the_changed_setting_and_its_config_diff_come_first(tmp_path: Path):
    paths = make_runs(tmp_path / "r", 2, step_at=1, step=-0.3)
    diffs = differences(paths[0], paths[1])
    assert [(d.kind, d.scope, d.key, d.before, d.after) for d in diffs if d.kind == "setting"] == [
        ("setting", "nginx", "fpm.max_children", "8", "4")]
    (config,) = [d for d in diffs if d.kind == "config"]
    assert config.key == "web/php-fpm.conf"
    assert "-pm.max_children = 8\n" in config.diff and "+pm.max_children = 4\n" in config.diff
    c = compare(paths[0], paths[1])
    assert c.differences == diffs and all(r.setup_differs for r in c.rows)
    assert differences(paths[0], paths[0]) == []
    assert not any(r.setup_differs for r in compare(paths[0], paths[0]).rows)


def test_versions_machine_and_labels_on_one_side(tmp_path: Path):
    paths = make_runs(tmp_path / "r", 2, plan=Plan(labels=("nginx", "apache")))
    doc = json.loads((paths[1] / "run.json").read_text())
    doc["servers"]["nginx"]["versions"]["php"] = "PHP 8.3.1"
    doc["machine"]["kernel"] = "6.9.0"
    doc["loadcmp_version"] = "0.2.0"
    doc["spec"]["duration"] = 30.0
    del doc["servers"]["apache"]
    doc["trials"] = [t for t in doc["trials"] if t["server"] != "apache"]
    (paths[1] / "run.json").write_text(json.dumps(doc))
    c = compare(paths[0], paths[1])
    said = {(d.kind, d.scope, d.key): (d.before, d.after) for d in c.differences}
    assert said[("version", "nginx", "php")] == ("PHP 8.2.0", "PHP 8.3.1")
    assert said[("machine", "", "kernel")] == ("6.1.0", "6.9.0")
    assert said[("loadcmp", "", "loadcmp_version")] == ("0.1.0", "0.2.0")
    assert said[("spec", "", "duration")] == ("4.0", "30.0")
    assert said[("setting", "apache", "server")][1] is None
    assert [r.cell.label for r in c.rows] == ["nginx"]
    assert [k.label for k in c.only_a] == ["apache"] and c.only_b == []


def test_two_runs_that_share_no_cell(tmp_path: Path):
    a = make_runs(tmp_path / "a", 1, plan=Plan(labels=("nginx",)))[0]
    b = make_runs(tmp_path / "b", 1, plan=Plan(labels=("apache",)))[0]
    with pytest.raises(UsageError, match="share no cell") as e:
        compare(a, b)
    assert "\n" not in str(e.value)
    paired = compare(a, b, pair=("nginx", "apache"))
    assert [r.cell.label for r in paired.rows] == ["nginx"]


def test_a_folder_that_is_not_a_results_folder(tmp_path: Path):
    a = make_runs(tmp_path / "a", 1)[0]
    (tmp_path / "empty").mkdir()
    for bad in (tmp_path / "empty", tmp_path / "nothing"):
        with pytest.raises(UsageError, match="is not a results folder"):
            compare(a, bad)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("{")
    with pytest.raises(UsageError, match="is not a results folder .run.json is not JSON"):
        compare(tmp_path / "broken", a)


def test_a_stored_fixture_against_itself(tmp_path: Path):
    shutil.copytree(FIXTURES / "run-2x2x3", tmp_path / "a")
    c = compare(tmp_path / "a", tmp_path / "a")
    assert c.differences == [] and c.rows
    assert {d.verdict for r in c.rows for d in r.deltas} <= {"no difference", "not measured", "too few trials"}


@pytest.mark.parametrize(("bound", "step", "expected"), [
    ("B", 0.3, "better"), ("B", -0.3, "client-bound"), ("B", 0.0, "client-bound"),
    ("A", -0.3, "worse"), ("A", 0.3, "client-bound"), ("A and B", 0.3, "client-bound")])
def test_a_client_bound_side_is_judged_one_sided(tmp_path: Path, bound: str, step: float, expected: str):
    paths = make_runs(tmp_path / "r", 2, step_at=1, step=step)
    for side, path in (("A", paths[0]), ("B", paths[1])):
        if side in bound:
            doc = json.loads((path / "run.json").read_text())
            doc["trials"][0]["result"].update(client_bound=True, client_bound_reason="the client's CPU was full")
            (path / "run.json").write_text(json.dumps(doc))
    (row,) = compare(paths[0], paths[1]).rows
    assert row.client_bound == bound
    assert verdicts(paths[0], paths[1])["rps"] == expected


def test_a_cells_values_are_the_reports_own(tmp_path: Path):
    """The same trials give the same means and intervals as the report's Table 1 (`report.tables.aggregate`)."""
    from loadcmp.catalog.index import open_catalog
    from loadcmp.report.tables import aggregate
    from loadcmp.store.reader import load_results

    shutil.copytree(FIXTURES / "run-2x2x3", tmp_path / "r" / "run-2x2x3")
    agg = aggregate(load_results(tmp_path / "r" / "run-2x2x3")).set_index(["server", "level"])
    same = {"rps": ("rps", 1), "p50": ("p50_ms", 1), "p99": ("p99_ms", 1), "mem_peak": ("mem_peak_bytes", 1),
            "failed_rate": ("failed_rate", 100)}
    checked = 0
    with open_catalog(tmp_path / "r") as cat:
        for metric, (column, scale) in same.items():
            for _, cell, v in cat.values(metric):
                row = agg.loc[(cell.label, cell.level)]
                assert v.n == row["measured"] == 3
                assert v.mean == pytest.approx(row[column] * scale)
                assert v.low == pytest.approx(row[f"{column}_low"] * scale)
                assert v.high == pytest.approx(row[f"{column}_high"] * scale)
                checked += 1
    assert checked == 5 * len(agg)


def test_the_ports_each_run_picked_are_no_difference():
    """Each run picks free ports and writes them into its configs: a front's beside the loopback address (or
    alone, as lighttpd's server.port, known from the trials' URL) and a back-end's. Only a real change shows."""
    from loadcmp.catalog.setup import differences_of

    def doc(front: int, back: int, workers: int) -> dict:
        conf = f"listen 127.0.0.1:{front};\nproxy_pass http://127.0.0.1:{back};\nworkers {workers};\n"
        configs = {"web/nginx.conf": conf, "web/lighttpd.conf": f"server.port = {front}\n"}
        return {"servers": {"web": {"configs": configs}},
                "trials": [{"server": "web", "result": {"url": f"http://127.0.0.1:{front}/"}}]}

    assert differences_of(doc(40659, 41001, 2), doc(35123, 39999, 2)) == []
    (d,) = differences_of(doc(40659, 41001, 2), doc(35123, 39999, 4))
    assert d.kind == "config" and d.key == "web/nginx.conf" and "-workers 2;" in d.diff and "+workers 4;" in d.diff
    hunks = [line for line in d.diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert hunks == ["-workers 2;", "+workers 4;"], d.diff  # the ports each run picked are in no hunk


def test_a_run_whose_labels_kept_no_page_has_the_specs_page_and_no_page_difference(tmp_path: Path):
    """Runs written before labels kept their page: the spec's page is the label's, in the cells as in the
    differences, so no page change is named where none was."""
    from loadcmp.catalog.setup import differences_of

    def doc(label_page: str | None, spec_page: str) -> dict:
        server = {"page": label_page} if label_page else {}
        return {"spec": {"page": spec_page}, "servers": {"nginx": server}}

    assert differences_of(doc("/info.php", "/info.php"), doc(None, "/info.php")) == []
    (d,) = differences_of(doc("/info.php", "/info.php"), doc(None, "/index.html"))
    assert (d.kind, d.scope, d.key, d.before, d.after) == ("page", "nginx", "page", "/info.php", "/index.html")


def test_a_file_is_said_to_be_one(tmp_path: Path):
    (a,) = make_runs(tmp_path / "r", 1)
    with pytest.raises(UsageError, match=r"not a results folder \(a file\)"):
        compare(a / "run.json", a)


def test_two_runs_of_one_label_each_are_told_about_pair(tmp_path: Path):
    (a,) = make_runs(tmp_path / "a", 1)
    (b,) = make_runs(tmp_path / "b", 1, labels=("tuned",))
    with pytest.raises(UsageError, match="--pair nginx=tuned"):
        compare(a, b)
