"""Deep research runs (migration 015): created when a run starts, updated as it goes and when it ends."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb


def create_run(
    conn: psycopg.Connection,
    *,
    owner_id: uuid.UUID | None,
    question: str,
    preset: str,
    options: dict[str, Any],
    budget: dict[str, Any],
) -> uuid.UUID:
    row = conn.execute(
        "insert into research_runs (owner_id, question, preset, options, budget) "
        "values (%s, %s, %s, %s, %s) returning id",
        (owner_id, question, preset, Jsonb(options), Jsonb(budget)),
    ).fetchone()
    assert row is not None
    created: uuid.UUID = row[0]
    return created


def record_plan(conn: psycopg.Connection, *, run_id: uuid.UUID, plan: dict[str, Any]) -> None:
    conn.execute(
        "update research_runs set plan = %s, updated_at = now() where id = %s and status = 'running'",
        (Jsonb(plan), run_id),
    )


def finish_run(
    conn: psycopg.Connection,
    *,
    run_id: uuid.UUID,
    status: str,
    partial: bool,
    stop_reasons: Sequence[str],
    budget: dict[str, Any],
    timings: dict[str, Any],
    plan: dict[str, Any] | None = None,
    conversation_id: uuid.UUID | None = None,
    message_id: uuid.UUID | None = None,
    result: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> bool:
    """The run's outcome; False when it had already finished (a run ends once)."""
    cur = conn.execute(
        """
        update research_runs
        set status = %(status)s, partial = %(partial)s, stop_reasons = %(stop_reasons)s,
            budget = %(budget)s, timings = %(timings)s, result = %(result)s, error = %(error)s,
            plan = coalesce(%(plan)s, plan),
            conversation_id = coalesce(%(conversation_id)s, conversation_id),
            message_id = coalesce(%(message_id)s, message_id),
            -- statement_timestamp(): when this statement ran (Citus refuses a volatile clock_timestamp())
            updated_at = now(), finished_at = statement_timestamp()
        where id = %(id)s and status = 'running'
        """,
        {
            "id": run_id,
            "status": status,
            "partial": partial,
            "stop_reasons": list(stop_reasons),
            "budget": Jsonb(budget),
            "timings": Jsonb(timings),
            "result": Jsonb(result) if result is not None else None,
            "error": Jsonb(error) if error is not None else None,
            "plan": Jsonb(plan) if plan is not None else None,
            "conversation_id": conversation_id,
            "message_id": message_id,
        },
    )
    return cur.rowcount == 1


def get_run(conn: psycopg.Connection, *, run_id: uuid.UUID) -> dict[str, Any] | None:
    """One run, if the caller may see it (row-level security: its owner only)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "select id, conversation_id, message_id, question, preset, status, partial, stop_reasons, "
            "options, plan, budget, timings, result, error, created_at, updated_at, finished_at "
            "from research_runs where id = %s",
            (run_id,),
        ).fetchone()


def list_runs(
    conn: psycopg.Connection, *, owner_id: uuid.UUID | None, limit: int, offset: int
) -> list[dict[str, Any]]:
    """The caller's runs, newest first, without their (large) results."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "select id, conversation_id, message_id, question, preset, status, partial, stop_reasons, "
            "created_at, finished_at from research_runs where owner_id is not distinct from %s "
            "order by created_at desc, id limit %s offset %s",
            (owner_id, limit, offset),
        ).fetchall()
