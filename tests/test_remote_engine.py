"""Another machine's Docker engine reached as the docker CLI reaches it (issue 28, point 5): TLS
from the flags or the environment handed to docker-py, a plain-text engine said in one line, the
servers' CPUs, memory and open files taken from that engine, and an engine that goes away said in
one line. The engine here is a small HTTPS server that answers as dockerd does (`/version`,
`/_ping`, `/info`, `/containers/json`) and, like dockerd with --tlsverify, wants a client
certificate signed by its CA: docker-py talks to it for real, no Docker engine needed."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import DockerUnavailable, LabError, UsageError
from loadcmp.lab import containers as lab, dockerhost, planning
from loadcmp.lab.dockerhost import DockerHost, resolve
from loadcmp.lab.stacks import get_stack

NCPU, MEM = 32, 64 << 30
"""The fake engine's machine: more CPUs and memory than this one (2 and 24 GiB)."""


@pytest.fixture(autouse=True)
def no_docker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, the engine's certificate for 127.0.0.1 and a client's, as `dockerd --tlsverify` has them."""
    d = tmp_path_factory.mktemp("certs")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-days", "2", "-subj", "/CN=test CA", "-keyout", "ca-key.pem", "-out", "ca.pem")
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
                      ("client", "extendedKeyUsage=clientAuth")):
        (d / f"{name}.ext").write_text(ext + "\n")
        openssl("req", *key, "-subj", f"/CN={name}", "-keyout", f"{name}-key.pem", "-out", f"{name}.csr")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem")
    return d


class FakeEngine:
    """An engine's API as far as loadcmp asks before it starts a container; `tls`: it wants a client
    certificate signed by the CA. A path it does not know closes the connection without an answer."""

    def __init__(self, certs: Path | None = None) -> None:
        engine = self
        self.paths: list[str] = []
        self.live: list[Any] = []
        """Every connection accepted, cut when the engine goes away."""
        self.created: list[dict[str, Any]] = []
        """What each container was created with."""
        self.ulimit = b"20000\n"
        """What `ulimit -Hn` says in its containers."""
        self.clients: list[str] = []
        """The common name of each client certificate seen."""

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as dockerd; docker-py's ssh relay loses a closing answer's end

            def setup(self) -> None:
                super().setup()
                engine.live.append(self.connection)

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                engine.paths.append(self.path)
                peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
                if peer:
                    engine.clients.append(dict(x[0] for x in peer["subject"])["commonName"])
                path = self.path.split("?")[0]
                probe = "/containers/probe"  # the one container it runs: `engine_nofile`'s
                answers: dict[str, Any] = {
                    "/_ping": "OK", "/version": {"ApiVersion": "1.43", "Version": "24.0.7"},
                    "/info": {"NCPU": NCPU, "MemTotal": MEM, "Name": "fake", "ServerVersion": "24.0.7"},
                    "/containers/json": [], "/containers/create": {"Id": "probe", "Warnings": []},
                    f"{probe}/json": {"Id": "probe", "Name": "/probe", "Config": {"Tty": False},
                                      "HostConfig": {"LogConfig": {"Type": "local"}}},
                    f"{probe}/start": None, f"{probe}/wait": {"StatusCode": 0}, probe: None,
                    f"{probe}/logs": b"\x01\x00\x00\x00" + len(engine.ulimit).to_bytes(4, "big") + engine.ulimit}
                key = next((k for k in answers if path.endswith(k)), None)
                if key is None:
                    self.close_connection = True
                    return
                answer = answers[key]
                body = answer if isinstance(answer, bytes) else b"" if answer is None else (
                    answer if isinstance(answer, str) else json.dumps(answer)).encode()
                self.send_response(204 if answer is None else 201 if key.endswith("create") else 200)
                self.send_header("Content-Type", "application/json" if isinstance(answer, (dict, list)) else
                                 "application/vnd.docker.raw-stream" if isinstance(answer, bytes) else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.split("?")[0].endswith("/containers/create"):
                    engine.created.append(json.loads(body))
                self.do_GET()

            do_DELETE = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *a: None  # type: ignore[method-assign]  # refused handshakes are the test
        if certs is not None:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(certs / "server.pem", certs / "server-key.pem")
            ctx.load_verify_locations(certs / "ca.pem")
            ctx.verify_mode = ssl.CERT_REQUIRED
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True, do_handshake_on_connect=False)
        self.url = f"tcp://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """The engine goes away: its port refuses from now on."""
        self.server.shutdown()
        self.server.server_close()
        for conn in self.live:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self.thread.join(5)


@pytest.fixture()
def tls_engine(certs: Path) -> Iterator[FakeEngine]:
    e = FakeEngine(certs)
    yield e
    e.stop()


@pytest.fixture()
def plain_engine() -> Iterator[FakeEngine]:
    e = FakeEngine()
    yield e
    e.stop()


def tls_flags(certs: Path, client: bool = True) -> list[str]:
    out = ["--tlsverify", "--tlscacert", str(certs / "ca.pem")]
    return out + (["--tlscert", str(certs / "client.pem"), "--tlskey", str(certs / "client-key.pem")] if client else [])


def lines(res: Any) -> list[str]:
    assert "Traceback" not in res.output, res.output
    return [x for x in res.output.strip().splitlines() if x.strip()]


# --- TLS -----------------------------------------------------------------------------------


def test_the_tls_flags_reach_docker_py_and_the_engine_sees_the_client_certificate(certs, tls_engine, monkeypatch):
    # requests would verify against a bundle named in the environment instead of the engine's CA
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certs / "server.pem"))
    monkeypatch.setenv("CURL_CA_BUNDLE", str(certs / "server.pem"))
    host = resolve(tls_engine.url, tlsverify=True, tlscacert=str(certs / "ca.pem"), tlscert=str(certs / "client.pem"),
                   tlskey=str(certs / "client-key.pem"))
    assert host.tls == dockerhost.Tls(str(certs / "ca.pem"), str(certs / "client.pem"), str(certs / "client-key.pem"))
    assert host.warning() is None and not host.plain_text
    client = dockerhost.docker_client(host)
    assert client.info()["NCPU"] == NCPU
    assert tls_engine.clients and set(tls_engine.clients) == {"client"}
    assert client.api.base_url.startswith("https://127.0.0.1:")


def test_the_cli_reaches_a_tls_engine_with_the_flags_alone(certs, tls_engine):
    res = CliRunner().invoke(cli, ["down", "--docker-host", tls_engine.url, *tls_flags(certs)])
    assert res.exit_code == 0, res.output
    assert lines(res) == ["removed 0 container(s)"]  # no plain-text warning
    assert any(p.split("?")[0].endswith("/containers/json") for p in tls_engine.paths)


def test_docker_tls_verify_and_docker_cert_path_are_honoured(certs, tls_engine, tmp_path, monkeypatch):
    """As the docker CLI: DOCKER_CERT_PATH holds ca.pem, cert.pem and key.pem; DOCKER_TLS_VERIFY turns TLS on."""
    home = tmp_path / "docker-certs"
    home.mkdir()
    for src, dst in (("ca.pem", "ca.pem"), ("client.pem", "cert.pem"), ("client-key.pem", "key.pem")):
        shutil.copy(certs / src, home / dst)
    monkeypatch.setenv("DOCKER_HOST", tls_engine.url)
    monkeypatch.setenv("DOCKER_CERT_PATH", str(home))
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    host = resolve()
    assert host.remote and host.tls == dockerhost.Tls(str(home / "ca.pem"), str(home / "cert.pem"),
                                                      str(home / "key.pem"))
    res = CliRunner().invoke(cli, ["down"])
    assert res.exit_code == 0 and lines(res) == ["removed 0 container(s)"], res.output
    assert tls_engine.clients == ["client"] * len(tls_engine.clients) and tls_engine.clients
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "")  # empty is off, as for the docker CLI: plain text, and said so
    assert resolve().tls is None and resolve().warning()


def test_without_the_client_certificate_the_engine_refuses_in_one_line(certs, tls_engine):
    res = CliRunner().invoke(cli, ["down", "--docker-host", tls_engine.url, *tls_flags(certs, client=False)])
    assert res.exit_code == 1, res.output
    assert lines(res) == [f"error: no Docker engine answers at {tls_engine.url} (TLS: the engine ended the "
                          "handshake: it wants a client certificate it trusts (--tlscert, --tlskey))"]
    assert tls_engine.clients == []
    for _ in range(10):  # under TLS 1.3 the client sees the engine's alert, or the connection's end, first
        with pytest.raises(DockerUnavailable, match="it wants a client certificate"):
            dockerhost.docker_client(resolve(tls_engine.url, tlsverify=True, tlscacert=str(certs / "ca.pem")))


def test_an_engine_certificate_another_ca_signed_is_refused(certs, tls_engine, tmp_path):
    other = tmp_path / "other-ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "1", "-subj", "/CN=other", "-keyout", str(tmp_path / "k.pem"), "-out", str(other)],
                   check=True, capture_output=True)
    host = resolve(tls_engine.url, tlscacert=str(other), tlscert=str(certs / "client.pem"),
                   tlskey=str(certs / "client-key.pem"))  # a file flag alone means --tlsverify
    with pytest.raises(DockerUnavailable) as e:
        dockerhost.docker_client(host)
    assert "TLS: the engine's certificate did not verify" in str(e.value) and "\n" not in str(e.value)


def test_a_tls_engine_reached_in_plain_text_is_warned_of_and_told_what_it_lacks(tls_engine):
    res = CliRunner().invoke(cli, ["down", "--docker-host", tls_engine.url])
    assert res.exit_code == 1
    warning, error = lines(res)
    assert warning == (f"warning: {tls_engine.url} is a plain-text Docker engine: anyone who can reach that port is "
                       "root on that host (give --tlsverify and its certificates, or use ssh://USER@HOST)")
    assert error.startswith(f"error: no Docker engine answers at {tls_engine.url} (") and "needs --tlsverify" in error


def test_a_plain_text_engine_is_used_with_one_line_of_warning_even_on_loopback(plain_engine):
    """The docker CLI's dockerd says it for a loopback address too: every user and process there reaches the port."""
    res = CliRunner().invoke(cli, ["down", "--docker-host", plain_engine.url])
    assert res.exit_code == 0, res.output
    warning, done = lines(res)
    assert warning.startswith(f"warning: {plain_engine.url} is a plain-text Docker engine") and "root" in warning
    assert done == "removed 0 container(s)"
    for quiet in ("unix:///var/run/docker.sock", "ssh://me@10.0.0.5", "https://10.0.0.5:2376"):
        assert resolve(quiet).warning() is None, quiet
    assert resolve("http://10.0.0.5:2375").warning()


