"""The Docker side: base image, server images, containers, readiness, cleanup.

Everything goes through docker-py. Containers use host networking and listen
on 127.0.0.1 only, carry the label `loadcmp=1` plus the run id, and are removed
on every exit path (the callers use `Deployment` as a context manager).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import io
import os
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import stacks as st
from .errors import BuildError, DockerUnavailable, LabError, ServerStartError, UsageError

LABEL = "loadcmp"
BASE_DEFAULT = "debian:bookworm-slim"
BASE_LOCAL = "loadcmp/base:bookworm"

Log = Callable[[str], None]


def _nolog(_: str) -> None:
    pass


def cache_dir() -> Path:
    d = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "loadcmp"
    d.mkdir(parents=True, exist_ok=True)
    return d


def docker_client() -> Any:
    """A docker-py client that answers, or DockerUnavailable saying what to do."""
    try:
        import docker

        client = docker.from_env(timeout=300)
        client.ping()
        return client
    except Exception as e:  # docker-py raises several unrelated types here
        raise DockerUnavailable(
            f"no Docker engine answers ({type(e).__name__}); run `make setup` as root "
            "(installs Debian's docker.io and starts dockerd) or start Docker yourself"
        ) from None


# --- images ---------------------------------------------------------------------


def _apt_mirror() -> str:
    """The Debian mirror this machine's apt uses (the only one reachable here)."""
    for p in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text = p.read_text()
        except OSError:
            continue
        for m in re.finditer(r"(https?://\S+/debian)(?:\s|$)", text):
            return m.group(1)
    return "http://deb.debian.org/debian"


def ensure_base(client: Any, log: Log = _nolog) -> str:
    """Return a usable base image: debian:bookworm-slim if present or pullable,
    else loadcmp/base:bookworm, made with debootstrap when missing."""
    import docker

    for name in (BASE_DEFAULT, BASE_LOCAL):
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.get(name)
            return name
    if os.environ.get("LOADCMP_TRY_PULL", "1") == "1":
        try:
            log(f"pulling {BASE_DEFAULT}")
            client.images.pull(BASE_DEFAULT)
            return BASE_DEFAULT
        except Exception as e:  # no registry reachable: the usual case here
            log(f"cannot pull {BASE_DEFAULT} ({type(e).__name__}); making {BASE_LOCAL} with debootstrap")
    return make_base(client, log)


def make_base(client: Any, log: Log = _nolog) -> str:
    """debootstrap --variant=minbase bookworm + docker import -> loadcmp/base:bookworm."""
    if not shutil.which("debootstrap"):
        raise LabError("no base image and no debootstrap to make one: `apt-get install debootstrap` (or `make setup`)")
    if os.geteuid() != 0:
        raise LabError("making the base image with debootstrap needs root; run `make setup` as root")
    mirror = _apt_mirror()
    logfile = cache_dir() / "debootstrap.log"
    with tempfile.TemporaryDirectory(prefix="loadcmp-base-") as tmp:
        root = Path(tmp) / "rootfs"
        log(f"debootstrap bookworm from {mirror} (log: {logfile})")
        with logfile.open("w") as lf:
            rc = subprocess.run(
                ["debootstrap", "--variant=minbase", "bookworm", str(root), mirror], stdout=lf, stderr=subprocess.STDOUT
            ).returncode
        if rc != 0:
            raise BuildError(f"debootstrap failed (exit {rc}); see {logfile}")
        security = mirror.rsplit("/debian", 1)[0] + "/debian-security"
        (root / "etc/apt/sources.list").write_text(
            f"deb {mirror} bookworm main\ndeb {mirror} bookworm-updates main\ndeb {security} bookworm-security main\n"
        )
        subprocess.run(["chroot", str(root), "apt-get", "clean"], check=False, capture_output=True)
        shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
        (root / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)
        tar = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(tar), "."], check=True)
        log(f"docker import -> {BASE_LOCAL}")
        repo, tag = BASE_LOCAL.split(":")
        client.api.import_image_from_file(str(tar), repository=repo, tag=tag)
    return BASE_LOCAL


def _context(image: str) -> tuple[bytes, str]:
    """The build context of an image as a deterministic tar, and its hash."""
    root = st.project_root()
    files: list[tuple[str, Path]] = [("Dockerfile", root / f"Dockerfile.{image}")]
    www = root / "configs" / "www"
    files += [(f"configs/www/{p.relative_to(www)}", p) for p in sorted(www.rglob("*")) if p.is_file()]
    files.append(("configs/stacks/entrypoint.sh", root / "configs" / "stacks" / "entrypoint.sh"))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for arc, path in files:
            data = path.read_bytes()
            info = tarfile.TarInfo(arc)
            info.size = len(data)
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            info.mtime = 0
            tf.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def image_tag(image: str, base_id: str) -> str:
    """loadcmp/<image>:<hash of Dockerfile, content, entrypoint and base>."""
    _, h = _context(image)
    return f"loadcmp/{image}:{hashlib.sha256((h + base_id).encode()).hexdigest()[:12]}"


