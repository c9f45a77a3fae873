"""Debian's Prometheus for the export tests: started on loopback with a config and a storage folder of the test's
own, asked over its HTTP API, and stopped whatever happens."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def need(*tools: str) -> None:
    """`make setup` installs them (Debian's prometheus); a machine set up otherwise skips, saying why."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (make setup installs Debian's prometheus)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        q = {"query": expr, **({"time": f"{at:.3f}"} if at is not None else {})}
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{urllib.parse.urlencode(q)}", timeout=10) as r:
            doc = json.load(r)
        assert doc["status"] == "success", doc
        return list(doc["data"]["result"])

    def scraping(self, timeout: float = 30) -> None:
        """Wait until Prometheus scrapes its target (it takes up new targets every 5 s), answering or not: a load
        started before that would have its first seconds unseen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"{self.url}/api/v1/targets", timeout=10) as r:
                targets = json.load(r)["data"]["activeTargets"]
            if targets and all(not t["lastScrape"].startswith("0001") for t in targets):
                return
            time.sleep(0.2)
        raise AssertionError(f"prometheus did not scrape its target in {timeout} s")


@contextlib.contextmanager
def running(folder: Path, scrape: str | None = None, interval: str = "1s") -> Iterator[Prometheus]:
    """Prometheus on a free loopback port over `folder/data`, scraping `scrape` (host:port) when given; its log
    in `folder/prometheus.log`."""
    need("prometheus")
    config = folder / "prometheus.yml"
    jobs = (f"scrape_configs:\n  - job_name: loadcmp\n    scrape_interval: {interval}\n"
            f"    static_configs:\n      - targets: ['{scrape}']\n") if scrape else ""
    config.write_text(f"global:\n  scrape_interval: {interval}\n{jobs}")
    port = free_port()
    log = (folder / "prometheus.log").open("w")
    proc = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
                             "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            assert proc.poll() is None, (folder / "prometheus.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "prometheus did not get ready in 30 s"
            time.sleep(0.2)
        yield Prometheus(url)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