@pytest.mark.parametrize("args, needle", [
    (["--tlscacert", "/nope/ca.pem"], "--tlscacert /nope/ca.pem: no readable file there (the CA that signed"),
    (["--tlsverify", "--tlscert", "/nope/cert.pem"], "no readable file there"),
])
def test_a_missing_certificate_file_is_one_line_exit_2_naming_it(certs, args, needle, monkeypatch):
    monkeypatch.setenv("DOCKER_CERT_PATH", str(certs))  # ca.pem is there; cert.pem and key.pem are not
    res = CliRunner().invoke(cli, ["down", "--docker-host", "tcp://127.0.0.1:9", *args])
    assert res.exit_code == 2
    (line,) = lines(res)
    assert needle in line, line


def test_the_default_files_are_named_where_they_were_looked_for(tmp_path, certs, monkeypatch):
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path))
    with pytest.raises(UsageError, match=f"no ca.pem in {tmp_path} .*give --tlscacert, or DOCKER_CERT_PATH"):
        resolve("tcp://10.0.0.5:2376", tlsverify=True)
    shutil.copy(certs / "ca.pem", tmp_path / "ca.pem")
    assert resolve("tcp://10.0.0.5:2376", tlsverify=True).tls == dockerhost.Tls(str(tmp_path / "ca.pem"))
    with pytest.raises(UsageError, match=f"no key.pem in {tmp_path}"):  # a certificate needs its key
        resolve("tcp://10.0.0.5:2376", tlscert=str(certs / "client.pem"))


