"""https on the stacks without Docker: the run's CA and its certificates, the TLS lines each stack renders only
under --tls, the primer's handshake against an in-process TLS server, and every bad input said in one line
(exit 2) before anything starts. The stacks themselves serving https: test_tls_docker.py."""

from __future__ import annotations

import http.server
import shutil
import socket
import ssl
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import ConfigError, PrimerError, UsageError
from loadcmp.lab import planning, render
from loadcmp.lab import stacks as st
from loadcmp.lab.certs import CA_FILE, KEY_TYPES, RunCA, key_type_of
from loadcmp.lab.model import configs_dir
from loadcmp.sweep.primer import handshake

OURS = configs_dir() / "stacks"


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> RunCA:
    return RunCA(tmp_path_factory.mktemp("run"))


# --- the CA and its certificates ------------------------------------------------------------------------------


def test_the_ca_is_written_to_the_results_folder_and_its_key_is_not(tmp_path: Path) -> None:
    run_ca = RunCA(tmp_path)
    assert run_ca.cafile == str((tmp_path / CA_FILE).resolve())
    assert sorted(p.name for p in (tmp_path / "tls").iterdir()) == ["ca.pem"]
    assert b"PRIVATE KEY" not in (tmp_path / CA_FILE).read_bytes()


@pytest.mark.parametrize("key_type", KEY_TYPES)
def test_each_key_type_is_issued_for_loopback_and_verifies_against_the_ca(ca: RunCA, key_type: str) -> None:
    issued = ca.issue(key_type)
    assert ca.issue(key_type) is issued  # one per key type and run
    with tls_server(issued, ca) as port:
        for name in ("127.0.0.1", "localhost"):
            ctx = ssl.create_default_context(cafile=ca.cafile)
            with socket.create_connection(("127.0.0.1", port)) as raw, \
                    ctx.wrap_socket(raw, server_hostname=name) as s:
                assert key_type_of(s.getpeercert(binary_form=True) or b"") == key_type


def test_another_engines_address_and_name_are_in_the_certificate(ca: RunCA) -> None:
    """--docker-host: the clients connect to the engine's address, so the certificate names it (and the name in
    its URL); a plan on this machine's engine keeps loopback only."""
    from cryptography import x509

    from loadcmp.lab.dockerhost import DockerHost

    def sans(p: render.DeploymentPlan) -> set[str]:
        assert p.tls is not None
        cert = x509.load_pem_x509_certificate(p.tls.cert_pem)
        alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        return {str(v) for v in alt.get_values_for_type(x509.IPAddress)} | set(alt.get_values_for_type(x509.DNSName))

    remote = DockerHost(url="tcp://lab-box.example:2376", address="10.1.2.3", remote=True)
    far = planning.plan_deployment(st.get_stack("nginx"), host=remote, tls=ca)
    assert sans(far) == {"127.0.0.1", "localhost", "10.1.2.3", "lab-box.example"}
    assert sans(planning.plan_deployment(st.get_stack("nginx"), tls=ca)) == {"127.0.0.1", "localhost"}


def test_a_key_type_loadcmp_cannot_make_is_refused(ca: RunCA) -> None:
    with pytest.raises(ConfigError, match="cannot issue a 'dsa' certificate"):
        ca.issue("dsa")


# --- what the stacks render -----------------------------------------------------------------------------------


def plan(name: str, overrides: dict[str, object] | None = None, tls: RunCA | None = None) -> render.DeploymentPlan:
    stack = st.get_stack(name)
    return render.render_plan(stack, dict(overrides or {}), {r.name: 9000 + i for i, r in enumerate(stack.roles)},
                              nofile=1024, tls=tls)


def test_every_stack_of_ours_serves_https_and_renders_it_only_when_asked(ca: RunCA) -> None:
    words = ("ssl_", "SSL", "tls ", "mod_openssl", "ssl.")
    for stack in st.catalog():
        assert stack.serves_https, stack.name
        plain = plan(stack.name)
        assert not any(k.startswith("tls.") for k in plain.settings) and plain.tls is None
        assert not any(w in text for text in plain.config_files().values() for w in words), stack.name
        https = plan(stack.name, tls=ca)
        assert https.scheme == "https" and https.cafile == ca.cafile and https.settings["tls.key"] == "ecdsa-p256"
        front = https.rendered[-1]
        assert any("/etc/loadcmp/tls/server.pem" in text for text in front.files.values()), stack.name
        for back in https.rendered[:-1]:  # nginx-apache: TLS ends at nginx, Apache behind it talks plain http
            assert not any(w in text for text in back.files.values() for w in words), stack.name
        assert "server.key" not in "".join(https.config_files().values()).replace("tls/server.key", "")


