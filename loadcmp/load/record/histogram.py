"""Latency histograms that merge exactly: sparse, log-bucketed, 1 % wide.

Kept apart from the recorder, which fills one per second and merges them
across seconds and workers; the report reads them back from run.json.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from ...records import HistogramDoc

_BASE = 1.01
BUCKET_BASE = _BASE
"""Bucket i holds the values in [BUCKET_BASE^i, BUCKET_BASE^(i+1)) microseconds (bucket 0 also those below)."""
_LOG_BASE = math.log(_BASE)
MAX_BUCKET = 2399
"""The last bucket (1.01^2399 us, 6.6 hours): a longer value, or an infinite one, counts in it,
as in the compiled loop's dense count (`_ctally.h`)."""


@dataclass
class Histogram:
    """Sparse log-bucketed latency histogram (microseconds, buckets 1 % wide).

    A value is reported as its bucket's geometric middle, so any percentile is
    within 0.5 % of the exact one. Adding two histograms is exact.
    """

    idx: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    """Bucket numbers present, ascending."""
    cnt: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """How many values fell in each of those buckets."""
    total_s: float = 0.0
    """Exact sum of the values (seconds), for the mean."""
    max_s: float = 0.0
    """Exact largest value (seconds)."""
    min_s: float = math.inf
    """Exact smallest value (seconds)."""
    sq_s: float = 0.0
    """Exact sum of the squared values (seconds²), for the standard deviation."""

    @classmethod
    def of(cls, values_s: Any) -> Histogram:
        v = np.asarray(values_s, dtype=np.float64)
        if v.size == 0:
            return cls()
        us = np.fmax(v * 1e6, 1.0)  # below 1 us, and NaN: bucket 0
        b = np.minimum(np.floor(np.log(us) / _LOG_BASE), MAX_BUCKET).astype(np.int32)
        idx, cnt = np.unique(b, return_counts=True)
        return cls(idx.astype(np.int32), cnt.astype(np.int64), float(v.sum()), float(v.max()), float(v.min()),
                   float(np.dot(v, v)))

    @classmethod
    def from_buckets(cls, cnt: np.ndarray, total_s: float, max_s: float, min_s: float, sq_s: float) -> Histogram:
        """From a dense count per bucket (bucket i at index i), as the compiled loop counts them."""
        idx = np.flatnonzero(cnt)
        return cls(idx.astype(np.int32), cnt[idx].astype(np.int64), total_s, max_s, min_s, sq_s)

    @property
    def count(self) -> int:
        return int(self.cnt.sum())

    def merge(self, other: Histogram) -> Histogram:
        if other.cnt.size == 0:
            return self
        if self.cnt.size == 0:
            return other
        allidx = np.concatenate([self.idx, other.idx])
        allcnt = np.concatenate([self.cnt, other.cnt])
        idx, inv = np.unique(allidx, return_inverse=True)
        cnt = np.bincount(inv, weights=allcnt).astype(np.int64)
        return Histogram(
            idx.astype(np.int32),
            cnt,
            self.total_s + other.total_s,
            max(self.max_s, other.max_s),
            min(self.min_s, other.min_s),
            self.sq_s + other.sq_s,
        )

    def at_least(self, s: float) -> int:
        """How many values are `s` seconds or more (those of the bucket holding `s` counted: within 1 %)."""
        first = min(math.floor(math.log(max(s * 1e6, 1.0)) / _LOG_BASE), MAX_BUCKET)
        return int(self.cnt[self.idx >= first].sum())

    def percentile(self, q: float, without_top: int = 0) -> float | None:
        """The q-th percentile (0..100) in seconds, or None when empty; `without_top`: of the values left when
        that many of the largest are set aside (what a percentile would be without a slow few)."""
        n = self.count - max(0, without_top)
        if n <= 0:
            return None
        if q >= 100 and not without_top:
            return self.max_s
        if q <= 0:
            return self.min_s
        rank = max(1, math.ceil(q / 100.0 * n))
        pos = int(np.searchsorted(np.cumsum(self.cnt), rank))
        value = _BASE ** (float(self.idx[pos]) + 0.5) / 1e6
        return min(max(value, self.min_s), self.max_s)

    @property
    def mean(self) -> float | None:
        n = self.count
        return self.total_s / n if n else None

    @property
    def stdev(self) -> float | None:
        """The population standard deviation (as hey and oha print it), from the exact sums."""
        n = self.count
        if n == 0 or math.isnan(self.sq_s):
            return None
        mean = self.total_s / n
        return math.sqrt(max(0.0, self.sq_s / n - mean * mean))

    def to_dict(self) -> HistogramDoc:
        return {
            "base": _BASE,
            "unit": "us",
            "idx": cast(list[int], self.idx.tolist()),  # numpy 2.2's stubs type tolist() loosely
            "cnt": cast(list[int], self.cnt.tolist()),
            "total_s": self.total_s,
            "max_s": self.max_s,
            "min_s": None if math.isinf(self.min_s) else self.min_s,
            "sq_s": self.sq_s,
        }

    @classmethod
    def from_dict(cls, d: HistogramDoc) -> Histogram:
        return cls(
            np.asarray(d["idx"], dtype=np.int32),
            np.asarray(d["cnt"], dtype=np.int64),
            float(d["total_s"]),
            float(d["max_s"]),
            math.inf if d["min_s"] is None else float(d["min_s"]),
            float(d.get("sq_s", math.nan)),  # results stored before the stdev was kept have none
        )

    def buckets_ms(self) -> list[tuple[float, float, int]]:
        """(low ms, high ms, count) per bucket, for plots."""
        return [(_BASE ** float(i) / 1e3, _BASE ** float(i + 1) / 1e3, int(c))
                for i, c in zip(self.idx, self.cnt, strict=True)]
