"""Results folders made from the checked-in runs with their figures changed, for tests of verdicts and reports."""

from __future__ import annotations

import copy
import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent.parent / "fixtures"
RUN_2X3X2 = FIXTURES / "run-2x3x2"


def stored_run(folder: Path, rps: dict[str, list[float]] | None = None,
               edit: Callable[[dict[str, Any]], None] | None = None, fixture: Path = RUN_2X3X2) -> Path:
    """`fixture` copied to `folder`, each cell's trials replaced by one trial per value in `rps[server]`
    (the same values at every level); `edit` then changes any trial (and `run.json` is written back)."""
    shutil.copytree(fixture, folder)
    run = json.loads((folder / "run.json").read_text())
    if rps is not None:
        firsts = [t for t in run["trials"] if t["trial"] == 1]
        run["trials"] = []
        for t0 in firsts:
            for i, v in enumerate(rps[t0["server"]]):
                t = copy.deepcopy(t0)
                t["trial"] = i + 1
                t["result"]["rps"] = v
                run["trials"].append(t)
    for t in run["trials"]:
        if edit is not None:
            edit(t)
    (folder / "run.json").write_text(json.dumps(run))
    return folder


def client_bound(*servers: str, reason: str = "the load thread was busy 99% of the time"
                 ) -> Callable[[dict[str, Any]], None]:
    """An `edit` marking these servers' trials client-bound."""
    def edit(t: dict[str, Any]) -> None:
        if t["server"] in servers:
            t["result"].update(client_bound=True, client_bound_reason=reason)
    return edit


def killed_owner() -> str:
    """`pid:start` of a child process killed with SIGKILL (and reaped), as run.json records its owner
    (`lab.provenance.this_process`): an owner that is gone."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    start = open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[19]
    child.send_signal(signal.SIGKILL)
    child.wait()
    return f"{child.pid}:{start}"
