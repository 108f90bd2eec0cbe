"""Metadata filters: the whitelist, and translation to the containment form the SQL legs apply."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backend.errors import InvalidInput

_SCALARS = (str, int, float, bool)


def to_containment(filters: dict[str, Any] | None, whitelist: Sequence[str]) -> dict[str, Any]:
    """{"lang": "zh", "tags": {"$contains": "x"}} -> {"lang": "zh", "tags": ["x"]} (metadata @> filter).

    Supported: a plain value or {"$eq": v} (equality), a list or {"$contains": v | [v...]} (array
    containment). Range operators cannot be served by the GIN containment index and are refused.
    """
    if not filters:
        return {}
    if not isinstance(filters, dict):
        raise InvalidInput("filters must be a JSON object mapping metadata keys to values")
    unknown = sorted(set(filters) - set(whitelist))
    if unknown:
        raise InvalidInput(f"filter keys not allowed: {', '.join(unknown)}; allowed: {', '.join(whitelist)}")
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if isinstance(value, dict):
            if len(value) != 1:
                raise InvalidInput(f"filter {key!r}: give exactly one operator ($eq or $contains)")
            ((op, operand),) = value.items()
            if op == "$eq":
                out[key] = _scalar(key, operand)
            elif op == "$contains":
                items = operand if isinstance(operand, list) else [operand]
                out[key] = [_scalar(key, v) for v in items]
            else:
                raise InvalidInput(f"filter {key!r}: operator {op!r} is not supported (use $eq or $contains)")
        elif isinstance(value, list):
            out[key] = [_scalar(key, v) for v in value]
        else:
            out[key] = _scalar(key, value)
    return out


def _scalar(key: str, value: Any) -> Any:
    if value is None or not isinstance(value, _SCALARS):
        raise InvalidInput(f"filter {key!r}: expected a string, number or boolean, got {value!r}")
    return value
