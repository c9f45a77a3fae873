"""Where and with what a run ran: the machine, the Docker engine, the git commit.

Stored in run.json so that a result can be judged (and repeated) elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from .dockerapi import engine_errors
from ..errors import LabError
from ..load.run.limits import nofile
from ..records import MachineInfo
from ..units import mem_total

if TYPE_CHECKING:
    from docker import DockerClient


def this_process() -> str:
    """`pid:start` of this process (its start in clock ticks since boot): what a container or a
    run.json records of its owner. A pid alone could be another process's by the time it is read."""
    return f"{os.getpid()}:{_started(os.getpid())}"


def this_host() -> str:
    """Where the owner's pid means something: the machine's name, this boot, and this pid namespace.
    Two machines of one name, a reboot, or a loadcmp in a container beside one on the host are each
    another `host`, whose processes are never judged from here."""
    boot, pidns = "", ""
    with contextlib.suppress(OSError):
        boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    with contextlib.suppress(OSError):
        pidns = str(os.stat("/proc/self/ns/pid").st_ino)
    return f"{platform.node()}/{boot}/{pidns}"


def owner_gone(owner: str, host: str) -> bool:
    """True when the process `owner` (from `this_process`) ran here (`this_host`) and is gone:
    no such pid, a pid now another process's (its start differs), or a zombie. Anything that
    cannot be judged from here is not gone."""
    if host != this_host():
        return False
    pid, _, start = owner.partition(":")
    if not pid.isdigit():
        return False
    stat = _stat(int(pid))
    if stat is None:
        return True
    state, started = stat
    return state == "Z" or (start.isdigit() and started != int(start))


def _started(pid: int) -> int | None:
    stat = _stat(pid)
    return None if stat is None else stat[1]


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's state and start time (fields 3 and 22 of /proc/PID/stat); None: no such process."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[19])


def machine_info(client: DockerClient | None = None) -> MachineInfo:
    """Where the run ran; what cannot be read stays None (no Docker client: no Docker version)."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    docker_version = None
    if client is not None:
        with contextlib.suppress(LabError), engine_errors():
            docker_version = client.version().get("Version")
    somaxconn = None
    with contextlib.suppress(OSError, ValueError):
        somaxconn = int(open("/proc/sys/net/core/somaxconn").read())
    return MachineInfo(kernel=platform.release(), cpu_model=cpu, cores=os.cpu_count(), mem_total_bytes=mem_total(),
                       docker_version=docker_version, python=platform.python_version(),
                       nofile_hard=nofile()[1], somaxconn=somaxconn,
                       hostname=platform.node())


def git_commit() -> str | None:
    """The commit of the checkout loadcmp's code runs from; None when installed from a wheel (no
    `.git` there: git is not asked, so a venv inside someone else's repository does not report that
    one's commit). Not LOADCMP_HOME's: that holds stacks and pages, not the code that ran."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        r = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=5)
        if r.returncode == 0:
            return r.stdout.strip()
    return None
