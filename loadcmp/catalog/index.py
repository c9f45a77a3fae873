"""The catalog over a results root: every folder with its state, and its trials' figures in an index.

The results folders stay the truth. DuckDB reads each folder's run.json in place
(`read_blob`; run.json holds every trial's figures, so the per-second parquet is not
needed for a cell's values) and keeps what the catalog answers from in an index (each
run's folder, state and cells with their Values, `CELLS`): one
DuckDB file per results root under the user's cache folder
(`$XDG_CACHE_HOME/loadcmp/catalog-<hash of the root's path>.duckdb`, `lab.images.cache_dir`),
never inside the root. The index may be deleted at any time; it is rebuilt on the next
opening. A folder is re-read only when its run.json's mtime or size changed since it was
indexed; a folder without run.json is judged again on every opening, and so is a running
run's owner (it may have died since). When another process holds the index, this one builds
its own in memory.

Every folder directly under the root is listed (dot-folders excepted): complete,
interrupted, running, abandoned, or broken with the reason (`folder.judge`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from ..errors import UsageError
from .folder import CELL_COLUMNS, bound_cells, cell_row, check_metric, entry, judge, started_of, state_of, values
from .model import METRICS, CellKey, RunEntry, Value

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

__all__ = ["Catalog", "cache_file", "entry", "open_catalog", "run_folders"]

SCHEMA = "5"
"""The index's own format: an index of another is dropped and rebuilt. Raised whenever what a cell keeps, or
how its Values are made, changes (an unchanged folder is never read again)."""

RUNS = {"folder": "VARCHAR", "mtime_ns": "BIGINT", "size": "BIGINT", "state": "VARCHAR", "name": "VARCHAR",
        "run_id": "VARCHAR", "kind": "VARCHAR", "started": "VARCHAR", "sort_key": "DOUBLE", "reason": "VARCHAR",
        "status": "VARCHAR", "owner": "VARCHAR", "host": "VARCHAR", "hostname": "VARCHAR"}
CELLS = {"folder": "VARCHAR", "label": "VARCHAR", "stack": "VARCHAR", "level": "INTEGER", "page": "VARCHAR",
         "protocol": "VARCHAR", "streams": "INTEGER", "traffic": "VARCHAR", "app": "VARCHAR",
         **{f"{m}_{k}": "DOUBLE" for m in METRICS for k in ("mean", "low", "high")},
         **{f"{m}_n": "INTEGER" for m in METRICS}, "client_bound": "BOOLEAN"}
"""A run's cell: each metric's Value over its measured trials, made when the run is indexed (`folder.values`:
the report's Estimate), so that a warm query needs neither the trials nor pandas."""
SPLITS = {"key": "VARCHAR PRIMARY KEY", "found": "VARCHAR"}
"""Where a series of values splits (`Catalog.remembered`), by a hash of the values and the test: a warm history
imports neither Otava nor scipy (most of a fresh process's time)."""
Splits = list[list[float]]
"""A series' change points as Otava finds them, each [index, mean before, mean after, p-value]."""
FILTERS = ("label", "stack", "level", "page", "protocol", "streams", "traffic", "app")
"""What `Catalog.values` selects cells by (the columns of `CELLS`: a history's filters, or one cell's all)."""


class Filters(TypedDict, total=False):
    """`Catalog.values`' filters (`FILTERS`), each None or left out to match anything."""

    label: str | None
    stack: str | None
    level: int | None
    page: str | None
    protocol: str | None
    streams: int | None
    traffic: str | None
    app: str | None


MEASURED = ("complete", "interrupted")
"""The states whose trials give points: a running or abandoned run's figures are not final."""


def cache_file(root: Path) -> Path:
    """Where the index of `root` is kept: the user's cache folder, one file per root."""
    from ..lab.images import cache_dir

    key = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]
    return cache_dir() / f"catalog-{key}.duckdb"


