"""The user's pages (`--www`): which file a request path is served from, and the hash run.json keeps of them."""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import unquote


INDEXES = ("index.html", "index.php")
"""What every stack serves for a folder (`index index.html index.php`)."""


def page_file(www: Path, page: str) -> Path | None:
    """The file of the user's pages a request path is served from, or None when there is none.

    `/a/b.php?x=1` -> www/a/b.php; `/` or a folder -> its index.html or index.php. Never outside `www`."""
    path = unquote(page.split("?", 1)[0].split("#", 1)[0]).lstrip("/")
    root = www.resolve()
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        return None
    if target.is_dir():
        return next((target / i for i in INDEXES if (target / i).is_file()), None)
    return target if target.is_file() else None


def www_digest(www: Path) -> dict[str, str | int]:
    """The user's pages as run.json records them: the folder, how many files, and one hash of every
    file's path and bytes (so two runs can be shown to have served the same site)."""
    h = hashlib.sha256()
    files = sorted(p for p in www.rglob("*") if p.is_file())
    for p in files:
        h.update(str(p.relative_to(www)).encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return {"path": str(www), "files": len(files), "sha256": h.hexdigest()}
