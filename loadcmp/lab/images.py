"""Server images: a Debian base (pulled, or made with debootstrap), then one
image per server family, tagged by a hash of its inputs so that an unchanged
Dockerfile, content and base never rebuild.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .dockerapi import engine_errors, id_of
from .model import Image, configs_dir
from ..errors import BuildError, DockerUnavailable, LabError, NotOnEngine

if TYPE_CHECKING:
    from docker import DockerClient

LABEL = "loadcmp"
"""Every container and image loadcmp makes carries `loadcmp=1`."""
BASE_DEFAULT = "debian:bookworm-slim"
BASE_LOCAL = "loadcmp/base:bookworm"

Log = Callable[[str], None]


def no_log(_: str) -> None:
    pass


def cache_dir() -> Path:
    d = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "loadcmp"
    d.mkdir(parents=True, exist_ok=True)
    return d




def _apt_mirror() -> str:
    """The Debian mirror this machine's apt uses (the only one reachable here)."""
    for p in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text = p.read_text()
        except OSError:
            continue
        for m in re.finditer(r"(https?://\S+/debian)(?:\s|$)", text):
            return m.group(1)
    return "http://deb.debian.org/debian"


def has_image(client: DockerClient, name: str) -> bool:
    """Whether the engine has an image of that name (or tag)."""
    try:
        with engine_errors():
            client.images.get(name)
        return True
    except NotOnEngine:
        return False


def ensure_base(client: DockerClient, log: Log = no_log) -> str:
    """Return a usable base image: debian:bookworm-slim if present or pullable,
    else loadcmp/base:bookworm, made with debootstrap when missing."""
    for name in (BASE_DEFAULT, BASE_LOCAL):
        if has_image(client, name):
            return name
    if os.environ.get("LOADCMP_TRY_PULL", "1") == "1":
        try:
            log(f"pulling {BASE_DEFAULT}")
            with engine_errors():
                client.images.pull(BASE_DEFAULT)
            return BASE_DEFAULT
        except DockerUnavailable:
            raise
        except LabError as e:  # no registry reachable: the usual case here
            log(f"cannot pull {BASE_DEFAULT} ({type(e.__cause__ or e).__name__}); making {BASE_LOCAL} with debootstrap")
    return make_base(client, log)


def make_base(client: DockerClient, log: Log = no_log) -> str:
    """debootstrap --variant=minbase bookworm + docker import -> loadcmp/base:bookworm."""
    if not shutil.which("debootstrap"):
        raise LabError("no base image and no debootstrap to make one: `apt-get install debootstrap` (or `make setup`)")
    if os.geteuid() != 0:
        raise LabError("making the base image with debootstrap needs root; run `make setup` as root")
    mirror = _apt_mirror()
    logfile = cache_dir() / "debootstrap.log"
    with tempfile.TemporaryDirectory(prefix="loadcmp-base-") as tmp:
        root = Path(tmp) / "rootfs"
        log(f"debootstrap bookworm from {mirror} (log: {logfile})")
        with logfile.open("w") as lf:
            rc = subprocess.run(
                ["debootstrap", "--variant=minbase", "bookworm", str(root), mirror], stdout=lf, stderr=subprocess.STDOUT
            ).returncode
        if rc != 0:
            raise BuildError(f"debootstrap failed (exit {rc}); see {logfile}")
        security = mirror.rsplit("/debian", 1)[0] + "/debian-security"
        (root / "etc/apt/sources.list").write_text(
            f"deb {mirror} bookworm main\ndeb {mirror} bookworm-updates main\ndeb {security} bookworm-security main\n"
        )
        subprocess.run(["chroot", str(root), "apt-get", "clean"], check=False, capture_output=True)
        shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
        (root / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)
        tar = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(tar), "."], check=True)
        log(f"docker import -> {BASE_LOCAL}")
        repo, tag = BASE_LOCAL.split(":")
        with engine_errors():
            client.api.import_image_from_file(str(tar), repository=repo, tag=tag)
    return BASE_LOCAL


