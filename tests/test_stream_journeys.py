"""Journeys over h2 and h2c (`traffic/h2journeys.py`) against an in-process HTTP/2 site with sessions
(tests/helpers/h2site.py): each user's cookies kept from step to step, a redirect followed, a gzip body's nonce
extracted and posted back, a graceful GOAWAY mid-journey retried on a new connection, every step accounted for;
and the whole step, its redirects included, within one timeout over h2 and over h3 alike."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from helpers.h2server import H2Server
from helpers.h2site import H2Site
from helpers.h3server import H3Server

from loadcmp import protocols
from loadcmp.errors import WrongProtocol
from loadcmp.load.driver import LoadSpec
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.schedules import Closed
from loadcmp.load.target import TlsOptions, make_target
from loadcmp.load.run.workers import run_load
from loadcmp.traffic.h2journeys import H2JourneyEngine
from loadcmp.traffic.source import JourneyTraffic

JOURNEY = """
[[steps]]
name = "login"
method = "POST"
path = "/login"
body = { user = "{user}" }
expect = 200

[[steps]]
name = "home"
path = "/home"
extract = { nonce = 'name="nonce" value="([^"]+)"', sid = { cookie = "sid" } }

[[steps]]
name = "comment"
method = "POST"
path = "/comment"
body = { nonce = "{nonce}", text = "{sid} says hi {unique}" }
expect = 200
"""

HOPS = """
[[steps]]
name = "hops"
path = "/hop/{hops}"
"""


def _context(ca: trustme.CA) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    ctx.set_alpn_protocols(["h2"])
    return ctx


@pytest.fixture(params=["h2", "h2c"])
def proto(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def site(proto: str, ca: trustme.CA, request: pytest.FixtureRequest) -> Iterator[H2Site]:
    how = getattr(request, "param", {})
    s = H2Site(_context(ca) if proto == "h2" else None, **how).start()
    yield s
    s.stop()


def _journeys(site: H2Server, proto: str, cafile: str, tmp: Path, text: str, users: int = 3, seconds: float = 2.0,
              timeout: float = 3.0) -> dict:
    (tmp / "j.toml").write_text(text)
    plan = JourneyTraffic(str(tmp / "j.toml")).plan(users, 0, {}, proto)
    target = make_target(site.url("/"), proto=proto, tls=TlsOptions(cafile=cafile if proto == "h2" else None))
    spec = LoadSpec(target, Closed(users), seconds, timeout=timeout, traffic=plan)
    assert plan is not None and isinstance(plan.engine(spec), H2JourneyEngine)
    doc = result_doc(run_load(spec))
    assert check_invariant(doc)
    assert sum(p["completed"] for p in doc["pages"]) == doc["completed"]
    return doc


def test_the_protocol_table_carries_journeys_over_every_protocol():
    assert [p.name for p in protocols.carriers("journeys")] == list(protocols.names())


def test_a_journey_over_http2_keeps_each_users_cookies_follows_redirects_and_extracts(site, proto, cafile, tmp_path):
    doc = _journeys(site, proto, cafile, tmp_path, JOURNEY)
    j = doc["journeys"]["j"]
    assert j["completed"] > 5 and j["failed"] == 0 and doc["failed"] == 0, (j, doc["failures"])
    steps = {p["page"]: p for p in doc["pages"]}
    assert steps["j/login"]["status_codes"] == {"200": steps["j/login"]["completed"]}  # after its 302
    assert steps["j/comment"]["as_expected"] == steps["j/comment"]["completed"] > 5  # after its 303, nonce matched
    assert site.users == {"0", "1", "2"} and len(set(site.comments)) == len(site.comments) >= j["completed"]
    assert {c.split()[0] for c in site.comments} == {"u0", "u1", "u2"}  # the cookie's value, extracted
    assert site.statuses.get(403, 0) == 0  # no step went without its user's cookie
    st = doc["streams"]
    assert st["protocol"] == proto and st["connections"] == 3 and st["streams"] == doc["started"]
    assert not doc["client_bound"] or "pure-Python" not in (doc["client_bound_reason"] or "")


@pytest.mark.parametrize("site", [{"goaway_every": 4}], indirect=True)
def test_a_graceful_goaway_mid_journey_is_retried_on_a_new_connection(site, proto, cafile, tmp_path):
    doc = _journeys(site, proto, cafile, tmp_path, JOURNEY)
    j, st = doc["journeys"]["j"], doc["streams"]
    assert j["completed"] > 5 and j["failed"] == 0 and doc["failed"] == 0, (j, doc["failures"])
    assert st["goaways"] > 5 and st["goaway_unprocessed"] > 5
    # each unprocessed stream sent again, but those the load's end cut (at most one per user)
    assert st["goaway_unprocessed"] - 3 <= st["retried"] <= st["goaway_unprocessed"] <= site.unprocessed
    assert st["goaways"] <= st["connections"] <= site.connections <= st["connections"] + 3  # + those the end cut
    assert st["streams"] == doc["started"]  # a retried stream counted once, as its last send got


@pytest.mark.parametrize("site", [{"goaway_every": 4, "goaway_code": 2}], indirect=True)
def test_a_goaway_with_an_error_code_fails_the_step_it_left_unprocessed(site, proto, cafile, tmp_path):
    doc = _journeys(site, proto, cafile, tmp_path, JOURNEY)
    st, failed_at = doc["streams"], doc["journeys"]["j"]["failed_at"]
    assert doc["failures"]["goaway"] == doc["failed"] == sum(failed_at.values()) > 5, doc["failures"]
    assert all("no answer (goaway)" in why for why in failed_at) and st["retried"] == 0
    assert doc["failed"] <= st["goaway_unprocessed"] <= site.unprocessed


def test_a_server_that_does_not_speak_http2_stops_the_journeys_in_one_line(proto, ca, cafile, tmp_path):
    ctx = None
    if proto == "h2":
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
        ctx.set_alpn_protocols(["http/1.1"])
    server = H2Server("h1", ctx).start()
    try:
        with pytest.raises(WrongProtocol, match="does not speak (HTTP/2|cleartext HTTP/2) there"):
            _journeys(server, proto, cafile, tmp_path, JOURNEY)
    finally:
        server.stop()


@pytest.mark.parametrize("site", [{"hop_ms": 300}], indirect=True)
def test_a_steps_redirects_are_all_within_its_one_timeout_over_h2(site, proto, cafile, tmp_path):
    over = _journeys(site, proto, cafile, tmp_path, HOPS.replace("{hops}", "4"), users=2, seconds=2.0, timeout=1.0)
    assert over["ok"] == 0 and over["failures"].get("timeout", 0) >= 2, over["failures"]  # 5 x 0.3 s > 1 s
    assert over["journeys"]["j"]["completed"] == 0
    within = _journeys(site, proto, cafile, tmp_path, HOPS.replace("{hops}", "1"), users=2, seconds=2.0, timeout=1.0)
    assert within["failed"] == 0 and within["journeys"]["j"]["completed"] >= 4  # 2 x 0.3 s < 1 s


@pytest.fixture(scope="module")
def h3(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[H3Server]:
    s = H3Server(ca, tmp_path_factory.mktemp("h3")).start()
    yield s
    s.stop()


def test_a_steps_redirects_are_all_within_its_one_timeout_over_h3(h3, cafile, tmp_path):
    def walk(hops: int) -> dict:
        (tmp_path / "j.toml").write_text(HOPS.replace("{hops}", str(hops)))
        plan = JourneyTraffic(str(tmp_path / "j.toml")).plan(2, 0, {}, "h3")
        target = make_target(h3.url("/"), proto="h3", tls=TlsOptions(cafile=cafile))
        doc = result_doc(run_load(LoadSpec(target, Closed(2), 2.0, timeout=1.0, traffic=plan)))
        assert check_invariant(doc)
        return doc

    over = walk(4)
    assert over["ok"] == 0 and over["failures"].get("timeout", 0) >= 2, over["failures"]  # each hop < 1 s, all > 1 s
    within = walk(1)
    assert within["failed"] == 0 and within["journeys"]["j"]["completed"] >= 4
