"""The HTTP/3 engine against an in-process qh3 server (tests/helpers/h3server.py): responses, reset streams,
GOAWAY and every schedule accounted for stream by stream; Alt-Svc discovery and the QUIC probe refusing a
server that does not speak HTTP/3 in one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from helpers.h3server import H3Server

from loadcmp.errors import UsageError
from loadcmp.load.h3 import altsvc
from loadcmp.load.driver import LoadSpec
from loadcmp.load.record.recorder import Result
from loadcmp.load.schedules import Closed, Ramp, Rate, Schedule
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.target import Target, TlsOptions, make_target
from loadcmp.load.run.workers import run_load


@pytest.fixture(scope="module")
def h3(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[H3Server]:
    s = H3Server(ca, tmp_path_factory.mktemp("h3")).start()
    yield s
    s.stop()


def target(url: str, cafile: str | None, streams: int = 4) -> Target:
    return make_target(url, tls=TlsOptions(cafile=cafile), proto="h3", streams=streams)


def load(t: Target, schedule: Schedule | None = None, seconds: float = 1.0, workers: int = 1) -> Result:
    return run_load(LoadSpec(t, schedule or Closed(2), seconds, timeout=3.0), workers=workers)


def test_responses_counted_stream_by_stream(h3, cafile):
    doc = result_doc(load(target(h3.url("/ok"), cafile)))
    assert doc["ok"] > 50 and doc["failed"] == 0
    assert check_invariant(doc)
    assert doc["status_codes"] == {"200": doc["ok"]}
    assert doc["unfinished"] <= 2 * 4  # at most every stream of the two connections in flight at the close
    streams = doc["streams"]
    assert streams is not None and streams["protocol"] == "h3" and streams["connections"] == 2
    assert streams["streams"] == doc["started"] and streams["max_concurrent"] > 0
    assert doc["tls"] is not None and doc["tls"]["alpn"] == "h3" and doc["tls"]["version"] == "TLSv1.3"
    assert doc["tls"]["full"] == 2


def test_the_streams_counted_are_the_windows_not_the_warmups(h3, cafile):
    doc = result_doc(run_load(LoadSpec(target(h3.url("/ok"), cafile), Closed(2), 1.0, warmup=0.5, timeout=3.0)))
    assert doc["warmup_requests"] > 20 and doc["failed"] == 0, doc  # the warm-up sent streams, uncounted
    assert doc["streams"] is not None and doc["streams"]["streams"] == doc["started"], doc


def test_an_error_status_is_its_kind(h3, cafile):
    doc = result_doc(load(target(h3.url("/missing"), cafile)))
    assert doc["failures"]["http_4xx"] == doc["failed"] > 0 and not doc["ok"]
    assert check_invariant(doc)


def test_a_reset_stream_is_counted_by_its_error_code(h3, cafile):
    doc = result_doc(load(target(h3.url("/reset"), cafile)))
    resets = doc["failures"]["stream_reset"]
    assert resets > 0 and resets == doc["failed"] and not doc["ok"]
    tally = doc["streams"]
    assert tally is not None and list(tally["resets"]) == ["H3_INTERNAL_ERROR"]
    assert tally["resets"]["H3_INTERNAL_ERROR"] >= resets  # the tally counts every stream, as it counts them
    assert check_invariant(doc)


def test_a_request_a_goaway_left_unprocessed_is_sent_again_on_a_new_connection(h3, cafile):
    doc = result_doc(load(target(h3.url("/goaway"), cafile)))
    streams = doc["streams"]
    assert streams is not None and streams["goaways"] > 0
    assert doc["ok"] > 0 and doc["failed"] == 0, doc["failures"]  # none is a failure: each was sent again
    assert streams["goaway_unprocessed"] >= streams["retried"] > 0  # the tally counts the close's too
    assert streams["streams"] == doc["started"]  # a resend is the same request, counted once
    assert streams["connections"] > 2  # each GOAWAY's connection drained, then replaced
    assert streams["max_per_connection"] < 5  # the server processes four requests of a connection, then says GOAWAY
    assert check_invariant(doc)


def test_with_n_each_request_is_answered_once_and_the_server_processed_each(h3, cafile):
    before = h3.answered.get("200", 0)
    doc = result_doc(load(target(h3.url("/goaway"), cafile), Closed(2, requests=300), seconds=30.0))
    streams = doc["streams"]
    assert doc["started"] == doc["ok"] == 300 and doc["failed"] == 0, doc["failures"]
    assert h3.answered.get("200", 0) - before == 300  # the server's own count: no request twice, none lost
    assert streams is not None and streams["retried"] == streams["goaway_unprocessed"] > 0


def test_a_server_that_processes_nothing_ends_each_request_as_goaway(h3, cafile):
    from loadcmp.load.record.outcomes import SENDS

    doc = result_doc(load(target(h3.url("/goaway-all"), cafile, streams=1), Closed(1, requests=3), seconds=30.0))
    streams = doc["streams"]
    assert doc["failed"] == doc["failures"]["goaway"] == 3 and not doc["ok"]  # sent SENDS times each, never processed
    assert streams is not None and streams["retried"] == 3 * (SENDS - 1)
    assert streams["goaway_unprocessed"] == 3 * SENDS and streams["connections"] == 3 * SENDS


def test_the_warm_up_s_unprocessed_streams_are_not_counted(h3, cafile):
    """Each counted request that fails as `goaway` was left unprocessed SENDS times and sent again SENDS - 1 times;
    one still out at the close less: a warm-up as long as the window would double both counts."""
    from loadcmp.load.record.outcomes import SENDS

    spec = LoadSpec(target(h3.url("/goaway-all"), cafile, streams=1), Closed(1), 1.0, warmup=1.0, timeout=3.0)
    doc = result_doc(run_load(spec))
    streams, failed = doc["streams"], doc["failures"]["goaway"]
    assert streams is not None and failed > 2 and doc["warmup_requests"] > 2, doc
    assert failed * SENDS <= streams["goaway_unprocessed"] <= (failed + doc["unfinished"]) * SENDS, streams
    assert failed * (SENDS - 1) <= streams["retried"] <= (failed + doc["unfinished"]) * (SENDS - 1), streams


def _mix(h3, cafile: str, streams: int = 4):
    from loadcmp.traffic.mix import mix_pages, parse_mix

    t = target(h3.url("/ok"), cafile, streams)
    return t, mix_pages(parse_mix("/ok=60,/missing=30,/other=10"), 5, t)


def test_a_mix_over_h3_sends_the_sequence_and_counts_each_page(h3, cafile):
    t, pages = _mix(h3, cafile)
    doc = result_doc(run_load(LoadSpec(t, Closed(2, requests=600), 30.0, timeout=3.0, pages=pages)))
    assert check_invariant(doc) and doc["ok"] + doc["failed"] == 600
    got = {p["page"]: p for p in doc["pages"]}
    want = {name: sum(1 for i in pages.order[:600] if i == j) for j, name in enumerate(pages.names)}
    assert {page: p["completed"] for page, p in got.items()} == want  # the drawn sequence's first 600, in full
    assert got["/missing"]["status_codes"] == {"404": want["/missing"]} and got["/other"]["ok"] == want["/other"]


def test_a_mix_and_a_replay_hold_the_open_rate_over_h3(h3, cafile, tmp_path):
    from loadcmp.traffic.logreplay import plan_replay, replay_schedule
    from loadcmp.traffic.logs import read_log

    t, pages = _mix(h3, cafile, streams=8)
    # the warm-up opens the connections: here each handshake costs the server this process's CPU too
    doc = result_doc(run_load(LoadSpec(t, Rate(200.0, 20), 2.0, warmup=1.5, timeout=3.0, pages=pages)))
    assert check_invariant(doc) and abs(doc["started"] - 400) <= 8, doc  # due within 2 %
    assert doc["dropped"] <= 8, doc  # and sent within 2 %
    assert sum(p["completed"] for p in doc["pages"]) == doc["completed"]
    log = tmp_path / "access.log"
    line = '127.0.0.1 - - [26/Nov/2026:01:24:{s:02d} +0000] "GET {path} HTTP/1.1" {status} 5 "-" "-"'
    log.write_text("\n".join(line.format(s=s, path=path, status=status) for s in range(2)
                             for path, status in [("/ok", 200)] * 40 + [("/missing", 200)] * 10) + "\n")
    plan = plan_replay(read_log(log), 1.0)
    result = run_load(LoadSpec(t, replay_schedule(plan, 50), 2.0, timeout=3.0, pages=plan.pages(t)))
    assert [s.started for s in result.seconds] == [50, 50]  # each second the log's own requests
    got = {p["page"]: p for p in result_doc(result)["pages"]}
    assert got["/ok"]["as_expected"] == 80 and got["/missing"]["expected"] == 20 and not got["/missing"]["as_expected"]


JOURNEY = """
[[steps]]
name = "login"
method = "POST"
path = "/login"
body = { user = "{user}" }
expect = 200
extract = { sid = { cookie = "sid" } }