def _context_files(image: Image) -> list[tuple[str, Path]]:
    """(name in the build context, file) of an image.

    A shared image (Dockerfile.<name> at the project root) gets the demo pages as configs/www/
    and the entrypoint as configs/entrypoint.sh; a stack's own Dockerfile gets every file of
    its folder but stack.toml (app.toml) and the *.j2 templates (rendered per run, never built in), and the
    demo pages as www/."""
    www = configs_dir() / "www"
    pages = [p for p in sorted(www.rglob("*")) if p.is_file()]
    files: list[tuple[str, Path]] = [("Dockerfile", image.dockerfile)]
    if image.home is None:
        files += [(f"configs/www/{p.relative_to(www)}", p) for p in pages]
        files.append(("configs/entrypoint.sh", configs_dir() / "entrypoint.sh"))
        return files
    own = [p for p in sorted(image.home.rglob("*"))
           if p.is_file() and p != image.dockerfile and p.name not in ("stack.toml", "app.toml") and p.suffix != ".j2"]
    files += [(str(p.relative_to(image.home)), p) for p in own]
    files += [(f"www/{p.relative_to(www)}", p) for p in pages]
    return files


def _context_entries(image: Image) -> list[tuple[str, bytes, bool]]:
    """(name, bytes, executable) of every file of an image's build context."""
    if image.context:  # made, not read (an app's layer): its scripts are executable
        return [(arc, data, data.startswith(b"#!")) for arc, data in image.context]
    return [(arc, path.read_bytes(), os.access(path, os.X_OK)) for arc, path in _context_files(image)]


def _context(image: Image) -> tuple[bytes, str]:
    """The build context of an image as a deterministic tar, and its hash."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for arc, data, executable in _context_entries(image):
            info = tarfile.TarInfo(arc)
            info.size = len(data)
            info.mode = 0o755 if executable else 0o644
            info.mtime = 0
            tf.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def image_tag(image: Image, base_id: str) -> str:
    """loadcmp/<image>:<hash of Dockerfile, content, entrypoint and base (or the image it is built on)>."""
    _, h = _context(image)
    under = image_tag(image.parent, base_id) if image.parent else base_id
    return f"loadcmp/{image.key}:{hashlib.sha256((h + under).encode()).hexdigest()[:12]}"


def build_images(client: DockerClient, images: Iterable[Image], log: Log = no_log,
                 force: bool = False) -> dict[str, str]:
    """Build what is missing (or everything with force), each image after the one it is built on;
    return image key -> tag (the images built on included)."""
    base = ensure_base(client, log)
    with engine_errors():
        base_id = id_of(client.images.get(base))
    out: dict[str, str] = {}
    todo: list[Image] = []
    for image in dict.fromkeys(images):
        chain: list[Image] = []
        step: Image | None = image
        while step is not None:
            chain.append(step)
            step = step.parent
        todo += [i for i in reversed(chain) if i not in todo]
    for image in todo:
        tag = image_tag(image, base_id)
        out[image.key] = tag
        if not force and has_image(client, tag):
            log(f"{tag} is up to date")
            continue
        _build_one(client, image, tag, out[image.parent.key] if image.parent else base, log)
    return out


def _build_one(client: DockerClient, image: Image, tag: str, base: str, log: Log) -> None:
    ctx, _ = _context(image)
    logfile = cache_dir() / f"build-{image.key}.log"
    log(f"building {tag} (log: {logfile})")
    step = "the start"
    with logfile.open("w") as lf:
        try:
            with engine_errors():
                stream = client.api.build(fileobj=io.BytesIO(ctx), custom_context=True, tag=tag,
                                          buildargs={"BASE": base}, network_mode="host", rm=True, forcerm=True,
                                          decode=True, labels={LABEL: "1"})
                for chunk in stream:
                    if "stream" in chunk:
                        text = chunk["stream"]
                        lf.write(text)
                        if text.startswith("Step "):
                            step = text.strip()
                            log(step)
                    if "error" in chunk:
                        lf.write(chunk["error"] + "\n")
                        raise BuildError(f"building {image.key} failed at {step!r}: {chunk['error'].strip()[:200]} "
                                         f"(log: {logfile})")
        except (BuildError, DockerUnavailable):  # ours, or the engine gone (no fault of the build)
            raise
        except (LabError, OSError) as e:  # the engine refused it, or the log file could not be written
            raise BuildError(f"building {image.key} failed at {step!r}: {e} (log: {logfile})") from None
