"""The Docker side of a deployment: its containers started from a plan, their readiness,
state, logs and versions (clean-up: `cleanup`; images: `images`; the client: `dockerhost`).

Everything goes through docker-py, inside `dockerapi.engine_errors`. Containers use host
networking and listen on 127.0.0.1 only, carry the label `loadcmp=1` plus the run id, and are
removed on every exit path: the runner stops a trial's deployment in a `finally`, a sweep's
leftovers when it ends, and `loadcmp down` removes any by label (`cleanup`).
"""

from __future__ import annotations

import math
import ssl
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import render
from . import stacks
from .cleanup import remove
from .dockerapi import engine_errors, id_of, name_of, output_of
from .dockerhost import DockerHost, docker_client
from .planning import LOCAL
from ..errors import LabError, NotOnEngine, ServerStartError, signal_name
from .images import LABEL, Log, no_log, build_images
from .archives import config_tar, pages_tar
from .fetch import get_inside, http_get

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container


# --- deployments -----------------------------------------------------------------


@dataclass
class Deployment:
    """A running stack: the plan it was started from and its containers."""

    plan: render.DeploymentPlan
    run_id: str
    images: dict[str, str]
    client: DockerClient
    image_ids: dict[str, str] = field(default_factory=dict)
    containers: list[Container] = field(default_factory=list)
    host: DockerHost = LOCAL
    """The engine it runs on and where the clients reach it."""
    unmeasured: dict[str, str] = field(default_factory=dict)
    """Status page kind -> why it is not read (a user's own config without it: `ownconfig`)."""

    @property
    def stack(self) -> stacks.Stack:
        return self.plan.stack

    @property
    def port(self) -> int:
        return self.plan.port

    @property
    def settings(self) -> dict[str, Any]:
        return self.plan.settings

    @property
    def url(self) -> str:
        return f"{self.plan.scheme}://{self.host.address}:{self.port}/"

    @property
    def status_urls(self) -> dict[str, str]:
        """Each status page; they answer only on the server's own loopback (`apimetrics` reads them from inside)."""
        return {k: f"{self.plan.scheme}://127.0.0.1:{self.port}{p.path}" for k, p in self.status_pages.items()
                if p.command is None}

    def get(self, path: str, timeout: float = 2.0) -> tuple[int, bytes]:
        """One GET to the front role from here: over https, verified against the run's CA, when it serves https."""
        return http_get(self.port, path, timeout=timeout, host=self.host.address, cafile=self.plan.cafile)

    @property
    def status_pages(self) -> dict[str, stacks.StatusPage]:
        """The status pages read, by kind (`[status.KIND]`): the plan's, less those found unanswered."""
        return {p.kind: p for p in self.plan.status if p.kind not in self.unmeasured}

    @property
    def front(self) -> Container:
        """The container clients talk to (status pages and sockets are read in it)."""
        return self.container_of(self.stack.front.name)

    def container_of(self, role: str) -> Container:
        """The container of a role by its name (an app's database)."""
        return self.containers[[r.role.name for r in self.plan.rendered].index(role)]

    @property
    def container_names(self) -> list[str]:
        return [name_of(c) for c in self.containers]

    def state(self) -> dict[str, Any]:
        """Docker's State of each container, reloaded (for exit/OOM detection)."""
        out: dict[str, Any] = {}
        for c in self.containers:
            try:
                with engine_errors(self.host.name):
                    c.reload()
                out[name_of(c)] = c.attrs.get("State", {})
            except NotOnEngine:
                out[name_of(c)] = {"Status": "removed"}
        return out

    def exit_notes(self, states: dict[str, Any]) -> list[str]:
        """Each container that is not running, in words: how it ended (its exit code, and the
        signal that code means) and its last log line, whole."""
        out = []
        for c in self.containers:
            s = states.get(name_of(c), {})
            if s.get("Status") == "running":
                continue
            code = s.get("ExitCode")
            how = f"ended ({s.get('Status') or 'gone'})" if code is None else f"exited with code {code}"
            if s.get("Status") == "paused":  # not ended: Docker keeps its last exit code (0) beside it
                how = "was still paused, as Docker saw it"
            if code is not None and code > 128:
                how += f" ({signal_name(code - 128)})"
            line = last_line(_tail(c, 20, sep="\n"))
            out.append(f"{name_of(c)} {how}" + (f"; its last log line: {line}" if line else ""))
        return out

    def logs(self, lines: int = 20) -> str:
        """The last lines of each container's log (evidence; an unreadable log says so)."""
        parts = []
        for c in self.containers:
            try:
                with engine_errors(self.host.name):
                    text = c.logs(tail=lines).decode(errors="replace").strip()
            except LabError as e:
                text = f"(log unreadable: {e})"
            if text:
                parts.append(f"[{name_of(c)}] {text}")
        return "\n".join(parts)

    def log_lines(self, since: float, until: float) -> Iterator[str]:
        """Every line the containers logged between two wall-clock times (epoch seconds),
        each led by Docker's timestamp: what the servers said during a trial.

        Streamed, so a window of a million error lines costs no more memory than one;
        every server logs to stderr (see `loadcmp.observe.evidence`). Docker is asked for whole
        seconds around the window; the caller filters by the timestamps. LabError if unreadable."""
        for c in self.containers:
            rest = b""
            try:
                with engine_errors(self.host.name):
                    for chunk in c.logs(stream=True, follow=False, timestamps=True, since=int(since),
                                        until=math.ceil(until)):
                        *lines, rest = (rest + chunk).split(b"\n")
                        for line in lines:
                            yield line.decode(errors="replace")
            except LabError as e:  # refused, or the stream broke off
                raise LabError(f"{name_of(c)}: its log is unreadable ({e})") from None
            if rest:
                yield rest.decode(errors="replace")

    def versions(self) -> dict[str, str]:
        """Each program's version, from the commands its parts name (`nginx -v`), run inside its role's
        container: the first line, after `version:` when it says so. A program a container lacks is skipped."""
        out: dict[str, str] = {}
        for r, c in zip(self.plan.rendered, self.containers, strict=False):
            for program, command in r.role.versions:
                if program in out:
                    continue
                try:
                    with engine_errors(self.host.name):
                        res = c.exec_run(["sh", "-c", f"out=$({command} 2>&1) && printf '%s\\n' \"$out\" | head -n 1"])
                except LabError:
                    break  # the container died meanwhile: its versions stay unknown, the trial says why
                line = output_of(res).decode(errors="replace").strip()
                if res.exit_code == 0 and line:
                    out[program] = line.split("version:", 1)[1].strip() if "version:" in line else line
        return out

    def stop(self) -> None:
        """Remove the containers (forcefully: fast, and the state is not needed).

        Every container is tried; those that could not be removed are named
        in one LabError (`loadcmp down` removes them later)."""
        failed = remove(reversed(self.containers), self.host.name)
        self.containers = []
        if failed:
            raise LabError(f"{self.stack.name}: could not remove " + "; ".join(failed))

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def new_run_id() -> str:
    return uuid.uuid4().hex[:8]


