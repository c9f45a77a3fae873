"""The Docker side: containers, readiness, cleanup (images: `loadcmp.lab.images`).

Everything goes through docker-py. Containers use host networking and listen
on 127.0.0.1 only, carry the label `loadcmp=1` plus the run id, and are removed
on every exit path: the runner stops a trial's deployment in a `finally`, a
sweep's leftovers when it ends, and `loadcmp down` removes any by label.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import render
from . import stacks
from .dockerhost import DockerHost, why
from .planning import LOCAL, REMOTE_PORTS, check_port_free, free_port, plan_deployment  # noqa: F401 (the lab's API)
from ..errors import DockerUnavailable, LabError, ServerStartError, signal_name
from .images import LABEL, Log, no_log, build_images
from .archives import config_tar, pages_tar
from .pages import get_inside, http_get


def docker_client(host: DockerHost | None = None) -> Any:
    """A docker-py client of that engine (default: this machine's, docker-py's own choice) that
    answers, its TLS and ssh handed over (`DockerHost.client_kwargs`); or DockerUnavailable saying what to do."""
    host = host or LOCAL
    try:
        import docker

        client = docker.DockerClient(**host.client_kwargs()) if host.url else docker.from_env(timeout=300)
        client.ping()
        return client
    except Exception as e:  # noqa: BLE001 — docker-py raises its own, requests', ssl's and paramiko's errors here
        if host.url:
            raise host.unanswered(e) from None
        raise DockerUnavailable(
            f"no Docker engine answers ({type(e).__name__}); run `make setup` as root "
            "(installs Debian's docker.io and starts dockerd) or start Docker yourself"
        ) from None


# --- deployments -----------------------------------------------------------------


@dataclass
class Deployment:
    """A running stack: the plan it was started from and its containers."""

    plan: render.DeploymentPlan
    run_id: str
    images: dict[str, str]
    image_ids: dict[str, str] = field(default_factory=dict)
    containers: list[Any] = field(default_factory=list)
    client: Any = None
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
        return f"http://{self.host.address}:{self.port}/"

    @property
    def status_urls(self) -> dict[str, str]:
        """Each status page; they answer only on the server's own loopback (`apimetrics` reads them from inside)."""
        return {k: f"http://127.0.0.1:{self.port}{p.path}" for k, p in self.status_pages.items() if p.command is None}

    @property
    def status_pages(self) -> dict[str, stacks.StatusPage]:
        """The status pages read, by kind (`[status.KIND]`): the plan's, less those found unanswered."""
        return {p.kind: p for p in self.plan.status if p.kind not in self.unmeasured}

    @property
    def front(self) -> Any:
        """The container clients talk to (status pages and sockets are read in it)."""
        return self.containers[[r.role.name for r in self.plan.rendered].index(self.stack.front.name)]

    def container_of(self, role: str) -> Any:
        """The container of a role by its name (an app's database)."""
        return self.containers[[r.role.name for r in self.plan.rendered].index(role)]

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

    def exit_notes(self, states: dict[str, Any]) -> list[str]:
        """Each container that is not running, in words: how it ended (its exit code, and the
        signal that code means) and its last log line, whole."""
        out = []
        for c in self.containers:
            s = states.get(c.name, {})
            if s.get("Status") == "running":
                continue
            code = s.get("ExitCode")
            how = f"ended ({s.get('Status') or 'gone'})" if code is None else f"exited with code {code}"
            if code is not None and code > 128:
                how += f" ({signal_name(code - 128)})"
            line = last_line(_tail(c, 20, sep="\n"))
            out.append(f"{c.name} {how}" + (f"; its last log line: {line}" if line else ""))
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

    def log_lines(self, since: float, until: float) -> Iterator[str]:
        """Every line the containers logged between two wall-clock times (epoch seconds),
        each led by Docker's timestamp: what the servers said during a trial.

        Streamed, so a window of a million error lines costs no more memory than one;
        every server logs to stderr (see `loadcmp.observe.evidence`). Docker is asked for whole
        seconds around the window; the caller filters by the timestamps. LabError if unreadable."""
        import docker
        import requests

        for c in self.containers:
            rest = b""
            try:
                for chunk in c.logs(stream=True, follow=False, timestamps=True, since=int(since),
                                      until=math.ceil(until)):
                    *lines, rest = (rest + chunk).split(b"\n")
                    for line in lines:
                        yield line.decode(errors="replace")
            except docker.errors.APIError as e:
                raise LabError(f"{c.name}: its log is unreadable ({e.explanation or e})") from None
            except (requests.exceptions.RequestException, OSError) as e:  # the stream broke off
                raise LabError(f"{c.name}: its log is unreadable ({e})") from None
            if rest:
                yield rest.decode(errors="replace")

    def versions(self) -> dict[str, str]:
        """Each program's version, from the commands its parts name (`nginx -v`), run inside its role's
        container: the first line, after `version:` when it says so. A program a container lacks is skipped."""
        import docker

        out: dict[str, str] = {}
        for r, c in zip(self.plan.rendered, self.containers, strict=False):
            for program, command in r.role.versions:
                if program in out:
                    continue
                try:
                    res = c.exec_run(["sh", "-c", f"out=$({command} 2>&1) && printf '%s\\n' \"$out\" | head -n 1"])
                except docker.errors.APIError:
                    break  # the container died meanwhile: its versions stay unknown, the trial says why
                line = res.output.decode(errors="replace").strip()
                if res.exit_code == 0 and line:
                    out[program] = line.split("version:", 1)[1].strip() if "version:" in line else line
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
        except OSError as e:  # requests' errors: the engine went away (the next command reaps what is left)
            failed.append(f"{c.name}: the Docker engine does not answer ({why(e)})")
    return failed


