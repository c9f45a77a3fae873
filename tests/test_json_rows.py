"""`--json` rows carry what the contract says: the keys ARCHITECTURE.md lists (read there, the one place), `proto`
per label, and for a load of several pages (a mix, journeys) one row per page after the whole, whose counts add
up to the whole's. Every command that prints rows (`run`, `smoke`, `capacity`, `tune`) is checked, over made-up
results folders and the stored capacity fixture (no Docker)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.synthetic import make_runs
from loadcmp.report.jsonrows import ROW_KEYS
from loadcmp.report.tables import summary_doc
from loadcmp.store.reader import load_results

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
MIX = (("/index.html", 60.0), ("/info.php", 40.0))
STEPS = (("reader/home", 50.0), ("reader/post", 30.0), ("reader/comment", 20.0))


def contract_keys() -> list[str]:
    """The keys ARCHITECTURE.md's contract says every `--json` row carries."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    said = re.search(r"`--json` rows \([^)]*\) carry: (.*?)\.\s", text, re.S)
    assert said, "ARCHITECTURE.md names no keys of --json rows"
    return re.findall(r"`(\w+)`", said[1])


def every_command(path: Path) -> dict[str, list[dict]]:
    """Each command's `results` rows for one results folder, made by the function the command prints."""
    from loadcmp.cli.smoke import smoke_doc
    from loadcmp.cli.tune import tune_output

    res = load_results(path)
    return {"run": summary_doc(res)["results"], "smoke": smoke_doc([], True, 1.0, res, str(path))["results"],
            "tune": tune_output(res)["results"]}


def test_the_code_keeps_the_contract_s_keys():
    assert contract_keys() == list(ROW_KEYS) and {"proto", "page"} <= set(ROW_KEYS)


def test_every_command_s_rows_carry_the_contract_s_keys(tmp_path):
    keys = contract_keys()
    [mixed] = make_runs(tmp_path, 1, pages=MIX, labels=("nginx", "apache"), trials=3)
    capacity = summary_doc(load_results(FIXTURES / "capacity-2x"))
    assert capacity.get("capacity") and capacity["results"]
    commands = {**every_command(mixed), "capacity": capacity["results"]}
    for command, rows in commands.items():
        assert rows, command
        for row in rows:
            missing = [k for k in keys if k not in row]
            assert not missing, (command, row["server"], row["page"], missing)
    assert {r["proto"] for r in capacity["results"]} == {"h1"}  # a run stored before labels kept theirs


def test_a_label_s_protocol_is_a_key(tmp_path):
    [run] = make_runs(tmp_path, 1, labels=("caddy",), proto="h2", tls=True, streams=4)
    rows = every_command(run)
    assert {(c, r["server"], r["proto"]) for c, rs in rows.items() for r in rs} == {
        ("run", "caddy", "h2"), ("smoke", "caddy", "h2"), ("tune", "caddy", "h2")}
    assert all(r["page"] == "/index.php" for rs in rows.values() for r in rs)


def failing(doc: dict, per_page: int = 3) -> dict:
    """A run.json whose pages each failed `per_page` x (their place + 1) requests (http_5xx) per trial, beside
    their ok, the whole's failures their sum."""
    for t in doc["trials"]:
        r = t["result"]
        for i, p in enumerate(r["pages"]):
            p["failed"], p["failures"] = per_page * (i + 1) + t["trial"], {"http_5xx": per_page * (i + 1) + t["trial"]}
        failed = sum(p["failed"] for p in r["pages"])
        r.update(failed=failed, failures={"http_5xx": failed}, started=r["started"] + failed,
                 failed_rate=failed / (r["ok"] + failed))
    return doc


@pytest.mark.parametrize("pages", [MIX, STEPS], ids=["mix", "journey"])
def test_each_page_has_its_row_and_the_pages_add_up_to_the_whole(tmp_path, pages):
    import random

    from helpers.synthetic import Plan, run_doc, write_run

    plan = Plan(pages=pages, labels=("nginx", "apache"), levels=(5, 20), trials=3)
    run = write_run(tmp_path / "run", failing(run_doc(0, plan, False, 0.0, random.Random(0))))
    for command, rows in every_command(run).items():
        wholes = [r for r in rows if r["page"] == "mix"]
        assert [(r["server"], r["level"]) for r in wholes] == [(s, lv) for s in ("nginx", "apache") for lv in (5, 20)]
        for whole in wholes:
            at = rows.index(whole)
            own = rows[at + 1:at + 1 + len(pages)]
            assert [r["page"] for r in own] == [p for p, _ in pages], command
            assert {(r["server"], r["level"], r["proto"]) for r in own} == {(whole["server"], whole["level"], "h1")}
            assert sum(r["totals"]["ok"] for r in own) == whole["totals"]["ok"] > 0
            assert sum(r["ok"] for r in own) == pytest.approx(whole["ok"], abs=0.01)
            assert sum(r["failed"] for r in own) == pytest.approx(whole["failed"], abs=0.01) and whole["failed"] > 0
            assert sum(r["totals"]["failed"] for r in own) == whole["totals"]["failed"] > 0
            assert sum(r["failures"]["http_5xx"] for r in own) == pytest.approx(whole["failures"]["http_5xx"])
            assert sum(r["share"] for r in own) == pytest.approx(1.0, abs=0.001)
            assert all((r["trials"], r["measured_trials"]) == (whole["trials"], whole["measured_trials"]) == (3, 3)
                       and r["latency_ms"]["p50"] > 0 for r in own)
    plain = summary_doc(load_results(make_runs(tmp_path / "one", 1)[0]))["results"]
    assert [r["page"] for r in plain] == ["/index.php"]  # one page: no row per page


