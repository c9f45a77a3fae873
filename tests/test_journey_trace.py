"""--trace on journeys (docs/tracing.md): each counted step carries a traceparent header, its redirects the same one,
over aiohttp (HTTP/1.1), h2c and h3; each is a row of requests.parquet's, matching the recorder's counts as the
other engines' rows do; and the servers' lines of one id (a step and its redirects) add up in the join."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from loadcmp.load.driver import LoadSpec
from loadcmp.load.record.summary import result_doc
from loadcmp.load.run.workers import run_load
from loadcmp.load.schedules import Closed
from loadcmp.load.target import TlsOptions, make_target
from loadcmp.traffic.journeys import JourneyMix, read_journey
from loadcmp.traffic.sessions import JourneyPlan
from loadcmp.traffic.source import JourneyTraffic
from loadcmp.trace import ids, join
from loadcmp.trace.rows import KIND_NAMES, PROTOS
from loadcmp.trace.serverlogs import ServerLine

from helpers.h2site import H2Site
from helpers.h3server import H3Server
from helpers.sessionsite import running
from test_journeys import AUTHOR
from test_stream_journeys import HOPS, JOURNEY

HEADER = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")


def check_rows(result, seen: list[str], proto: str, share: float = 1.0) -> Counter[str]:
    """Rows as the recorder counted (ok, failures, unfinished); their ids among those the server saw, each id
    on one step (its redirects again); how many requests each id came on."""
    rows = result.traced
    assert rows is not None and len(rows)
    doc = result_doc(result)
    counts = rows.counts()
    if share >= 1.0:
        assert counts.get("ok", 0) == doc["ok"] > 0
        assert counts.get("unfinished", 0) == doc["unfinished"]
        assert sum(counts.values()) == doc["ok"] + doc["failed"] + doc["unfinished"] == doc["started"]
    else:
        assert 0 < counts.get("ok", 0) < doc["ok"] and counts.get("unfinished", 0) <= doc["unfinished"]
    assert {PROTOS[p] for p in rows.cols["proto"].tolist()} == {proto}
    assert all(HEADER.match(h) for h in seen)
    parts, seqs = rows.cols["part"].tolist(), rows.cols["seq"].tolist()
    mine = [ids.format_id(rows.nonce[p], s) for p, s in zip(parts, seqs, strict=True)]
    assert len(set(mine)) == len(mine)
    per_id = Counter(ids.parse_traceparent(h)[0] for h in seen)  # type: ignore[index]
    answered = [m for m, k in zip(mine, rows.cols["kind"].tolist(), strict=True) if KIND_NAMES[k] == "ok"]
    assert all(per_id[m] >= 1 for m in answered)
    ok = rows.cols["kind"] == 0
    assert (rows.cols["latency_ms"][ok] > 0).all() and (rows.cols["wait_ms"][ok] >= 0).all()
    return per_id


def test_aiohttp_journeys_send_the_header_on_each_step_and_its_redirects(tmp_path: Path) -> None:
    (tmp_path / "author.toml").write_text(AUTHOR)
    mix = JourneyMix((read_journey(tmp_path / "author.toml"),))  # type: ignore[arg-type]
    with running() as site:
        spec = LoadSpec(make_target(site.url() + "/", keepalive=True), Closed(3), 1.5, engine="aiohttp",
                        traffic=JourneyPlan(mix, 7), trace=1.0)
        result = run_load(spec)
        per_id = check_rows(result, site.traceparents, "h1")
    assert max(per_id.values()) == 2  # the login's POST and its redirect to /dash carry the step's one id
    assert sum(n == 2 for n in per_id.values()) >= result_doc(result)["ok"] // 4 - 1


def test_a_share_of_the_steps_is_traced(tmp_path: Path) -> None:
    (tmp_path / "author.toml").write_text(AUTHOR)
    mix = JourneyMix((read_journey(tmp_path / "author.toml"),))  # type: ignore[arg-type]
    with running() as site:
        spec = LoadSpec(make_target(site.url() + "/", keepalive=True), Closed(3), 1.5, engine="aiohttp",
                        traffic=JourneyPlan(mix, 7), trace=0.5)
        result = run_load(spec)
        check_rows(result, site.traceparents, "h1", share=0.5)
    assert 0.2 < len(result.traced) / result_doc(result)["started"] < 0.8  # type: ignore[arg-type]


def test_h2c_journeys_send_the_header_as_a_field(tmp_path: Path) -> None:
    site = H2Site(None).start()
    try:
        (tmp_path / "j.toml").write_text(JOURNEY)
        plan = JourneyTraffic(str(tmp_path / "j.toml")).plan(3, 0, {}, "h2c")
        result = run_load(LoadSpec(make_target(site.url("/"), proto="h2c"), Closed(3), 1.5, traffic=plan, trace=1.0))
        per_id = check_rows(result, site.traceparents, "h2")
    finally:
        site.stop()
    assert max(per_id.values()) == 2  # a step's redirect: the same id


def test_h3_journeys_send_the_header_on_every_hop(ca, cafile, tmp_path: Path) -> None:
    h3 = H3Server(ca, tmp_path).start()
    h3.hop_ms = 20
    try:
        (tmp_path / "j.toml").write_text(HOPS.replace("{hops}", "2"))
        plan = JourneyTraffic(str(tmp_path / "j.toml")).plan(2, 0, {}, "h3")
        target = make_target(h3.url("/"), proto="h3", tls=TlsOptions(cafile=cafile))
        result = run_load(LoadSpec(target, Closed(2), 1.5, timeout=2.0, traffic=plan, trace=1.0))
        per_id = check_rows(result, h3.traceparents, "h3")
    finally:
        h3.stop()
    answered = result_doc(result)["ok"]
    assert sum(n == 3 for n in per_id.values()) >= answered  # /hop/2, /hop/1, /hop/0: one id


def test_a_steps_lines_of_one_id_add_up_in_the_join() -> None:
    """nginx logs a step and its redirect under one id: the front's time is both lines', its upstream's too."""
    tid = "0" * 16 + "1".zfill(16)
    lines = [ServerLine(tid, "nginx", "web", 10.0, 3.0, upstream_ms=2.0, status=302),
             ServerLine(tid, "fpm", "web", 10.0, 1.5, status=302),
             ServerLine(tid, "nginx", "web", 10.1, 5.0, upstream_ms=4.0, status=200),
             ServerLine(tid, "fpm", "web", 10.1, 3.5, status=200)]
    servers, missing = join.servers_by_id(lines)
    (row,) = servers.to_dict("records")
    assert (row["front"], row["front_ms"], row["front_up_ms"], row["upstream"], row["up_ms"]) == \
        ("nginx", 8.0, 6.0, "fpm", 5.0)
    assert row["front_at"] == 10.0 and not missing


@pytest.mark.parametrize("first", ["apache", "nginx"])
def test_nginx_in_front_of_apache_stays_the_front(first: str) -> None:
    tid = "a" * 32
    a = ServerLine(tid, "apache", "backend", 1.0, 4.0)
    n = ServerLine(tid, "nginx", "web", 1.0, 5.0, upstream_ms=4.5)
    servers, _ = join.servers_by_id([a, n] if first == "apache" else [n, a])
    (row,) = servers.to_dict("records")
    assert (row["front"], row["upstream"], row["up_ms"]) == ("nginx", "apache", 4.0)