def build_images(client: Any, images: list[str] | tuple[str, ...], log: Log = _nolog, force: bool = False) -> dict[str, str]:
    """Build what is missing (or everything with force); return image -> tag."""
    import docker

    base = ensure_base(client, log)
    base_id = client.images.get(base).id
    out: dict[str, str] = {}
    for image in images:
        tag = image_tag(image, base_id)
        out[image] = tag
        if not force:
            try:
                client.images.get(tag)
                log(f"{tag} is up to date")
                continue
            except docker.errors.ImageNotFound:
                pass
        _build_one(client, image, tag, base, log)
    return out


def _build_one(client: Any, image: str, tag: str, base: str, log: Log) -> None:
    ctx, _ = _context(image)
    logfile = cache_dir() / f"build-{image}.log"
    log(f"building {tag} (log: {logfile})")
    step = "the start"
    with logfile.open("w") as lf:
        try:
            stream = client.api.build(
                fileobj=io.BytesIO(ctx),
                custom_context=True,
                tag=tag,
                buildargs={"BASE": base},
                network_mode="host",
                rm=True,
                forcerm=True,
                decode=True,
                labels={LABEL: "1"},
            )
            for chunk in stream:
                if "stream" in chunk:
                    text = chunk["stream"]
                    lf.write(text)
                    if text.startswith("Step "):
                        step = text.strip()
                        log(step)
                if "error" in chunk:
                    lf.write(chunk["error"] + "\n")
                    raise BuildError(f"building {image} failed at {step!r}: {chunk['error'].strip()[:200]} (log: {logfile})")
        except BuildError:
            raise
        except Exception as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            raise BuildError(f"building {image} failed at {step!r}: {e} (log: {logfile})") from None


# --- ports --------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check_port_free(port: int) -> None:
    if not 1 <= port <= 65535:
        raise UsageError(f"bad port {port}: use 1..65535")
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise UsageError(f"port {port} is already in use on 127.0.0.1; pick another or leave --port out") from None


# --- deployments -----------------------------------------------------------------


@dataclass
class Deployment:
    """A running stack: the plan it was started from and its containers."""

    plan: st.DeploymentPlan
    run_id: str
    images: dict[str, str]
    image_ids: dict[str, str] = field(default_factory=dict)
    containers: list[Any] = field(default_factory=list)
    client: Any = None

    @property
    def stack(self) -> st.Stack:
        return self.plan.stack

    @property
    def port(self) -> int:
        return self.plan.port

    @property
    def settings(self) -> dict[str, Any]:
        return self.plan.settings

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def status_urls(self) -> dict[str, str]:
        return {k: f"http://127.0.0.1:{self.port}{p}" for k, p in st.status_paths(self.stack).items()}

    @property
    def container_names(self) -> list[str]:
        return [c.name for c in self.containers]

    def state(self) -> dict[str, Any]:
        """Docker's State of each container, reloaded (for exit/OOM detection)."""
        import docker

        out: dict[str, Any] = {}
        for c in self.containers:
            try:
                c.reload()
                out[c.name] = c.attrs.get("State", {})
            except docker.errors.NotFound:
                out[c.name] = {"Status": "removed"}
        return out

    def logs(self, lines: int = 20) -> str:
        """The last lines of each container's log (evidence; an unreadable log says so)."""
        import docker

        parts = []
        for c in self.containers:
            try:
                text = c.logs(tail=lines).decode(errors="replace").strip()
            except docker.errors.APIError as e:
                text = f"(log unreadable: {e.explanation or e})"
            if text:
                parts.append(f"[{c.name}] {text}")
        return "\n".join(parts)

    def versions(self) -> dict[str, str]:
        """nginx -v, apache2 -v, php -v from inside the containers."""
        import docker

        out: dict[str, str] = {}
        for c in self.containers:
            try:
                res = c.exec_run(["/usr/local/bin/loadcmp-entrypoint", "versions"])
            except docker.errors.APIError:
                continue  # the container died meanwhile: its versions stay unknown, the trial says why
            for line in res.output.decode(errors="replace").splitlines():
                low = line.lower()
                key = "nginx" if "nginx" in low else "apache" if "apache" in low else "php" if low.startswith("php") else None
                if key:
                    out[key] = line.split(":", 1)[-1].strip() if key != "php" else line.strip()
        return out

    def stop(self) -> None:
        """Remove the containers (forcefully: fast, and the state is not needed).

        Every container is tried; those that could not be removed are named
        in one LabError (`loadcmp down` removes them later)."""
        failed = _remove(reversed(self.containers))
        self.containers = []
        if failed:
            raise LabError(f"{self.stack.name}: could not remove " + "; ".join(failed))

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _remove(containers: Any) -> list[str]:
    """Force-remove each container; return `name: reason` for those that failed."""
    import docker

    failed = []
    for c in containers:
        try:
            c.remove(force=True)
        except docker.errors.NotFound:
            pass  # already gone: what we wanted
        except docker.errors.APIError as e:
            failed.append(f"{c.name}: {e.explanation or e}")
    return failed


