"""Where and with what a run ran: the machine, the Docker engine, the git commit.

Stored in run.json so that a result can be judged (and repeated) elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from ..load.limits import nofile
from ..records import MachineInfo
from ..units import mem_total


def this_process() -> str:
    """`pid:start` of this process (its start in clock ticks since boot): what a container or a
    run.json records of its owner. A pid alone could be another process's by the time it is read."""
    return f"{os.getpid()}:{_started(os.getpid())}"


def this_host() -> str:
    """The name of the machine the owner process runs on (its pid means nothing elsewhere)."""
    return platform.node()


def owner_gone(owner: str, host: str) -> bool:
    """True when the process `owner` (from `this_process`) ran on this machine and is gone.
    A process on another machine cannot be judged from here: False."""
    if host != this_host():
        return False
    pid, _, start = owner.partition(":")
    if not pid.isdigit():
        return False
    now = _started(int(pid))
    return now is None or (start not in ("", "None") and str(now) != start)


def _started(pid: int) -> int | None:
    """A process's start time (field 22 of /proc/PID/stat), None when there is no such process."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def machine_info(client: Any | None = None) -> MachineInfo:
    """Where the run ran; what cannot be read stays None (no Docker client: no Docker version)."""
    import docker

    cpu = ""
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    docker_version = None
    if client is not None:
        with contextlib.suppress(docker.errors.DockerException, OSError):  # requests' errors are OSErrors
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
