"""What is copied into a container before it starts: the rendered configs (into /etc/loadcmp) and,
on another machine's engine, the user's pages (--www; a local engine mounts them instead).
Deterministic tars built in memory."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path


def config_tar(files: dict[str, str], secret: dict[str, bytes] | None = None) -> bytes:
    """The rendered configs under loadcmp/, and `secret` files (a server's TLS key and certificate: `certs`) beside
    them, owned by root and readable by root only (the servers read them before they drop to www-data)."""
    secret = secret or {}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        dirs = sorted({str(Path("loadcmp", n).parent) for n in [*files, *secret]})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tf.addfile(info)
        items = [(n, t.encode(), 0o644) for n, t in files.items()] + [(n, b, 0o600) for n, b in secret.items()]
        for name, data, mode in items:
            info = tarfile.TarInfo(f"loadcmp/{name}")
            info.size = len(data)
            info.mode = mode
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def pages_tar(folder: Path, name: str) -> bytes:
    """The user's pages as a tar under `name/`, readable by all and writable by none (as the mount is)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.add(str(folder), arcname=name, filter=_read_only)
    return buf.getvalue()


def _read_only(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode = 0o555 if info.isdir() else 0o444
    return info
