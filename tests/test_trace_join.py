"""The join of the servers' trace lines to the client's rows, on lines each stack wrote (tests/fixtures/trace/:
200 requests from 4 keep-alive clients to /sleep.php?ms=2, every tenth without a traceparent; captured with the
stacks' own templates, override `trace` on; wordpress-nginx: a WordPress page with its database's lines, see
tests/test_trace_db.py) and client rows built with requests.parquet's columns."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from loadcmp.trace import breakdown, join, serverlogs

FIX = Path(__file__).parent / "fixtures" / "trace"
STACKS = sorted(p.name for p in FIX.iterdir() if p.is_dir())


def requests_frame(stack: str, tmp_path: Path, drop: int = 0) -> pd.DataFrame:
    """The client's rows of a fixture as requests.parquet holds them (written and read back), its first `drop`
    rows' answers turned into 'no answer'."""
    c = pd.read_csv(FIX / stack / "client.csv", dtype={"trace_id": str})
    n = len(c)
    nan = np.full(n, np.nan, dtype="float32")
    status = c["status"].to_numpy(dtype="int16").copy()
    status[:drop] = 0
    table = pa.table({
        "trace_id": c["trace_id"], "label": [stack] * n, "level": np.full(n, 4, "int32"),
        "trial": np.ones(n, "int16"), "worker": c["worker"].astype("int16"),
        "t_intended": c["t_start"].astype("float64") - 0.0005, "t_start": c["t_start"].astype("float64"),
        "connect_ms": nan, "handshake_ms": nan, "write_ms": np.full(n, 0.02, "float32"),
        "wait_ms": (c["latency_ms"] - 0.1).astype("float32"), "read_ms": np.full(n, 0.05, "float32"),
        "latency_ms": (c["latency_ms"] + 0.5).astype("float32"), "status": status,
        "kind": ["ok"] * n, "bytes": c["bytes"].astype("int32"), "conn": c["worker"].astype("int32"),
        "proto": ["h1"] * n, "stream": np.zeros(n, "int32")})
    pq.write_table(table, tmp_path / "requests.parquet", compression="zstd")
    return pd.read_parquet(tmp_path / "requests.parquet")


def lines_of(stack: str) -> list[serverlogs.ServerLine]:
    out = []
    for f in sorted((FIX / stack).glob("*.log")):
        role, name = f.name.split("-", 1)
        program = serverlogs.program_of(f"/tmp/loadcmp-trace-{name}")
        assert program is not None, f.name
        got = serverlogs.parse(program, role, f.read_text().splitlines())
        assert got.unreadable == 0, (f, got.unreadable)
        out += got.lines
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_every_answered_request_of_each_stack_is_matched(stack: str, tmp_path: Path) -> None:
    req = requests_frame(stack, tmp_path)
    lines = lines_of(stack)
    t0 = float(req["t_start"].min())
    got = join.join(req, lines, (t0, t0 + 60))
    assert got.matched_share() is not None and got.matched_share() >= 0.99, got.unmatched
    assert len(got.parts) == len(req)
    # the parts add up to the client's latency; a few are over it (Apache and lighttpd time up to their log
    # line, after the answer left: up to 4 ms on these lines), and those are marked
    total = got.parts[[breakdown.COLUMN[p] for p in breakdown.PARTS]].sum(axis=1)
    assert np.allclose(total, got.parts["latency_ms"].astype(float), atol=1e-3)
    assert got.parts["over"].mean() < 0.1
    assert got.parts.loc[got.parts["over"], "unexplained_ms"].lt(-breakdown.SLACK_MS).all()
    php = got.parts["upstream_ms"] + got.parts["server_ms"]
    assert (php > 1.5).mean() > 0.95  # the page sleeps 2 ms: some server part holds it


@pytest.mark.parametrize("stack", ["nginx", "apache-event", "caddy", "lighttpd", "nginx-apache"])
def test_the_upstream_is_told_apart_where_a_server_logs_it(stack: str, tmp_path: Path) -> None:
    got = join.join(requests_frame(stack, tmp_path), lines_of(stack), (0, math.inf))
    assert set(got.parts["upstream"]) == {"apache" if stack == "nginx-apache" else "fpm"}
    assert (got.parts["upstream_ms"] >= 2.0).mean() > 0.95  # the sleep is the upstream's own


def test_the_fpm_queue_is_nginx_s_upstream_time_less_php_s_own(tmp_path: Path) -> None:
    """nginx waited 30 ms on its upstream of which php-fpm's worker took 5: 25 ms in the socket queue."""
    req = requests_frame("nginx", tmp_path).head(1)
    tid = join.client_ids(req).iloc[0]
    lines = [serverlogs.ServerLine(tid, "nginx", "web", 1.0, 31.0, 0.0, 30.0, 200),
             serverlogs.ServerLine(tid, "fpm", "web", 1.0, 5.0, status=200)]
    got = join.join(req.assign(latency_ms=40.0), lines, (0, 2)).parts.iloc[0]
    assert got["upstream_wait_ms"] == pytest.approx(25.0) and got["upstream_ms"] == pytest.approx(5.0)
    assert got["server_ms"] == pytest.approx(1.0)
    assert got["queue_ms"] == pytest.approx(0.5, abs=1e-3)
    assert got["unexplained_ms"] == pytest.approx(40.0 - 0.5 - 0.02 - 31.0, abs=1e-3)