@pytest.mark.parametrize("url", ["ssh://me@10.0.0.5", "unix:///var/run/docker.sock", "http://10.0.0.5:2375", None])
def test_tls_flags_where_nothing_would_use_them_are_refused(url, certs, monkeypatch):
    with pytest.raises(UsageError, match="are for a tcp:// --docker-host"):
        resolve(url, tlsverify=True, tlscacert=str(certs / "ca.pem"))
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")  # the environment is for tcp:// engines, as the docker CLI's
    if url is not None:
        assert resolve(url).tls is None


def test_run_json_names_the_certificate_files_never_their_contents(certs):
    from loadcmp.experiment.spec import RunSpec, validate

    spec = validate(RunSpec(servers=("nginx",), docker_host="tcp://10.0.0.5:2376", tlsverify=True,
                            tlscacert=str(certs / "ca.pem"), tlscert=str(certs / "client.pem"),
                            tlskey=str(certs / "client-key.pem")))
    described = spec.docker().describe()
    assert described["tls"] == {"verify": True, "ca_cert": str(certs / "ca.pem"), "cert": str(certs / "client.pem"),
                                "key": str(certs / "client-key.pem")}
    stored = json.dumps([spec.to_dict(), described])
    assert "BEGIN" not in stored and (certs / "client-key.pem").read_text().splitlines()[1] not in stored