[[steps]]
name = "home"
path = "/home"
extract = { said = "hello (u[0-9]+)" }

[[steps]]
name = "again"
path = "/home?as={said}"
expect = 200
"""


def test_journeys_over_h3_keep_each_users_cookies_and_follow_the_redirect(h3, cafile, tmp_path):
    from loadcmp.traffic.h3journeys import H3JourneyEngine
    from loadcmp.traffic.source import JourneyTraffic

    (tmp_path / "login.toml").write_text(JOURNEY)
    plan = JourneyTraffic(str(tmp_path / "login.toml")).plan(3, 0, {}, "h3")
    spec = LoadSpec(target(h3.url("/"), cafile), Closed(3), 1.0, timeout=3.0, traffic=plan)
    assert plan is not None and isinstance(plan.engine(spec), H3JourneyEngine)
    doc = result_doc(run_load(spec))
    j = doc["journeys"]["login"]
    assert j["completed"] > 10 and j["failed"] == 0 and doc["failed"] == 0, (j, doc["failures"])
    steps = {p["page"]: p for p in doc["pages"]}
    assert steps["login/login"]["status_codes"] == {"200": steps["login/login"]["completed"]}  # after the 302
    assert steps["login/again"]["as_expected"] == steps["login/again"]["completed"] > 10
    assert doc["streams"] is not None and doc["streams"]["connections"] == 3  # a connection per user
    assert check_invariant(doc)


@pytest.mark.parametrize("schedule", [Ramp(6, 0.3, 0.02), Rate(300.0, 8)], ids=["ramp", "rate"])
def test_every_schedule_runs_over_h3(h3, cafile, schedule):
    doc = result_doc(load(target(h3.url("/ok"), cafile, streams=2), schedule))
    assert doc["ok"] > 0 and doc["failed"] == doc["failures"].get("dropped", 0), doc["failures"]  # over its cap
    assert check_invariant(doc)
    assert doc["streams"] is not None and 1 <= doc["streams"]["connections"] <= schedule.connections


def test_workers_merge_the_streams_exactly(h3, cafile):
    r = load(target(h3.url("/ok"), cafile, streams=2), Closed(2), workers=2)
    doc = result_doc(r)
    assert check_invariant(doc) and doc["ok"] > 0
    assert doc["streams"] is not None and doc["streams"]["connections"] == 2


def test_discovery_reads_the_h3_port_from_alt_svc(h3, cafile):
    t = altsvc.discover(target(h3.url("/ok"), cafile), 3.0)
    assert t.port == h3.port
    assert altsvc.probe(t, 3.0) == "QUIC v1, h3, TLSv1.3 TLS_AES_128_GCM_SHA256"


@pytest.mark.parametrize(("header", "port"), [
    ('h3=":8443"; ma=86400, h3-29=":8443"', 8443),
    ('h3-29=":443", h3="127.0.0.1:9443"', 9443),
    ('h2=":443"', None),
    ('h3="elsewhere.example:443"', None),
    ('h3=":0"', None),
    ("", None),
])
def test_alt_svc_header(header, port):
    assert altsvc.alt_svc_port(header, "127.0.0.1") == port


def _refusal(ca: trustme.CA, tmp: Path, cafile: str, **how: object) -> str:
    s = H3Server(ca, tmp, **how).start()  # type: ignore[arg-type]
    try:
        t = target(s.url("/ok"), cafile)
        with pytest.raises(UsageError) as e:
            altsvc.probe(altsvc.discover(t, 3.0), 1.0)
        return str(e.value)
    finally:
        s.stop()


@pytest.mark.parametrize(("how", "said"), [
    ({"alt_svc": ""}, "does not advertise HTTP/3: its https answer has no Alt-Svc header"),
    ({"alt_svc": 'h2=":443"'}, 'does not advertise HTTP/3: its https answer has Alt-Svc: h2=":443"'),
    ({"quic": False}, "did not answer QUIC on UDP within 1 s: it does not speak HTTP/3 there"),
    ({"alpn": "hq-interop"}, "does not speak HTTP/3 over QUIC v1"),
], ids=["no Alt-Svc", "no h3 in Alt-Svc", "no QUIC", "QUIC without h3"])
def test_a_server_that_does_not_speak_h3_is_refused_in_one_line(ca, cafile, tmp_path, how, said):
    msg = _refusal(ca, tmp_path, cafile, **how)
    assert said in msg and "\n" not in msg


def test_a_certificate_that_does_not_verify_over_quic_is_said(h3, tmp_path):
    path = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(path))
    with pytest.raises(UsageError) as e:
        altsvc.probe(target(h3.url("/ok"), str(path)), 2.0)
    assert "did not verify over QUIC" in str(e.value) and "\n" not in str(e.value)
    insecure = make_target(h3.url("/ok"), proto="h3", streams=2, tls=TlsOptions(insecure=True))
    assert altsvc.probe(insecure, 2.0).startswith("QUIC v1, h3")


def test_a_stack_that_does_not_speak_h3_is_refused_naming_those_that_do():
    from click.testing import CliRunner

    from loadcmp.cli import cli
    from loadcmp.lab.stacks import catalog

    cat = catalog()
    speakers = [n for n in cat.names() if "h3" in cat.get(n).protocols]
    assert "caddy" in speakers and "nginx" not in speakers  # from their stack.toml
    r = CliRunner().invoke(cli, ["run", "--tls", "--proto", "h3", "--server", "nginx", "-c", "1", "-t", "1"])
    assert r.exit_code == 2
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and f"the stacks that do: {', '.join(speakers)}" in lines[0], r.output
    assert "--proto h3: nginx does not speak h3" in lines[0]


def _dep(port: int, cafile: str | None) -> object:
    from types import SimpleNamespace

    return SimpleNamespace(port=port, stack=SimpleNamespace(name="caddy"), host=SimpleNamespace(address="127.0.0.1"),
                           plan=SimpleNamespace(cafile=cafile))


def test_the_primer_finds_h3_as_the_load_will(h3, cafile, ca, tmp_path):
    from loadcmp.errors import PrimerError
    from loadcmp.sweep.primer import quic

    assert quic(_dep(h3.port, cafile), "/ok", 3.0).startswith("QUIC v1, h3")  # type: ignore[arg-type]
    elsewhere = H3Server(ca, tmp_path, alt_svc='h3=":1"').start()
    try:
        with pytest.raises(PrimerError, match=r"^caddy: it advertises HTTP/3 on UDP port 1, not on its https port"):
            quic(_dep(elsewhere.port, cafile), "/ok", 3.0)  # type: ignore[arg-type]
    finally:
        elsewhere.stop()
    none = H3Server(ca, tmp_path, alt_svc="").start()
    try:
        with pytest.raises(PrimerError, match=r"^caddy: 127\.0\.0\.1:\d+ does not advertise HTTP/3"):
            quic(_dep(none.port, cafile), "/ok", 3.0)  # type: ignore[arg-type]
    finally:
        none.stop()


def test_the_primers_handshake_of_an_h3_label_is_the_quic_one(h3, cafile):
    from types import SimpleNamespace

    from loadcmp.sweep.primer import handshake

    dep = SimpleNamespace(port=h3.port, stack=SimpleNamespace(name="caddy"), host=SimpleNamespace(address="127.0.0.1"),
                          plan=SimpleNamespace(cafile=cafile, tls=SimpleNamespace(key_type="ecdsa-p256"), settings={}))
    over_tcp = handshake(dep, proto="h1")  # type: ignore[arg-type]
    assert over_tcp is not None and over_tcp["alpn"] == "http/1.1"
    seen = handshake(dep, proto="h3")  # type: ignore[arg-type]
    assert seen is not None and seen["alpn"] == "h3", seen  # what the load's QUIC handshakes negotiate
    assert (seen["version"], seen["cipher"], seen["key"]) == ("TLSv1.3", "TLS_AES_128_GCM_SHA256", "ecdsa-p256")


def test_bench_proto_h3_finds_the_server_and_accounts_every_stream(h3, cafile):
    import json

    from click.testing import CliRunner

    from loadcmp.cli import cli

    r = CliRunner().invoke(cli, ["bench", "--proto", "h3", "-m", "4", "-c", "2", "-t", "1", "--cacert", cafile,
                                 "--json", h3.url("/ok")])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["proto"] == "h3" and doc["ok"] > 0 and doc["failed"] == 0 and check_invariant(doc)
    assert doc["streams"]["protocol"] == "h3" and doc["engine_path"] == "python"
    assert doc["client_bound"] in (True, False) and "client_busy_pct" in doc
    assert f"HTTP/3 on UDP port {h3.port} (Alt-Svc): QUIC v1, h3" in r.stderr


def test_bench_proto_h3_on_a_server_without_it_is_one_line_and_exit_2(ca, cafile, tmp_path):
    from click.testing import CliRunner

    from loadcmp.cli import cli

    s = H3Server(ca, tmp_path, quic=False, alt_svc="").start()
    try:
        r = CliRunner().invoke(cli, ["bench", "--proto", "h3", "-t", "1", "--cacert", cafile, s.url("/ok")])
    finally:
        s.stop()
    assert r.exit_code == 2
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "does not advertise HTTP/3" in lines[0], r.output


def test_h3_refuses_another_engine_in_one_line():
    from click.testing import CliRunner

    from loadcmp.cli import cli

    r = CliRunner().invoke(cli, ["run", "--tls", "--proto", "h3", "--server", "caddy", "--engine", "aiohttp",
                                 "-c", "1", "-t", "1"])
    assert r.exit_code == 2 and "--proto h3 runs its own QUIC engine (every schedule), not --engine aiohttp" in r.output


def test_the_report_titles_the_streams_section_by_its_protocols():
    from loadcmp.report.streams import titled

    def row(proto: str) -> list[str]:
        return ["1", "caddy", proto, *[""] * 7]

    assert titled([row("h2")])[0] == "HTTP/2 streams" and "RESET_STREAM" not in titled([row("h2")])[1]
    title, legend = titled([row("h3")])
    assert title == "HTTP/3 streams" and "RESET_STREAM" in legend and "initial_max_streams_bidi" in legend
    assert titled([row("h2"), row("h3")])[0] == "HTTP/2 and HTTP/3 streams"
