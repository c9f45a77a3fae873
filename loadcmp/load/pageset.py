"""Several pages in one load: what each request sends and which page it is recorded as.

A load of one page sends `LoadSpec.target` every time. A mix (`traffic.mix`), a replayed log
(`traffic.logreplay`) or any other source of several pages hands the engines a `Pages`: the distinct
requests (each a `Target`, encoded once), the recorded page each belongs to, and the sequence of
request indices, prepared (and drawn, when drawn) beforehand. Every engine walks that sequence
the same way (`Cursor`), the compiled loop in C, so a mix costs no Python per request there and the
same seed sends the same sequence on every path.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import UsageError
from .target import Target

MAX_PAGES = 100
"""Pages recorded apart at most (each holds a latency histogram per second in every worker): a source with
more distinct requests groups them into at most this many pages (`Pages.page_of`)."""
NO_PAGE = -1
"""The recorder's page of a request that belongs to none (a load of one page)."""


@dataclass(frozen=True)
class Pages:
    """The pages of one load, its requests, and the order they are sent in; picklable (the workers' shares are
    `shares(counts)`)."""

    targets: tuple[Target, ...]
    """The distinct requests, same scheme, host and port as the load's target."""
    names: tuple[str, ...]
    """The pages recorded, by index: what the summary, the timeline's `page` column and findings name."""
    order: array
    """array('I'): the request index of each position of the sequence, walked from `offset` by `step` and
    cycled when it ends (a closed loop may send more than it holds)."""
    page_of: tuple[int, ...] = ()
    """Request index -> page index; empty: request i is page i."""
    expect: tuple[int, ...] = ()
    """Request index -> the status it is expected to answer (replay: the log's), 0 none; empty: none. The
    recorder counts, per page, how many answers had an expectation and how many met it."""
    seed: int | None = None
    """The seed the order was drawn with (stored with the run, so it repeats), None when not drawn."""
    offset: int = 0
    step: int = 1
    """A worker's share: positions offset, offset + step, ... (`share`, `shares`)."""

    def __post_init__(self) -> None:
        if not self.targets or not self.names or not len(self.order):
            raise UsageError("a load's pages need at least one request, one page and a sequence")
        if len(self.names) > MAX_PAGES:
            raise UsageError(f"{len(self.names):,} pages: at most {MAX_PAGES} are recorded apart; group the rest")
        pages = self.page_of or range(len(self.targets))
        if len(pages) != len(self.targets) or min(pages) < 0 or max(pages) >= len(self.names):
            raise UsageError("each request of a load's pages needs a page among its names")
        if self.expect and len(self.expect) != len(self.targets):
            raise UsageError("a load's pages expect a status of every request, or of none")
        if max(self.order) >= len(self.targets):
            raise UsageError("a load's sequence names a request it does not have")
        first = self.targets[0]
        for t in self.targets:
            if (t.scheme, t.host, t.port) != (first.scheme, first.host, first.port):
                raise UsageError(f"the pages of one load share one server: {t.url} is not on {first.url}")

    @property
    def page_index(self) -> tuple[int, ...]:
        """Request index -> page index, in full."""
        return self.page_of or tuple(range(len(self.targets)))

    @property
    def expected(self) -> tuple[int, ...]:
        """Request index -> expected status (0: none), in full."""
        return self.expect or (0,) * len(self.targets)

    def encoded(self) -> tuple[bytes, ...]:
        """Each request as the fast engine sends it (`Target.encode`), once per load."""
        return tuple(t.encode() for t in self.targets)

    def share(self, index: int, count: int) -> Pages:
        """Worker `index` of `count`: every count-th position of the sequence, from its own."""
        return replace(self, offset=self.offset + index * self.step, step=self.step * count)

    def shares(self, counts: Sequence[int | None]) -> list[Pages]:
        """One share per worker. With a request count each (-n: `Closed.split` sizes them by clients, not
        evenly), a contiguous slice of the sequence that long, so every position is sent exactly once; a load
        that runs for a time deals every n-th position, as `Rate.split` and `Replay.split` deal their ticks."""
        sizes = [c for c in counts if c is not None]
        if len(sizes) < len(counts):
            return [self.share(i, len(counts)) for i in range(len(counts))]
        out, start = [], 0
        for size in sizes:
            out.append(replace(self, offset=self.offset + start * self.step))
            start += size
        return out


class Cursor:
    """Where one engine is in the sequence: each request started takes the next position (warm-up's too)."""

    __slots__ = ("order", "n", "pos", "step", "page_of", "expect")

    def __init__(self, pages: Pages) -> None:
        self.order = pages.order
        self.n = len(pages.order)
        self.pos = pages.offset
        self.step = pages.step
        self.page_of = pages.page_index
        self.expect = pages.expected

    def next(self) -> int:
        """The next request's index."""
        p = self.pos
        self.pos = p + self.step
        return self.order[p % self.n]