@dataclass
class Catalog:
    """The folders of a results root, oldest first, and the index their cells' Values are queried from."""

    root: Path
    runs: list[RunEntry]
    con: DuckDBPyConnection = field(repr=False)  #: the DuckDB connection of the index
    where: str = ""  #: the index file, or ":memory:"

    def run(self, path: Path) -> RunEntry | None:
        """The entry of a folder of this root (None: not one of its folders)."""
        path = Path(path).resolve()
        return next((r for r in self.runs if r.path.resolve() == path), None)

    def values(self, metric: str, *, exclude: Path | None = None,
               **match: Unpack[Filters]) -> list[tuple[Path, CellKey, Value]]:
        """Each cell's Value of `metric` in the complete and interrupted runs, oldest run first: where each key of
        `match` (`FILTERS`) equals its value, when not None; `exclude`: a folder left
        out."""
        check_metric(metric)  # a column's name: only one of METRICS
        if unknown := set(match) - set(FILTERS):
            raise TypeError(f"no filter {', '.join(sorted(unknown))}; the filters are {', '.join(FILTERS)}")
        where = [f"{k} = ?" for k, v in match.items() if v is not None]
        args: list[object] = [v for v in match.values() if v is not None]
        if exclude is not None:
            where.append("c.folder <> ?")
            args.append(_key(self.root.resolve(), Path(exclude).resolve()))
        cols = ", ".join(CELL_COLUMNS)
        sql = (f"SELECT c.folder, {cols}, {metric}_mean, {metric}_low, {metric}_high, "
               f"{metric}_n, client_bound FROM cells c JOIN runs r USING (folder) WHERE r.state IN {MEASURED} "
               f"{''.join(' AND ' + w for w in where)} ORDER BY r.sort_key, c.folder, {cols}")
        return [(self.root if rec[0] == "." else self.root / rec[0], CellKey(*rec[1:8]), Value(*rec[8:]))
                for rec in self.con.execute(sql, args).fetchall()]

    def close(self) -> None:
        self.con.close()

    def remembered(self, key: str, compute: Callable[[], Splits]) -> Splits:
        """`compute()`'s splits of a series, kept in the index as JSON under `key` (a hash of all it depends on)
        and computed only the first time."""
        with _UPDATING:
            row = self.con.execute("SELECT found FROM splits WHERE key = ?", [key]).fetchone()
        if row is not None:
            return json.loads(row[0])
        value = compute()
        with _UPDATING:
            self.con.execute("INSERT OR REPLACE INTO splits VALUES (?, ?)", [key, json.dumps(value)])
        return value

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


STORE_FILES = ("run.json", "timeline.parquet", "server.parquet", "summary.csv")
"""The files a results folder holds: one of them makes a folder a run (broken when run.json is missing)."""


def _key(root: Path, folder: Path) -> str:
    """A folder's key in the index: its path under the root ("." for the root itself; "": not under it)."""
    try:
        return folder.relative_to(root).as_posix()
    except ValueError:
        return ""


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as e:
        raise UsageError(f"{folder} cannot be listed: {e.strerror}") from None


def run_folders(root: Path) -> list[Path]:
    """The results folders under the root, as `serve` lists them: each folder that holds a store file, the runs
    one level further (a write-up's), and each empty folder (a run that died before it wrote anything: broken).
    A folder of other files and no run (a write-up's summary) is no run. A root that is itself a results folder:
    that one alone."""
    if (root / "run.json").is_file():
        return [root]
    out = []
    for folder in _children(root):
        if any((folder / f).exists() for f in STORE_FILES):
            out.append(folder)
            continue
        inner = [p for p in _children(folder) if (p / "run.json").is_file()]
        if inner:
            out += inner
        elif not any(folder.iterdir()):
            out.append(folder)
    return out


def _stamp(folder: Path) -> tuple[int, int] | None:
    """run.json's mtime and size: what says whether a folder must be read again (None: no run.json)."""
    try:
        st = (folder / "run.json").stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _connect(where: Path | None, rebuild: bool) -> tuple[DuckDBPyConnection, str]:
    """The index's connection and where it is, its tables made (dropped first on `rebuild` or another SCHEMA);
    in memory when there is no file to keep it in."""
    import duckdb

    con = _on_file(where, rebuild) if where is not None else None
    if con is not None:
        return con, str(where)
    con = duckdb.connect(":memory:")
    _tables(con)
    return con, ":memory:"


def _on_file(where: Path, rebuild: bool) -> DuckDBPyConnection | None:
    """The index in `where` (a damaged file made anew); None when the file is another process's or cannot be
    written."""
    import duckdb

    for attempt in range(2):
        con = None
        try:
            if rebuild or attempt:
                where.unlink(missing_ok=True)
            con = duckdb.connect(str(where))
            _tables(con)
            return con
        except (duckdb.Error, OSError) as e:
            if con is not None:
                con.close()
            if isinstance(e, OSError) or "lock" in str(e).lower():
                return None  # another process's index, or a cache folder that cannot be written
    return None


def _tables(con: DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    found = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if found is None or found[0] != SCHEMA:
        con.execute("DROP TABLE IF EXISTS runs")
        con.execute("DROP TABLE IF EXISTS trials")
        con.execute("DROP TABLE IF EXISTS cells")
        con.execute("DROP TABLE IF EXISTS splits")
        con.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", [SCHEMA])
    for name, cols in (("runs", RUNS), ("cells", CELLS), ("splits", SPLITS)):
        con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(f'{c} {t}' for c, t in cols.items())})")


def _read_in_place(con: DuckDBPyConnection, folders: list[Path]) -> dict[Path, str | None]:
    """Each folder's run.json text, read by DuckDB in one pass (None: not readable as text now)."""
    texts: dict[Path, str | None] = {}
    files = {str(f / "run.json"): f for f in folders}
    try:
        for name, blob in con.execute("SELECT filename, content FROM read_blob(?)", [list(files)]).fetchall():
            texts[files[name]] = blob.decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - one file vanished or is unreadable: each is then read on its own
        texts = {}
    for f in folders:
        if f not in texts:
            try:
                texts[f] = (f / "run.json").read_text(errors="replace")
            except OSError:
                texts[f] = None
    return texts


