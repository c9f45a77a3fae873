"""The catalog's typed answers as JSON: the one converter `--json` and the `serve` pages share.

Dataclasses become objects with their fields in order, paths become strings, and nothing is
renamed, so `compare --json`, `history --json` and `/api/compare` say the same keys as model.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import PurePath
from typing import Any


def plain(value: object) -> Any:
    """`value` (a model dataclass, a list of them, ...) as JSON's types; a NaN or an infinity becomes None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def dumps(value: object) -> str:
    """One JSON document of `value`, indented."""
    return json.dumps(plain(value), indent=2)
