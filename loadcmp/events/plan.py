"""`--event 'AT ACTION'` read: when an event fires in the measured window and what it asks for.

`AT` is a time into the window (`3s`, `1500ms`) or `every DURATION` (at DURATION, 2 x DURATION, ... while
inside the window). `ACTION` is one or more words: a name of the stack's `[events]` tables (`reload`,
`restart`, `reload php`, `kill worker`), or the generic `pause ROLE DURATION` and `restart ROLE`
(`loadcmp.events.actions`). Bad input is one line, before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from ..units import parse_duration

EVERY = "every"
PAUSE = "pause"


@dataclass(frozen=True)
class Asked:
    """One `--event` as given, read."""

    text: str  #: as the user wrote it ("every 4s reload")
    words: tuple[str, ...]  #: the action's words ("reload php"; "pause db 3s")
    at: float | None = None  #: seconds into the window; None: `every`
    every: float | None = None  #: the period of `every DURATION`

    @property
    def action(self) -> str:
        """The action's name as the stack's data names it (the words, a pause's duration left out)."""
        return " ".join(self.words[:2]) if self.words[0] == PAUSE else " ".join(self.words)

    @property
    def hold(self) -> float:
        """A pause's duration in seconds (0 for every other action)."""
        return parse_duration(self.words[2]) if self.words[0] == PAUSE else 0.0

    def times(self, window: float) -> list[float]:
        """When it fires, in seconds into a window this long (only times inside it)."""
        if self.at is not None:
            return [self.at] if self.at < window else []
        assert self.every is not None
        n = int(window / self.every)
        return [round(self.every * k, 6) for k in range(1, n + 1) if self.every * k < window]


def parse(text: str) -> Asked:
    """One `--event` value; UsageError in one line when it is not `AT ACTION`."""
    words = text.split()
    if len(words) < 2:
        raise UsageError(f"bad --event {text!r}: give 'AT ACTION', e.g. '5s reload' or 'every 5s reload'")
    if words[0] == EVERY:
        if len(words) < 3:
            raise UsageError(f"bad --event {text!r}: 'every DURATION ACTION', e.g. 'every 5s reload'")
        period = parse_duration(words[1], "--event period", allow_zero=False)
        asked = Asked(text, tuple(words[2:]), every=period)
    else:
        asked = Asked(text, tuple(words[1:]), at=parse_duration(words[0], "--event time"))
    if asked.words[0] == PAUSE:
        if len(asked.words) != 3:
            raise UsageError(f"bad --event {text!r}: 'pause ROLE DURATION', e.g. '8s pause db 3s'")
        parse_duration(asked.words[2], "--event pause", allow_zero=False)
    return asked


def timing_problems(asked: Asked, window: float) -> list[str]:
    """An event that would not fire inside a window this long, or a pause that would outlast it, in words."""
    if asked.at is not None and asked.at >= window:
        return [f"--event {asked.text!r}: {asked.at:g} s is not inside the {window:g} s window"]
    if asked.every is not None and not asked.times(window):
        return [f"--event {asked.text!r}: every {asked.every:g} s never comes inside the {window:g} s window"]
    late = [t for t in asked.times(window) if t + asked.hold > window]  # a paused container must not outlive it
    if asked.words[0] == PAUSE and late:
        return [f"--event {asked.text!r}: the {asked.hold:g} s pause at {late[0]:g} s runs past the {window:g} s "
                "window"]
    return []
