"""The package type-checks and lints clean (mypy, ruff with its complexity and size rules), as part of the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_is_clean():
    r = subprocess.run([sys.executable, "-m", "mypy", "loadcmp"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:]


def test_ruff_is_clean():
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "loadcmp", "tests",
                        "bench"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:]


def test_ruff_keeps_the_size_rules():
    """The ruff run above holds every function of loadcmp/ to a size one reads in one go (ARCHITECTURE.md)."""
    import tomllib

    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"C901", "PLR0913", "PLR0915"} <= set(lint["select"]), lint["select"]
    assert lint["pylint"]["max-args"] <= 10 and lint["pylint"]["max-statements"] <= 45, lint["pylint"]
    assert lint["mccabe"]["max-complexity"] <= 15, lint["mccabe"]
    size = {"C", "C9", "C90", "C901", "PL", "PLR", "PLR0", "PLR09", "PLR091", "PLR0913", "PLR0915", "ALL"}
    kept_out = {f: rules for f, rules in lint.get("per-file-ignores", {}).items()
                if not f.startswith("tests/") and size & set(rules)}
    assert not kept_out, f"loadcmp/ and bench/ keep the size rules whole: {kept_out}"
