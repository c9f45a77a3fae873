"""HTTP/3 on the real stacks (marked docker, short): Caddy under --tls serves h3 on UDP at its https port and
announces it by Alt-Svc; `bench --proto h3` loads it with 200s, every stream accounted for, and says whether
the client was the bottleneck (its judgement agreeing with its own figures); the primer finds h3 as the load
will; a stack that does not speak h3 is refused in one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.lab import containers, planning
from loadcmp.lab import stacks as st
from loadcmp.lab.certs import RunCA
from loadcmp.load.record.saturation import CPU_BOUND_PCT, LAG_BOUND_MS
from loadcmp.load.record.summary import check_invariant
from loadcmp.sweep.primer import quic

pytestmark = pytest.mark.docker


@contextmanager
def up_tls(name: str, ca: RunCA, images: Any, docker_client: Any) -> Iterator[containers.Deployment]:
    dep = containers.up(planning.plan_deployment(st.get_stack(name), tls=ca), client=docker_client, images=images)
    try:
        yield dep
    finally:
        dep.stop()


def test_caddy_serves_h3_and_bench_says_whether_the_client_was_the_bottleneck(images, docker_client, tmp_path: Path):
    ca = RunCA(tmp_path)
    with up_tls("caddy", ca, images, docker_client) as dep:
        assert quic(dep, "/index.html").startswith("QUIC v1, h3, TLSv1.3")
        res = CliRunner().invoke(cli, ["bench", "--proto", "h3", "-c", "2", "-m", "10", "-t", "2", "--cacert",
                                       ca.cafile, "--json", f"https://127.0.0.1:{dep.port}/index.html"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["ok"] > 0 and doc["failed"] == 0 and set(doc["status_codes"]) == {"200"}
    assert check_invariant(doc)
    assert doc["streams"]["protocol"] == "h3" and doc["streams"]["connections"] == 2
    assert doc["tls"]["alpn"] == "h3"
    busy, lag = doc["client_busy_pct"] or 0.0, doc["client_lag_ms"] or 0.0
    assert doc["client_bound"] == (busy >= CPU_BOUND_PCT or lag >= LAG_BOUND_MS)
    assert doc["client_cpu_us"] > 0
    if doc["client_bound"]:
        assert "µs of CPU per request" in doc["client_advice"]


def test_a_stack_that_serves_https_without_h3_is_refused_in_one_line(images, docker_client, tmp_path: Path):
    ca = RunCA(tmp_path)
    with up_tls("nginx", ca, images, docker_client) as dep:
        res = CliRunner().invoke(cli, ["bench", "--proto", "h3", "-t", "1", "--cacert", ca.cafile,
                                       f"https://127.0.0.1:{dep.port}/index.html"])
    assert res.exit_code == 2
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "does not advertise HTTP/3" in lines[0], res.output


def test_a_run_over_h3_on_caddy(images, tmp_path: Path):
    res = CliRunner().invoke(cli, ["run", "--tls", "--proto", "h3", "--server", "caddy", "-c", "2", "-m", "5", "-t",
                                   "2", "--warmup", "0", "--page", "/index.html", "--json", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["results"]
    assert len(rows) == 1 and rows[0]["ok"] > 0 and rows[0]["failed"] == 0, rows
    run = json.loads((next(tmp_path.iterdir()) / "run.json").read_text())
    server = run["servers"]["caddy"]
    assert server["proto"] == "h3" and server["negotiated"] == "h3"
    result = run["trials"][0]["result"]
    assert result["streams"]["protocol"] == "h3" and result["tls"]["alpn"] == "h3"
    folder = next(tmp_path.iterdir())
    rep = CliRunner().invoke(cli, ["report", str(folder), "--format", "md"])
    assert rep.exit_code == 0, rep.output
    md = (folder / "report" / "report.md").read_text()
    assert "## HTTP/3 streams" in md and "| caddy | h3 |" in md


def test_a_mix_and_a_journey_over_h3_on_caddy(images, tmp_path: Path):
    journey = tmp_path / "visit.toml"
    journey.write_text('[[steps]]\nname = "front"\npath = "/index.html"\nexpect = 200\n'
                       '[[steps]]\nname = "info"\npath = "/info.php"\nextract = { php = "PHP Version ([0-9.]+)" }\n'
                       '[[steps]]\nname = "image"\npath = "/image-50k.jpg?php={php}"\nexpect = 200\n')
    mix = ["--mix", "/index.html=60,/info.php=30,/image-50k.jpg=10", "--seed", "3"]
    for source in (mix, ["--journey", str(journey)]):
        out = tmp_path / source[0].strip("-")
        res = CliRunner().invoke(cli, ["run", "--tls", "--proto", "h3", "--server", "caddy", "-c", "4", "-t", "3",
                                       *source, "--json", "--out", str(out)])
        assert res.exit_code == 0, res.output
        row = json.loads(res.stdout)["results"][0]
        assert row["ok"] > 100 and row["failed"] == 0, row
        result = json.loads((next(out.iterdir()) / "run.json").read_text())["trials"][0]["result"]
        pages = {p["page"]: p["completed"] for p in result["pages"]}
        assert result["streams"]["protocol"] == "h3" and sum(pages.values()) == result["completed"]
        if source[0] == "--journey":  # each user walks the three steps in order: the same count each, ± a cut one
            assert result["journeys"]["visit"]["failed"] == 0 and max(pages.values()) - min(pages.values()) <= 4
        else:
            assert pages["/index.html"] > pages["/info.php"] > pages["/image-50k.jpg"] > 0
