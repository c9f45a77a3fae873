"""The small expression language of a stack's checks: `prefork.MaxRequestWorkers <= prefork.ServerLimit`.

A part or stack file says which combinations of settings its server refuses or silently
changes (`[[checks]]`, a `rule` that must hold and what to say when it does not). The
rules are Python expressions restricted to comparisons, `and` / `or` / `not`, + - * // %,
numbers, strings and dotted setting names, read with `ast` and evaluated here, so a
stack file can never run code. Names are checked when the file is loaded (`names`).
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

_BIN: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_CMP: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}
_ALLOWED = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.Compare, ast.BinOp, ast.Constant,
            ast.Name, ast.Attribute, ast.Load, *_CMP, *_BIN)


class RuleError(ValueError):
    """A rule that is not in the language, or names a setting that does not exist."""


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def parse(text: str) -> ast.expr:
    """The rule's tree, or RuleError when it is not a rule of this language."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise RuleError(f"{text!r} is not an expression ({e.msg})") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise RuleError(f"{text!r}: {type(node).__name__} is not allowed in a rule")
        if isinstance(node, ast.Attribute) and _dotted(node) is None:
            raise RuleError(f"{text!r}: only setting names may have dots")
    return tree


def _inside_attribute(tree: ast.expr, node: ast.AST) -> bool:
    return any(isinstance(a, ast.Attribute) and a.value is node for a in ast.walk(tree))


def names(tree: ast.expr) -> set[str]:
    """The setting names a rule reads (`section.key`)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) or isinstance(node, ast.Name) and not _inside_attribute(tree, node):
            d = _dotted(node)
            if d:
                out.add(d)
    return {n for n in out if not any(o != n and o.startswith(n + ".") for o in out)}


def evaluate(tree: ast.expr, values: Mapping[str, object]) -> Any:
    """The rule's value for these settings."""
    if isinstance(tree, ast.Constant):
        return tree.value
    if isinstance(tree, (ast.Name, ast.Attribute)):
        key = _dotted(tree)
        if key is None or key not in values:
            raise RuleError(f"no setting {key!r}")
        return values[key]
    if isinstance(tree, ast.UnaryOp):
        v = evaluate(tree.operand, values)
        return (not v) if isinstance(tree.op, ast.Not) else -v
    if isinstance(tree, ast.BoolOp):
        if isinstance(tree.op, ast.And):
            return all(evaluate(v, values) for v in tree.values)
        return any(evaluate(v, values) for v in tree.values)
    if isinstance(tree, ast.BinOp):
        return _BIN[type(tree.op)](evaluate(tree.left, values), evaluate(tree.right, values))
    if isinstance(tree, ast.Compare):
        left = evaluate(tree.left, values)
        for op, right_node in zip(tree.ops, tree.comparators, strict=True):
            right = evaluate(right_node, values)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    raise RuleError(f"cannot evaluate {ast.dump(tree)}")


_PLACE = re.compile(r"\{([^{}]+)\}")


def fill(text: str, values: Mapping[str, object]) -> str:
    """A check's message with each `{expression}` replaced by its value."""
    def one(m: re.Match[str]) -> str:
        return str(evaluate(parse(m.group(1)), values))
    return _PLACE.sub(one, text)