def new_run_id() -> str:
    return uuid.uuid4().hex[:8]


def plan_deployment(stack: st.Stack, *, port: int | None = None, cpus: str | None = None, memory: int | None = None,
                    overrides: dict[str, Any] | None = None) -> st.DeploymentPlan:
    """Pick free ports on 127.0.0.1 (or check `port`) and render the stack's configs for them."""
    if port is None:
        port = free_port()
    else:
        check_port_free(port)
    ports = {stack.front.name: port}
    for role in stack.roles:
        if role.name not in ports:
            ports[role.name] = free_port()
    return st.plan_deployment(stack, overrides or {}, ports, cpus=cpus, memory=memory)


def up(
    plan: st.DeploymentPlan,
    *,
    run_id: str | None = None,
    client: Any = None,
    images: dict[str, str] | None = None,
    ready_timeout: float = 60.0,
    log: Log = _nolog,
) -> Deployment:
    """Start a planned stack and wait until it answers; on any failure nothing is left."""
    import docker

    client = client or docker_client()
    if images is None:
        images = build_images(client, plan.stack.images, log)
    run_id = run_id or new_run_id()
    stack = plan.stack
    dep = Deployment(plan, run_id, images, client=client)
    try:
        for r in plan.rendered:
            image = images[r.role.image]
            dep.image_ids[r.role.name] = client.images.get(image).id
            kwargs: dict[str, Any] = {}
            if plan.memory:
                kwargs.update(mem_limit=plan.memory, memswap_limit=plan.memory)
            if plan.cpus:
                kwargs["cpuset_cpus"] = plan.cpus
            c = client.containers.create(
                image,
                command=[r.role.mode],
                name=f"loadcmp-{run_id}-{stack.name}-{r.role.name}-{r.port}",
                network_mode="host",
                labels={LABEL: "1", f"{LABEL}.run": run_id, f"{LABEL}.stack": stack.name, f"{LABEL}.role": r.role.name},
                ulimits=[docker.types.Ulimit(name="nofile", soft=st.nofile_limit(), hard=st.nofile_limit())],
                init=True,
                detach=True,
                **kwargs,
            )
            dep.containers.append(c)
            c.put_archive("/etc", _config_tar(r.files))
            c.start()
            _wait_ready(dep, c, r.port, ready_timeout)
        return dep
    except BaseException as e:
        failed = _remove(reversed(dep.containers))
        if failed:  # the start failure is the news; the leftovers are said beside it
            e.add_note(f"also could not remove {'; '.join(failed)} (run `loadcmp down`)")
        raise


def _config_tar(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        dirs = sorted({str(Path("loadcmp", n).parent) for n in files})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tf.addfile(info)
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"loadcmp/{name}")
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def http_get(port: int, path: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """One plain GET on loopback (readiness, primer, status pages)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _wait_ready(dep: Deployment, container: Any, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        container.reload()
        if container.status in ("exited", "dead"):
            raise ServerStartError(
                f"{dep.stack.name}: container {container.name} exited while starting "
                f"(code {container.attrs['State'].get('ExitCode')}): " + _tail(container)
            )
        try:
            status, _ = http_get(port, "/index.html", timeout=1.0)
            if status == 200:
                return
            last = f"HTTP {status}"
        except OSError as e:
            last = type(e).__name__
        time.sleep(0.1)
    raise ServerStartError(
        f"{dep.stack.name}: no answer on 127.0.0.1:{port} within {timeout:.0f} s ({last}): " + _tail(container)
    )


def _tail(container: Any, lines: int = 5) -> str:
    try:
        text = container.logs(tail=lines).decode(errors="replace").strip()
    except Exception:
        text = ""
    return " | ".join(text.splitlines()[-lines:]) or "(no log output)"


def labelled(client: Any, run_id: str | None = None) -> list[Any]:
    filters = {"label": [f"{LABEL}=1"] + ([f"{LABEL}.run={run_id}"] if run_id else [])}
    return list(client.containers.list(all=True, filters=filters))


def down(client: Any | None = None, run_id: str | None = None) -> list[str]:
    """Remove every loadcmp container (or only one run's); return their names.

    Every container is tried; if any could not be removed, a LabError names them."""
    client = client or docker_client()
    found = labelled(client, run_id)
    failed = _remove(found)
    if failed:
        raise LabError("could not remove " + "; ".join(failed))
    return [c.name for c in found]