def test_an_experiment_file_takes_the_tls_keys(tmp_path, certs):
    from loadcmp.experiment.spec import RunSpec, load_experiment, validate

    f = tmp_path / "remote.toml"
    f.write_text(f'servers = ["nginx"]\ndocker_host = "tcp://10.0.0.5:2376"\ntlsverify = true\n'
                 f'tlscacert = "{certs / "ca.pem"}"\n')
    spec = validate(RunSpec(**load_experiment(f)[0]))
    assert spec.docker().tls == dockerhost.Tls(str(certs / "ca.pem"))


# --- ssh ---------------------------------------------------------------------------------


def test_ssh_urls_are_handed_to_docker_py_through_the_ssh_client(monkeypatch):
    """As the docker CLI: this machine's `ssh` (its config, agent and known hosts) runs
    `docker system dial-stdio` there; the servers are reached at that host's address."""
    import docker

    host = resolve("ssh://me@servers.example:2222")
    assert host.remote and host.address == "servers.example" and host.tls is None and host.warning() is None
    handed: dict[str, Any] = {}

    class Client:
        def __init__(self, **kwargs: Any) -> None:
            handed.update(kwargs)

        def ping(self) -> bool:
            return True

    monkeypatch.setattr(docker, "DockerClient", Client)
    assert isinstance(dockerhost.docker_client(host), Client)
    assert handed == {"base_url": "ssh://me@servers.example:2222", "timeout": 300, "use_ssh_client": True}


RELAY = """import socket, sys, threading
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def up():
    while data := sys.stdin.buffer.read1(65536):
        s.sendall(data)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
while data := s.recv(65536):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
"""
"""What `docker system dial-stdio` does on an engine's host: the API on stdin and stdout."""


