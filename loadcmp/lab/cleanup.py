"""Removing containers: a deployment's, a run's, every loadcmp container, and those of dead runs.

Every container loadcmp starts carries the label `loadcmp=1` and its run id; those of a
command that may be killed also carry their owner process and machine. So a run's
leftovers are found by label (`down`), and a later command removes the containers of a
run whose process is gone (`reap_orphans`). Removal tries every container and names
those that would not go, in the engine's words.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .dockerapi import engine_errors, name_of
from .dockerhost import docker_client
from .images import LABEL
from ..errors import LabError, NotOnEngine

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container


def remove(containers: Iterable[Container], engine: str = "") -> list[str]:
    """Force-remove each container (fast, and its state is not needed); return `name: reason` for
    those that would not go. One already gone is what was wanted. `engine`: its name, for the reasons."""
    failed = []
    for c in containers:
        try:
            with engine_errors(engine):
                c.remove(force=True)
        except NotOnEngine:
            pass
        except LabError as e:  # refused, or the engine went away (the next command reaps what is left)
            failed.append(f"{name_of(c)}: {e}")
    return failed


def labelled(client: DockerClient, run_id: str | None = None) -> list[Container]:
    """Every loadcmp container on the engine (or one run's), running or not."""
    labels = [f"{LABEL}=1"] + ([f"{LABEL}.run={run_id}"] if run_id else [])
    filters: dict[str, str | list[str] | bool] = {"label": labels}
    with engine_errors():
        return list(client.containers.list(all=True, filters=filters))


def reap_orphans(client: DockerClient) -> list[str]:
    """Remove the containers of runs whose process is gone from this machine (SIGKILL, out of
    memory, a crash) and return their names. `loadcmp up`'s stacks have no owner: they are
    meant to outlive the command and are left alone, as are other machines' runs."""
    from .provenance import owner_gone

    gone = [c for c in labelled(client)
            if (owner := c.labels.get(f"{LABEL}.owner")) and owner_gone(owner, c.labels.get(f"{LABEL}.host", ""))]
    failed = remove(gone)
    return [name_of(c) for c in gone if not any(f.startswith(name_of(c)) for f in failed)]


def down(client: DockerClient | None = None, run_id: str | None = None) -> list[str]:
    """Remove every loadcmp container (or only one run's); return their names.

    Every container is tried; if any could not be removed, a LabError names them."""
    client = client or docker_client()
    found = labelled(client, run_id)
    failed = remove(found)
    if failed:
        raise LabError("could not remove " + "; ".join(failed))
    return [name_of(c) for c in found]
