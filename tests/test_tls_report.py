"""https in the records, the store and the report, on stored results (no Docker): a trial's TLS facts from
the load's result to run.json and summary.csv, results without them read as plain, the report's handshakes
section, `tls_error` by reason, and a client-bound https cell's CPU per handshake on each side."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.load.record.summary import check_invariant
from loadcmp.observe.evidence import Causes
from loadcmp.records import TrialRecord
from loadcmp.report.handshakes import bound_said, errors_said, facts
from loadcmp.report.tables import summary_doc
from loadcmp.report.tls import tls_lines, tls_rows
from loadcmp.store.handshakes import handshake_cost, tls_of
from loadcmp.store.reader import ClientBound, load_results
from loadcmp.store.writer import SUMMARY_COLUMNS, summary_row
from loadcmp.sweep.trial import Evidence, Measurement, Planned, judge
from tests.helpers.stored import stored_run

FIXTURES = Path(__file__).parent / "fixtures"
TLS = {"version": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384", "alpn": "http/1.1", "full": 600, "resumed": 400}


def _tls_run(tmp: Path) -> Path:
    folder = tmp / "run-tls"
    shutil.copytree(FIXTURES / "run-tls", folder)
    return folder


def test_the_fixture_keeps_every_request_counted_once():
    """ok + failures + unfinished == started in every https trial, tls_error among the failures."""
    run = json.loads((FIXTURES / "run-tls" / "run.json").read_text())
    results = [t["result"] for t in run["trials"] if t.get("result")]
    assert any(r["failures"]["tls_error"] for r in results)
    for r in results:
        assert check_invariant(r), r
        assert r["failed"] == sum(r["failures"].values())
        assert sum(r.get("tls_errors", {}).values()) == r["failures"]["tls_error"]


def test_a_trial_takes_the_loads_tls_facts_into_its_record():
    run = json.loads((FIXTURES / "run-2x3x2" / "run.json").read_text())
    t0 = run["trials"][0]
    summary = copy.deepcopy(t0["result"])
    summary["tls"] = TLS
    m = Measurement(summary, t0["latency_hist"], t0["service_hist"], [], [], [], (0.0, 1.0))
    ev = Evidence({}, {}, None, Causes(None, [], []))
    dep = SimpleNamespace(stack=SimpleNamespace(name="nginx"))
    p = Planned(10, 1, "nginx", False, "nginx", "/info.php")
    spec = SimpleNamespace(server_memory=None)
    rec = judge(spec, p, dep, 0.1, m, ev)  # type: ignore[arg-type]
    assert rec["tls"] == TLS and tls_of(rec) == TLS
    summary.pop("tls")
    plain = judge(spec, p, dep, 0.1, Measurement(summary, {}, {}, [], [], [], (0.0, 1.0)), ev)  # type: ignore
    assert "tls" not in plain and tls_of(plain) is None


def test_results_without_tls_read_as_plain(tmp_path):
    data = load_results(FIXTURES / "run-2x3x2")
    assert not data.tls
    assert all(tls_of(t) is None for t in data.trials)
    assert data.summary[["tls_full", "tls_resumed", "tls_error"]].isna().all().all()
    assert tls_rows(data) == ([], []) and tls_lines(data) == []
    assert all("tls" not in row for row in _json(FIXTURES / "run-2x3x2")["results"])


def test_summary_csv_has_the_handshakes(tmp_path):
    csv = pd.read_csv(FIXTURES / "run-tls" / "summary.csv")
    assert list(csv.columns) == SUMMARY_COLUMNS
    prefork = csv[(csv.server == "apache-prefork") & (csv.level == 200)]
    assert prefork.tls_error.tolist() == [37, 41]
    run = json.loads((FIXTURES / "run-tls" / "run.json").read_text())
    row = summary_row(run["trials"][0])
    assert row["tls_full"] + row["tls_resumed"] == run["trials"][0]["result"]["completed"]


def _json(folder: Path) -> dict[str, Any]:
    """`run --json`'s document of a stored run (`report.tables.summary_doc`)."""
    return summary_doc(load_results(folder))