@pytest.fixture()
def sshd(tmp_path: Path, plain_engine: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An sshd on a free loopback port with throwaway keys, whose every command is `dial-stdio` to the
    fake engine; this machine's `ssh` trusts its host key and logs in with the throwaway key (a wrapper
    first on PATH gives it its config). The URL to reach it."""
    import importlib.util
    import os
    import sys

    sshd_bin = shutil.which("sshd") or "/usr/sbin/sshd"
    if not Path(sshd_bin).exists() or not shutil.which("ssh") or importlib.util.find_spec("paramiko") is None:
        pytest.skip("needs sshd, ssh and paramiko (docker-py's ssh:// imports it even to run ssh)")
    try:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation
    except OSError:
        pytest.skip("sshd needs /run/sshd")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for key in ("host", "user"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / key)], check=True)
    (tmp_path / "authorized_keys").write_text((tmp_path / "user.pub").read_text())
    (tmp_path / "relay.py").write_text(RELAY)
    user = os.environ.get("USER") or "root"
    (tmp_path / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {tmp_path / 'host'}\nPidFile none\n"
        f"AuthorizedKeysFile {tmp_path / 'authorized_keys'}\nStrictModes no\nPasswordAuthentication no\n"
        f"KbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\nAllowUsers {user}\n"
        f"ForceCommand {sys.executable} {tmp_path / 'relay.py'} {plain_engine.url.rsplit(':', 1)[1]}\n")
    host_key = (tmp_path / "host.pub").read_text().split()
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    (tmp_path / "ssh_config").write_text(
        f"Host 127.0.0.1\n  IdentityFile {tmp_path / 'user'}\n  IdentitiesOnly yes\n  BatchMode yes\n"
        f"  UserKnownHostsFile {tmp_path / 'known_hosts'}\n  StrictHostKeyChecking yes\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\nexec {shutil.which('ssh')} -F {tmp_path / 'ssh_config'} \"$@\"\n")
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    proc = subprocess.Popen([sshd_bin, "-D", "-e", "-f", str(tmp_path / "sshd_config")], stderr=subprocess.PIPE)
    try:
        for _ in range(100):  # until it listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                pytest.fail(f"sshd did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
            time.sleep(0.05)
        yield f"ssh://{user}@127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def test_an_engine_over_ssh_answers_through_this_machines_ssh(sshd, plain_engine):
    """Real ssh, end to end: docker-py runs `ssh ... docker system dial-stdio`, sshd relays the API."""
    host = resolve(sshd)
    client = dockerhost.docker_client(host)
    assert client.info()["NCPU"] == NCPU and any(p.endswith("/info") for p in plain_engine.paths)
    res = CliRunner().invoke(cli, ["down", "--docker-host", sshd])
    assert res.exit_code == 0 and lines(res) == ["removed 0 container(s)"], res.output  # no warning: ssh is safe


# --- the engine's CPUs, memory and open files ------------------------------------------------


def test_the_server_cpus_are_checked_against_the_remote_engines_cpus(certs, tls_engine):
    """This machine has 2 CPUs, the engine 32: 0-31 fit there, 32 does not; said before any container."""
    host = resolve(tls_engine.url, tlsverify=True, tlscacert=str(certs / "ca.pem"), tlscert=str(certs / "client.pem"),
                   tlskey=str(certs / "client-key.pem"))
    client = dockerhost.docker_client(host)
    dockerhost.check_server_limits(host, "0-31", 48 << 30, client)  # more than this machine has: fine there
    dockerhost.check_server_limits(host, "0-31", 48 << 30)  # without the engine, nothing is known of it
    with pytest.raises(UsageError, match=rf"bad CPU set '32': the Docker engine at {tls_engine.url} has CPUs 0-31"):
        dockerhost.check_server_limits(host, "32", None, client)
    with pytest.raises(UsageError, match=r"more than the Docker engine at .* has \(64.0 GiB\)"):
        dockerhost.check_server_limits(host, None, 100 << 30, client)
    for command in (["up", "--server", "nginx"], ["run", "--server", "nginx", "-t", "1"]):
        res = CliRunner().invoke(cli, [*command, "--server-cpus", "40", "--docker-host", tls_engine.url,
                                       *tls_flags(certs)])
        assert res.exit_code == 2, res.output
        assert lines(res)[-1] == f"error: bad CPU set '40': the Docker engine at {tls_engine.url} has CPUs 0-31"
    assert not any("/containers/" in p for p in tls_engine.paths), "refused before any container is looked at"


def test_this_machines_cpus_and_memory_still_bound_a_local_engine():
    import os

    res = CliRunner().invoke(cli, ["up", "--server", "nginx", "--server-cpus", str(os.cpu_count() or 1)])
    assert res.exit_code == 2 and "this machine has CPUs" in lines(res)[-1], res.output
    # the flag is not held to this machine's CPUs when the engine is another's (here one that is not there)
    res = CliRunner().invoke(cli, ["up", "--server", "nginx", "--server-cpus", "63", "--server-memory", "900g",
                                   "--docker-host", "tcp://127.0.0.1:9"])
    assert res.exit_code == 1 and lines(res)[-1].startswith("error: no Docker engine answers"), res.output


class FakeContainers:
    """docker-py's `client.containers` as far as `engine_nofile` and `up` use it."""

    def __init__(self, answer: bytes | Exception = b"1048576\n") -> None:
        self.answer = answer
        self.runs: list[dict[str, Any]] = []
        self.created: list[dict[str, Any]] = []

    def run(self, image: str, command: list[str], **kwargs: Any) -> Any:
        self.runs.append({"image": image, "command": command, **kwargs})
        if isinstance(self.answer, Exception):
            raise self.answer
        answer, runs = self.answer, self.runs

        class Probe:
            def wait(self, timeout: float) -> dict[str, int]:
                return {"StatusCode": 0 if answer[:1].isdigit() or answer.startswith(b"unlimited") else 2}

            def logs(self, stdout: bool, stderr: bool) -> bytes:
                return answer

            def remove(self, force: bool = False) -> None:
                runs[-1]["removed"] = force

        return Probe()

    def create(self, image: str, **kwargs: Any) -> Any:
        self.created.append(kwargs)

        class Container:
            name = kwargs["name"]

            def put_archive(self, *a: Any) -> None:
                raise RuntimeError("no further: the test looks at what was created")

            def remove(self, force: bool = False) -> None:
                pass

        return Container()