def test_an_h2_row_carries_its_tls_and_streams_facts(tmp_path):
    """A window over h2 whose connections all came from the warm-up saw no handshake: its row still names the TLS
    the load ran over (the primer's), and every h2 row carries its streams' tally as the stored result has it."""
    import random

    from helpers.synthetic import Plan, run_doc, write_run

    doc = run_doc(0, Plan(labels=("nginx",), proto="h2", tls=True, streams=10, trials=2), False, 0.0,
                  random.Random(0))
    doc["servers"]["nginx"]["tls"] = {"version": "TLSv1.3", "cipher": "TLS_AES_128_GCM_SHA256", "alpn": "h2",
                                      "chain_ok": True, "key": "ecdsa-p256"}
    for k, t in enumerate(doc["trials"]):
        t["result"]["tls"] = {"version": "", "cipher": "", "alpn": "", "full": 0, "resumed": 0}
        t["result"]["streams"] = {"protocol": "h2", "connections": 20, "streams": 4000, "streams_per_connection": 200.0,
                                  "goaways": 2 * k, "goaway_unprocessed": 10 * k, "retried": 10 * k,
                                  "resets": {"REFUSED_STREAM": 2}, "max_concurrent": 128, "max_per_connection": 1000}
    rows = every_command(write_run(tmp_path / "h2", doc))
    for command, (row, *_) in rows.items():
        assert (row["tls"]["version"], row["tls"]["alpn"], row["tls"]["seen_by"], row["tls"]["full"]) == (
            "TLSv1.3", "h2", "primer", 0), command
        assert row["streams"] == {"protocol": "h2", "connections": 20, "streams": 4000, "streams_per_connection": 200,
                                  "goaways": 1, "goaway_unprocessed": 5, "retried": 5,
                                  "resets": {"REFUSED_STREAM": 2}, "max_concurrent": 128,
                                  "max_per_connection": 1000}, command


def test_a_page_row_s_trials_are_its_whole_s(tmp_path):
    """A trial that measured nothing (its server did not start) is one of the whole's `trials` and not of its
    `measured_trials`: so too for each of its pages."""
    import random

    from helpers.synthetic import Plan, run_doc, write_run

    doc = run_doc(0, Plan(pages=MIX, trials=3), False, 0.0, random.Random(0))
    lost = doc["trials"][2]
    lost.update(status="error", reason="the server did not start")
    del lost["result"], lost["server_metrics"]
    rows = summary_doc(load_results(write_run(tmp_path / "run", doc)))["results"]
    assert [(r["page"], r["trials"], r["measured_trials"]) for r in rows] == [
        ("mix", 3, 2), ("/index.html", 3, 2), ("/info.php", 3, 2)]
    assert rows[1]["totals"]["trials"] == 2  # the sums are over the measured ones


def test_a_row_s_protocol_is_the_catalog_s(tmp_path):
    """An older run whose labels kept no `proto` (two protocols, named by the labels): a row says the protocol its
    label carries, as the catalog's cell does; one reader (`protocols.asked_of`) answers both."""
    import random

    from helpers.synthetic import Plan, run_doc, write_run
    from loadcmp.catalog.folder import cell_key

    doc = run_doc(0, Plan(labels=("nginx[h1]", "nginx[h2]"), tls=True, streams=4), False, 0.0, random.Random(0))
    doc["spec"]["protos"] = ["h1", "h2"]
    for info in doc["servers"].values():
        del info["proto"], info["negotiated"]
    rows = summary_doc(load_results(write_run(tmp_path / "run", doc)))["results"]
    assert [(r["server"], r["proto"]) for r in rows] == [("nginx[h1]", "h1"), ("nginx[h2]", "h2")]
    assert {t["server"]: cell_key(t, doc).protocol for t in doc["trials"]} == {"nginx[h1]": "https", "nginx[h2]": "h2"}


def test_an_h2_report_speaks_of_connections_and_streams(tmp_path):
    """An h2 run at -c 20 -m 10: its level is 20 connections × 10 streams wherever the report names it (memory,
    the handshakes), and its handshakes are said per connection, or said absent from a window that made none."""
    import random

    from helpers.synthetic import Plan, run_doc, write_run
    from loadcmp.report.story import resources
    from loadcmp.report.tls import tls_lines

    doc = run_doc(0, Plan(labels=("nginx",), levels=(20,), proto="h2", tls=True, streams=10, trials=2), False, 0.0,
                  random.Random(0))
    doc["servers"]["nginx"]["tls"] = {"version": "TLSv1.3", "cipher": "TLS_AES_128_GCM_SHA256", "alpn": "h2"}
    for t, shakes in zip(doc["trials"], (78, 0), strict=True):
        t["tls"] = {"version": "TLSv1.3" if shakes else "", "cipher": "", "alpn": "", "full": shakes, "resumed": 0}
    data = load_results(write_run(tmp_path / "h2", doc))
    said = " ".join(resources(data) + tls_lines(data))
    assert "at 20 connections × 10 streams)" in said and "at 20 clients" not in said, said
    assert "nginx at 20 connections × 10 streams: 39 TLS handshakes per trial for" in said, said
    doc["trials"][0]["tls"]["full"] = 0
    quiet = " ".join(tls_lines(load_results(write_run(tmp_path / "kept", doc))))
    assert "no TLS handshake in the window: its connections were opened in the warm-up" in quiet, quiet
