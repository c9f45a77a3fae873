"""A real `loadcmp run ... --live` watched in Debian's Chromium (Playwright): when each trial's first points
appear, whether the last point of each panel equals the stored records, and a screenshot of the page.

    flock /tmp/loadcmp-docker.lock .venv/bin/python scripts/live-screenshot.py OUT_DIR SHOT.png RUN_ARGS...
    e.g. ... /tmp/live docs/images/live.png --server nginx -c 50 -t 10s

Not a test (it needs Docker and takes a run's time); docs/live.md's screenshot is made with it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ("ok", "failed", "p50_ms", "p99_ms", "inflight")
SERVER = ("cpu_pct", "mem_bytes", "procs", "tcp_estab")
PROBE = """() => { const out = {};
  for (const [k, t] of window.loadcmp.state.trials) out[k] = [t.client.size, t.server.size, !!t.stored];
  return out; }"""
DRAWN = """() => { const r = {};
  for (const [k, t] of window.loadcmp.state.trials)
    r[k] = {client: [...t.client.values()], server: [...t.server.values()]};
  return r; }"""


def of_trial(df: pd.DataFrame, key: str) -> pd.DataFrame:
    """The stored rows of one trial (`server|level|trial`, the page's key), by second."""
    server, level, trial = key.rsplit("|", 2)
    return df[(df.server == server) & (df.level == int(level)) & (df.trial == int(trial))].sort_values("second")


def main() -> None:
    out, shot, args = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([str(ROOT / ".venv/bin/loadcmp"), "run", *args, "--live", str(port), "--out", str(out)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    assert p.stderr is not None
    def read() -> None:
        for line in p.stderr or []:
            err.append(line)

    threading.Thread(target=read, daemon=True).start()
    while not any("live: " in line for line in err):
        assert p.poll() is None, "".join(err)
        time.sleep(0.05)
    url = next(line for line in err if "live: " in line).split("live: ")[1].split()[0]
    seen: dict[str, dict[str, float]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.goto(url)
        while p.poll() is None:  # when each trial's first client and server points are on the page
            t = time.time()
            for k, (client, server, stored) in page.evaluate(PROBE).items():
                d = seen.setdefault(k, {"trial": t})
                for name, there in (("client", client), ("server", server), ("stored", stored)):
                    if there and name not in d:
                        d[name] = t
            time.sleep(0.1)
        page.wait_for_selector("#end:not([hidden])", timeout=20_000)
        drawn = page.evaluate(DRAWN)
        page.click("#trials button >> nth=0")
        page.wait_for_timeout(600)
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    print(f"exit {p.returncode}; {url}")
    folder = max(out.iterdir(), key=lambda f: f.stat().st_mtime)
    tl, sv = pd.read_parquet(folder / "timeline.parquet"), pd.read_parquet(folder / "server.parquet")
    for k, d in seen.items():
        c, s = of_trial(tl, k), of_trial(sv, k)
        window = {side: sorted((r for r in drawn[k][side] if r["second"] >= 0), key=lambda r: r["second"])
                  for side in ("client", "server")}
        warm = {side: sum(r["second"] < 0 for r in drawn[k][side]) for side in ("client", "server")}
        same_c = all(window["client"][-1][col] == c.iloc[-1][col] for col in CLIENT)
        same_s = all(window["server"][-1][col] == s.iloc[-1][col] for col in SERVER)
        print(f"{k}: first client point {d.get('client', 0) - d['trial']:.1f} s, first server point "
              f"{d.get('server', 0) - d['trial']:.1f} s after the trial began (start and priming in it); "
              f"warm-up seconds drawn: client {warm['client']}, server {warm['server']}; "
              f"last point = stored: client {same_c} ({len(window['client'])} of {len(c)} s), "
              f"server {same_s} ({len(window['server'])} of {len(s)} s)")


if __name__ == "__main__":
    main()
