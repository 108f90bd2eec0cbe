"""A deadline that work running in a thread carries into every transaction it opens.

A search of the documents beside a web leg has a hard limit (WEB_LOCAL_TIMEOUT_S). Past it the request
goes on without the documents, but the thread that searches them cannot be cancelled from asyncio: it
would keep its pooled connection, and its statement would run on, until DB_STATEMENT_TIMEOUT_MS (30 s
by default) — under load, a pool held by searches nobody waits for. Run inside `within(work, seconds)`,
every transaction the work opens (`apply_identity`) gets a statement timeout no later than the
deadline, so PostgreSQL cancels the statement when the caller stops waiting; a transaction begun after
the deadline does not run at all. Either way the work raises `DeadlinePassed`, a TimeoutError: to the
caller it is the same as its own timeout firing first.

The deadline lives in a context variable, which `asyncio.to_thread` copies into the thread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TypeVar

import psycopg

T = TypeVar("T")

_DEADLINE: ContextVar[float | None] = ContextVar("statement_deadline", default=None)


class DeadlinePassed(TimeoutError):
    """The work's deadline passed: its statement was cancelled, or a new transaction was refused."""


def within(work: Callable[[], T], seconds: float) -> Callable[[], T]:
    """`work` bound to a deadline `seconds` from now (not from when a thread starts running it)."""
    at = time.monotonic() + seconds

    def bounded() -> T:
        token = _DEADLINE.set(at)
        try:
            return work()
        except psycopg.errors.QueryCanceled as exc:
            if time.monotonic() >= at:
                raise DeadlinePassed(f"cancelled at its deadline ({seconds:g} s)") from exc
            raise  # cancelled by DB_STATEMENT_TIMEOUT_MS, before the deadline: that error stands
        finally:
            _DEADLINE.reset(token)

    return bounded


def statement_timeout_ms(configured: int | None) -> int | None:
    """The statement timeout for a transaction opened now: `configured` (None: the server's; 0: none),
    shortened to the time left before the current deadline. Raises DeadlinePassed when none is left."""
    at = _DEADLINE.get()
    if at is None:
        return configured
    left = math.ceil((at - time.monotonic()) * 1000)
    if left <= 0:
        raise DeadlinePassed("the deadline passed before the transaction began")
    return left if not configured else min(configured, left)