def test_json_rows_carry_each_cells_tls(tmp_path):
    doc = _json(_tls_run(tmp_path))
    rows = {(r["server"], r["level"]): r for r in doc["results"]}
    tls = rows[("apache-prefork", 200)]["tls"]
    assert tls["version"] == "TLSv1.3" and tls["tls_errors"] == {"eof during handshake": 32.5,
                                                                  "alert handshake failure": 6.5}
    assert 0.4 < tls["resumed_share"] < 0.6 and tls["handshakes_per_s"] > 0
    bound = rows[("nginx", 200)]
    assert bound["client_bound"] and "--tls-resume" in bound["client_advice"] and "--cluster" in bound["client_advice"]
    assert "--tls-resume" not in (rows[("nginx", 50)].get("client_advice") or "")


def test_the_tls_section_names_what_each_label_negotiated(tmp_path):
    data = load_results(_tls_run(tmp_path))
    lines = tls_lines(data)
    assert any(x.startswith("nginx: TLSv1.3, TLS_AES_256_GCM_SHA384") and "ecdsa-p256" in x for x in lines)
    assert any("rsa-2048" in x for x in lines)
    assert any("--tls-resume 0.5" in x for x in lines)
    assert any(x.startswith("apache-prefork at 200 clients: 39 tls_error per trial (32 eof during handshake")
               for x in lines)
    header, rows = tls_rows(data)
    assert len(rows) == 6 and header[2] == "handshakes/s"
    assert [r[-1] for r in rows if r[1] == "apache-prefork"] == ["0", "0", "39"]


def test_the_primers_facts_come_first_and_the_loads_stand_in(tmp_path):
    def no_primer(run: dict[str, Any]) -> None:
        for info in run["servers"].values():
            info.pop("tls")

    folder = _tls_run(tmp_path)
    run = json.loads((folder / "run.json").read_text())
    no_primer(run)
    (folder / "run.json").write_text(json.dumps(run))
    lines = tls_lines(load_results(folder))
    assert "nginx: TLSv1.3, TLS_AES_256_GCM_SHA384, ALPN http/1.1 (the load's handshakes)." in lines


def _edit(folder: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    run = json.loads((folder / "run.json").read_text())
    edit(run)
    (folder / "run.json").write_text(json.dumps(run))
    return folder


def test_a_kept_alive_load_without_handshakes_in_its_window_is_no_disagreement(tmp_path):
    """-k: the connections shook hands in the warm-up, so the window's TLS facts hold no handshake."""
    def kept_alive(run: dict[str, Any]) -> None:
        for t in run["trials"]:
            if t["server"] == "nginx" and t.get("result"):
                t["tls"] = t["result"]["tls"] = {"version": "", "cipher": "", "alpn": "", "full": 0, "resumed": 0}

    lines = tls_lines(load_results(_edit(_tls_run(tmp_path), kept_alive)))
    nginx = [x for x in lines if x.startswith("nginx: ")]
    assert nginx and nginx[0].startswith("nginx: TLSv1.3, TLS_AES_256_GCM_SHA384") and "primer's handshake" in nginx[0]
    assert not any("mostly agreed" in x or " , ." in x for x in lines), lines


def test_an_h3_labels_tls_is_what_quic_negotiated_not_the_primers_tcp_handshake(tmp_path):
    """A run stored while the primer shook hands over TCP for h3 (ALPN http/1.1): the load's QUIC handshakes
    say it; one whose primer made the QUIC handshake says the primer's."""
    quic = {"version": "TLSv1.3", "cipher": "TLS_AES_128_GCM_SHA256", "alpn": "h3", "full": 20, "resumed": 0}

    def h3(run: dict[str, Any]) -> None:
        run["servers"]["nginx"]["proto"] = run["servers"]["nginx"]["negotiated"] = "h3"
        for t in run["trials"]:
            if t["server"] == "nginx" and t.get("result"):
                t["tls"] = t["result"]["tls"] = dict(quic)

    folder = _edit(_tls_run(tmp_path), h3)
    nginx = next(x for x in tls_lines(load_results(folder)) if x.startswith("nginx: "))
    assert nginx == "nginx: TLSv1.3, TLS_AES_128_GCM_SHA256, ALPN h3 (the load's QUIC handshakes).", nginx

    def primed_over_quic(run: dict[str, Any]) -> None:
        run["servers"]["nginx"]["tls"].update(cipher="TLS_AES_128_GCM_SHA256", alpn="h3")

    nginx = next(x for x in tls_lines(load_results(_edit(folder, primed_over_quic))) if x.startswith("nginx: "))
    assert nginx.startswith("nginx: TLSv1.3, TLS_AES_128_GCM_SHA256, ALPN h3,") and "primer's QUIC handshake" in nginx
    assert "http/1.1" not in nginx and "mostly agreed" not in nginx


def test_tls_error_reasons_where_failures_begin(tmp_path):
    res = CliRunner().invoke(cli, ["report", str(_tls_run(tmp_path)), "--format", "md"])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "run-tls" / "report" / "report.md").read_text()
    assert "mostly tls_error (39 per trial: 32 eof during handshake, 6.5 alert handshake failure)" in md
    assert "## TLS handshakes" in md and "over https" in md


