"""loadcmp installed as users install it (a wheel in a fresh venv with its dependencies, run from another folder:
`history` finds change points with nothing added by hand, and a stack starts), and the
order in which loadcmp.lab.stacks.project_root looks for configs/ and the Dockerfiles."""

from __future__ import annotations

import filecmp
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from loadcmp.lab import provenance, stacks

ROOT = Path(__file__).resolve().parent.parent
PROJECT_DATA = ["Dockerfile.apache", "Dockerfile.nginx",
                *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "configs").rglob("*") if p.is_file())]
"""What the wheel must carry in loadcmp/_data, byte for byte (setup.py's PROJECT_DATA, file by file)."""


def _head() -> str | None:
    """This checkout's commit as git says it (None where git will not answer here)."""
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def test_project_root_prefers_loadcmp_home_then_the_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOADCMP_HOME", str(tmp_path))
    assert stacks.project_root() == tmp_path
    assert stacks.configs_dir() == tmp_path / "configs"
    assert provenance.git_commit() == _head()  # the code's checkout, not LOADCMP_HOME's configs
    monkeypatch.setenv("LOADCMP_HOME", "")  # empty counts as unset
    assert stacks.project_root() == ROOT
    monkeypatch.delenv("LOADCMP_HOME")
    assert stacks.project_root() == ROOT  # the tests import loadcmp from this checkout


def test_project_root_falls_back_to_the_installed_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LOADCMP_HOME", raising=False)
    site = tmp_path / "site-packages"
    from loadcmp.lab import model

    monkeypatch.setattr(model, "__file__", str(site / "loadcmp" / "lab" / "model.py"))
    assert stacks.project_root() == site / "loadcmp" / "_data"
    (site / "configs").mkdir(parents=True)  # some other package's top-level configs/ is no checkout
    assert stacks.project_root() == site / "loadcmp" / "_data"
    (site / "configs" / "stacks").mkdir()
    assert stacks.project_root() == site / "loadcmp" / "_data"  # a checkout has its parts too
    (site / "configs" / "parts").mkdir()
    assert stacks.project_root() == site


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    said = f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert r.returncode == 0, f"{' '.join(map(str, args))} -> exit {r.returncode}\n{said}"
    return r


@dataclass(frozen=True)
class Installed:
    """The wheel installed with its dependencies in a fresh venv (as `pipx install .` does), and a folder that
    is not the checkout with an environment that does not point at it."""

    wheel: Path
    venv: Path
    elsewhere: Path
    env: dict[str, str]
    seconds: float  #: wheel + venv + install

    def run(self, *args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return _run([self.venv / "bin" / "loadcmp", *args], cwd=self.elsewhere, env=self.env, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp_path = tmp_path_factory.mktemp("installed")
    t0 = time.monotonic()
    # build isolation: pyproject's build requirements (setuptools>=68, Cython) need not be in this venv
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", ".", "-w", tmp_path / "dist"], cwd=ROOT)
    (wheel,) = (tmp_path / "dist").glob("loadcmp-*.whl")
    # nothing of this checkout on the path: with it, pip takes loadcmp for installed already and skips the wheel
    env = {k: v for k, v in os.environ.items() if k not in ("LOADCMP_HOME", "PYTHONPATH", "VIRTUAL_ENV")}
    env["COLUMNS"] = "200"
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the catalog's index, away from the user's
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path, env=env)
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel], cwd=tmp_path,
         env=env, timeout=900)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return Installed(wheel, venv, elsewhere, env, time.monotonic() - t0)


@pytest.mark.slow
def test_the_installed_command_finds_change_points(installed: Installed) -> None:
    """`history` as installed, with nothing added by hand: Otava comes with loadcmp, and a run 30 % slower
    is found as a change point at that run."""
    root = installed.elsewhere / "results"
    make = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]); "
            "from synthetic import make_runs; make_runs(Path(sys.argv[1]), 10, step_at=7, step=-0.3, seed=1)")
    helpers = Path(__file__).parent / "helpers"  # the tests' made-up runs, written by the wheel's own store
    _run([installed.venv / "bin" / "python", "-c", make, root, helpers], cwd=installed.elsewhere, env=installed.env)
    r = installed.run("history", root, "--metric", "rps", "--json")
    doc = json.loads(r.stdout)
    (series,) = doc["series"]
    (point,) = series["change_points"]
    assert point["direction"] == "worse" and point["run"]["path"].endswith("run-00007"), point


@pytest.mark.docker
@pytest.mark.slow
def test_the_wheel_runs_a_stack_outside_the_checkout(installed: Installed, docker_client, images) -> None:  # type: ignore[no-untyped-def]
    """With the wheel installed in a fresh venv, from another folder list the tunables, start nginx (reusing
    the image the checkout built: same files, same tag), GET a page, stop it."""
    wheel, venv, elsewhere, env = installed.wheel, installed.venv, installed.elsewhere, installed.env
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in PROJECT_DATA if f"loadcmp/_data/{f}" not in names]
    assert not missing, f"the wheel lacks {missing}"
    page = [f"loadcmp/live/static/{f}" for f in ("index.html", "live.js", "live.css", *(
        f"vendor/uplot-1.6.32/{v}" for v in ("uPlot.iife.min.js", "uPlot.min.css", "LICENSE")))]
    assert not [f for f in page if f not in names], "the wheel lacks the live page or uPlot (and its licence)"
    t_installed = time.monotonic()

    loadcmp = venv / "bin" / "loadcmp"

    probe = ("from loadcmp.lab import provenance, stacks; "
             "print(stacks.project_root()); print(provenance.git_commit())")
    r = _run([venv / "bin" / "python", "-c", probe], cwd=elsewhere, env=env)
    root, commit = r.stdout.split()
    assert Path(root).parts[-2:] == ("loadcmp", "_data") and "site-packages" in root, root
    assert commit == "None" and r.stderr == ""
    differ = [f for f in PROJECT_DATA if not filecmp.cmp(ROOT / f, Path(root) / f, shallow=False)]
    assert not differ, f"installed copies differ from the checkout: {differ}"
    assert os.access(Path(root) / "configs" / "entrypoint.sh", os.X_OK)  # hashed into the image tag

    out = _run([loadcmp, "servers", "--tunables"], cwd=elsewhere, env=env).stdout
    for needle in ("nginx", "apache-prefork", "nginx.worker_connections", "prefork.MaxRequestWorkers"):
        assert needle in out

    port = _free_port()
    doc: dict = {}
    try:
        r = _run([loadcmp, "up", "--server", "nginx", "--port", port, "--json"], cwd=elsewhere, env=env,
                 timeout=120)
        doc = json.loads(r.stdout)
        assert doc["url"].startswith(f"http://127.0.0.1:{port}")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10) as resp:
            assert resp.status == 200
            assert resp.read() == (ROOT / "configs" / "www" / "index.html").read_bytes()
        tags = {t for name in doc["containers"] for t in docker_client.containers.get(name).image.tags}
        assert images["nginx"] in tags, f"the installed copy built {tags}, not the checkout's {images['nginx']}"
    finally:  # only this run's containers when its id is known (a whole suite may have others up)
        _run([loadcmp, "down", *(["--run", doc["run_id"]] if doc.get("run_id") else [])], cwd=elsewhere, env=env,
             timeout=120)
    left = {c.name for c in docker_client.containers.list(all=True, filters={"label": "loadcmp=1"})}
    assert not left & set(doc["containers"])
    print(f"wheel + venv + install: {installed.seconds:.0f} s; the rest: {time.monotonic() - t_installed:.0f} s")