def test_the_tls_settings_reach_each_servers_words(ca: RunCA) -> None:
    one_two = {"tls.protocols": "1.2", "tls.session_cache": False, "tls.tickets": False,
               "tls.ciphers": "ECDHE-ECDSA-AES128-GCM-SHA256", "tls.groups": "X25519:P-256"}
    nginx = plan("nginx", one_two, ca).config_files()["web/nginx.conf"]
    assert "ssl_protocols TLSv1.2;" in nginx and "ssl_session_cache off;" in nginx
    assert "ssl_session_tickets off;" in nginx and "ssl_ecdh_curve X25519:P-256;" in nginx
    apache = plan("apache-event", one_two, ca).config_files()["web/apache2.conf"]
    assert "SSLProtocol -all +TLSv1.2\n" in apache and "SSLSessionCache none" in apache
    assert "SSLSessionTickets Off" in apache and "SSLOpenSSLConfCmd Groups X25519:P-256" in apache
    # mod_ssl names a failed handshake's reason only at info: the cause apache.tls_handshake reads it
    assert "\nLogLevel warn\n" in apache and "\nLogLevel ssl:info\n" in apache
    assert "LogLevel ssl:info" not in plan("apache-event").config_files()["web/apache2.conf"]  # plain http: warn
    lighttpd = plan("lighttpd", one_two, ca).config_files()["web/lighttpd.conf"]
    assert '"MaxProtocol" => "TLSv1.2"' in lighttpd and '"Options" => "-SessionTicket"' in lighttpd
    assert '"ssl.session-cache" => "disable"' in lighttpd
    caddy = plan("caddy", {"tls.protocols": "1.3", "tls.groups": "X25519:P-256"}, ca).config_files()["web/Caddyfile"]
    assert "protocols tls1.3 tls1.3" in caddy and "curves x25519 secp256r1" in caddy and "https://:" in caddy


def test_what_caddy_cannot_do_is_refused_in_its_own_words() -> None:
    caddy = st.get_stack("caddy")
    with pytest.raises(ConfigError, match="cannot turn session tickets off"):
        caddy.effective({"tls.tickets": False})
    with pytest.raises(ConfigError, match="no session cache"):
        caddy.effective({"tls.session_cache": True})
    with pytest.raises(ConfigError, match="tls.ciphers"):
        caddy.effective({"tls.ciphers": "ECDHE-ECDSA-AES128-GCM-SHA256"})  # Go names them TLS_ECDHE_...


# --- the primer's handshake -----------------------------------------------------------------------------------


class Index(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


class tls_server:
    """An https server on 127.0.0.1 with a certificate of `ca` (or plain http with `issued=None`)."""

    def __init__(self, issued: object, ca: RunCA, maximum: ssl.TLSVersion | None = None, alpn: bool = True) -> None:
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
        if issued is not None:
            folder = Path(ca.cafile).parent
            cert, key = folder / f"{id(self)}.pem", folder / f"{id(self)}.key"
            cert.write_bytes(issued.cert_pem)  # type: ignore[attr-defined]
            key.write_bytes(issued.key_pem)  # type: ignore[attr-defined]
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            if maximum:
                ctx.maximum_version = maximum
            if alpn:
                ctx.set_alpn_protocols(["http/1.1"])
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)

    def __enter__(self) -> int:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return int(self.httpd.server_address[1])

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def dep(port: int, ca: RunCA, key: str = "ecdsa-p256", protocols: str = "1.2,1.3") -> SimpleNamespace:
    return SimpleNamespace(port=port, stack=SimpleNamespace(name="nginx"), host=SimpleNamespace(address="127.0.0.1"),
                           plan=SimpleNamespace(tls=ca.issue(key), cafile=ca.cafile,
                                                settings={"tls.protocols": protocols, "tls.key": key}))


def test_the_primer_stores_what_the_handshake_gave(ca: RunCA) -> None:
    with tls_server(ca.issue("rsa-2048"), ca) as port:
        seen = handshake(dep(port, ca, "rsa-2048"))  # type: ignore[arg-type]
    assert seen == {"version": "TLSv1.3", "cipher": seen and seen["cipher"], "alpn": "http/1.1", "chain_ok": True,
                    "key": "rsa-2048"}
    assert seen and seen["cipher"].startswith("TLS_")