def _cost_trial(client_us: float, cpu_pct: float, full: int, resumed: int) -> TrialRecord:
    t: Any = {"server": "s", "level": 1, "trial": 1, "stack": "s", "keepalive": False, "status": "ok", "reason": None,
              "result": {"completed": 1000, "duration_s": 1.0, "client_cpu_us": client_us, "failures": {}},
              "server_metrics": {"cpu_pct": cpu_pct}, "tls": {**TLS, "full": full, "resumed": resumed}}
    return t


def test_each_sides_cpu_per_handshake():
    """1,000 requests in 1 s, one handshake each: the client at 900 µs a request spent 0.9 s, the server at
    30 % of a core 0.3 s; per handshake 900 µs against 300 µs."""
    cost = handshake_cost([_cost_trial(900.0, 30.0, 1000, 0)])
    assert cost is not None and (cost.handshakes, cost.full) == (1000, 1000)
    assert round(cost.client_us or 0) == 900 and round(cost.server_us or 0) == 300
    said = bound_said(ClientBound("busy", None, cost)) or ""
    assert "all 1,000 of its TLS handshakes were full" in said
    assert "cost the client 3.0× what it cost the server" in said
    assert "--workers" in said and "--cluster" in said and "--tls-resume" in said


def test_the_client_is_not_said_to_pay_more_when_it_did_not():
    same = handshake_cost([_cost_trial(300.0, 30.0, 500, 500)])
    assert "about as much on each side" in (bound_said(ClientBound("busy", None, same)) or "")
    cheaper = handshake_cost([_cost_trial(100.0, 30.0, 1000, 0)])
    said = bound_said(ClientBound("busy", None, cheaper)) or ""
    assert "the client spent 100 µs" in said and "cost the client" not in said and "each side:" not in said


def test_no_handshake_word_without_full_handshakes_or_tls():
    only_resumed = handshake_cost([_cost_trial(900.0, 30.0, 0, 1000)])
    assert bound_said(ClientBound("busy", None, only_resumed)) is None
    assert bound_said(ClientBound("busy", None, None)) is None
    plain: Any = {**_cost_trial(900.0, 30.0, 1, 0)}
    plain.pop("tls")
    assert handshake_cost([plain]) is None and facts([plain]) is None and errors_said([plain]) == ""


def test_a_client_bound_plain_cell_keeps_its_notes(tmp_path):
    """A client-bound cell over plain http says what it said before: no handshake sentence."""
    from tests.helpers.stored import client_bound

    folder = stored_run(tmp_path / "r", edit=client_bound("nginx"))
    data = load_results(folder)
    bound = data.client_bound("nginx", 10)
    assert bound is not None and bound.handshakes is None and bound_said(bound) is None


