"""A catalog's cell is the workload that was measured: the protocol as asked and negotiated, the streams, the
traffic source with its parameters and the app. Two workloads never share a row of `compare` nor a series of
`history`, and `compare` names what was sent first. Over made-up results folders (`tests/helpers/synthetic.py`),
through the terminal, `--json` and `serve`'s JSON (no Docker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.synthetic import make_runs
from loadcmp.catalog.compare import compare
from loadcmp.catalog.history import history
from loadcmp.catalog.model import CellKey, HistoryQuery
from loadcmp.catalog.tojson import plain
from loadcmp.cli import cli

H1 = {"labels": ("caddy",), "tls": True, "rps": 3000.0}
H2 = {**H1, "proto": "h2", "streams": 4, "rps": 930.0}
MIX = (("mix", {"/": 60.0, "/?p=1": 40.0}), ("seed", 7))
WP = {"labels": ("nginx",), "levels": (5,), "page": "/", "app": "wordpress"}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def loadcmp(*args: str | Path) -> tuple[int, str]:
    res = CliRunner().invoke(cli, [str(a) for a in args])
    if res.exception and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout


def h1_and_h2(root: Path) -> tuple[Path, Path]:
    [a] = make_runs(root, 1, **H1)
    [b] = make_runs(root, 1, start=1, **H2)
    return a, b


def test_h2_with_4_streams_against_h1_shares_no_row_and_says_so_first(tmp_path):
    a, b = h1_and_h2(tmp_path / "r")
    c = compare(a, b)
    assert c.rows == []
    first = [(d.kind, d.scope, d.key, d.before, d.after) for d in c.differences[:2]]
    assert first == [("workload", "caddy", "protocol", "https", "h2"), ("workload", "caddy", "streams", "1", "4")]
    assert c.only_a == [CellKey("caddy", 10, "/index.php", "https")]
    assert c.only_b == [CellKey("caddy", 10, "/index.php", "h2", 4)]
    code, out = loadcmp("compare", a, b)
    assert code == 0, out
    lines = out[out.index("What differs"):].splitlines()
    assert "caddy: protocol https → h2" in lines[1] and "caddy: streams 1 → 4" in lines[2], lines
    assert "nothing in the set-up" not in out and "req/s (higher is better)" not in out
    assert "no cell in common: the runs sent other workloads" in out
    assert "only in B: caddy@10 /index.php (h2, 4 streams)" in out
    doc = json.loads(loadcmp("compare", a, b, "--json")[1])
    assert doc["rows"] == [] and doc["differences"][0]["kind"] == "workload"
    assert doc["only_b"][0] == {"label": "caddy", "level": 10, "page": "/index.php", "protocol": "h2", "streams": 4,
                                "traffic": "", "app": ""}


def test_a_protocol_the_server_did_not_speak_is_named_so(tmp_path):
    [a] = make_runs(tmp_path / "r", 1, **{**H2, "negotiated": "http/1.1"})
    assert compare(a, a).rows[0].cell.protocol == "h2 as http/1.1"


def test_a_mix_against_journeys_names_the_traffic_before_the_duration(tmp_path):
    [a] = make_runs(tmp_path / "r", 1, traffic=MIX, duration=8.0, **WP)
    [b] = make_runs(tmp_path / "r", 1, start=1, traffic=(("journey", "reader=80,author=20"),), duration=10.0, **WP)
    c = compare(a, b)
    assert c.rows == [] and len(c.only_a) == len(c.only_b) == 1
    said = [(d.kind, d.key, d.before, d.after) for d in c.differences]
    assert said[0] == ("workload", "traffic", "mix /=60,/?p=1=40", "journeys reader=80,author=20")
    assert ("spec", "duration", "8.0", "10.0") in said and said.index(("spec", "duration", "8.0", "10.0")) > 0
    assert c.only_a[0].text() == "nginx@5 / (http; mix /=60,/?p=1=40; app wordpress)"
    assert c.only_b[0].text() == "nginx@5 / (http; journeys reader=80,author=20; app wordpress)"
    out = loadcmp("compare", a, b)[1]
    assert out.index("traffic mix /=60,/?p=1=40 → journeys reader=80,author=20") < out.index("duration")


def test_the_same_workload_still_shares_its_row(tmp_path):
    a, b = make_runs(tmp_path / "r", 2, traffic=MIX, **WP)
    c = compare(a, b)
    assert [r.cell.traffic for r in c.rows] == ["mix /=60,/?p=1=40"]
    assert not [d for d in c.differences if d.kind == "workload"]


def test_a_mix_drawn_with_another_seed_is_the_same_cell_and_its_seed_a_difference(tmp_path):
    """Each run without --seed draws its own: the same weights stay one series, the seed said as a setting."""
    [a] = make_runs(tmp_path / "r", 1, traffic=MIX, **WP)
    [b] = make_runs(tmp_path / "r", 1, start=1, traffic=(*MIX[:-1], ("seed", 12)), **WP)
    c = compare(a, b)
    assert [r.cell.traffic for r in c.rows] == ["mix /=60,/?p=1=40"] and not c.only_a and not c.only_b
    assert [(d.kind, d.key, d.before, d.after) for d in c.differences] == [("spec", "seed", "7", "12")]
    (series,) = history(tmp_path / "r", HistoryQuery("rps")).series
    assert len(series.points) == 2


def test_an_app_is_part_of_the_cell(tmp_path):
    [a] = make_runs(tmp_path / "r", 1, **WP)
    [b] = make_runs(tmp_path / "r", 1, start=1, **{**WP, "app": None})
    c = compare(a, b)
    assert c.rows == [] and (c.differences[0].key, c.differences[0].before) == ("app", "wordpress")


def replays(root: Path) -> None:
    """A 1x replay (8 req/s), then two max replays (19 req/s) of the same log, at 10 in flight on /."""
    replay = (("replay", "/logs/access.log"), ("replay_speed", "1x"))
    make_runs(root, 1, traffic=replay, rps=8.1, page="/")
    make_runs(root, 2, start=1, traffic=(replay[0], ("replay_speed", "max")), rps=19.0, page="/")


def test_history_keeps_a_1x_replay_and_max_replays_apart(tmp_path):
    replays(tmp_path / "r")
    h = history(tmp_path / "r", HistoryQuery("rps", page="/", level=10))
    assert [(s.cell.traffic, len(s.points)) for s in h.series] == [
        ("replay access.log at 1x", 1), ("replay access.log at max", 2)]
    assert all(not s.change_points for s in h.series)
    out = loadcmp("history", tmp_path / "r", "--page", "/", "--level", "10")[1]
    assert "nginx@10 / (http; replay access.log at 1x): req/s" in out
    assert "nginx@10 / (http; replay access.log at max): req/s" in out
    doc = json.loads(loadcmp("history", tmp_path / "r", "--page", "/", "--level", "10", "--json")[1])
    assert [s["cell"]["traffic"] for s in doc["series"]] == ["replay access.log at 1x", "replay access.log at max"]


def test_serve_answers_the_same_cells(tmp_path):
    from test_catalog_pages import fetch

    root = tmp_path / "r"
    replays(root)
    a, b = h1_and_h2(tmp_path / "p")
    [(s1, hist)] = fetch(root, "/api/history?page=/&level=10")
    [(s2, comp)] = fetch(tmp_path / "p", f"/api/compare?a={a.name}&b={b.name}")
    assert s1 == s2 == 200
    assert json.loads(hist) == plain(history(root, HistoryQuery("rps", page="/", level=10)))
    assert json.loads(comp) == plain(compare(a, b)) and json.loads(comp)["differences"][0]["key"] == "protocol"
    [(s3, page)] = fetch(tmp_path / "p", f"/compare?a={a.name}&b={b.name}")
    assert s3 == 200 and "no cell in common" in page and "caddy: protocol https → h2" in page


def test_an_older_index_is_built_again(tmp_path):
    """An index of the former schema (cells without workload) is dropped on opening, not read."""
    import duckdb

    from loadcmp.catalog.index import SCHEMA, cache_file, open_catalog

    root = tmp_path / "r"
    replays(root)
    cache_file(root).parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(cache_file(root)))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema', '3')")
    con.execute("CREATE TABLE cells (folder VARCHAR, label VARCHAR, protocol VARCHAR)")
    con.close()
    with open_catalog(root) as cat:
        assert SCHEMA != "3" and len({cell for _, cell, _ in cat.values("rps")}) == 2


def test_a_stored_bench_s_cell_is_its_protocol_and_streams():
    """`bench --out` keeps the protocol and -m in its one trial's result, not in `servers` nor the spec."""
    import random

    from helpers.synthetic import Plan, run_doc
    from loadcmp.catalog.folder import cell_key

    doc = run_doc(0, Plan(labels=("127.0.0.1:8443",), tls=True), False, 0.0, random.Random(0))
    doc["kind"] = "bench"
    for key in ("protos", "streams"):
        doc["spec"].pop(key)
    for info in doc["servers"].values():
        info.pop("proto"), info.pop("negotiated")
    t = doc["trials"][0]
    assert cell_key(t, doc).workload() == "https"
    t["result"].update(proto="h2", streams_asked=8)
    assert cell_key(t, doc).workload() == "h2, 8 streams"


