"""Tool failures as the model sees them: a clear message in an error result (is_error), never a crash
or a stack trace - the same words the API would answer with, minus the HTTP status."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from backend.errors import DomainError
from backend.text.hygiene import find_unstorable, location_text, printable

logger = logging.getLogger(__name__)


@contextmanager
def tool_errors(tool: str) -> Iterator[None]:
    """Turn what a tool raises into a ToolError whose message a model (and its user) can act on."""
    try:
        yield
    except ToolError:
        raise
    except DomainError as exc:
        raise ToolError(f"{type(exc).__name__}: {printable(str(exc))}") from exc
    except psycopg.errors.QueryCanceled as exc:
        raise ToolError("the database query took too long and was cancelled; narrow the request") from exc
    except psycopg.OperationalError as exc:
        logger.error("MCP tool %s: database unavailable: %s", tool, exc)
        raise ToolError("the database is unavailable; try again shortly") from exc
    except Exception as exc:
        logger.exception("MCP tool %s: unexpected error", tool)
        raise ToolError("internal error; it has been logged") from exc


def check_text(**arguments: Any) -> None:
    """Refuse a NUL or an unpaired surrogate in any argument (PostgreSQL cannot store them), as the API's
    edge check does for every request."""
    for name, value in arguments.items():
        problem = find_unstorable(value, (name,))
        if problem is not None:
            raise ToolError(f"{location_text(problem.location, root='arguments')}: {problem.message}")


def invalid_arguments(tool: str, exc: ValidationError) -> str:
    """One line naming each invalid argument and what is wrong (input values are not echoed)."""
    problems = [
        f"{location_text(tuple(err['loc']), root='arguments')}: {printable(str(err['msg']))}"
        for err in exc.errors(include_url=False, include_input=False)
    ]
    return f"invalid arguments for {tool}: " + "; ".join(problems)