# --- the TLS metrics of findings and checks ---------------------------------------------------------------


def _three_trials(tmp: Path, rate: dict[str, float], client_bound: tuple[str, ...] = ()) -> Path:
    """run-tls with three trials per cell: `rate[server]` handshakes per second (±2 % across the trials),
    a quarter of them resumed, the server at 50 % of its core."""
    def edit(t: dict[str, Any]) -> None:
        n = round(rate[t["server"]] * t["result"]["duration_s"] * (0.98, 1.0, 1.02)[t["trial"] - 1])
        t["tls"] = t["result"]["tls"] = {**TLS, "full": n - n // 4, "resumed": n // 4}
        t["server_metrics"]["cpu_pct"] = 50.0
        t["result"]["client_bound"] = t["server"] in client_bound

    return stored_run(tmp / "three", rps={"nginx": [1.0] * 3, "apache-prefork": [1.0] * 3}, edit=edit,
                      fixture=FIXTURES / "run-tls")


def _verdict(folder: Path, check: str) -> str:
    from loadcmp.verdicts import findings as fd
    from loadcmp.verdicts import judge as jd

    (out,) = jd.evaluate(load_results(folder), fd.parse_findings([{"claim": "c", "check": check}]))
    return out.verdict


def test_handshake_findings_are_judged_on_their_intervals(tmp_path):
    folder = _three_trials(tmp_path, {"nginx": 3000.0, "apache-prefork": 1000.0})
    assert _verdict(folder, "nginx:handshakes > 2000") == "supported"
    assert _verdict(folder, "nginx:handshakes > 2 * apache-prefork:handshakes") == "supported"
    assert _verdict(folder, "apache-prefork:handshakes > 1.5 * nginx:handshakes") == "not supported"
    assert _verdict(folder, "nginx:handshakes_per_core@10 > 5000") == "supported"  # 3,000/s at half a core
    assert _verdict(folder, "nginx:resumed_share > 20%") == "supported"
    assert _verdict(folder, "nginx:resumed_share > 30%") == "not supported"
    assert _verdict(folder, "nginx:handshakes > 3000") == "inconclusive"  # 3,000 ±2 %: the interval straddles it


def test_a_client_bound_handshake_rate_is_a_lower_bound(tmp_path):
    """The server completed at least the handshakes the client got through: a bound above the other side
    decides; per core (the server's own figure) gets no bound."""
    folder = _three_trials(tmp_path, {"nginx": 3000.0, "apache-prefork": 1000.0}, client_bound=("nginx",))
    assert _verdict(folder, "nginx:handshakes > 2 * apache-prefork:handshakes") == "supported"
    assert _verdict(folder, "apache-prefork:handshakes > nginx:handshakes") == "not supported"
    assert _verdict(folder, "nginx:handshakes < apache-prefork:handshakes") == "not supported"
    assert _verdict(folder, "nginx:handshakes_per_core > 1000") == "inconclusive"
    assert _verdict(folder, "apache-prefork:handshakes > 0.1 * nginx:handshakes") == "inconclusive"


def test_a_plain_run_has_no_handshakes_to_judge(tmp_path):
    assert _verdict(FIXTURES / "run-2x3x2", "nginx:handshakes > 1") == "inconclusive"
    from loadcmp.verdicts.checks import measure

    assert measure("resumed_share", None, load_results(FIXTURES / "run-2x3x2").trials) is None


def test_the_failures_figure_stacks_tls_error_once():
    from loadcmp.report.plots import _kinds, failures_vs_concurrency

    data = load_results(FIXTURES / "run-tls")
    kinds = _kinds(data)
    assert kinds.count("tls_error") == 1 and kinds[-1] == "dropped"
    import matplotlib.pyplot as plt

    assert failures_vs_concurrency(data) is not None
    plt.close("all")
