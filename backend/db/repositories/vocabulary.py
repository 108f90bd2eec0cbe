"""The metadata values the caller's documents hold (what the WhereBuilder may filter on)."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

# A list field contributes each element, a string field its value; other JSON types are skipped.
_VALUES = """
select v.field, v.value
from public.documents d
cross join lateral (
    select f.name as field, e.value
    from unnest(%(fields)s::text[]) as f(name)
    cross join lateral jsonb_array_elements_text(
        case jsonb_typeof(d.metadata -> f.name)
            when 'array' then d.metadata -> f.name
            when 'string' then jsonb_build_array(d.metadata -> f.name)
            else '[]'::jsonb
        end
    ) as e(value)
) v
group by v.field, v.value
order by count(*) desc, v.field, v.value
limit %(limit)s
"""


def metadata_values(conn: psycopg.Connection, *, fields: Sequence[str], limit: int) -> dict[str, list[str]]:
    """Per field, the distinct values of the documents the connection's role can read, most frequent
    first (at most `limit` values in all). Reads documents (one row per document), not chunks."""
    out: dict[str, list[str]] = {name: [] for name in fields}
    for field, value in conn.execute(_VALUES, {"fields": list(fields), "limit": limit}).fetchall():
        out[field].append(value)
    return out
