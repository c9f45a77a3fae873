"""Writing a results folder's files: each beside its place, then renamed over it, so a reader sees a file whole or
not at all (`_atomic_write`); JSON documents so written; a name made safe for a file's (`slug`)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import StoreError


def _atomic_write(path: Path, write: Callable[[str], object]) -> None:
    """Write beside `path`, then rename over it: a reader sees the old file or the new one, never
    half of one. A full disk or a folder gone is a StoreError; the file as it was stays."""
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(fd)
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as e:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise StoreError(f"cannot write {path}: {e.strerror or e}; the file as it was is kept") from None
        raise


def write_json(path: Path, doc: object) -> None:
    def w(tmp: str) -> None:
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2, default=_jsonable)
            f.write("\n")

    _atomic_write(path, w)


def _jsonable(o: object) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return str(o)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "run"