def new_run_id() -> str:
    return uuid.uuid4().hex[:8]


def up(
    plan: render.DeploymentPlan,
    *,
    run_id: str | None = None,
    client: Any = None,
    images: dict[str, str] | None = None,
    ready_timeout: float = 60.0,
    log: Log = no_log,
    host: DockerHost = LOCAL,
    owned: bool = True,
) -> Deployment:
    """Start a planned stack and wait until it answers; on any failure nothing is left.

    `owned`: the containers are labelled with this process and machine, so that a later
    command removes them if this one is killed outright (`reap_orphans`); `loadcmp up`'s
    are not, as they outlive it on purpose."""
    from .provenance import this_host, this_process

    import docker

    client = client or docker_client(host)
    if images is None:
        images = build_images(client, plan.stack.images, log)
    run_id = run_id or new_run_id()
    stack = plan.stack
    dep = Deployment(plan, run_id, images, client=client, host=host, unmeasured=dict(plan.unmeasured))
    nofile = render.nofile_limit() if host.nofile is None else host.nofile  # as the plan's configs have it
    try:
        for r in plan.rendered:
            image = images[r.role.image.key]
            dep.image_ids[r.role.name] = client.images.get(image).id
            kwargs: dict[str, Any] = {}
            if plan.memory:
                kwargs.update(mem_limit=plan.memory, memswap_limit=plan.memory)
            if plan.cpus:
                kwargs["cpuset_cpus"] = plan.cpus
            if plan.www and not host.remote:  # read-only: a server cannot change the pages it is measured on
                kwargs["volumes"] = {str(plan.www): {"bind": render.USER_WWW, "mode": "ro"}}
            c = client.containers.create(
                image,
                command=list(r.role.command),
                name=f"loadcmp-{run_id}-{stack.name}-{r.role.name}-{r.port}",
                network_mode="host",
                labels={LABEL: "1", f"{LABEL}.run": run_id, f"{LABEL}.stack": stack.name, f"{LABEL}.role": r.role.name,
                        **({f"{LABEL}.owner": this_process(), f"{LABEL}.host": this_host()} if owned else {})},
                ulimits=[docker.types.Ulimit(name="nofile", soft=nofile, hard=nofile)],
                init=True,
                detach=True,
                **kwargs,
            )
            dep.containers.append(c)
            c.put_archive("/etc", config_tar(r.files))
            if plan.www and host.remote:  # another machine's engine cannot mount this machine's folder: a copy
                c.put_archive(str(Path(render.USER_WWW).parent), pages_tar(plan.www, Path(render.USER_WWW).name))
            c.start()
            _wait_ready(dep, c, r.port, ready_timeout, r.role.ready)
        return dep
    except BaseException as e:
        failed = _remove(reversed(dep.containers))
        if failed:  # the start failure is the news; the leftovers are said beside it
            e.add_note(f"also could not remove {'; '.join(failed)} (run `loadcmp down`)")
        raise