def test_the_same_cell_under_another_label_is_named_with_the_pair_that_joins_it(tmp_path):
    """A run of two labels over h2 against one of a single label: the error names the label that sent the same
    workload, so `--pair` joins them."""
    [a] = make_runs(tmp_path / "r", 1, **{**H2, "labels": ("caddy[h2]", "apache[h2]")})
    [b] = make_runs(tmp_path / "r", 1, start=1, **H2)
    res = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert res.exit_code == 2 and "(to compare the two labels as one: --pair caddy[h2]=caddy)" in res.output
    code, out = loadcmp("compare", a, b, "--pair", "caddy[h2]=caddy")
    assert code == 0 and "caddy" in out


def test_two_logs_of_one_name_are_two_cells(tmp_path):
    """Two different logs, both called access.log, replayed at 1x: each run's trials keep their log's content hash
    (`load_plan` reads it), and history keeps the two apart, each named by its hash, short."""
    import hashlib
    import random

    from helpers.synthetic import Plan, run_doc, write_run
    from loadcmp.traffic.logreplay import load_plan

    root = tmp_path / "r"
    line = '127.0.0.1 - - [26/Nov/2026:01:13:3{s} +0000] "GET /{p} HTTP/1.1" 200 10 "-" "x"\n'
    digests = []
    for i, page in enumerate(("a", "b")):
        log = tmp_path / page / "access.log"
        log.parent.mkdir()
        log.write_text("".join(line.format(s=s, p=page) for s in range(5)))
        plan = load_plan(str(log), None, "1x", ("GET", "HEAD"))
        assert plan.sha256 == hashlib.sha256(log.read_bytes()).hexdigest()
        digests.append(plan.sha256)
        doc = run_doc(i, Plan(traffic=(("replay", str(log)), ("replay_speed", "1x")), page="/"), False, 0.0,
                      random.Random(i))
        for t in doc["trials"]:
            t["result"]["replay"] = {"file": "access.log", "sha256": plan.sha256}
        write_run(root / f"run-{i:05d}", doc)
    h = history(root, HistoryQuery("rps", page="/", level=10))
    assert sorted((s.cell.traffic, len(s.points)) for s in h.series) == sorted(
        (f"replay access.log at 1x (log sha256 {d[:8]})", 1) for d in digests)
