"""Weighted mixes: the parser, the seeded draw, and each page counted on its own by every engine."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import UsageError
from loadcmp.load.driver import LoadSpec
from loadcmp.load.pageset import Cursor, Pages
from loadcmp.load.record.recorder import Recorder
from loadcmp.load.schedules import Closed, Rate
from loadcmp.load.record.summary import check_invariant, result_doc, timeline_rows
from loadcmp.load.target import TlsOptions, make_target
from loadcmp.load.run.workers import run_load, split_spec
from loadcmp.traffic.mix import check_mix, draw, mix_pages, parse_mix, shares

# --- the parser -----------------------------------------------------------------------------


def test_each_item_is_split_on_its_last_equals_sign():
    assert parse_mix("/=50,/?p=1042=30,/wp-content/uploads/x.jpg=20") == (
        ("/", 50.0), ("/?p=1042", 30.0), ("/wp-content/uploads/x.jpg", 20.0))
    assert parse_mix(" /a?x=1&y=2 = 1.5 ") == (("/a?x=1&y=2", 1.5),)


@pytest.mark.parametrize(("text", "said"), [
    ("/=50,/?p=1042=x", "the weight of '/?p=1042' is not a number: 'x'"),
    ("/=0,/a=0", "the weights add up to 0"),
    ("/=-1,/a=2", "the weight of '/' is negative"),
    ("", "--mix is empty"),
    (" , ", "--mix is empty"),
    ("/a", "write PAGE=WEIGHT"),
    ("=3", "write PAGE=WEIGHT"),
    ("/=1,/=2", "names '/' twice"),
    ("a=1", "must start with /"),
    ("/=nan", "is not a number"),
])
def test_bad_mixes_are_refused_in_one_line(text, said):
    with pytest.raises(UsageError) as e:
        parse_mix(text)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_a_mix_table_is_checked_as_the_flag_is():
    assert check_mix({"/": 60, "/?p=1042": 30.5}) == (("/", 60.0), ("/?p=1042", 30.5))
    for bad, said in (({}, "is empty"), ({"/": True}, "not a number"), ({"/": "x"}, "not a number"),
                      ({"/": 0}, "add up to 0"), ({"/": -2, "/a": 3}, "negative")):
        with pytest.raises(UsageError, match=said):
            check_mix(bad)


@pytest.mark.parametrize("mix", ["/=50,/?p=1=x", "/=0", "/=-3,/b=1", ","])
def test_run_refuses_a_bad_mix_before_anything_starts(mix, tmp_path):
    r = CliRunner().invoke(cli, ["run", "--server", "nginx", "--mix", mix, "-t", "1s", "--out", str(tmp_path)])
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and "mix" in r.output
    assert not list(tmp_path.iterdir())  # no results folder: nothing started


def test_a_bad_mix_table_in_an_experiment_file_is_exit_2(tmp_path):
    exp = tmp_path / "e.toml"
    exp.write_text('servers = ["nginx"]\n[mix]\n"/" = "lots"\n')
    r = CliRunner().invoke(cli, ["run", str(exp), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and "[mix]" in r.output and "not a number" in r.output, r.output


def test_the_mix_and_its_seed_go_into_the_spec(tmp_path):
    from loadcmp.experiment.flags import build_spec
    from loadcmp.traffic.source import MixTraffic

    exp = tmp_path / "e.toml"
    exp.write_text('servers = ["nginx"]\nseed = 11\n[mix]\n"/info.php" = 3\n"/index.html" = 1\n')
    spec = build_spec(str(exp), {})
    assert spec.traffic == MixTraffic({"/info.php": 3.0, "/index.html": 1.0}, 11) and spec.page == "/info.php"
    assert spec.to_dict()["seed"] == 11 and spec.to_dict()["mix"] == {"/info.php": 3.0, "/index.html": 1.0}
    drawn = build_spec(None, {"servers": ("nginx",), "mix": {"/info.php": 1.0}})
    assert isinstance(drawn.traffic, MixTraffic) and drawn.traffic.seed is not None  # one run.json keeps
    with pytest.raises(UsageError, match="--mix and --page"):
        build_spec(None, {"servers": ("nginx",), "mix": {"/a": 1.0}, "page": "/b"})
    with pytest.raises(UsageError, match=r"--mix and pages = \[\.\.\.\]"):
        build_spec(None, {"servers": ("nginx",), "mix": {"/info.php": 1.0}, "pages": ("/a", "/b")})


# --- the draw -------------------------------------------------------------------------------


def test_the_draw_keeps_the_weights_within_2_percent():
    mix = parse_mix("/=60,/?p=1042=30,/?s=hello=10")
    got = shares(draw(mix, seed=3, n=10_000), 3)
    for share, want in zip(got, (0.6, 0.3, 0.1), strict=True):
        assert abs(share - want) < 0.02, got


def test_the_same_seed_draws_the_same_sequence():
    mix = parse_mix("/a=5,/b=3,/c=2")
    assert draw(mix, 42, 5000) == draw(mix, 42, 5000)
    assert draw(mix, 42, 5000) != draw(mix, 43, 5000)
    assert draw(parse_mix("/a=1,/b=0"), 1, 1000) == array("I", [0] * 1000)  # a weight of 0 is never drawn


def test_workers_take_every_nth_position_and_the_c_walk_is_the_python_one():
    target = make_target("http://127.0.0.1:8080/", resolve=False)
    pages = mix_pages(parse_mix("/a=1,/b=1,/c=1"), 9, target, n=97)
    assert [t.path for t in pages.targets] == ["/a", "/b", "/c"] and pages.targets[1].url.endswith(":8080/b")
    one = Cursor(pages)
    whole = [one.next() for _ in range(200)]
    assert whole == [pages.order[i % 97] for i in range(200)]  # cycled
    parts = [Cursor(pages.share(i, 2)) for i in range(2)]
    assert [parts[i % 2].next() for i in range(200)] == whole
    cext = pytest.importorskip("loadcmp.load.core._ctally")
    for share in (pages, pages.share(1, 3)):
        c, py = cext.CRequests(share.encoded(), share), Cursor(share)
        assert c.walk(300) == [py.next() for _ in range(300)]


@pytest.mark.parametrize(("n", "clients", "workers"), [(11, 10, 3), (10, 3, 3), (7, 100, 8), (200, 8, 3), (97, 7, 4),
                                                      (5, 5, 2), (2, 10, 3), (23, 23, 5)])
def test_a_count_of_requests_over_workers_sends_each_position_once(n, clients, workers):
    """-n over workers shares the requests by clients (5 + 3 + 3 of 11): each worker's positions are a slice
    that long, not every third (which sent position 1 twice and 10 never)."""
    target = make_target("http://127.0.0.1:8080/", resolve=False)
    pages = Pages((target,) * n, ("/",), array("I", range(n)), (0,) * n)
    shares = split_spec(LoadSpec(target, Closed(clients, requests=n), 10.0, pages=pages), workers)
    walks: list[tuple[Pages, list[int]]] = []
    for share in shares:
        assert share.pages is not None and isinstance(share.schedule, Closed) and share.schedule.requests
        walk = Cursor(share.pages)
        walks.append((share.pages, [walk.next() for _ in range(share.schedule.requests)]))
    assert sorted(p for _, mine in walks for p in mine) == list(range(n))
    timed = split_spec(LoadSpec(target, Rate(30.0, 6), 10.0, pages=pages), 3)  # for a time: every third
    assert [(s.pages.offset, s.pages.step) for s in timed if s.pages is not None] == [(0, 3), (1, 3), (2, 3)]
    cext = pytest.importorskip("loadcmp.load.core._ctally")
    for share_pages, mine in walks:  # the compiled loop walks its share as the Python paths do
        assert cext.CRequests(share_pages.encoded(), share_pages).walk(len(mine)) == mine


def test_pages_refuse_what_cannot_be_sent():
    a = make_target("http://127.0.0.1:8080/a", resolve=False)
    other = make_target("http://127.0.0.1:9090/b", resolve=False)
    with pytest.raises(UsageError, match="share one server"):
        Pages((a, other), ("/a", "/b"), array("I", [0, 1]))
    with pytest.raises(UsageError, match="names a request"):
        Pages((a,), ("/a",), array("I", [0, 1]))


# --- each page counted on its own -------------------------------------------------------------


def test_the_recorder_counts_a_page_and_its_expected_status():
    rec = Recorder(100.0, 2.0, pages=("/a", "/b"))
    rec.start(100.1)
    rec.start(100.2)
    rec.start(100.3)
    rec.done(0, 100.1, 100.1, 100.2, 10, 200, page=0, expect=200)
    rec.done(1, 100.2, 100.2, 100.4, 5, 404, page=1, expect=200)
    rec.done(0, 100.3, 100.3, 101.5, 10, 200, page=1)
    doc = result_doc(rec.close())
    a, b = doc["pages"]
    assert (a["completed"], a["status_codes"], a["expected"], a["as_expected"]) == (1, {"200": 1}, 1, 1)
    assert (b["completed"], b["status_codes"], b["expected"], b["as_expected"]) == (2, {"200": 1, "404": 1}, 1, 0)
    assert b["failures"] == {"http_4xx": 1} and a["completed"] + b["completed"] == doc["completed"]


def test_the_c_tally_counts_pages_as_the_recorder_does():
    cext = pytest.importorskip("loadcmp.load.core._ctally")
    nan = float("nan")
    ph = (nan, 0.0, 0.001, 0.002, 0.0)
    events = [100.1, 100.2, 100.3, (0, 200, 100.1, 100.1, 100.2, 10, ph, 0, 200), None,
              (1, 404, 100.2, 100.2, 100.4, 5, ph, 1, 200), (0, 200, 100.3, 100.3, 101.5, 10, ph, 1, 0)]
    rec = Recorder(100.0, 2.0, pages=("/a", "/b"))
    cext.tally(rec, events)
    doc = result_doc(rec.close())
    a, b = doc["pages"]
    assert (a["completed"], a["status_codes"], a["expected"], a["as_expected"]) == (1, {"200": 1}, 1, 1)
    assert (b["completed"], b["status_codes"], b["expected"], b["as_expected"]) == (2, {"200": 1, "404": 1}, 1, 0)
    assert b["latency_ms"]["max"] == pytest.approx(1200, rel=0.01)


def _mixed_load(faulty, engine: str, keepalive: bool, workers: int = 1, schedule=None):
    target = make_target(faulty.url("/ok"), keepalive=keepalive)
    pages = mix_pages(parse_mix("/ok=5,/404=3,/500=2"), 5, target)
    return run_load(LoadSpec(target, schedule or Closed(4), 0.8, engine=engine, pages=pages), workers=workers)


@pytest.mark.usefixtures("loop_path")
@pytest.mark.parametrize("engine", ["fast", "aiohttp"])
@pytest.mark.parametrize("keepalive", [False, True])
def test_each_page_is_counted_and_the_pages_add_up_to_the_load(faulty, engine, keepalive):
    result = _mixed_load(faulty, engine, keepalive)
    doc = result_doc(result)
    assert check_invariant(doc)
    pages = {p["page"]: p for p in doc["pages"]}
    assert sum(p["completed"] for p in pages.values()) == doc["completed"] > 50
    assert pages["/ok"]["status_codes"] == {"200": pages["/ok"]["completed"]}
    assert pages["/404"]["status_codes"] == {"404": pages["/404"]["completed"]}
    assert pages["/500"]["failures"] == {"http_5xx": pages["/500"]["completed"]}
    assert doc["status_codes"] == {"200": pages["/ok"]["ok"], "404": pages["/404"]["completed"],
                                   "500": pages["/500"]["completed"]}
    rows = timeline_rows(result)
    for i, own in enumerate(r for r in rows if r["page"] is None):
        assert sum(r["completed"] for r in rows if r["page"] is not None and r["second"] == i) == own["completed"]


@pytest.mark.usefixtures("loop_path")
def test_workers_and_the_rate_schedule_count_pages_too(faulty):
    merged = result_doc(_mixed_load(faulty, "fast", True, workers=2))
    assert sum(p["completed"] for p in merged["pages"]) == merged["completed"] > 50
    rate = result_doc(_mixed_load(faulty, "fast", True, schedule=Rate(200.0, max_inflight=50)))
    assert sum(p["completed"] for p in rate["pages"]) == rate["completed"] > 50
    share = {p["page"]: p["share"] for p in rate["pages"]}
    assert share["/ok"] > share["/404"] > share["/500"] > 0


def test_a_runs_page_rows_are_read_apart_from_its_own(tmp_path: Path):
    import pandas as pd

    from loadcmp.store.reader import _pages_apart

    tl = pd.DataFrame([{"second": 0, "completed": 3, "page": None}, {"second": 0, "completed": 2, "page": "/a"},
                       {"second": 0, "completed": 1, "page": "/b"}])
    own, pages = _pages_apart(tl)
    assert list(own["completed"]) == [3] and "page" not in own.columns and list(pages["page"]) == ["/a", "/b"]


def test_a_finding_names_a_page_of_the_mix_or_the_mix_as_a_whole():
    import pandas as pd

    from loadcmp.load.record.histogram import Histogram
    from loadcmp.store.reader import Results
    from loadcmp.verdicts.findings import parse_findings
    from loadcmp.verdicts.judge import evaluate

    trials = []
    for trial in range(3):
        rec = Recorder(100.0, 2.0, pages=("/fast", "/slow"))
        for i in range(200):
            t = 100.0 + i * 0.008
            rec.start(t)
            slow = i % 4 == 0
            rec.done(0, t, t, t + (0.3 if slow else 0.002), 10, 200, page=int(slow))
        result = rec.close()
        doc = result_doc(result)
        trials.append({"server": "nginx", "level": 10, "trial": trial, "stack": "nginx", "keepalive": False,
                       "status": "ok", "result": doc, "latency_hist": result.latency().to_dict(),
                       "page_hists": {n: result.page_latency(j).to_dict() for j, n in enumerate(result.pages)}})
    res = Results([], trials, pd.DataFrame(), pd.DataFrame(), ["nginx"])  # type: ignore[arg-type]
    assert res.has("nginx /fast") and res.has("nginx mix") and not res.has("nginx /other")
    assert Histogram.from_dict(res.cell("nginx /slow", 10)[0]["latency_hist"]).count == 50
    found = evaluate(res, parse_findings([
        {"claim": "the fast page is fast", "check": "nginx[/fast]:p(99) < 50ms"},
        {"claim": "the slow page is fast", "check": "nginx[/slow]:p(99) < 50ms"},
        {"claim": "the mix's p99 is the slow page's", "check": "nginx[mix]:p(99) > 100ms"},
        {"claim": "a page not in the mix", "check": "nginx[/other]:rps > 1"},
    ]))
    assert [f.verdict for f in found] == ["supported", "not supported", "supported", "inconclusive"]


def _paged_trial(trial: int) -> dict:
    """A stored trial of nginx at 10 clients whose load counted two pages, /fast and /slow (as a mix's, a replay's
    or a journey's trials do)."""
    from loadcmp.load.record.histogram import Histogram

    pages = [{"page": page, "ok": n, "failed": 0, "failures": {}, "completed": n, "rps": n / 10, "bytes": n,
              "latency_ms": {}, "status_codes": {"200": n}, "share": n / 100} for page, n in (("/fast", 75),
                                                                                            ("/slow", 25))]
    result = {"duration_s": 10.0, "interrupted": False, "completed": 100, "rps": 10.0, "status_codes": {"200": 100},
              "pages": pages}
    hist = Histogram.of(array("d", [0.002] * 100)).to_dict()
    return {"server": "nginx", "level": 10, "trial": trial, "stack": "nginx", "keepalive": False, "status": "ok",
            "result": result, "latency_hist": hist, "page_hists": {"/fast": hist, "/slow": hist}}


def test_the_reports_pages_of_the_mix_are_a_mixs_alone(tmp_path: Path):
    import pandas as pd

    from loadcmp.report.mixes import mix_rows
    from loadcmp.store import pagecells
    from loadcmp.store.reader import Results, Run
    from loadcmp.traffic.mix import MIX_LABEL

    def rows(spec: dict) -> list[list[str]]:
        run = Run(tmp_path, {"spec": spec}, "r")  # type: ignore[typeddict-item]
        trials = [_paged_trial(i) for i in range(2)]
        return mix_rows(Results([run], trials, pd.DataFrame(), pd.DataFrame(), ["nginx"]))[1]  # type: ignore[arg-type]

    mixed = rows({"mix": {"/fast": 3.0, "/slow": 1.0}, "seed": 1})
    assert [(r[2], r[3], r[4], r[5], r[6]) for r in mixed] == [("/fast", "75%", "-", "75", "75.0%"),
                                                               ("/slow", "25%", "-", "25", "25.0%")]  # sent: not known
    assert rows({"replay": "/var/log/access.log"}) == [] and rows({"journey": "reader"}) == []  # their pages: no mix's
    assert pagecells.MIX is MIX_LABEL  # one name for the mix as a whole


@pytest.mark.usefixtures("loop_path")
def test_a_mix_over_https_counts_each_page(tls_faulty, tls_cert):
    target = make_target(tls_faulty.url("/ok"), keepalive=True, tls=TlsOptions(cafile=str(tls_cert[0])))
    pages = mix_pages(parse_mix("/ok=1,/404=1"), 2, target)
    doc = result_doc(run_load(LoadSpec(target, Closed(2), 0.6, pages=pages)))
    got = {p["page"]: p for p in doc["pages"]}
    assert got["/ok"]["status_codes"] == {"200": got["/ok"]["completed"]} and got["/404"]["completed"] > 5
    assert got["/ok"]["completed"] + got["/404"]["completed"] == doc["completed"]


def test_sent_of_counts_the_positions_the_windows_own_requests_took():
    """The window's own requests took the positions after every one begun in the warm-up (those it ended in the
    warm-up, and those carried into the window), and as many as it started less those carried in."""
    from loadcmp.traffic.mix import draw, sent_of

    mix = {"/a": 50.0, "/b": 30.0, "/c": 20.0}
    order = draw(tuple(mix.items()), 5)
    result = {"warmup_requests": 40, "warmup_carried": 7, "started": 100, "workers": 1}
    sent = sent_of({"mix": mix, "seed": 5}, {"result": result})
    want = dict.fromkeys(mix, 0)
    for i in range(47, 47 + 93):
        want[list(mix)[order[i]]] += 1
    assert sent == want
    assert sent_of({"mix": mix, "seed": 5}, {"result": {**result, "dropped": 1}}) is None  # drops take no position
    assert sent_of({"mix": mix, "seed": 5}, {"result": {**result, "workers": 2}}) is None  # each walks its own


@pytest.mark.usefixtures("loop_path")
def test_the_sent_shares_are_the_positions_the_window_took(faulty):
    """What a window sent per page (`traffic.mix.sent_of`), against what it answered: a page's answers are those
    the window sent and answered, and those carried in from the warm-up (at most `warmup_carried`); what it sent and
    did not answer is among the requests still out at the close."""
    from loadcmp.traffic.mix import sent_of

    target = make_target(faulty.url("/ok"), keepalive=True)
    mix = {"/ok": 70.0, "/slow?ms=200": 30.0}
    pages = mix_pages(tuple(mix.items()), 11, target)
    doc = result_doc(run_load(LoadSpec(target, Closed(8), 1.0, warmup=0.5, pages=pages)))
    sent = sent_of({"mix": mix, "seed": 11}, {"result": doc})  # type: ignore[typeddict-item]
    assert sent is not None and doc["warmup_requests"] > 50 and doc["failed"] == 0, doc
    carried = doc.get("warmup_carried", 0)
    assert 0 < carried <= 8, doc  # the slow page's requests out when the window opened, one a client at most
    done = {p["page"]: p["completed"] for p in doc["pages"]}
    assert sum(sent.values()) == doc["started"] - carried
    for page in mix:
        assert -carried <= sent[page] - done[page] <= doc["unfinished"], (page, sent, done, doc)
