"""A table kept as one parquet file per trial: requests.parquet and parts.parquet are folders, each trial's rows a
file of their own in it, so that a trial adds its own file instead of the whole table being rewritten (a long
capacity search or tune would rewrite it quadratically).

    requests.parquet/
        nginx-50-1-3f0c9a1b2e.parquet   one trial's rows: its label, level and trial, and a hash of the three
        legacy.parquet                  the single file of an older run, moved in by the first trial added after

A trial's file is written beside its place under a name that starts with a dot and renamed over it: readers (and
pyarrow's datasets) skip such names, so they see a trial whole or not at all; a trial written again replaces its
own file. An older run's requests.parquet, one file, is read as it is; the first trial added to it moves it into
the folder as `legacy.parquet`, and a trial written anew has its rows there taken out (the file rewritten beside it
and renamed over it), so that pyarrow reading the folder whole sees each trial once.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..errors import StoreError
from .files import _atomic_write, slug

KEYS = ("label", "level", "trial")
"""What names a trial in these tables."""
LEGACY = "legacy.parquet"
"""An older run's single file, moved into the folder."""

Key = tuple[str, int, int]


def file_name(label: str, level: int, trial: int) -> str:
    """A trial's file: readable by its cell and trial, and a hash of them so that two labels that slug alike
    never share one."""
    digest = hashlib.sha1(f"{label}\0{level}\0{trial}".encode()).hexdigest()[:10]
    return f"{slug(label)[:40]}-{level}-{trial}-{digest}.parquet"


def _as_folder(path: Path) -> None:
    """The table as a folder: made when absent; an older run's single file moved into it (`LEGACY`)."""
    if path.is_dir():
        return
    try:
        if not path.exists():
            path.mkdir(exist_ok=True)
            return
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        os.chmod(tmp, 0o755)
        os.replace(path, tmp / LEGACY)
        os.replace(tmp, path)
    except OSError as e:
        raise StoreError(f"cannot make {path} a folder of trials: {e.strerror or e}") from None


def put(path: Path, key: Key, write: Callable[[str], object]) -> int:
    """One trial's file written into the table `path` (replacing that trial's earlier one); the table's size in
    bytes after."""
    _as_folder(path)
    _atomic_write(path / file_name(*key), write)
    _drop_legacy(path, key)
    return size(path)


def _drop_legacy(path: Path, key: Key) -> None:
    """The older run's rows of a trial just written again taken out of `LEGACY` (rewritten beside it and renamed
    over it; removed when nothing is left), so the folder read whole as a parquet dataset holds each trial once.
    Called after the trial's own file is in place: a reader meanwhile sees its rows twice, never not at all."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    legacy = path / LEGACY
    if not legacy.exists():
        return
    try:
        table = pq.read_table(legacy)
    except (OSError, ValueError) as e:
        raise StoreError(f"cannot read {legacy}: {e}") from None
    if not set(KEYS) <= set(table.column_names):
        return
    mine = pc.and_(pc.and_(pc.equal(pc.cast(table["label"], "string"), key[0]), pc.equal(table["level"], key[1])),
                   pc.equal(table["trial"], key[2]))
    if not pc.any(mine).as_py():
        return
    rest = table.filter(pc.invert(mine))
    if rest.num_rows == 0:
        legacy.unlink()
        return
    _atomic_write(legacy, lambda tmp: pq.write_table(rest, tmp, compression="zstd"))


def size(path: Path) -> int:
    """The table's bytes on disk: its trials' files together (or the one file of an older run)."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in _files(path)) if path.is_dir() else 0


def _files(path: Path) -> list[Path]:
    """The trials' files of a folder, the older run's last; files being written (a dot first) left out."""
    found = [f for f in path.iterdir() if f.suffix == ".parquet" and not f.name.startswith((".", "_"))]
    return sorted(found, key=lambda f: (f.name == LEGACY, f.name))


def _read(f: Path, filters: list[tuple[str, str, object]] | None = None) -> pd.DataFrame:
    try:
        return pd.read_parquet(f, filters=filters)
    except (OSError, ValueError) as e:
        raise StoreError(f"cannot read {f}: {e}") from None


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """Categories (parquet's dictionaries) as plain values: the trials' files each have their own."""
    cats = [c for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)]
    return df.astype({c: object for c in cats}) if cats else df


def read_trial(path: Path, key: Key) -> pd.DataFrame | None:
    """One trial's rows (None: no such table; no rows of that trial: an empty frame)."""
    if not path.exists():
        return None
    where = [(k, "==", v) for k, v in zip(KEYS, key, strict=True)]
    if path.is_file():
        return _plain(_read(path, where)).reset_index(drop=True)
    own = path / file_name(*key)
    if own.exists():
        return _plain(_read(own)).reset_index(drop=True)
    legacy = path / LEGACY
    return _plain(_read(legacy, where)).reset_index(drop=True) if legacy.exists() else pd.DataFrame()


def read_all(path: Path) -> pd.DataFrame | None:
    """Every trial's rows, in one frame (None: no such table)."""
    if not path.exists():
        return None
    if path.is_file():
        return _plain(_read(path))
    frames = [_plain(_read(f)) for f in _files(path)]
    if frames and (path / LEGACY).exists():  # an older run's rows of a trial written again since: the new ones
        newer = {tuple(k) for df in frames[:-1] for k in df[list(KEYS)].drop_duplicates().itertuples(index=False)}
        old = frames[-1]
        frames[-1] = old[[tuple(k) not in newer for k in old[list(KEYS)].itertuples(index=False)]]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
