"""https on the real stacks (marked docker): a run of all seven with --tls, every request ok and each label's
handshake stored; tls.protocols and tls.key as the server negotiates them; session tickets and the session
cache off and on, seen in a resumption by Python's ssl; `loadcmp up --tls` saying where its CA is;
loadcmp's own loop: --tls-resume 0 and 1 in the handshake counts, every request accounted for over https."""

from __future__ import annotations

import json
import os
import re
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.lab import containers, planning
from loadcmp.lab import stacks as st
from loadcmp.lab.certs import CA_FILE, RunCA, key_type_of

pytestmark = pytest.mark.docker


def test_https_on_all_seven_stacks(images: Any, tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["run", "--tls", "--server", "all", "-c", "4", "-t", "1", "--warmup", "0",
                                   "--page", "/index.html", "--keepalive", "--json", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    folder = next(tmp_path.iterdir())
    assert (folder / CA_FILE).is_file()
    run = json.loads((folder / "run.json").read_text())
    assert sorted(run["servers"]) == sorted(st.catalog().names())
    assert len(doc["results"]) == 7
    for row in doc["results"]:
        assert row["ok"] > 0 and row["failed"] == 0, row
    assert all(t["result"]["url"].startswith("https://127.0.0.1:") for t in run["trials"])
    for label, info in run["servers"].items():
        tls = info["tls"]
        assert tls["version"] == "TLSv1.3" and tls["alpn"] == "http/1.1" and tls["chain_ok"], (label, tls)
        assert tls["cipher"].startswith("TLS_") and tls["key"] == "ecdsa-p256", (label, tls)
        assert info["settings"]["tls.protocols"] == "1.2,1.3"
        assert "server.key" not in json.dumps(info["configs"]).replace("tls/server.key", "")


@contextmanager
def https(name: str, ca: RunCA, images: Any, docker_client: Any, **settings: Any) -> Iterator[int]:
    """A stack up with --tls and these tls.* settings; its port."""
    plan = planning.plan_deployment(st.get_stack(name), overrides={f"tls.{k}": v for k, v in settings.items()},
                                    tls=ca)
    dep = containers.up(plan, client=docker_client, images=images)
    try:
        yield dep.port
    finally:
        dep.stop()


def shake(port: int, ctx: ssl.SSLContext, session: ssl.SSLSession | None = None
          ) -> tuple[ssl.SSLSession | None, bool, str, bytes]:
    """A GET over one TLS connection (read to its end, so that TLS 1.3's tickets arrive): the session, whether it
    was resumed, the version and the certificate."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1", session=session) as s:
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        while s.recv(65536):
            pass
        return s.session, s.session_reused, s.version() or "", s.getpeercert(binary_form=True) or b""


def resumes(port: int, ca: RunCA, version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3) -> bool:
    ctx = ssl.create_default_context(cafile=ca.cafile)
    ctx.maximum_version = version
    session, reused, _, _ = shake(port, ctx)
    assert not reused
    return shake(port, ctx, session)[1]


@pytest.mark.parametrize("name", ["nginx", "apache-event", "lighttpd"])
def test_protocols_1_2_negotiates_1_2(name: str, images: Any, docker_client: Any, tmp_path: Path) -> None:
    ca = RunCA(tmp_path)
    with https(name, ca, images, docker_client, protocols="1.2") as port:
        assert shake(port, ssl.create_default_context(cafile=ca.cafile))[2] == "TLSv1.2"
        strict = ssl.create_default_context(cafile=ca.cafile)
        strict.minimum_version = ssl.TLSVersion.TLSv1_3
        with pytest.raises(ssl.SSLError):
            shake(port, strict)


@pytest.mark.parametrize("name", ["nginx", "caddy"])
def test_an_rsa_key_gives_an_rsa_certificate(name: str, images: Any, docker_client: Any, tmp_path: Path) -> None:
    ca = RunCA(tmp_path)
    with https(name, ca, images, docker_client, key="rsa-2048") as port:
        assert key_type_of(shake(port, ssl.create_default_context(cafile=ca.cafile))[3]) == "rsa-2048"


@pytest.mark.parametrize("name", ["nginx", "apache-prefork", "lighttpd"])
def test_tickets_and_the_session_cache_decide_resumption(name: str, images: Any, docker_client: Any,
                                                         tmp_path: Path) -> None:
    ca = RunCA(tmp_path)
    with https(name, ca, images, docker_client, tickets=True, session_cache=False) as port:
        assert resumes(port, ca) and resumes(port, ca, ssl.TLSVersion.TLSv1_2)  # stateless tickets
    with https(name, ca, images, docker_client, tickets=False, session_cache=True) as port:
        assert resumes(port, ca) and resumes(port, ca, ssl.TLSVersion.TLSv1_2)  # the server's cache
    with https(name, ca, images, docker_client, tickets=False, session_cache=False) as port:
        assert not resumes(port, ca) and not resumes(port, ca, ssl.TLSVersion.TLSv1_2)


def test_caddy_resumes_by_its_tickets(images: Any, docker_client: Any, tmp_path: Path) -> None:
    ca = RunCA(tmp_path)
    with https("caddy", ca, images, docker_client) as port:
        assert resumes(port, ca)


def test_up_with_tls_prints_the_https_url_and_where_the_ca_is(images: Any) -> None:
    """As a user runs it, in a process of its own: the URL on stdout, the CA's file named on stderr."""
    res = subprocess.run([sys.executable, "-m", "loadcmp", "up", "--tls", "--server", "nginx"], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "COLUMNS": "80"})
    try:
        assert res.returncode == 0, res.stderr
        url = res.stdout.strip().splitlines()[0]
        assert url.startswith("https://127.0.0.1:") and url.endswith("/")
        found = re.search(r"issued by the CA in\s+(\S+)", res.stderr)  # rich may wrap the line
        assert found, res.stderr
        cafile = found.group(1)
        assert cafile.endswith("/tls/ca.pem") and Path(cafile).is_file()
        ctx = ssl.create_default_context(cafile=cafile)
        assert shake(int(url.rsplit(":", 1)[1].strip("/")), ctx)[2] == "TLSv1.3"
    finally:
        run_id = next((w for w in res.stderr.split() if w.startswith("(loadcmp-")), "").split("-")
        down = ["down", "--run", run_id[1]] if len(run_id) > 1 else ["down"]
        CliRunner().invoke(cli, down)


def test_status_pages_answer_over_https_from_inside_the_container(images: Any, docker_client: Any,
                                                                   tmp_path: Path) -> None:
    """Another machine's engine: the status pages are read on the container's own loopback, over https too."""
    from loadcmp.lab.fetch import get_inside

    plan = planning.plan_deployment(st.get_stack("apache-event"), tls=RunCA(tmp_path))
    dep = containers.up(plan, client=docker_client, images=images)
    try:
        for page in dep.stack.status:
            code, body = get_inside(dep.front, dep.port, page.path, tls=True)
            assert code == 200 and body, page.kind
        assert get_inside(dep.front, dep.port, "/server-status?auto")[0] == 400  # plain http to the https port
    finally:
        dep.stop()


def _run_resume(tmp_path: Path, resume: str, clients: str) -> dict[str, Any]:
    """One `loadcmp run --tls` of nginx (a new connection per request) at this --tls-resume: its trial's result."""
    out = tmp_path / f"resume-{resume}-c{clients}"
    res = CliRunner().invoke(cli, ["run", "--tls", "--tls-resume", resume, "--server", "nginx", "-c", clients,
                                   "-t", "1s", "--warmup", "1s", "--page", "/index.html", "--out", str(out)])
    assert res.exit_code == 0, res.output
    run = json.loads((next(out.iterdir()) / "run.json").read_text())
    (trial,) = run["trials"]
    assert trial["tls"] == trial["result"]["tls"]  # the record carries what the load counted
    assert trial["result"]["engine"] == "fast" and "handshake" in trial["result"]["phases_ms"]
    return trial["result"]


def _shaken(result: dict[str, Any]) -> int:
    """The least number of handshakes the window must have counted: every started request but those left
    unfinished at its end (one of those may still have been shaking hands), and those carried in from the
    warm-up (begun, and their handshake done, before the window: `warmup_carried`)."""
    return int(result["started"] - result["unfinished"] - result.get("warmup_carried", 0))


def test_tls_resume_0_and_1_give_the_handshakes_asked_for(images: Any, tmp_path: Path) -> None:
    """A new connection per request: each started request is one handshake in the window. --tls-resume 0 makes
    every one full; --tls-resume 1 at one client resumes every one (the warm-up's first handshake saved the
    session). A handshake is counted when it completes in the window, so a request started in the window's
    last moment whose handshake had not finished (unfinished) is started but not counted. With several
    clients each TLS 1.3 ticket is offered once, and nginx resumes them all (a ticket offered on several
    connections at once was answered in full a few times in a hundred: docs/https.md)."""
    full = _run_resume(tmp_path, "0", "4")
    r = full["tls"]
    assert r["resumed"] == 0 and 0 < _shaken(full) <= r["full"] <= full["started"], (r, full["started"])
    one = _run_resume(tmp_path, "1", "1")
    r = one["tls"]
    assert r["full"] == 0 and 0 < _shaken(one) <= r["resumed"] <= one["started"], (r, one["started"])
    many = _run_resume(tmp_path, "1", "20")
    r = many["tls"]
    assert _shaken(many) <= r["full"] + r["resumed"] <= many["started"], (r, many["started"])
    assert r["full"] <= 0.01 * (r["full"] + r["resumed"]), r  # 0 as measured; the latest ticket again when none is left


def test_every_request_over_tls_is_accounted_for(images: Any, docker_client: Any, tmp_path: Path) -> None:
    """bench through loadcmp's own loop against nginx over https: ok + failed + unfinished == started and no
    tls_error; verified against another CA, bench stops before the load with one line (exit 2). A tls_error
    in the load itself (an alert, a bad certificate mid-run) is provoked against test servers in test_ctls.py:
    a real stack that fails the handshake fails the pre-check first."""
    ca, other = RunCA(tmp_path / "ca"), RunCA(tmp_path / "other")
    with https("nginx", ca, images, docker_client) as port:
        url = f"https://127.0.0.1:{port}/index.html"
        res = CliRunner().invoke(cli, ["bench", url, "--cacert", other.cafile, "-c", "4", "-t", "1s", "--json"])
        assert res.exit_code == 2 and "did not verify" in res.output and len(res.output.strip().splitlines()) == 1
        res = CliRunner().invoke(cli, ["bench", url, "--cacert", ca.cafile, "-c", "4", "-t", "1s", "--warmup", "0",
                                       "--json"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        assert doc["ok"] + doc["failed"] + doc["unfinished"] == doc["started"] > 0, doc
        assert doc["failed"] == 0 and doc["failures"]["tls_error"] == 0 and doc["tls_errors"] == {}, doc
        assert _shaken(doc) <= doc["tls"]["full"] + doc["tls"]["resumed"] <= doc["started"], doc
