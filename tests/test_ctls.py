"""https in the closed loops (the compiled one, `_ctls.pyx`, and the pure-Python fallback): what the
handshakes negotiated, full against resumed (`--tls-resume`), and every way TLS goes wrong ending as an
outcome, with ok + failures + unfinished == started, against misbehaving in-process servers."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from click.testing import CliRunner
from conftest import FaultyServer

from loadcmp.cli import cli
from loadcmp.load.h1.loops import cloop_module
from loadcmp.load.driver import LoadSpec
from loadcmp.load.record.outcomes import tls_reason
from loadcmp.load.record.recorder import Result
from loadcmp.load.schedules import Closed
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.target import TlsOptions, make_target
from loadcmp.load.run.workers import run_load


def _server_context(cert_of: trustme.CA) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert_of.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    return ctx


def _tls_server(cert_of: trustme.CA) -> FaultyServer:
    return FaultyServer(_server_context(cert_of)).start()


def _alerting(cert_of: trustme.CA) -> RawServer:
    """A TLS server that answers every ClientHello with a handshake_failure alert (its name callback fails)."""
    ctx = _server_context(cert_of)
    ctx.sni_callback = lambda *_: ssl.ALERT_DESCRIPTION_HANDSHAKE_FAILURE
    return RawServer("alert", ctx)


@pytest.fixture(scope="module")
def good(ca: trustme.CA) -> Iterator[FaultyServer]:
    s = _tls_server(ca)
    yield s
    s.stop()


class RawServer:
    """A TCP server on 127.0.0.1 that reads the ClientHello and then misbehaves: closes ("abort"),
    answers it as a plain http server does ("plain"), or refuses it with an alert (`alert`: a server
    context that does; asyncio's TLS servers close without sending theirs)."""

    def __init__(self, how: str, alert: ssl.SSLContext | None = None) -> None:
        self.how = how
        self.alert = alert
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    if self.alert is not None:
                        self.alert.wrap_socket(conn, server_side=True)
                    conn.recv(65536)
                    if self.how == "plain":
                        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except (OSError, ssl.SSLError):
                    pass

    def stop(self) -> None:
        self.running = False
        self.thread.join(5)
        self.sock.close()


def load(url: str, cafile: str | None, keepalive: bool = False, resume: float = 0.0, clients: int = 3,
         duration: float = 1.0) -> Result:
    target = make_target(url, keepalive=keepalive, tls=TlsOptions(cafile=cafile, resume=resume))
    return run_load(LoadSpec(target, Closed(clients), duration, timeout=3.0))


def test_the_handshakes_negotiated_and_counted(good, cafile, loop_path):
    r = load(good.url("/ok"), cafile)
    doc = result_doc(r)
    assert doc["ok"] > 20 and doc["failed"] == 0 and check_invariant(doc), doc
    tls = doc["tls"]
    assert tls is not None and tls["version"] == "TLSv1.3" and tls["cipher"].startswith("TLS_"), tls
    assert tls["resumed"] == 0 and doc["ok"] <= tls["full"] <= doc["started"], tls  # as ab: every one in full
    assert doc["tls_errors"] == {}
    shake = r.phases["handshake"]
    if loop_path == "compiled":  # the pure-Python loop times it within connect
        assert shake.count == r.phases["connect"].count >= doc["ok"] and shake.min_s > 0, shake.count


@pytest.mark.parametrize("resume", [0.0, 0.5, 1.0])
def test_tls_resume_offers_a_saved_session_to_that_share(good, cafile, resume):
    if cloop_module(https=True) is None:
        pytest.skip("the compiled loop with TLS is not built here")
    tls = result_doc(load(good.url("/ok"), cafile, resume=resume))["tls"]
    assert tls is not None
    handshakes = tls["full"] + tls["resumed"]
    if resume == 0.0:
        assert tls["resumed"] == 0 and tls["full"] > 20, tls
    elif resume == 1.0:  # the first of each client's connections had no session to offer yet
        assert tls["full"] <= 3 < tls["resumed"], tls
    else:
        assert abs(tls["resumed"] - handshakes / 2) <= 3, tls


def test_keep_alive_over_tls_shakes_hands_once_a_connection(good, cafile, loop_path):
    r = load(good.url("/ok"), cafile, keepalive=True)
    doc = result_doc(r)
    assert doc["ok"] > 100 and doc["failed"] == 0 and check_invariant(doc), doc
    assert doc["tls"] is not None and doc["tls"]["full"] == 3 and doc["connections_opened"] == 3, doc["tls"]


@pytest.fixture(scope="module")
def misbehaving(ca: trustme.CA) -> Iterator[dict[str, object]]:
    other = trustme.CA(key_type=trustme.KeyType.ECDSA)  # a certificate the client's CA did not sign
    servers = {"alert": _alerting(ca), "badcert": _tls_server(other),
               "cut": _tls_server(ca), "abort": RawServer("abort"), "plain": RawServer("plain")}
    yield servers
    for s in servers.values():
        s.stop()  # type: ignore[attr-defined]


@pytest.mark.parametrize("keepalive", [False, True], ids=["new-connection", "keep-alive"])
@pytest.mark.parametrize("how, kind, reason", [
    ("abort", "tls_error", "eof during handshake"),
    ("plain", "tls_error", None),  # OpenSSL: "wrong version number" or "packet length too long"
    ("alert", "tls_error", "alert handshake failure"),
    ("badcert", "tls_error", "certificate verify failed"),
    ("cut", "reset", None),
])
def test_every_tls_failure_is_an_outcome(misbehaving, cafile, loop_path, keepalive, how, kind, reason):
    server = misbehaving[how]
    url = (server.url("/cut") if isinstance(server, FaultyServer) else f"https://127.0.0.1:{server.port}/")
    r = load(url, cafile, keepalive=keepalive)
    doc = result_doc(r)
    assert check_invariant(doc) and doc["started"] > 0, doc
    failures = {k: n for k, n in doc["failures"].items() if n}
    if loop_path == "python" and how in ("abort", "plain", "alert"):  # uvloop says "reset" for some of them
        kind = "tls_error" if "tls_error" in failures else "reset"
    assert doc["ok"] == 0 and set(failures) == {kind}, (loop_path, failures)
    errors = doc.get("tls_errors") or {}
    if kind == "tls_error":
        assert sum(errors.values()) == failures["tls_error"], errors
        reason = None if loop_path == "python" else reason
        assert reason is None or set(errors) == {reason}, errors
    else:
        assert not errors


def test_the_reason_is_named_alike_from_c_and_from_python():
    assert tls_reason("SSLV3_ALERT_HANDSHAKE_FAILURE") == tls_reason("sslv3 alert handshake failure") \
        == "alert handshake failure"
    assert tls_reason("CERTIFICATE_VERIFY_FAILED") == "certificate verify failed"
    assert tls_reason("UNEXPECTED_EOF_WHILE_READING") == "eof during handshake"


def bench(*args: str):
    return CliRunner().invoke(cli, ["bench", *args])


def test_bench_shows_tls_and_refuses_bad_resume_in_one_line(good, cafile):
    res = bench(good.url("/ok"), "-c", "2", "-t", "0.5", "--cacert", cafile, "--json", "--tls-resume", "1")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["tls"]["version"] == "TLSv1.3" and doc["tls_verify"] is True and "handshake" in doc["phases_ms"]
    text = bench(good.url("/ok"), "-c", "2", "-t", "0.5", "--cacert", cafile)
    assert text.exit_code == 0 and "TLSv1.3" in text.output and "handshake" in text.output, text.output
    for bad in ("2", "-0.1"):
        res = bench(good.url("/ok"), "--tls-resume", bad, "--cacert", cafile)
        assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
        assert "--tls-resume must be between 0 and 1" in res.output
    res = bench(good.url("/ok").replace("https", "http"), "--tls-resume", "0.5")
    assert res.exit_code == 2 and "https" in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_plain_http_has_no_tls(faulty):
    doc = result_doc(load(faulty.url("/ok"), None))
    assert doc["tls"] is None and "tls_errors" not in doc and doc["failures"]["tls_error"] == 0


def test_a_ca_file_that_is_not_one_is_refused_in_one_line(good, tmp_path: Path):
    bad = tmp_path / "not-a-ca.pem"
    bad.write_text("hello\n")
    res = bench(good.url("/ok"), "-t", "0.5", "--cacert", str(bad))
    assert res.exit_code == 2 and "CA certificates" in res.output and len(res.output.strip().splitlines()) == 1, \
        res.output