class FakeClient:
    def __init__(self, containers: FakeContainers) -> None:
        self.containers = containers

        class Images:
            def get(self, image: str) -> Any:
                return type("Image", (), {"id": f"sha256:{image}"})()

        self.images = Images()


@pytest.mark.parametrize("answer, nofile", [(b"4096\n", 4096), (b"1048576\n", 262144), (b"unlimited\n", 262144)])
def test_a_remote_engines_open_file_limit_is_read_in_a_throwaway_container(answer, nofile):
    """Without Docker: what is asked of the engine, and what is made of its answer."""
    fake = FakeContainers(answer)
    host = DockerHost("tcp://10.0.0.5:2376", "10.0.0.5", remote=True)
    got = dockerhost.with_engine_limits(FakeClient(fake), host, {"nginx": "loadcmp/nginx:abc"})
    assert got == replace(host, nofile=nofile) and got.describe()["server_nofile"] == nofile
    (run,) = fake.runs
    assert run["image"] == "loadcmp/nginx:abc" and run["command"] == ["-c", "ulimit -Hn"]
    assert run["entrypoint"] == ["sh"] and run["network_mode"] == "none" and run["detach"] and run["removed"]
    assert run["labels"]["loadcmp"] == "1" and run["labels"]["loadcmp.owner"]  # reaped if this command is killed
    assert dockerhost.with_engine_limits(FakeClient(fake), got, {"nginx": "x"}) is got  # read once
    local = planning.LOCAL  # this machine's
    assert dockerhost.with_engine_limits(FakeClient(fake), local, {"nginx": "x"}) is local
    assert len(fake.runs) == 1


def test_a_remote_engines_open_file_limit_through_docker_py(certs, tls_engine):
    """The probe through docker-py itself, over TLS: create, start, wait, logs, remove; a log driver
    (`local`) whose output docker-py's own run() would not return."""
    host = resolve(tls_engine.url, tlsverify=True, tlscacert=str(certs / "ca.pem"), tlscert=str(certs / "client.pem"),
                   tlskey=str(certs / "client-key.pem"))
    got = dockerhost.with_engine_limits(dockerhost.docker_client(host), host, {"nginx": "loadcmp/nginx:abc"})
    assert got.nofile == 20000
    (created,) = tls_engine.created
    assert created["Image"] == "loadcmp/nginx:abc" and created["Entrypoint"] == ["sh"]
    assert created["Cmd"] == ["-c", "ulimit -Hn"] and created["HostConfig"]["NetworkMode"] == "none"
    assert created["Labels"]["loadcmp"] == "1" and created["Labels"]["loadcmp.owner"]
    assert any("/containers/probe/wait" in p for p in tls_engine.paths)
    assert any(p.split("?")[0].endswith("/containers/probe") and "force=" in p for p in tls_engine.paths), "removed"


def test_an_engine_whose_limit_cannot_be_read_is_one_line():
    import docker

    fake = FakeContainers(docker.errors.ImageNotFound("No such image: loadcmp/nginx:abc"))
    host = DockerHost("tcp://10.0.0.5:2376", "10.0.0.5", remote=True)
    with pytest.raises(LabError, match="could not read the open-file limit of containers on the Docker engine at "
                                       "tcp://10.0.0.5:2376 .*No such image"):
        dockerhost.engine_nofile(FakeClient(fake), host, "loadcmp/nginx:abc")
    fake = FakeContainers(b"sh: 1: ulimit: Illegal option -H\n")  # a shell that fails: its own words
    with pytest.raises(LabError, match=r"\(`sh -c 'ulimit -Hn'` in loadcmp/nginx:abc exited with 2: sh: 1: ulimit: "
                                       r"Illegal option -H\)$") as e:
        dockerhost.engine_nofile(FakeClient(fake), host, "loadcmp/nginx:abc")
    assert "\n" not in str(e.value) and fake.runs[0]["removed"]


