"""What hey, oha and wrk users expect to read: exact status codes, min/mean/stdev,
the four phases of a response, its size, the connections opened (issue 10, part 3)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.cli.display import short_url

pytestmark = pytest.mark.usefixtures("loop_path")  # both closed loops (conftest)


def bench(url: str, *args: str) -> dict:
    res = CliRunner().invoke(cli, ["bench", url, "-c", "3", "-t", "1", "--json", *args])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


ENGINES = [("fast", False), ("fast", True), ("aiohttp", False), ("aiohttp", True)]


@pytest.mark.parametrize("engine, keepalive", ENGINES)
def test_status_codes_are_exact_and_add_up_to_the_classes(faulty, engine, keepalive):
    doc = bench(faulty.url("/mixed"), "--engine", engine, *(["-k"] if keepalive else []))
    codes = doc["status_codes"]
    assert set(codes) == {"200", "201", "404", "503"}, codes
    assert codes["200"] + codes["201"] == doc["ok"]
    assert codes["404"] == doc["failures"]["http_4xx"] and codes["503"] == doc["failures"]["http_5xx"]
    assert all(n > 0 for n in codes.values())
    assert doc["bytes_per_response"] == pytest.approx(doc["bytes"] / sum(codes.values()), abs=0.1)


@pytest.mark.parametrize("engine, keepalive", ENGINES)
def test_phases_say_where_the_time_went(faulty, engine, keepalive):
    """/slow?ms=40 makes the client wait for the first byte; /split?ms=40 sends the
    head at once and the body later, so the time is in reading."""
    ka = ["-k"] if keepalive else []
    slow = bench(faulty.url("/slow?ms=40"), "--engine", engine, *ka)["phases_ms"]
    assert slow["wait"]["p50"] >= 38 and slow["read"]["p50"] < 20, slow
    split = bench(faulty.url("/split?ms=40"), "--engine", engine, *ka)["phases_ms"]
    assert split["read"]["p50"] >= 38 and split["wait"]["p50"] < 20, split
    for name in ("connect", "write", "wait", "read"):
        p = slow[name]
        assert p["min"] <= p["p50"] <= p["max"] and p["stdev"] >= 0, (name, p)


@pytest.mark.parametrize("engine", ["fast", "aiohttp"])
def test_connections_opened_with_and_without_keepalive(faulty, engine):
    ka = bench(faulty.url("/ok"), "--engine", engine, "-k")
    answered = sum(ka["status_codes"].values())
    assert ka["connections_opened"] == 3 < answered, ka  # three clients, one connection each
    assert ka["phases_ms"]["connect"]["p50"] is not None
    new = bench(faulty.url("/ok"), "--engine", engine)
    assert new["connections_opened"] == sum(new["status_codes"].values()) == new["ok"], new


def test_latency_has_min_mean_and_an_exact_stdev(faulty):
    lat = bench(faulty.url("/slow?ms=20"), "-k")["latency_ms"]
    assert lat["min"] <= lat["mean"] <= lat["max"]
    assert 0 <= lat["stdev"] < lat["mean"]  # 20 ms each, give or take the loop's jitter


def test_the_terminal_shows_codes_phases_and_the_spread(faulty):
    long_path = "/ok/" + "x" * 200
    res = CliRunner().invoke(cli, ["bench", faulty.url(long_path), "-c", "2", "-t", "0.5", "-k"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    for needle in ("status codes", "200 ×", "size/response", "connections opened", "stdev", "mean", "min",
                   "phases (ms)", "connect", "wait", "read", "webbench would print"):
        assert needle in out, needle
    assert "x" * 100 not in out and "…" in out  # the long URL is shortened in the header
    assert "error pages count as success" not in out


def test_webbench_line_says_why_it_differs(faulty):
    res = CliRunner().invoke(cli, ["bench", faulty.url("/404"), "-c", "2", "-t", "0.5"])
    assert res.exit_code == 1  # every request failed
    assert "webbench would print" in res.stdout and "error pages count as success there" in res.stdout


def test_short_url_keeps_the_host_and_the_end():
    url = "http://127.0.0.1:8080/" + "a" * 100 + "/index.php?x=1"
    s = short_url(url, 60)
    assert len(s) == 60 and s.startswith("http://127.0.0.1:8080/") and s.endswith("index.php?x=1")
    assert short_url("http://h/x") == "http://h/x"


def test_connections_opened_in_the_warm_up_are_not_counted_again(faulty):
    """Keep-alive with a warm-up: the three connections open before the window, so the
    window opened none, and no connect phase stretches over the warm-up."""
    doc = bench(faulty.url("/ok"), "-k", "--warmup", "0.5")
    assert doc["warmup_requests"] > 0 and doc["ok"] > 0
    assert doc["connections_opened"] == 0, doc["connections_opened"]
    assert doc["phases_ms"]["connect"]["max"] is None, doc["phases_ms"]["connect"]


def test_a_phase_merged_over_trials_has_the_pooled_mean_stdev_and_extremes():
    """`run --json` rows merge each phase over the trials by the requests each measured: mean, stdev, min and
    max as if every request were pooled; percentiles close to the pooled ones (trials of unequal spread)."""
    import numpy as np

    from loadcmp.load.record.histogram import Histogram
    from loadcmp.load.record.summary import latency_doc, merged_phase

    rng = np.random.default_rng(7)
    parts = [rng.lognormal(-6.0, 0.3, 4000), rng.lognormal(-5.5, 0.6, 1000), rng.lognormal(-6.2, 0.2, 9000)]
    pooled = latency_doc(Histogram.of(np.concatenate(parts)))
    merged = merged_phase([(len(p), latency_doc(Histogram.of(p))) for p in parts] + [(0, None)])
    for k in ("mean", "stdev", "min", "max"):
        assert merged[k] == pytest.approx(pooled[k], rel=1e-3), k
    assert merged["p50"] == pytest.approx(pooled["p50"], rel=0.15)
    one = latency_doc(Histogram.of(parts[0]))
    assert merged_phase([(len(parts[0]), one)]) == pytest.approx(one)  # one trial: its own figures
    assert merged_phase([(0, one)])["mean"] is None  # nothing measured: nothing made up


def test_run_json_rows_carry_started_codes_phases_and_warm_up_over_their_trials(faulty, tmp_path):
    """DESIGN §6: a row of `run --json` has what `bench --json` has; counts are means per trial like `ok`
    (so ok + failed + unfinished == started), their exact sums in `totals`."""
    from helpers.stored import stored_run

    from loadcmp.report.tables import summary_doc
    from loadcmp.store.reader import load_results

    loads = [bench(faulty.url("/slow?ms=5"), "--warmup", "0.3"), bench(faulty.url("/slow?ms=5"), "-c", "5"),
             bench(faulty.url("/404"))]
    docs = iter(loads)

    def edit(t: dict) -> None:  # the first cell's trials carry these real loads; one more trial for three
        if (t["server"], t["level"]) == ("nginx", 10):
            t["result"] = next(docs)

    folder = stored_run(tmp_path / "run", edit=edit)
    run = json.loads((folder / "run.json").read_text())
    extra = next(t for t in run["trials"] if (t["server"], t["level"]) == ("nginx", 10))
    run["trials"].append({**extra, "trial": 3, "result": next(docs)})
    (folder / "run.json").write_text(json.dumps(run))
    row = next(r for r in summary_doc(load_results(folder))["results"] if (r["server"], r["level"]) == ("nginx", 10))
    totals = row["totals"]
    assert totals["trials"] == row["trials"] == 3
    for k in ("started", "ok", "failed", "unfinished", "warmup_requests"):
        assert totals[k] == sum(d[k] for d in loads), k
    assert row["started"] == pytest.approx(totals["started"] / 3, abs=0.05)
    assert row["ok"] + row["failed"] + row["unfinished"] == pytest.approx(row["started"], abs=0.1)
    assert totals["ok"] + totals["failed"] + totals["unfinished"] == totals["started"]
    assert totals["warmup_requests"] > 0 and row["warmup_requests"] == pytest.approx(totals["warmup_requests"] / 3,
                                                                                     abs=0.05)
    assert totals["status_codes"]["404"] == loads[2]["status_codes"]["404"] > 0
    assert sum(totals["status_codes"].values()) == sum(sum(d["status_codes"].values()) for d in loads)
    assert set(row["phases_ms"]) == {"connect", "handshake", "write", "wait", "read"}
    waits = [(sum(d["status_codes"].values()), d["phases_ms"]["wait"]["mean"]) for d in loads]
    assert row["phases_ms"]["wait"]["mean"] == pytest.approx(sum(n * m for n, m in waits) / sum(n for n, _ in waits),
                                                             rel=1e-3)
    assert row["phases_ms"]["wait"]["max"] == max(d["phases_ms"]["wait"]["max"] for d in loads)
    old = next(r for r in summary_doc(load_results(folder))["results"] if (r["server"], r["level"]) == ("nginx", 50))
    assert "status_codes" not in old and "phases_ms" not in old and old["totals"]["started"] > 0  # older results
