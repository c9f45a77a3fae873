"""Weighted page mixes: `--mix '/=50,/?p=1042=30,/x.jpg=20'` or a `[mix]` table, drawn with a seed.

A mix is pages and their weights. The draw happens once, before the load: a seeded sequence of
`SEQUENCE` page indices (numpy's PCG64, so the same seed gives the same sequence on every machine),
which every engine walks in order (`load.pageset.Cursor`; the compiled loop in C), so a mix costs no
Python per request and a run repeats exactly from its stored seed; what a trial's window sent of each page
is read off the same sequence (`sent_of`), from the requests it started after the warm-up's.
"""

from __future__ import annotations

import functools
import math
import secrets
from array import array
from collections.abc import Mapping
from typing import Any, cast
from dataclasses import replace

from ..errors import UsageError
from ..load.pageset import MAX_PAGES, Pages
from ..load.target import Target

SEQUENCE = 1 << 18
"""Positions drawn (262,144): a closed loop walks them again when it sends more; each page's share of
them is within a fraction of a percent of its weight's."""
MIX_LABEL = "mix"
"""What a finding calls the mix as a whole (`nginx[mix]:p(99)`); a page is named by its path."""

Mix = tuple[tuple[str, float], ...]
"""(page, weight) in the order given; weights are relative (they need not add up to 100)."""


def parse_mix(text: str) -> Mix:
    """`/=50,/?p=1042=30`: items split on commas, each on its LAST `=` (a path may hold `=`)."""
    items = [t.strip() for t in text.split(",")]
    if not any(items):
        raise UsageError("--mix is empty: give pages and weights, like --mix '/=60,/?p=1042=30,/?s=hello=10'")
    pairs: dict[str, str | float] = {}
    for item in items:
        page, eq, weight = item.rpartition("=")
        if not eq or not page.strip():
            raise UsageError(f"--mix item {item!r}: write PAGE=WEIGHT, like /?p=1042=30")
        if page.strip() in pairs:
            raise UsageError(f"--mix names {page.strip()!r} twice")
        pairs[page.strip()] = weight.strip()
    return check_mix(pairs, "--mix")


def check_mix(table: Mapping[str, object], where: str = "[mix]") -> Mix:
    """A mix's pages and weights checked (a `[mix]` table's or `parse_mix`'s): one line for the first problem."""
    if not table:
        raise UsageError(f"{where} is empty: give each page a weight, like \"/\" = 60")
    out: list[tuple[str, float]] = []
    for page, w in table.items():
        weight = _weight(w)
        if weight is None:
            raise UsageError(f"{where}: the weight of {page!r} is not a number: {w!r}")
        if weight < 0:
            raise UsageError(f"{where}: the weight of {page!r} is negative ({weight:g}); weights are 0 or more")
        if not page.startswith("/") or any(c.isspace() for c in page):
            raise UsageError(f"{where}: page {page!r} must start with / and hold no spaces (a path on the servers)")
        out.append((page, weight))
    if sum(w for _, w in out) <= 0:
        raise UsageError(f"{where}: the weights add up to 0: give at least one page a weight above 0")
    if len(out) > MAX_PAGES:
        raise UsageError(f"{where}: {len(out)} pages; a mix records at most {MAX_PAGES} apart")
    return tuple(out)


def _weight(w: object) -> float | None:
    """A weight as a number: an int or float, or a text that is one (`--mix`); None otherwise."""
    if isinstance(w, bool):
        return None
    if isinstance(w, (int, float)):
        v = float(w)
    elif isinstance(w, str):
        try:
            v = float(w)
        except ValueError:
            return None
    else:
        return None
    return v if math.isfinite(v) else None


def new_seed() -> int:
    """A seed for a mix given without one (stored with the run, so it repeats)."""
    return secrets.randbelow(2**31)


def draw(mix: Mix, seed: int, n: int = SEQUENCE) -> array:
    """`n` page indices drawn by weight with `seed`: array('I'). Numpy's Generator (PCG64) draws them, the same
    on every machine and Python for a seed."""
    import numpy as np

    weights = np.array([w for _, w in mix], dtype=np.float64)
    idx = np.random.default_rng(seed).choice(len(mix), size=n, p=weights / weights.sum())
    return array("I", idx.astype(np.uint32).tobytes())


def mix_pages(mix: Mix, seed: int, target: Target, n: int = SEQUENCE) -> Pages:
    """The load's pages for a mix: each page `target` with its path, in a drawn sequence."""
    base = f"{target.scheme}://{target.url.split('://', 1)[1].split('/', 1)[0]}"
    targets = tuple(replace(target, path=page, url=base + page) for page, _ in mix)
    return Pages(targets, tuple(page for page, _ in mix), draw(mix, seed, n), seed=seed)


def shares(order: array, pages: int) -> list[float]:
    """Each page's share of a sequence (for the run's record and the tests)."""
    counts = [0] * pages
    for i in order:
        counts[i] += 1
    return [c / max(1, len(order)) for c in counts]


@functools.lru_cache(maxsize=8)
def _drawn(mix: Mix, seed: int) -> array:
    return draw(mix, seed)


def sent_of(spec: Mapping[str, Any], trial: Mapping[str, Any]) -> dict[str, int] | None:
    """Each page's requests a trial's window sent: the positions of the mix's drawn sequence its requests took,
    after the warm-up's (`load.pageset.Cursor`: each request started takes the next, a resent one none). The
    requests begun in the warm-up and counted in the window (`warmup_carried`) were sent before it: their
    positions are the warm-up's, and they are not among these. None
    where that is not known: no mix or seed, several client processes (each walks its own share), dropped
    requests, or a result without its warm-up's count."""
    r = cast(Mapping[str, Any], trial.get("result") or {})
    weights, seed = spec.get("mix"), spec.get("seed")
    if not weights or seed is None or "warmup_requests" not in r or int(r.get("workers") or 1) != 1 \
            or r.get("dropped"):
        return None
    order = _drawn(tuple((str(p), float(w)) for p, w in weights.items()), int(seed))
    counts = [0] * len(weights)
    carried = int(r.get("warmup_carried") or 0)
    first, n = int(r["warmup_requests"]) + carried, len(order)
    for i in range(first, first + int(r["started"]) - carried):
        counts[order[i % n]] += 1
    return dict(zip(weights, counts, strict=True))