def test_the_primer_stops_a_handshake_that_is_not_what_was_asked(ca: RunCA, tmp_path: Path) -> None:
    with tls_server(ca.issue("ecdsa-p256"), ca, maximum=ssl.TLSVersion.TLSv1_2) as port:
        with pytest.raises(PrimerError, match="gave TLSv1.2, but tls.protocols=1.2,1.3"):
            handshake(dep(port, ca))  # type: ignore[arg-type]
        assert handshake(dep(port, ca, protocols="1.2"))["version"] == "TLSv1.2"  # type: ignore[arg-type,index]
    with tls_server(ca.issue("ecdsa-p256"), ca) as port:
        with pytest.raises(PrimerError, match="has a ecdsa-p256 key, not the rsa-2048 of tls.key"):
            handshake(dep(port, ca, "rsa-2048"))  # type: ignore[arg-type]
    with tls_server(ca.issue("ecdsa-p256"), ca, alpn=False) as port:
        with pytest.raises(PrimerError, match="ALPN chose nothing, not http/1.1"):
            handshake(dep(port, ca))  # type: ignore[arg-type]
    other = RunCA(tmp_path)
    with tls_server(other.issue("ecdsa-p256"), other) as port:
        with pytest.raises(PrimerError, match="did not verify against the run's CA"):
            handshake(dep(port, ca))  # type: ignore[arg-type]
    with tls_server(None, ca) as port:
        with pytest.raises(PrimerError, match="no TLS handshake on 127.0.0.1") as e:
            handshake(dep(port, ca))  # type: ignore[arg-type]
        assert "\n" not in str(e.value)


def test_a_plain_server_has_no_handshake_to_check() -> None:
    assert handshake(SimpleNamespace(plan=SimpleNamespace(tls=None, cafile=None))) is None  # type: ignore[arg-type]


# --- bad input: one line, exit 2, before anything starts ------------------------------------------------------


def user_stack(tmp_path: Path, name: str = "mine", tls: bool = False, keys: list[str] | None = None) -> Path:
    folder = tmp_path / name
    shutil.copytree(OURS / "nginx", folder)
    text = (folder / "stack.toml").read_text()
    if not tls:
        text = text.replace('parts = ["nginx", "fpm", "php", "tls", "h2"]', 'parts = ["nginx", "fpm", "php", "h2"]')
        text = text.replace('protocols = ["h1", "h2"]', 'protocols = ["h1"]')  # h2 runs over TLS only
    if keys is not None:
        text += f'\n[tunables.tls.key]\ndefault = "{keys[0]}"\nchoices = {keys!r}\ndoc = "fewer"\n'.replace("'", '"')
    (folder / "stack.toml").write_text(text)
    return folder


def one_line_exit_2(args: list[str], *words: str) -> None:
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, res.output
    said = res.output.strip()
    assert all(w in said for w in words), said
    assert "Traceback" not in res.output and len(said.splitlines()) <= 2, said


def test_a_stack_without_the_tls_part_run_with_tls(tmp_path: Path) -> None:
    mine = user_stack(tmp_path)
    assert not st.catalog([str(mine)]).get("mine").serves_https
    words = ("mine does not serve https", "lists no part 'tls'")
    one_line_exit_2(["run", "--tls", "--stacks", str(mine), "--server", "mine", "-t", "1"], *words)
    one_line_exit_2(["up", "--tls", "--stacks", str(mine), "--server", "mine"], *words)
    with pytest.raises(UsageError, match="does not serve https"):  # and the plan refuses it too
        render.render_plan(st.catalog([str(mine)]).get("mine"), {}, {"web": 9000}, tls=RunCA(tmp_path))


def test_a_share_to_resume_outside_0_to_1(tmp_path: Path) -> None:
    one_line_exit_2(["run", "--tls", "--tls-resume", "2", "--server", "nginx", "-t", "1"],
                    "--tls-resume must be between 0 and 1, not 2")
    one_line_exit_2(["up", "--tls", "--tls-resume", "-1", "--server", "nginx"],
                    "--tls-resume must be between 0 and 1, not -1")
    one_line_exit_2(["run", "--tls-resume", "0.5", "--server", "nginx", "-t", "1"], "no server runs https")
    exp = tmp_path / "e.toml"
    exp.write_text('servers = ["nginx"]\ntls = true\ntls_resume = 2\ntime = "1s"\n')
    one_line_exit_2(["run", str(exp)], "--tls-resume must be between 0 and 1, not 2")


def test_a_key_type_nobody_or_this_stack_does_not_take(tmp_path: Path) -> None:
    one_line_exit_2(["run", "--tls", "--set", "tls.key=dsa", "--server", "nginx", "-t", "1"],
                    "tls.key: expected one of ecdsa-p256, rsa-2048, rsa-4096, got 'dsa'")
    ecdsa_only = user_stack(tmp_path, "ecdsa-only", tls=True, keys=["ecdsa-p256"])
    one_line_exit_2(["run", "--tls", "--stacks", str(ecdsa_only), "--server", "ecdsa-only", "--set",
                     "tls.key=rsa-4096", "-t", "1"], "ecdsa-only: tls.key: expected one of ecdsa-p256, got 'rsa-4096'")


