"""https on the fast engine (TLS over uvloop's transports) and on aiohttp: the
certificate verified by default, `--insecure` for a self-signed test server,
and a handshake before the load that says in one line what is wrong."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli


def bench(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["bench", *args], env=env)


@pytest.mark.parametrize("engine", ["fast", "aiohttp"])
@pytest.mark.parametrize("keepalive", [False, True])
def test_https_with_insecure_against_a_self_signed_server(tls_faulty, engine, keepalive):
    before = tls_faulty.requests
    res = bench(tls_faulty.url("/ok"), "-c", "3", "-t", "1", "--insecure", "--json", "--engine", engine,
                *(["-k"] if keepalive else []))
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["ok"] > 0 and doc["failed"] == 0, doc
    assert doc["engine"] == engine and doc["tls_verify"] is False
    assert doc["status_codes"] == {"200": doc["ok"]}
    assert doc["connections_opened"] == (3 if keepalive else doc["ok"]), doc  # a handshake per connection
    assert tls_faulty.requests - before >= doc["ok"]


@pytest.mark.parametrize("engine", ["fast", "aiohttp"])
def test_a_self_signed_certificate_is_refused_by_default_in_one_line(tls_faulty, engine):
    before = tls_faulty.requests
    res = bench(tls_faulty.url("/ok"), "-c", "2", "-t", "1", "--engine", engine)
    assert res.exit_code == 2, res.output
    assert "did not verify" in res.output and "--insecure" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    assert tls_faulty.requests == before  # refused before any request


def test_a_certificate_the_client_trusts_verifies(tls_faulty, tls_cert, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_cert[0]))
    res = bench(tls_faulty.url("/ok"), "-c", "2", "-t", "0.5", "-k", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["ok"] > 0 and doc["tls_verify"] is True


def test_https_to_a_plain_http_server_says_so(faulty):
    """The faulty server waits for a request head that a ClientHello never ends: the
    handshake runs into --timeout before any load."""
    res = bench(faulty.url("/ok").replace("http://", "https://"), "-c", "2", "-t", "1", "--insecure", "--timeout", "1")
    assert res.exit_code == 2 and "TLS handshake within 1 s" in res.output and "http://" in res.output, res.output
    assert "Traceback" not in res.output


def test_insecure_on_plain_http_is_refused(faulty):
    res = bench(faulty.url("/ok"), "--insecure")
    assert res.exit_code == 2 and "--insecure is for https" in res.output, res.output


def test_https_phases_include_the_handshake_in_connect(tls_faulty):
    res = bench(tls_faulty.url("/ok"), "-c", "2", "-t", "1", "--insecure", "--json")
    doc = json.loads(res.stdout)
    ph = doc["phases_ms"]
    assert ph["connect"]["p50"] is not None and ph["connect"]["p50"] > ph["write"]["p50"], ph
