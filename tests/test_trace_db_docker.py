"""--trace on the wordpress app in real containers: each traced request's queries carry its trace id into MariaDB,
whose own figures (performance_schema) are read after the window and joined to the request as its database part."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.lab import cleanup
from loadcmp.store import traceparts
from loadcmp.trace.breakdown import COLUMN, PARTS

pytestmark = pytest.mark.docker


def test_the_database_part_of_a_wordpress_page_comes_from_mariadb_s_own_figures(tmp_path, docker_client):
    before = {c.name for c in cleanup.labelled(docker_client)}
    res = CliRunner().invoke(cli, ["run", "--app", "wordpress", "--server", "nginx", "--page", "/?s=kestrel+socket",
                                   "--trace", "-c", "4", "-t", "3", "--warmup", "0.5", "--out", str(tmp_path),
                                   "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    folder = doc["results_dir"]
    (match,) = traceparts.read_matches(folder)
    assert match["answered"] > 5 and match["matched"] == match["answered"], match
    assert set(match["unmatched"]) <= {"a server line with no client row, before the window (a warm-up request)"}
    parts = traceparts.read_parts(folder)
    assert parts is not None
    ok = parts[parts["status"] == 200]
    assert ok["database_ms"].notna().all() and (ok["database_ms"] > 0).all()  # every answered page: its queries
    assert (ok["db_queries"] >= 10).all(), ok["db_queries"].tolist()  # a search page runs dozens
    total = ok[[COLUMN[p] for p in PARTS]].fillna(0).sum(axis=1)
    assert np.allclose(total, ok["latency_ms"].astype(float), atol=1e-3)  # the parts still add up
    (row,) = doc["results"]
    assert row["time_parts"]["p99"]["database"] > 0, row["time_parts"]
    assert {c.name for c in cleanup.labelled(docker_client)} == before
