"""Whether this kernel has what the netem path (`--net via=netem`, `loss=`; `qdisc.py`) lays: sch_netem, and the
prio qdisc and u32 filter that put one port under it. Probed once in the loopback of a throwaway network namespace
(`unshare -n`), which leaves nothing behind.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess


@functools.cache
def missing() -> str | None:
    """Why netem cannot be used here, in words; None when the kernel has it."""
    if shutil.which("tc") is None or shutil.which("unshare") is None:
        return "tc or unshare is not installed, so netem cannot be probed"
    if os.geteuid() != 0:
        return "netem needs root (CAP_NET_ADMIN) to lay its qdiscs, and loadcmp runs as another user"
    try:
        r = subprocess.run(["unshare", "-n", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the netem probe did not run ({e})"
    if r.returncode != 0:
        said = (r.stderr or r.stdout).strip().splitlines()
        return "this kernel has no sch_netem (CONFIG_NET_SCH_NETEM: " + (said[-1] if said else "tc refused it") + ")"
    try:  # the prio root and the u32 filters that put the server's port under it
        r = subprocess.run(["unshare", "-n", "sh", "-c", "tc qdisc add dev lo root handle 1: prio && tc filter add dev "
                            "lo parent 1: protocol ip prio 1 u32 match ip dport 1 0xffff flowid 1:1"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the netem probe did not run ({e})"
    if r.returncode != 0:
        said = (r.stderr or r.stdout).strip().splitlines()
        return ("this kernel has netem but not the prio qdisc or the u32 filter that put one port under it "
                "(CONFIG_NET_SCH_PRIO, CONFIG_NET_CLS_U32: " + (said[-1] if said else "tc refused them") + ")")
    return None