def up(
    plan: render.DeploymentPlan,
    *,
    run_id: str | None = None,
    client: DockerClient | None = None,
    images: dict[str, str] | None = None,
    ready_timeout: float = 60.0,
    log: Log = no_log,
    host: DockerHost = LOCAL,
    owned: bool = True,
) -> Deployment:
    """Start a planned stack and wait until it answers; on any failure nothing is left.

    `owned`: the containers are labelled with this process and machine, so that a later
    command removes them if this one is killed outright (`cleanup.reap_orphans`); `loadcmp up`'s
    are not, as they outlive it on purpose."""
    client = client or docker_client(host)
    if images is None:
        images = build_images(client, plan.stack.images, log)
    dep = Deployment(plan, run_id or new_run_id(), images, client=client, host=host, unmeasured=dict(plan.unmeasured))
    try:
        with engine_errors(host.name):
            for r in plan.rendered:
                c = _create(dep, r, owned)
                _copy_in(dep, c, r)
                c.start()
                _wait_ready(dep, c, r.port, ready_timeout, r.role.ready)
        return dep
    except BaseException as e:
        failed = remove(reversed(dep.containers), host.name)
        if failed:  # the start failure is the news; the leftovers are said beside it
            e.add_note(f"also could not remove {'; '.join(failed)} (run `loadcmp down`)")
        raise


