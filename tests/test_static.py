"""The package type-checks and lints clean (mypy, ruff), as part of the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_is_clean():
    r = subprocess.run([sys.executable, "-m", "mypy", "loadcmp"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:]


def test_ruff_is_clean():
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "loadcmp", "tests", "bench"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:]