def test_unmatched_lines_on_each_side_are_counted_and_named(tmp_path: Path) -> None:
    req = requests_frame("nginx", tmp_path, drop=3)
    lines = lines_of("nginx")
    gone = set(join.client_ids(req).iloc[:5])  # 3 never reached the server, 2 answered but the log lost them
    kept = [ln for ln in lines if ln.trace_id not in gone]
    t0 = float(req["t_start"].min())
    strangers = [serverlogs.ServerLine("ab" * 16, "nginx", "web", t0 - 5, 1.0, status=200),
                 serverlogs.ServerLine("cd" * 16, "nginx", "web", t0 + 1, 1.0, status=200),
                 serverlogs.ServerLine("ef" * 16, "fpm", "web", t0 + 1, 1.0, status=200)]
    got = join.join(req, kept + strangers, (t0, t0 + 60))
    assert got.unmatched == {join.NO_LINE_UNANSWERED: 3, join.NO_LINE_ANSWERED: 2, join.NO_ROW_WARMUP: 1,
                             join.NO_ROW: 1, join.UPSTREAM_ONLY: 1}
    lost = got.parts[got.parts["front"] == ""]
    assert lost["server_ms"].isna().all() and len(lost) == 5


def test_trace_ids_read_as_two_integers_too(tmp_path: Path) -> None:
    req = requests_frame("nginx", tmp_path).head(3)
    ids = join.client_ids(req)
    two = req.drop(columns="trace_id").assign(trace_hi=[int(t[:16], 16) for t in ids],
                                              trace_lo=[int(t[16:], 16) for t in ids])
    assert list(join.client_ids(two)) == list(ids)


def test_server_lines_parse_and_refuse_what_they_must() -> None:
    tp = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    got = serverlogs.parse_line("nginx", f"{tp} 17.5 0.012 0.000, 0.001 0.010 0.004, 0.006 502 3 1".replace(", ", ","),
                                "web")
    assert got is not None and got.upstream_ms == pytest.approx(10.0) and got.status == 502
    assert serverlogs.parse_line("fpm", "- 17 100 0.1 2097152 0.00 200", "web") is None
    parsed = serverlogs.parse("apache", "web", [f"{tp} 1700000000000 1500 200 1234 0", "cut off", ""])
    assert (len(parsed.lines), parsed.unreadable) == (1, 1) and parsed.lines[0].total_ms == 1.5
    assert serverlogs.trace_id("00-XYZ-1-01") is None
    said = serverlogs.own_config_refusal("nginx", "http { access_log off; }")
    assert said is not None and "/tmp/loadcmp-trace-nginx.log" in said
    assert serverlogs.own_config_refusal("nginx", "access_log /tmp/loadcmp-trace-nginx.log loadcmp_trace;") is None


def test_shares_of_p99_come_from_the_slowest_requests() -> None:
    n = 1000
    lat = pd.Series(np.r_[np.full(n - 10, 10.0), np.full(10, 100.0)])
    parts = pd.DataFrame({breakdown.COLUMN[p]: 0.0 for p in breakdown.PARTS}, index=lat.index)
    parts.loc[:, "server_ms"] = 10.0
    parts.loc[lat.index[-10:], "unexplained_ms"] = 90.0
    p99 = breakdown.shares(parts, lat, 0.99)
    p50 = breakdown.shares(parts, lat, 0.5)
    assert p99["unexplained"] == pytest.approx(0.9) and p50["server"] == pytest.approx(1.0)


def test_trace_refuses_a_users_config_without_the_trace_log_naming_the_line(tmp_path: Path) -> None:
    """--trace on `--config nginx:web=FILE`: a file without the trace log is refused with the line to add; the
    stack's own template (rendered with the trace on) passes."""
    from dataclasses import replace

    from loadcmp.experiment.variants import trace_config_errors
    from loadcmp.experiment.spec import RunSpec
    from loadcmp.lab import ownconfig, render, stacks

    stack = stacks.catalog().get("nginx")
    traced = render.render(stack, {**stack.effective({}), render.TRACE: True}, {"web": 8080})[0].files["nginx.conf"]
    (tmp_path / "plain.conf").write_text("events {}\nhttp { access_log off; server { listen 8080; } }\n")
    (tmp_path / "traced.conf").write_text(traced)
    for name, refused in (("plain.conf", True), ("traced.conf", False)):
        own = ownconfig.OwnConfig("nginx", "web", str(tmp_path / name))
        spec = replace(RunSpec(servers=("nginx",)), configs=(own.doc(),))

        said = trace_config_errors(replace(spec, trace=True))
        assert bool(said) == refused, said
        assert trace_config_errors(spec) == []  # not traced: nothing asked of the file
        if refused:
            assert len(said) == 1 and "\n" not in said[0] and "access_log /tmp/loadcmp-trace-nginx.log" in said[0]