def _wait_ready(dep: Deployment, container: Any, port: int, timeout: float, command: str | None = None) -> None:
    """Until the role serves: its ready path answers, or (a role with no page: a database) its ready command
    succeeds inside its container."""
    import docker

    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        container.reload()
        if container.status in ("exited", "dead"):
            raise ServerStartError(
                f"{dep.stack.name}: container {container.name} exited while starting "
                f"(code {container.attrs['State'].get('ExitCode')}): " + _tail(container)
            )
        if command is not None:
            try:
                res = container.exec_run(["sh", "-c", command.replace("{port}", str(port))])
            except docker.errors.APIError as e:  # it ended meanwhile: the next turn says how
                last = str(e.explanation or e)
                continue
            if res.exit_code == 0:
                return
            last = last_line(res.output.decode(errors="replace")) or f"`{command}` exited with {res.exit_code}"
            time.sleep(0.25)
            continue
        try:
            ready = dep.plan.ready_path
            if dep.host.remote and port != dep.port:  # a back role listens on that host's loopback only
                status, _ = get_inside(container, port, ready, timeout=1.0)
            else:
                status, _ = http_get(port, ready, timeout=1.0, host=dep.host.address)
            if status == 200 or (dep.plan.www or dep.plan.own) and status < 500:  # theirs may have no index.html
                return
            last = f"HTTP {status}"
        except OSError as e:
            last = type(e).__name__
        time.sleep(0.1)
    raise ServerStartError(
        f"{dep.stack.name}: no answer on {dep.host.address}:{port} within {timeout:.0f} s ({last}): " + _tail(container)
    )


def _tail(container: Any, lines: int = 5, sep: str = " | ") -> str:
    import docker

    try:
        text = container.logs(tail=lines).decode(errors="replace").strip()
    except (docker.errors.DockerException, OSError):  # gone, or the engine went away: requests' errors are OSErrors
        text = ""
    return sep.join(text.splitlines()[-lines:]) or "(no log output)"


def last_line(text: str, width: int = 240) -> str:
    """The last line that says something, cut at its end (never its start) to `width`."""
    lines = [x.strip() for x in text.splitlines() if x.strip() and x.strip() != "(no log output)"]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= width else line[: width - 1].rsplit(" ", 1)[0] + " …"


def reap_orphans(client: Any) -> list[str]:
    """Remove the containers of runs whose process is gone from this machine (SIGKILL, out of
    memory, a crash) and return their names. `loadcmp up`'s stacks have no owner: they are
    meant to outlive the command and are left alone, as are other machines' runs."""
    from .provenance import owner_gone

    gone = [c for c in labelled(client)
            if (owner := c.labels.get(f"{LABEL}.owner")) and owner_gone(owner, c.labels.get(f"{LABEL}.host", ""))]
    failed = _remove(gone)
    return [c.name for c in gone if not any(f.startswith(c.name) for f in failed)]


def labelled(client: Any, run_id: str | None = None) -> list[Any]:
    filters = {"label": [f"{LABEL}=1"] + ([f"{LABEL}.run={run_id}"] if run_id else [])}
    return list(client.containers.list(all=True, filters=filters))


def down(client: Any | None = None, run_id: str | None = None) -> list[str]:
    """Remove every loadcmp container (or only one run's); return their names.

    Every container is tried; if any could not be removed, a LabError names them."""
    client = client or docker_client()
    try:
        found = labelled(client, run_id)
    except OSError as e:  # requests' errors: the engine went away
        raise DockerUnavailable(f"the Docker engine stopped answering ({why(e)})") from None
    failed = _remove(found)
    if failed:
        raise LabError("could not remove " + "; ".join(failed))
    return [c.name for c in found]
