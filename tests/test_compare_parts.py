"""`compare A B` where both runs traced a cell: each part's share of p50 and p99 side by side, and the part that
moved named in one sentence (`catalog.partsmoved`). Two copies of a stored run, their parts joined from lines nginx
and php-fpm wrote (tests/fixtures/trace/nginx): in A every tenth request waited 40 ms for a php-fpm worker, in B
none did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from loadcmp.catalog.compare import compare
from loadcmp.cli import cli
from loadcmp.store import traceparts

from test_trace_report import traced_run

FIXTURES = Path(__file__).parent / "fixtures"


def untraced_hold(tmp_path: Path) -> Path:
    """The same run, traced, no request held in php-fpm's queue."""
    from loadcmp.trace import join

    from test_trace_join import lines_of, requests_frame

    folder = tmp_path / "b"
    shutil.copytree(FIXTURES / "run-2x2x3", folder)
    req = requests_frame("nginx", tmp_path).assign(label="nginx", level=50, trial=1)
    got = join.join(req, lines_of("nginx"), (0, 1e12))
    traceparts.add_parts(folder, traceparts.trial_match("nginx", 50, 1, got.parts, got.unmatched), got.parts)
    return folder


def test_the_part_that_moved_is_named(tmp_path: Path) -> None:
    a = traced_run(tmp_path / "a")
    b = untraced_hold(tmp_path)
    c = compare(a, b)
    (m,) = c.parts
    assert (m.label, m.level) == ("nginx", 50)
    assert m.moved == "upstream_wait", m.sentence
    queue = next(r for r in m.parts if r.part == "upstream_wait")
    assert queue.a_p99 > 0.5 and queue.a_p99 > queue.b_p99 + 0.2  # the held requests are A's slowest
    assert m.a_p99_ms > 1.3 * m.b_p99_ms
    said = f"nginx @ 50: the upstream queue went from {queue.a_p99:.0%} to {queue.b_p99:.0%} of p99 ("
    assert m.sentence.startswith(said), m.sentence
    back = compare(b, a).parts[0]
    assert back.moved == "upstream_wait"
    assert back.sentence.startswith(f"nginx @ 50: the upstream queue went from {queue.b_p99:.0%} to "), back.sentence


def test_compare_shows_the_parts_and_json_keeps_them(tmp_path: Path) -> None:
    a, b = traced_run(tmp_path / "a"), untraced_hold(tmp_path)
    res = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert res.exit_code == 0, res.output
    section = res.output.split("Where the time went (--trace), A against B:", 1)[1]
    assert "nginx @ 50" in section and "upstream queue" in section and "A p99" in section
    assert "nginx @ 50: the upstream queue went from " in " ".join(section.split())
    res = CliRunner().invoke(cli, ["compare", str(a), str(b), "--json"])
    doc = json.loads(res.output)
    assert [p["moved"] for p in doc["parts"]] == ["upstream_wait"]


def test_a_cell_only_one_run_traced_shows_no_parts(tmp_path: Path) -> None:
    a = traced_run(tmp_path / "a")
    res = CliRunner().invoke(cli, ["compare", str(a), str(FIXTURES / "run-2x2x3")])
    assert res.exit_code == 0, res.output
    assert "Where the time went" not in res.output
    assert compare(a, FIXTURES / "run-2x2x3").parts == []


def wordpress_run(folder: Path, tmp_path: Path, database: bool) -> Path:
    """run-2x2x3 with nginx at 50 clients, trial 1, traced from the WordPress fixture's lines, its database's
    lines kept or left out (a dump that failed: the database's part unknown)."""
    from loadcmp.trace import join

    from test_trace_join import lines_of, requests_frame

    shutil.copytree(FIXTURES / "run-2x2x3", folder)
    req = requests_frame("wordpress-nginx", tmp_path).assign(label="nginx", level=50, trial=1)
    lines = [ln for ln in lines_of("wordpress-nginx") if database or ln.program != "mariadb"]
    got = join.join(req, lines, (0, 1e12))
    traceparts.add_parts(folder, traceparts.trial_match("nginx", 50, 1, got.parts, got.unmatched), got.parts)
    return folder


def test_a_database_part_only_one_run_knows_is_folded_into_the_upstream_and_moves_nothing(tmp_path: Path) -> None:
    a = wordpress_run(tmp_path / "a", tmp_path, database=True)
    b = wordpress_run(tmp_path / "b", tmp_path, database=False)
    for first, second, who in ((a, b, "A"), (b, a, "B")):
        (m,) = compare(first, second).parts
        assert m.moved == "", m.sentence  # the same requests: only the unknown differs, and that is no move
        assert "database" not in [r.part for r in m.parts]
        up = next(r for r in m.parts if r.part == "upstream")
        assert up.name == "upstream + database" and abs(up.a_p99 - up.b_p99) < 1e-9
        assert f"Only {who} knows the database's part" in m.sentence, m.sentence
    res = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert res.exit_code == 0 and "upstream + database" in res.output, res.output
    (both,) = compare(a, wordpress_run(tmp_path / "c", tmp_path, database=True)).parts
    assert "database" in [r.part for r in both.parts] and "Only" not in both.sentence
