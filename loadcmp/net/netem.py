"""Whether this kernel has sch_netem, the packet-level path that takes `loss=`: probed once by adding a netem
qdisc to the loopback of a throwaway network namespace (`unshare -n`), which leaves nothing behind.
"""

from __future__ import annotations

import functools
import shutil
import subprocess


@functools.cache
def missing() -> str | None:
    """Why netem cannot be used here, in words; None when the kernel has it."""
    if shutil.which("tc") is None or shutil.which("unshare") is None:
        return "tc or unshare is not installed, so netem cannot be probed"
    try:
        r = subprocess.run(["unshare", "-n", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the netem probe did not run ({e})"
    if r.returncode == 0:
        return None
    said = (r.stderr or r.stdout).strip().splitlines()
    return "this kernel has no sch_netem (CONFIG_NET_SCH_NETEM: " + (said[-1] if said else "tc refused it") + ")"
