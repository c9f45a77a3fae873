"""The base of the flag groups: a command's flags as the user gave them, None (or an empty tuple) "not given".

Each group (`options.LoadFlags`, `options.SetupFlags`, `protocols.TlsFlags`...) says which flags were given, by
RunSpec field name (`given()`, laid over an experiment file by `experiment.flags`) and as typed (`given_flags()`,
for a message).
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields
from typing import Any, TypeVar

G = TypeVar("G", bound="FlagGroup")


@dataclass(frozen=True)
class FlagGroup:
    """A group of a command's flags as the user gave them: None (or an empty tuple) is "not given".

    Each field's metadata names its flag as typed (`flag`) and, where it differs from the field's
    name, the RunSpec field it sets (`spec`; "" for a flag that sets none by itself)."""

    @classmethod
    def pop(cls: type[G], kwargs: dict[str, Any]) -> G:
        """Take this group's values out of a command's keyword arguments (a flag the command lacks: not given)."""
        return cls(**{f.name: kwargs.pop(f.name, f.default) for f in fields(cls)})

    def _given(self) -> list[tuple[Field[Any], Any]]:
        return [(f, v) for f in fields(self) if (v := getattr(self, f.name)) is not None and v != ()]

    def given(self) -> dict[str, Any]:
        """The flags the user gave, by RunSpec field name."""
        out: dict[str, Any] = {}
        for f, v in self._given():
            if isinstance(v, FlagGroup):
                out.update(v.given())
            elif (name := f.metadata.get("spec", f.name)) != "":
                out[name] = v
        return out

    def given_flags(self) -> list[str]:
        """The flags the user gave, as typed (`--server-cpus`): what a message names."""
        out: list[str] = []
        for f, v in self._given():
            out += v.given_flags() if isinstance(v, FlagGroup) else [f.metadata.get("flag", f.name)]
        return out


def flag(typed: str, spec: str | None = None, default: Any = None) -> Any:
    """A field of a FlagGroup: its flag as typed, and the RunSpec field it sets when not the field's own name."""
    return field(default=default, metadata={"flag": typed} if spec is None else {"flag": typed, "spec": spec})
