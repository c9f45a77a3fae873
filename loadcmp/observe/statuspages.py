"""What the stacks' own status pages say: busy and idle workers, connections by state.

Pure functions of a page's text (Apache mod_status `?auto`, nginx stub_status,
php-fpm `?json`), tested from fixtures in tests/test_metrics.py; both samplers
(metrics.Sampler on this machine, apimetrics.ApiSampler through the Docker API)
read the pages and hand the text here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable


def parse_mod_status(text: str) -> dict[str, float]:
    """Apache mod_status `?auto` -> apache_busy / apache_idle workers."""
    out: dict[str, float] = {}
    for key, name in (("BusyWorkers", "apache_busy"), ("IdleWorkers", "apache_idle")):
        m = re.search(rf"^{key}:\s*(\d+)", text, re.M)
        if m:
            out[name] = float(m.group(1))
    return out


def parse_stub_status(text: str) -> dict[str, float]:
    """nginx stub_status -> nginx_active connections and reading / writing / waiting."""
    out: dict[str, float] = {}
    m = re.search(r"Active connections:\s*(\d+)", text)
    if m:
        out["nginx_active"] = float(m.group(1))
    m = re.search(r"Reading:\s*(\d+)\s+Writing:\s*(\d+)\s+Waiting:\s*(\d+)", text)
    if m:
        out["nginx_reading"], out["nginx_writing"], out["nginx_waiting"] = (float(x) for x in m.groups())
    return out


FPM_FIELDS = {"active processes": "fpm_active", "idle processes": "fpm_idle", "listen queue": "fpm_queue",
              "max children reached": "fpm_max_children_reached"}


def parse_fpm_status(text: str) -> dict[str, float]:
    """php-fpm status `?json` -> fpm_active / fpm_idle / fpm_queue / fpm_max_children_reached."""
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError(f"php-fpm status is not a JSON object: {text[:60]!r}")
    return {name: float(doc[key]) for key, name in FPM_FIELDS.items() if key in doc}


STATUS_PARSERS: dict[str, Callable[[str], dict[str, float]]] = {
    "apache": parse_mod_status, "nginx": parse_stub_status, "fpm": parse_fpm_status,
}
"""A stack's status page kind (stacks.status_paths) -> its parser."""


def with_busy_workers(status: dict[str, float]) -> dict[str, float]:
    """Adds busy_workers: the front server's workers where it has them (Apache), else PHP's (nginx)."""
    busy = status.get("apache_busy", status.get("fpm_active"))
    return status if busy is None else {**status, "busy_workers": busy}
