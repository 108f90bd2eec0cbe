"""Search filters: validate a request's `filters` and compile them to the one jsonb tree SQL reads.

`compile_filter` is the single entry point (/search, /chat, /research, the CLI): it checks every key
against the metadata whitelist (plus the document dates `created_at` / `updated_at`), every operator
against the grammar and every value against its field's type, and returns a normalised tree that
`public.search_filter()` (sql/search_filter.sql) turns into a jsonpath with the values as variables.
Nothing here builds SQL; the SQL side never puts a value into statement text either.

Grammar (documented with examples in README "Filters" and on /docs):
    {"lang": "zh"}                                   $eq shorthand
    {"tags": ["a", "b"]}                             $contains shorthand (holds both)
    {"text_len": {"$gte": 200, "$lt": 2000}}         several operators on one field: all apply
    {"$or": [{"lang": "zh"}, {"lang": "en"}]}        $and / $or take non-empty lists, nest freely
    {"$not": {"tags": "draft"}}                      $not takes one filter
    {"created_at": {"$gte": "2025-01-01"}}           document dates: ISO 8601 dates or timestamps
Operators: $eq $ne $in $nin $gt $gte $lt $lte $exists $contains.

The normalised tree is {"$and": [...]}, {"$or": [...]}, {"$not": node} or {field: {op: operand}}
(one field, one operator), itself valid input that compiles to itself. It differs from the input
where the input is shorthand or where a type needs it spelled out: $eq / $in / $ne / $nin on an
array field become $contains forms ("has tag x"), and a date-only value becomes the whole UTC day
({"$eq": "2025-03-01"} -> from that midnight to the next).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from backend.errors import InvalidInput

FieldType = Literal["string", "number", "boolean", "array", "date", "any"]

DATE_FIELDS = ("created_at", "updated_at")
# The types ingestion enforces (backend.ingest.metadata); a whitelisted key not listed is "any".
FIELD_TYPES: dict[str, FieldType] = {
    "doc_id": "string",
    "source": "string",
    "filename": "string",
    "content_type": "string",
    "media_type": "string",
    "lang": "string",
    "tags": "array",
    "keyphrases": "array",
    "text_len": "number",
    "quality_score": "number",
    "too_short": "boolean",
    "created_at": "date",
    "updated_at": "date",
}
OPERATORS = ("$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists", "$contains")
COMBINATORS = ("$and", "$or")
_RANGE = ("$gt", "$gte", "$lt", "$lte")
# Bounds on the shape of one filter. Its total size (conditions plus the values in them) has its own
# budget, FILTER_MAX_SIZE (Settings.filter_max_size): every value is checked on every chunk a search
# reads, ~0.6 us a row for each value of an $in on a list field.
MAX_DEPTH = 6
MAX_CONDITIONS = 64
MAX_LIST = 100
MAX_STRING = 500

Node = dict[str, Any]


def compile_filter(filters: Any, whitelist: Sequence[str], *, max_size: int | None = None) -> Node:
    """The request's filters as the normalised tree the SQL functions take; {} for none.

    Raises InvalidInput naming the unknown field, the unknown operator or the ill-typed value, and
    when the filter holds more than max_size conditions and values (None: only the shape's bounds).
    """
    if filters is None or filters == {}:
        return {}
    compiler = _Compiler(set(whitelist) | set(DATE_FIELDS))
    tree = compiler.node(filters, "filters", depth=0)
    if max_size is not None and compiler.size > max_size:
        raise InvalidInput(
            f"filters hold {compiler.size} conditions and values (each element of a list counts); "
            f"the limit is {max_size} (FILTER_MAX_SIZE)"
        )
    return tree


class _Compiler:
    def __init__(self, fields: set[str]) -> None:
        self.fields = fields
        self.conditions = 0
        self.size = 0  # conditions plus their values: what FILTER_MAX_SIZE bounds

    def node(self, value: Any, where: str, *, depth: int) -> Node:
        if not isinstance(value, dict) or not value:
            raise InvalidInput(f"{where}: expected a non-empty JSON object of conditions, got {_show(value)}")
        if depth > MAX_DEPTH:
            raise InvalidInput(f"{where}: filters nest at most {MAX_DEPTH} levels deep")
        parts: list[Node] = []
        for key, operand in value.items():
            if key in COMBINATORS:
                parts.append(self.combination(key, operand, f"{where}.{key}", depth=depth))
            elif key == "$not":
                parts.append({"$not": self.node(operand, f"{where}.$not", depth=depth + 1)})
            elif isinstance(key, str) and key.startswith("$"):
                raise InvalidInput(
                    f"{where}: unknown operator {key!r} at this level; use a field name, $and, $or or $not"
                )
            else:
                parts.extend(self.field(key, operand))
        return parts[0] if len(parts) == 1 else {"$and": parts}

    def combination(self, key: str, operand: Any, where: str, *, depth: int) -> Node:
        if not isinstance(operand, list) or not operand:
            raise InvalidInput(f"{where}: expected a non-empty list of filters")
        return {key: [self.node(item, f"{where}[{i}]", depth=depth + 1) for i, item in enumerate(operand)]}

    def field(self, name: str, spec: Any) -> list[Node]:
        if name not in self.fields:
            allowed = ", ".join(sorted(self.fields))
            raise InvalidInput(f"filter field {name!r} is not allowed; allowed: {allowed}")
        kind = FIELD_TYPES.get(name, "any")
        if isinstance(spec, dict):
            if not spec:
                raise InvalidInput(f'filter {name!r}: give an operator, e.g. {{"$eq": ...}}')
            ops = spec
        elif isinstance(spec, list):
            ops = {"$contains": spec}
        else:
            ops = {"$eq": spec}
        out: list[Node] = []
        for op, operand in ops.items():
            if op not in OPERATORS:
                raise InvalidInput(
                    f"filter {name!r}: unknown operator {op!r}; supported: {', '.join(OPERATORS)}"
                )
            self.conditions += 1
            if self.conditions > MAX_CONDITIONS:
                raise InvalidInput(f"filters hold at most {MAX_CONDITIONS} conditions")
            self.size += 1 + (len(operand) if isinstance(operand, list) else 1)
            out.append(self.condition(name, kind, op, operand))
        return out

    def condition(self, name: str, kind: FieldType, op: str, operand: Any) -> Node:
        if op == "$exists":
            if not isinstance(operand, bool):
                raise InvalidInput(f"filter {name!r}: $exists expects true or false, got {_show(operand)}")
            return {name: {"$exists": operand}}
        if kind == "date":
            return _date_condition(name, op, operand)
        if kind == "array":
            if op in _RANGE:
                raise InvalidInput(
                    f"filter {name!r}: {op} does not apply to a list field; use $contains or $in"
                )
            return _array_condition(name, op, [_scalar(name, "string", v) for v in _items(name, op, operand)])
        if op == "$contains":
            if kind != "any":
                raise InvalidInput(f"filter {name!r}: $contains applies to list fields (tags, keyphrases)")
            return {name: {"$contains": [_scalar(name, kind, v) for v in _items(name, op, operand)]}}
        if op in ("$in", "$nin"):
            return {name: {op: [_scalar(name, kind, v) for v in _items(name, op, operand)]}}
        value = _scalar(name, kind, operand)
        if op in _RANGE and (kind in ("string", "boolean") or isinstance(value, str | bool)):
            raise InvalidInput(f"filter {name!r}: {op} compares numbers or dates, got {_show(operand)}")
        return {name: {op: value}}


def _array_condition(name: str, op: str, values: list[Any]) -> Node:
    """An array field: $eq / $contains "holds", $in "holds any", $ne / $nin their negations."""
    holds = [{name: {"$contains": [v]}} for v in values]
    if op in ("$eq", "$contains"):
        return {name: {"$contains": values}}
    if op == "$ne":
        return {"$not": {name: {"$contains": values}}}
    anyone = holds[0] if len(holds) == 1 else {"$or": holds}
    return anyone if op == "$in" else {"$not": anyone}


def _date_condition(name: str, op: str, operand: Any) -> Node:
    """Timestamps compare as given; a date-only value stands for its whole UTC day."""
    if op == "$contains":
        raise InvalidInput(f"filter {name!r}: $contains does not apply to a date")
    if op in ("$in", "$nin"):
        days = [_day_or_instant(name, v) for v in _items(name, op, operand)]
        anyone = [_date_eq(name, d) for d in days]
        node = anyone[0] if len(anyone) == 1 else {"$or": anyone}
        return node if op == "$in" else {"$not": node}
    start, end = _day_or_instant(name, operand)
    if op == "$eq":
        return _date_eq(name, (start, end))
    if op == "$ne":
        return {"$not": _date_eq(name, (start, end))}
    if end is None:
        return {name: {op: start}}
    # A day: after it means from the next midnight, up to it means before the next midnight.
    day_bounds = {"$gt": ("$gte", end), "$gte": ("$gte", start), "$lt": ("$lt", start), "$lte": ("$lt", end)}
    strict, bound = day_bounds[op]
    return {name: {strict: bound}}


def _date_eq(name: str, span: tuple[str, str | None]) -> Node:
    start, end = span
    if end is None:
        return {name: {"$eq": start}}
    return {"$and": [{name: {"$gte": start}}, {name: {"$lt": end}}]}


def _day_or_instant(name: str, value: Any) -> tuple[str, str | None]:
    """(start, end of day) for a date, (instant, None) for a timestamp; naive means UTC."""
    if not isinstance(value, str) or len(value) > 64:
        raise InvalidInput(f"filter {name!r}: expected an ISO 8601 date or timestamp, got {_show(value)}")
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start.isoformat(), (start + timedelta(days=1)).isoformat()
        instant = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"filter {name!r}: {value!r} is not an ISO 8601 date (2025-03-01) or timestamp "
            "(2025-03-01T08:00:00+08:00)"
        ) from None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return instant.astimezone(UTC).isoformat(), None


def _items(name: str, op: str, operand: Any) -> list[Any]:
    items = operand if isinstance(operand, list) else [operand] if op in ("$contains", "$eq", "$ne") else None
    if items is None:
        raise InvalidInput(f"filter {name!r}: {op} expects a list, got {_show(operand)}")
    if not items:
        raise InvalidInput(f"filter {name!r}: {op} needs at least one value")
    if len(items) > MAX_LIST:
        raise InvalidInput(f"filter {name!r}: {op} takes at most {MAX_LIST} values")
    return items


def _scalar(name: str, kind: FieldType, value: Any) -> Any:
    ok = {
        "string": isinstance(value, str),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
    }.get(kind, isinstance(value, str | int | float | bool))
    if not ok:
        expected = {"string": "a string", "number": "a number", "boolean": "true or false"}.get(
            kind, "a string, number or boolean"
        )
        raise InvalidInput(f"filter {name!r}: expected {expected}, got {_show(value)}")
    if isinstance(value, str) and len(value) > MAX_STRING:
        raise InvalidInput(f"filter {name!r}: values are at most {MAX_STRING} characters")
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        raise InvalidInput(f"filter {name!r}: {value!r} is not a finite number")
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