def _index(con: DuckDBPyConnection, root: Path, fresh: list[Path], stamps: dict[Path, tuple[int, int] | None]) -> None:
    """Read the folders `fresh` and put their runs and trials in the index."""
    import pyarrow as pa

    readable = [f for f in fresh if stamps[f] is not None]
    texts = _read_in_place(con, readable) if readable else {}
    runs: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    for f in fresh:
        e, doc, rows = judge(f, texts.get(f))
        stamp = stamps[f] or (0, 0)
        key = _key(root, f)
        runs.append({"folder": key, "mtime_ns": stamp[0], "size": stamp[1], "state": e.state, "name": e.name,
                     "run_id": e.run_id, "kind": e.kind, "started": e.started, "sort_key": started_of(f, doc)[1],
                     "reason": e.reason, **_owner(doc)})
        bound = bound_cells(doc) if doc is not None and rows else set()
        for cell, (stack, vals) in values(rows, bound).items():
            cells.append({"folder": key, "stack": stack, **cell_row(cell),
                          **{f"{m}_{k}": getattr(v, k) for m, v in vals.items() for k in ("mean", "low", "high", "n")},
                          "client_bound": cell in bound})
    for name, cols, recs in (("runs", RUNS, runs), ("cells", CELLS, cells)):
        if recs:
            arrow = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(), "DOUBLE": pa.float64(),
                     "BOOLEAN": pa.bool_()}
            new_rows = pa.Table.from_pylist(recs, schema=pa.schema([(c, arrow[t]) for c, t in cols.items()]))
            con.register("new_rows", new_rows)
            con.execute(f"INSERT INTO {name} SELECT * FROM new_rows")
            con.unregister("new_rows")


def _owner(doc: dict[str, Any] | None) -> dict[str, Any]:
    """What re-judging a running run's state needs of its run.json."""
    if doc is None:
        return {"status": None, "owner": None, "host": None, "hostname": None}
    return {"status": doc.get("status"), "owner": doc.get("owner"), "host": doc.get("host"),
            "hostname": (doc.get("machine") or {}).get("hostname")}


def _entries(con: DuckDBPyConnection, root: Path) -> list[RunEntry]:
    """Every indexed folder, oldest first; a running run's owner judged again (it may have died)."""
    out = []
    recs = con.execute("SELECT folder, state, name, run_id, kind, started, reason, status, owner, host, hostname "
                       "FROM runs ORDER BY sort_key, folder").fetchall()
    for folder, state, name, run_id, kind, started, reason, status, owner, host, hostname in recs:
        path = root if folder == "." else root / folder
        if status == "running":
            doc = {"status": status, "owner": owner, "host": host, "machine": {"hostname": hostname}}
            new, why = state_of(path, {k: v for k, v in doc.items() if v is not None})
            if new != state:
                con.execute("UPDATE runs SET state = ?, reason = ? WHERE folder = ?", [new, why, folder])
            state, reason = new, why
        out.append(RunEntry(path, state, name=name, run_id=run_id, kind=kind, started=started, reason=reason))
    return out


def open_catalog(root: Path, rebuild: bool = False, cache: Path | None = None) -> Catalog:
    """The catalog of `root`'s folders: the index brought up to date (`rebuild`: made anew); `cache`: the index
    file (default `cache_file(root)`; `LOADCMP_CATALOG_CACHE=memory` keeps it in memory)."""
    root = Path(root)
    if not root.is_dir():
        why = "a file" if root.exists() else "no such directory"
        raise UsageError(f"{root} is not a folder of results folders ({why})")
    folders = run_folders(root)
    memory = os.environ.get("LOADCMP_CATALOG_CACHE") == "memory"
    try:
        file = None if memory else (cache or cache_file(root))
    except OSError:  # no cache folder can be made: the index lives in memory
        file = None
    con, where = _connect(file, rebuild)
    try:
        with _UPDATING:
            _update(con, root, folders)
            return Catalog(root, _entries(con, root), con, where)
    except BaseException:
        con.close()
        raise


_UPDATING = threading.Lock()
"""One update of an index at a time in this process (`serve` answers in threads); other processes take turns by
DuckDB's lock on the file."""


def _update(con: DuckDBPyConnection, root: Path, folders: list[Path]) -> None:
    """The index made to hold `folders` as they are now, in one transaction (a crash leaves the index as it was):
    folders gone or changed dropped, new and changed ones read."""
    stamps = {f: _stamp(f) for f in folders}
    keys = {_key(root, f): f for f in folders}
    known = dict((r[0], (r[1], r[2])) for r in con.execute("SELECT folder, mtime_ns, size FROM runs").fetchall())
    stale = [k for k, st in known.items() if k not in keys or stamps[keys[k]] is None or stamps[keys[k]] != st]
    fresh = [f for k, f in keys.items() if k not in known or k in stale]
    if not stale and not fresh:
        return
    con.begin()
    try:
        for table in ("runs", "cells"):
            con.execute(f"DELETE FROM {table} WHERE list_contains(?, folder)", [stale])
        if fresh:
            _index(con, root, fresh, stamps)
    except BaseException:
        con.rollback()
        raise
    con.commit()