def test_the_servers_configs_and_ulimit_take_the_engines_limit():
    host = DockerHost("tcp://10.0.0.5:2376", "10.0.0.5", remote=True, nofile=4096)
    plan = planning.plan_deployment(get_stack("nginx"), host=host)
    files = plan.config_files()
    assert "worker_rlimit_nofile 4096;" in files["web/nginx.conf"]
    assert "rlimit_files = 4096" in files["web/php-fpm.conf"]
    fake = FakeContainers()
    with pytest.raises(RuntimeError, match="no further"):
        lab.up(plan, client=FakeClient(fake), images={"nginx": "loadcmp/nginx:abc"}, host=host)
    (ulimit,) = fake.created[0]["ulimits"]
    assert (ulimit["Name"], ulimit["Soft"], ulimit["Hard"]) == ("nofile", 4096, 4096)
    local = planning.plan_deployment(get_stack("nginx"))
    from loadcmp.lab.render import nofile_limit

    assert f"worker_rlimit_nofile {nofile_limit()};" in local.config_files()["web/nginx.conf"]


# --- an engine that goes away ---------------------------------------------------------------


def test_an_engine_that_hangs_up_after_the_ping_is_one_line(plain_engine):
    """It answers the ping and the listing, then hangs up on the first image it is asked for."""
    res = CliRunner().invoke(cli, ["up", "--server", "nginx", "--docker-host", plain_engine.url])
    assert res.exit_code == 1, res.output
    assert lines(res)[-1] == (f"error: the Docker engine at {plain_engine.url} stopped answering (Remote end closed "
                              "connection without response)")


def test_an_engine_that_goes_away_mid_run_ends_it_failed_in_one_line(plain_engine, tmp_path, monkeypatch):
    """The engine answers until the first trial, then is gone: the run is `failed` with the cause,
    what could not be removed is a problem of its own, and the user gets one line, exit 1."""
    from loadcmp.sweep import runner

    def trials(sweep: Any, planned: Any) -> Any:
        plain_engine.stop()
        return sweep.client.containers.list()  # docker-py's own call, to an engine that is gone

    monkeypatch.setattr(runner, "build_images", lambda client, images, log=None: {"nginx": "loadcmp/nginx:abc"})
    monkeypatch.setattr(runner, "run_trials", trials)
    monkeypatch.setattr(runner.dockerhost, "with_engine_limits", lambda client, host, images: host)
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-t", "1", "--docker-host", plain_engine.url,
                                   "--out", str(tmp_path), "--server-cpus", "20"])
    assert res.exit_code == 1, res.output
    said = lines(res)
    assert said[0].startswith(f"warning: {plain_engine.url} is a plain-text Docker engine")
    assert said[-1] == f"error: the Docker engine at {plain_engine.url} stopped answering (Connection refused)"
    (run_json,) = tmp_path.glob("*/run.json")
    run = json.loads(run_json.read_text())
    assert run["status"] == "failed"
    assert run["problems"][0] == said[-1].removeprefix("error: ")
    assert any("stopped answering" in p and "loadcmp down" in p for p in run["problems"][1:])
    assert run["spec"]["server_cpus"] == "20" and run["docker_host"]["engine"]["cpus"] == NCPU


def test_an_ssh_that_ended_is_pointed_to_its_own_line():
    """docker-py lets the ssh it runs say why on stderr; loadcmp's line points there."""
    import http.client

    import requests

    gone = requests.exceptions.ConnectionError(("Connection aborted.", http.client.RemoteDisconnected(
        "Remote end closed connection without response")))
    assert str(resolve("ssh://me@10.0.0.5").unanswered(gone)) == (
        "no Docker engine answers at ssh://me@10.0.0.5 (ssh ended before the engine answered: ssh's own line says why)")
    assert "needs --tlsverify" in str(resolve("tcp://10.0.0.5:2376").unanswered(gone))
