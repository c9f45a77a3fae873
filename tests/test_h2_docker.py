"""HTTP/2 on the real stacks (marked docker): h2 by ALPN on every stack that speaks it and h2c where it is offered,
each label's negotiated protocol stored and every stream accounted for; the primer stopping an h2 trial against
a server that answers HTTP/1.1 (apache-prefork, where Apache leaves mod_http2 inactive), with its log line; and
the issue's run, h1 beside h2 per stack in one report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli

pytestmark = pytest.mark.docker

SHORT = ["-t", "1", "--warmup", "0", "--page", "/index.html", "--json"]


def _run(tmp_path: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    res = CliRunner().invoke(cli, ["run", *args, *SHORT, "--out", str(tmp_path)])
    folder = next(tmp_path.iterdir())
    return res, json.loads((folder / "run.json").read_text())


def _accounted(run: dict[str, Any], proto: str) -> None:
    """Every measured trial of `proto`: its streams add up, and its tally says the protocol."""
    for t in run["trials"]:
        r = t["result"]
        # a graceful GOAWAY's streams (nginx's after keepalive_requests) are sent again, not failed: each stream a
        # GOAWAY left unprocessed was retried, or (sent SENDS times, or under an error code) failed as `goaway`
        assert r["ok"] > 0 and r["failed"] == r["failures"].get("goaway", 0), (t["server"], r["failures"])
        st = r["streams"]
        assert r["failures"].get("goaway", 0) + st["retried"] == st["goaway_unprocessed"], (t["server"], st)
        assert r["ok"] + r["failed"] + r["unfinished"] == r["started"], t["server"]
        assert r["streams"]["protocol"] == proto and r["streams"]["connections"] >= 1, t["server"]


def test_h2_on_every_stack_that_speaks_it(images: Any, tmp_path: Path) -> None:
    servers = "nginx,apache-event,apache-worker,nginx-apache,caddy,lighttpd"
    res, run = _run(tmp_path, "--tls", "--proto", "h2", "--server", servers, "-c", "4", "-m", "4")
    assert res.exit_code == 0, res.output
    assert {label: info["negotiated"] for label, info in run["servers"].items()} == dict.fromkeys(
        servers.split(","), "h2")
    _accounted(run, "h2")


def test_h2c_where_it_is_offered(images: Any, tmp_path: Path) -> None:
    servers = "apache-event,apache-prefork,caddy,lighttpd"  # prefork: h2c by prior knowledge it serves
    res, run = _run(tmp_path, "--proto", "h2c", "--server", servers, "-c", "4", "-m", "4")
    assert res.exit_code == 0, res.output
    assert {label: info["negotiated"] for label, info in run["servers"].items()} == dict.fromkeys(
        servers.split(","), "h2c")
    _accounted(run, "h2c")


def test_the_primer_stops_an_h2_trial_against_a_server_that_answers_h1(images: Any, tmp_path: Path) -> None:
    """apache-prefork: Apache leaves mod_http2 inactive under prefork. Its one trial stopped: one line, exit 2."""
    res, run = _run(tmp_path, "--tls", "--proto", "h2", "--server", "apache-prefork", "-c", "2", "-m", "2")
    assert res.exit_code == 2, res.output
    (h2,) = run["trials"]
    assert h2["status"] == "wrong_protocol" and "result" not in h2
    assert h2["reason"].startswith("apache-prefork: asked for h2, ALPN chose http/1.1; its log says: ")
    assert "AH10034" in h2["reason"], h2["reason"]
    assert run["servers"]["apache-prefork"]["negotiated"] == "http/1.1"
    assert "ALPN chose http/1.1" in res.output


def test_the_issues_run_compares_h1_with_h2_per_stack(images: Any, tmp_path: Path) -> None:
    servers = ["nginx", "apache-event", "caddy", "lighttpd"]
    res, run = _run(tmp_path, "--tls", "--proto", "h1,h2", *[x for s in servers for x in ("--server", s)],
                    "-c", "20", "-m", "10")
    assert res.exit_code == 0, res.output
    for s in servers:
        assert run["servers"][f"{s}[h1]"]["negotiated"] == "h1"
        assert run["servers"][f"{s}[h2]"]["negotiated"] == "h2"
    _accounted({"trials": [t for t in run["trials"] if t["server"].endswith("[h2]")]}, "h2")
    folder = next(tmp_path.iterdir())
    res = CliRunner().invoke(cli, ["report", str(folder), "--format", "md", "--out", str(folder / "report")])
    assert res.exit_code == 0, res.output
    text = (folder / "report" / "report.md").read_text()
    assert "## HTTP/2 streams" in text and "nginx[h2]: asked for h2, the server negotiated h2" in text