def test_a_stack_offering_a_key_type_loadcmp_cannot_issue_is_refused_when_read(tmp_path: Path) -> None:
    dsa = user_stack(tmp_path, "dsa-too", tls=True, keys=["ecdsa-p256", "dsa-1024"])
    with pytest.raises(ConfigError, match="tls.key: loadcmp cannot issue 'dsa-1024' certificates"):
        st.catalog([str(dsa)]).get("dsa-too")


def test_tls_settings_and_https_pages_without_tls(tmp_path: Path) -> None:
    one_line_exit_2(["run", "--set", "tls.key=rsa-2048", "--server", "nginx", "-t", "1"],
                    "setting tls.key: no server runs https; add --tls")
    one_line_exit_2(["up", "--set", "tls.protocols=1.3", "--server", "nginx"], "setting tls.protocols", "add --tls")
    one_line_exit_2(["run", "--page", "https://127.0.0.1/info.php", "--server", "nginx", "-t", "1"],
                    "a page is a path on the servers", "https is asked with --tls")
    one_line_exit_2(["smoke", "--page", "https://127.0.0.1/", "--server", "nginx", "--check", "rps>1"],
                    "https is asked with --tls")


def test_experiment_files_and_variants_take_tls(tmp_path: Path) -> None:
    from loadcmp.experiment.flags import build_spec

    exp = tmp_path / "e.toml"
    exp.write_text('tls_resume = 0.5\n[variants.plain]\nstack = "nginx"\ntls = false\n'
                   '[variants.https]\nstack = "nginx"\ntls = true\nset = { "tls.key" = "rsa-2048" }\n')
    spec = build_spec(str(exp), {})
    assert (spec.tls_for("plain"), spec.tls_for("https"), spec.tls_resume) == (False, True, 0.5)
    assert spec.to_dict()["variant_tls"] == {"plain": False, "https": True}
    exp.write_text('[variants.plain]\nstack = "nginx"\ntls = "yes"\n')
    one_line_exit_2(["run", str(exp)], "[variants.plain].tls must be true or false")
    exp.write_text('[variants.plain]\nstack = "nginx"\nset = { "tls.key" = "rsa-2048" }\n')
    one_line_exit_2(["run", str(exp)], "setting plain:tls.key: plain does not run https; add --tls")



def test_a_resumed_run_keeps_the_stored_ca_beside_its_new_one(tmp_path: Path) -> None:
    first = RunCA(tmp_path)
    before = (tmp_path / CA_FILE).read_bytes()
    again = RunCA(tmp_path, keep=True)
    bundle = (tmp_path / CA_FILE).read_bytes()
    assert bundle.startswith(before) and bundle.count(b"BEGIN CERTIFICATE") == 2
    for ca in (first, again):  # both CAs' certificates verify against the kept file
        with tls_server(ca.issue("ecdsa-p256"), ca) as port:
            ctx = ssl.create_default_context(cafile=str(tmp_path / CA_FILE))
            with socket.create_connection(("127.0.0.1", port)) as raw, \
                    ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                assert s.version()


def test_readiness_stops_at_once_on_a_certificate_that_does_not_verify() -> None:
    """A certificate the clients refuse (another engine's address not in it, another CA) is no slow start:
    readiness says so in one line at once, not "no answer" at the timeout."""
    from loadcmp.errors import ServerStartError
    from loadcmp.lab.containers import _wait_ready

    asked: list[str] = []

    def refuse(path: str, timeout: float) -> tuple[int, bytes]:
        asked.append(path)
        err = ssl.SSLCertVerificationError("certificate verify failed")
        err.verify_message = "IP address mismatch, certificate is not valid for '10.1.2.3'"
        raise err

    plan = SimpleNamespace(ready_path="/", www=None, own={})
    dep = SimpleNamespace(stack=SimpleNamespace(name="nginx"), plan=plan, port=8443, get=refuse,
                          host=SimpleNamespace(address="10.1.2.3", remote=False, name="tcp://lab-box:2376"))
    box = SimpleNamespace(status="running", reload=lambda: None)
    with pytest.raises(ServerStartError, match="certificate on 10.1.2.3:8443 did not verify .*IP address mismatch"):
        _wait_ready(dep, box, 8443, timeout=30.0)  # type: ignore[arg-type]
    assert asked == ["/"]  # asked once, not again until the timeout