def _create(dep: Deployment, r: render.Rendered, owned: bool) -> Container:
    """A role's container, created (not started) and added to the deployment: host network, the plan's
    CPUs and memory, the open-file limit its configs were rendered for, the user's pages mounted read-only."""
    import docker

    from .provenance import this_host, this_process

    plan, host, client = dep.plan, dep.host, dep.client
    image = dep.images[r.role.image.key]
    dep.image_ids[r.role.name] = id_of(client.images.get(image))
    nofile = render.nofile_limit() if host.nofile is None else host.nofile  # as the plan's configs have it
    kwargs: dict[str, Any] = {}
    if plan.memory:
        kwargs.update(mem_limit=plan.memory, memswap_limit=plan.memory)
    if plan.cpus:
        kwargs["cpuset_cpus"] = plan.cpus
    if plan.www and not host.remote:  # read-only: a server cannot change the pages it is measured on
        kwargs["volumes"] = {str(plan.www): {"bind": render.USER_WWW, "mode": "ro"}}
    labels = {LABEL: "1", f"{LABEL}.run": dep.run_id, f"{LABEL}.stack": dep.stack.name, f"{LABEL}.role": r.role.name,
              **({f"{LABEL}.owner": this_process(), f"{LABEL}.host": this_host()} if owned else {})}
    c = client.containers.create(
        image, command=list(r.role.command), name=f"loadcmp-{dep.run_id}-{dep.stack.name}-{r.role.name}-{r.port}",
        network_mode="host", labels=labels, ulimits=[docker.types.Ulimit(name="nofile", soft=nofile, hard=nofile)],
        init=True, detach=True, **kwargs,
    )
    dep.containers.append(c)
    return c


def _copy_in(dep: Deployment, c: Container, r: render.Rendered) -> None:
    """A role's rendered configs into its container's /etc (the front role's certificate and key beside them,
    with --tls: copied, not mounted, so that another machine's engine gets them too); on another machine's
    engine, which cannot mount this machine's folder, a copy of the user's pages too."""
    tls = dep.plan.tls
    c.put_archive("/etc", config_tar(r.files, tls.files() if tls and r.role.name == dep.stack.front.name else None))
    if dep.plan.www and dep.host.remote:
        c.put_archive(str(Path(render.USER_WWW).parent), pages_tar(dep.plan.www, Path(render.USER_WWW).name))


def _wait_ready(dep: Deployment, container: Container, port: int, timeout: float, command: str | None = None) -> None:
    """Until the role serves: its ready path answers, or (a role with no page: a database) its ready command
    succeeds inside its container."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        container.reload()
        if container.status in ("exited", "dead"):
            raise ServerStartError(
                f"{dep.stack.name}: container {name_of(container)} exited while starting "
                f"(code {container.attrs['State'].get('ExitCode')}): " + _tail(container)
            )
        if command is not None:
            try:
                with engine_errors(dep.host.name):
                    res = container.exec_run(["sh", "-c", command.replace("{port}", str(port))])
            except LabError as e:  # it ended meanwhile: the next turn says how
                last = str(e)
                continue
            if res.exit_code == 0:
                return
            last = last_line(output_of(res).decode(errors="replace")) or f"`{command}` exited with {res.exit_code}"
            time.sleep(0.25)
            continue
        try:
            ready = dep.plan.ready_path
            if dep.host.remote and port != dep.port:  # a back role listens on that host's loopback only
                status, _ = get_inside(container, port, ready, timeout=1.0)
            elif port == dep.port:
                status, _ = dep.get(ready, timeout=1.0)
            else:
                status, _ = http_get(port, ready, timeout=1.0, host=dep.host.address)
            if status == 200 or (dep.plan.www or dep.plan.own) and status < 500:  # theirs may have no index.html
                return
            last = f"HTTP {status}"
        except ssl.SSLCertVerificationError as e:  # answered, with a certificate the clients refuse: no retry helps
            raise ServerStartError(f"{dep.stack.name}: the certificate on {dep.host.address}:{port} did not verify "
                                   f"against the run's CA ({e.verify_message})") from None
        except OSError as e:
            last = type(e).__name__
        time.sleep(0.1)
    raise ServerStartError(
        f"{dep.stack.name}: no answer on {dep.host.address}:{port} within {timeout:.0f} s ({last}): " + _tail(container)
    )


def _tail(container: Container, lines: int = 5, sep: str = " | ") -> str:
    try:
        with engine_errors():
            text = container.logs(tail=lines).decode(errors="replace").strip()
    except LabError:  # gone, or the engine went away
        text = ""
    return sep.join(text.splitlines()[-lines:]) or "(no log output)"


def last_line(text: str, width: int = 240) -> str:
    """The last line that says something, cut at its end (never its start) to `width`."""
    lines = [x.strip() for x in text.splitlines() if x.strip() and x.strip() != "(no log output)"]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= width else line[: width - 1].rsplit(" ", 1)[0] + " …"
