"""Which Docker engine runs the stacks, and where the clients reach them.

By default the engine is this machine's (docker-py's own choice: `DOCKER_HOST`
or the local socket), the servers listen on 127.0.0.1 and the lab measures them
through this machine's cgroup files and `ss`. `--docker-host URL` (or a
`DOCKER_HOST` that is not a local socket) runs them on another machine's
engine: they listen where the clients can reach them (`--server-address`,
by default the Docker host's own address) and everything the lab measures goes
through the Docker API alone (`apimetrics`), since that host's cgroup files
cannot be read from here. Giving `--docker-host unix:///var/run/docker.sock`
measures a local engine the remote way, which is how the tests check it.

An engine is reached as the docker CLI reaches it: tcp:// with TLS (`Tls`: `--tlsverify`,
`--tlscacert`, `--tlscert`, `--tlskey`, or DOCKER_TLS_VERIFY and DOCKER_CERT_PATH), or
ssh:// through this machine's `ssh`. A plain tcp:// engine is used with a warning: its API
is root on that host for anyone who reaches the port. docker-py's `DockerClient(base_url=...)`
reads none of the TLS environment itself, so `DockerHost.client_kwargs` hands it all over.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .dockerapi import engine_error, engine_errors, why
from ..errors import DockerUnavailable, LabError, UsageError
from ..units import check_cpus, check_memory, mem_total

if TYPE_CHECKING:
    import requests
    from docker import APIClient, DockerClient
    from docker.tls import TLSConfig

SCHEMES = ("unix", "tcp", "ssh", "http", "https", "npipe")
TLS_SCHEMES = ("tcp", "https")
"""Where TLS applies (docker-py talks http:// in plain text whatever it is given)."""
LOCAL_SOCKET = "unix:///var/run/docker.sock"
"""This machine's engine when neither --docker-host nor DOCKER_HOST names one (docker-py's default, the docker
CLI's too)."""


@dataclass(frozen=True)
class Tls:
    """TLS to an engine: its certificate verified against `ca_cert`, and this client's certificate
    and key when there are any. Paths only (absolute): run.json may name them, never hold them."""

    ca_cert: str
    cert: str | None = None
    key: str | None = None

    def config(self) -> TLSConfig:
        """docker-py's TLSConfig of these files (which `tls_of` found to be there), whose CA holds.

        requests verifies a session against REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE instead of the
        session's own CA whenever either is set (psf/requests#4726), and no engine's certificate
        is signed by the system's CAs; so the client docker-py configures keeps the engine's CA.
        docker-py applies the config before its first request, the version it asks for."""
        from docker.tls import TLSConfig

        class EngineCa(TLSConfig):
            def configure_client(self, client: APIClient) -> None:
                super().configure_client(client)
                session: requests.Session = client  # docker-py's client is a requests session
                merge = session.merge_environment_settings

                def keep_ca(url: str, proxies: Any, stream: Any, verify: Any, cert: Any) -> dict[str, Any]:
                    return {**merge(url, proxies, stream, verify, cert), "verify": session.verify}

                patched: Callable[..., Any] = keep_ca  # merge's own signature, which requests' types name privately
                session.merge_environment_settings = patched  # type: ignore[method-assign]  # on purpose

        return EngineCa(client_cert=(self.cert, self.key) if self.cert and self.key else None,
                        ca_cert=self.ca_cert, verify=True)

    def describe(self) -> dict[str, Any]:
        """For run.json: the engine verified, against which CA, with which client files (their paths)."""
        return {"verify": True, "ca_cert": self.ca_cert, "cert": self.cert, "key": self.key}


def tls_of(url: str | None, tlsverify: bool = False, tlscacert: str | None = None, tlscert: str | None = None,
           tlskey: str | None = None) -> Tls | None:
    """The docker CLI's TLS rules for a tcp:// engine; one-line UsageErrors naming a missing file.

    `--tlsverify` (or DOCKER_TLS_VERIFY set, not empty) verifies the engine against `--tlscacert`,
    by default ca.pem in DOCKER_CERT_PATH (else ~/.docker); `--tlscert` and `--tlskey`, by default
    cert.pem and key.pem there when both are, are this client's. Unlike the docker CLI, which
    ignores the three files without --tlsverify and talks plain text, giving any of them turns
    verification on: there is no unverified TLS here. The environment is ignored for unix:// and
    ssh:// engines; the flags are refused there, since nothing would use them."""
    flags = tlsverify or any(x is not None for x in (tlscacert, tlscert, tlskey))
    scheme = urlsplit(url).scheme if url else None
    if flags and scheme not in TLS_SCHEMES:
        raise UsageError(f"--tlsverify, --tlscacert, --tlscert and --tlskey are for a tcp:// --docker-host, "
                         f"not {url or 'the local socket'}")
    if scheme not in TLS_SCHEMES or not (flags or os.environ.get("DOCKER_TLS_VERIFY")):
        return None
    home = Path(os.environ.get("DOCKER_CERT_PATH") or Path.home() / ".docker").expanduser()
    ca = _file(tlscacert, home / "ca.pem", "--tlscacert", "the CA that signed the engine's certificate")
    if tlscert is None and tlskey is None and not ((home / "cert.pem").is_file() and (home / "key.pem").is_file()):
        return Tls(ca)  # no client certificate: the engine may not ask for one
    return Tls(ca, _file(tlscert, home / "cert.pem", "--tlscert", "this client's certificate"),
               _file(tlskey, home / "key.pem", "--tlskey", "this client's key"))


def _file(given: str | None, default: Path, flag: str, what: str) -> str:
    """The absolute path of a file TLS needs, or a UsageError naming it."""
    path = Path(given).expanduser() if given is not None else default
    if not path.is_file() or not os.access(path, os.R_OK):
        if given is not None:
            raise UsageError(f"{flag} {given}: no readable file there ({what})")
        raise UsageError(f"no {path.name} in {path.parent} ({what}): give {flag}, or DOCKER_CERT_PATH for its folder")
    return str(path.absolute())


@dataclass(frozen=True)
class DockerHost:
    """The engine's URL (None: docker-py's default), the servers' address, and how they are measured."""

    url: str | None = None
    address: str = "127.0.0.1"
    """Where the clients send their requests (and the lab its readiness checks)."""
    remote: bool = False
    """Measure through the Docker API only (the engine's cgroups and sockets are not this machine's)."""
    tls: Tls | None = None
    """How a tcp:// engine is verified, and this client's certificate (`tls_of`); None: no TLS."""
    nofile: int | None = None
    """The servers' open-file limit on this engine, their ulimit and their configs' (`with_engine_limits`,
    once the engine answers); None: this machine's (`render.nofile_limit`)."""

    @property
    def name(self) -> str:
        """The engine by its URL: --docker-host's, DOCKER_HOST's, or this machine's socket (docker-py's default)."""
        return self.url or os.environ.get("DOCKER_HOST") or LOCAL_SOCKET

    @property
    def plain_text(self) -> bool:
        """A tcp:// or http:// engine without TLS: its API unencrypted, and open to anyone who reaches it."""
        return self.url is not None and urlsplit(self.url).scheme in ("tcp", "http") and self.tls is None

    def warning(self) -> str | None:
        """The one line said before a plain-text engine is used. Said for a loopback address too, as
        dockerd says it: every user and process of that machine reaches the port, browsers' pages too."""
        if not self.plain_text:
            return None
        return (f"{self.url} is a plain-text Docker engine: anyone who can reach that port is root on that host "
                "(give --tlsverify and its certificates, or use ssh://USER@HOST)")

    def unanswered(self, e: BaseException) -> DockerUnavailable:
        """docker-py's error when this engine did not answer, in one line; a plain-text client that
        a TLS engine hung up on is told what it lacks, and an ssh that ended is pointed to its own
        line (docker-py lets the ssh it runs write to stderr)."""
        said = why(e)
        hung_up = any(w in said for w in ("HTTPS", "closed connection", "reset"))
        if hung_up and self.url and self.url.startswith("ssh://"):  # this machine's ssh said why, on stderr
            said = "ssh ended before the engine answered: ssh's own line says why"
        tls = self.plain_text and hung_up
        hint = "; an engine that speaks TLS (port 2376) needs --tlsverify and its certificates" if tls else ""
        return DockerUnavailable(f"no Docker engine answers at {self.name} ({said}){hint}")

    def client_kwargs(self) -> dict[str, Any]:
        """docker-py's DockerClient arguments for this engine: its TLS, and ssh:// through this
        machine's `ssh` (its config, agent and known hosts, as the docker CLI) rather than paramiko's."""
        kwargs: dict[str, Any] = {"base_url": self.url, "timeout": 300}
        if self.tls is not None:
            kwargs["tls"] = self.tls.config()
        if self.url and self.url.startswith("ssh://"):
            kwargs["use_ssh_client"] = True
        return kwargs

    @property
    def bind(self) -> str:
        """The address the front server listens on: loopback here, and there too when the
        clients reach it on loopback (an engine on this machine); else every interface of
        that host, so the clients reach it and its status pages still answer on its loopback."""
        return "127.0.0.1" if not self.remote or self.address.startswith("127.") else "0.0.0.0"

    def describe(self, client: DockerClient | None = None) -> dict[str, Any]:
        """For run.json: the engine, its address, the server address and how it was measured."""
        out: dict[str, Any] = {"url": self.url or os.environ.get("DOCKER_HOST") or "local socket",
                               "server_address": self.address, "measured_through": "docker api" if self.remote
                               else "cgroup files and ss on this machine",
                               "tls": self.tls.describe() if self.tls else None,
                               **({"server_nofile": self.nofile} if self.nofile is not None else {})}
        if client is not None:
            try:
                with engine_errors(self.name):
                    info = client.info()
                out["engine"] = {"name": info.get("Name"), "version": info.get("ServerVersion"),
                                 "cgroup_version": info.get("CgroupVersion"), "cpus": info.get("NCPU")}
            except LabError as e:  # provenance is best effort; the run goes on
                out["engine"] = {"error": str(e)}
        return out


def host_of(url: str) -> str:
    """The machine a Docker URL points at: tcp://H:2376 -> H, ssh://user@H -> H; a local socket -> 127.0.0.1."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise UsageError(f"bad --docker-host {url!r}: give unix:///path, tcp://HOST:PORT or ssh://[USER@]HOST")
    if parts.scheme in ("unix", "npipe"):
        return "127.0.0.1"
    if not parts.hostname:
        raise UsageError(f"bad --docker-host {url!r}: it names no host")
    return parts.hostname


def resolve(docker_host: str | None = None, server_address: str | None = None, *, tlsverify: bool = False,
            tlscacert: str | None = None, tlscert: str | None = None, tlskey: str | None = None) -> DockerHost:
    """The flags (and DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) as a DockerHost; one-line UsageErrors."""
    env = os.environ.get("DOCKER_HOST") or None
    url = docker_host or env
    remote = docker_host is not None or (env is not None and not env.startswith("unix://"))
    if url is not None:
        derived = host_of(url)
    else:
        derived = "127.0.0.1"
    address = server_address or derived
    if server_address is not None:
        if not server_address.strip() or any(c in server_address for c in "/ :[]"):
            raise UsageError(f"bad --server-address {server_address!r}: give a host name or an IPv4 address")
        if not remote:
            raise UsageError("--server-address needs --docker-host: the local stacks listen on 127.0.0.1")
    url = url if remote else None
    return DockerHost(url, address, remote, tls_of(url, tlsverify, tlscacert, tlscert, tlskey))


def docker_client(host: DockerHost | None = None) -> DockerClient:
    """A docker-py client of that engine (default: this machine's, docker-py's own choice) that
    answers, its TLS and ssh handed over (`client_kwargs`); or DockerUnavailable saying what to do."""
    host = host or DockerHost()
    try:
        with engine_errors(host.name):
            import docker

            client = docker.DockerClient(**host.client_kwargs()) if host.url else docker.from_env(timeout=300)
            client.ping()
            return client
    except LabError as e:
        if host.url:
            raise host.unanswered(e.__cause__ or e) from None
        raise DockerUnavailable(
            f"no Docker engine answers at {host.name} ({why(e.__cause__ or e)}); run `make setup` as root "
            "(installs Debian's docker.io and starts dockerd) or start Docker yourself"
        ) from None


# --- the machine the servers run on -------------------------------------------------------


def check_server_limits(host: DockerHost, cpus: str | None, memory: int | None,
                        client: DockerClient | None = None) -> None:
    """--server-cpus and --server-memory against the machine the servers run on: this one for this
    machine's engine, checked with the other flags before any engine is asked (no `client`); another
    machine's engine against its own CPUs and memory (`docker info`: NCPU, MemTotal) once it answers
    (`client` given). Each call checks only the one it can, so both are made: one before connecting,
    one after. The cpuset must be valid (`units.parse_cpus`)."""
    if host.remote != (client is not None) or (cpus is None and memory is None):
        return
    n: int | None
    if client is None:
        n, total, where = os.cpu_count() or 1, mem_total(), "this machine"
    else:
        with engine_errors(host.name):
            info = client.info()
        n, total, where = info.get("NCPU"), info.get("MemTotal"), f"the Docker engine at {host.name}"
    if cpus and n:
        check_cpus(cpus, int(n), where)
    if memory:
        check_memory(memory, total, where)


NOFILE_CAP = 262144
"""The most open files a server is given, as `render.nofile_limit` caps this machine's."""


def with_engine_limits(client: DockerClient, host: DockerHost, images: dict[str, str]) -> DockerHost:
    """The host with its servers' open-file limit read from another machine's engine, with one of
    the `images` it has; this machine's engine gives this machine's limit (None), as does a host read."""
    if not host.remote or host.nofile is not None or not images:
        return host
    return replace(host, nofile=engine_nofile(client, host, next(iter(images.values()))))


def engine_nofile(client: DockerClient, host: DockerHost, image: str) -> int:
    """The hard open-file limit the containers of another machine's engine get (dockerd's own, or
    its --default-ulimit), capped at `NOFILE_CAP`: what its servers are given.

    Neither `docker info` nor this machine's limit says it, and the servers are given exactly this
    number (their ulimit and their configs'): more than the engine grants and they do not start,
    less and they are capped for nothing. Only a container can tell, so one throwaway container of
    `image` runs `ulimit -Hn` (no network, removed when it ends, labelled as the servers are so that
    the next command reaps it if this one is killed): once per command, only for a remote engine.
    A shell that fails says so on stderr, and that is the error's text."""
    try:
        with engine_errors(host.name):
            code, text = _ulimit_probe(client, host, image)
    except DockerUnavailable:
        raise
    except LabError as e:
        raise _unread(host, str(e)) from None
    if code != 0 or not (text.isdigit() or text == "unlimited"):
        raise _unread(host, f"`sh -c 'ulimit -Hn'` in {image} exited with {code}: {' '.join(text.split())[:200]}")
    return min(NOFILE_CAP, NOFILE_CAP if text == "unlimited" else int(text))


def _unread(host: DockerHost, why: str) -> LabError:
    return LabError(f"could not read the open-file limit of containers on the Docker engine at {host.name} ({why})")


def _ulimit_probe(client: DockerClient, host: DockerHost, image: str) -> tuple[int, str]:
    """`ulimit -Hn` in a throwaway container of `image`: its exit code and what it wrote."""
    from .images import LABEL
    from .provenance import this_host, this_process

    labels = {LABEL: "1", f"{LABEL}.owner": this_process(), f"{LABEL}.host": this_host()}
    # detached: docker-py's run() returns no output under a log driver other than json-file or journald
    probe = client.containers.run(image, ["-c", "ulimit -Hn"], entrypoint=["sh"], network_mode="none",
                                  labels=labels, detach=True)
    try:
        code = int(probe.wait(timeout=60)["StatusCode"])
        return code, probe.logs(stdout=True, stderr=code != 0).decode(errors="replace").strip()
    finally:
        with contextlib.suppress(LabError), engine_errors(host.name):  # left: the next command reaps it
            probe.remove(force=True)


# --- an engine that goes away ---------------------------------------------------------------


def stopped_answering(e: BaseException, host: DockerHost) -> DockerUnavailable | None:
    """docker-py's error of an engine that went away mid-command (its connection refused, reset or
    timed out), as one line (`dockerapi.engine_error`); None for any other error, an engine's refusal
    of a request included."""
    mapped = e if isinstance(e, DockerUnavailable) else engine_error(e, host.name)  # or mapped in the lab already
    return mapped if isinstance(mapped, DockerUnavailable) else None


def answering(host: DockerHost) -> contextlib.AbstractContextManager[None]:
    """A command's block whose docker-py errors come out as one line of loadcmp's (`dockerapi`), naming
    this engine (those mapped deeper in the lab without its name too), not as docker-py's traceback:
    an engine going away is no bug of loadcmp's."""
    return engine_errors(host.name)
