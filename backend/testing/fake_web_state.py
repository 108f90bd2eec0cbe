"""The fake web's shared state: behaviours chosen per server or per query (fake: keywords), the
requests it recorded, and what its handler reads (backend/testing/fake_web_handler.py)."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from backend.testing.fake_web_corpus import FakePage

_TERMS = re.compile(r"[\u4e00-\u9fff]+|[a-z0-9]+")
_STOP = frozenset("the a an of in on and or to is are was what who how when where which does did do".split())
SNIPPET_CHARS = 200


def terms(text: str) -> set[str]:
    """Chinese bigrams and English words (stop words aside): what the fake ranks by."""
    found: set[str] = set()
    for run in _TERMS.findall(text.lower()):
        if run[0] >= "\u4e00":
            found.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
        elif len(run) > 1 and run not in _STOP:
            found.add(run)
    return found


_KEYWORD = re.compile(r"fake:([a-z-]+)(?:=([\d.]+))?")
_STATUS = re.compile(r"fake:(\d{3})(?:x(\d+))?")


@dataclass(frozen=True)
class Behaviour:
    latency_ms: int = 0
    status: int | None = None  # answer with this HTTP status instead of results
    fail_times: int | None = None  # only the first N requests of a query get `status`; None: all
    retry_after: str | None = None
    hang_s: float = 0.0
    empty: bool = False
    duplicates: bool = False
    near_duplicates: bool = False
    malformed: bool = False  # 200 with a body that is not JSON

    def with_keywords(self, query: str) -> Behaviour:
        """This behaviour, overridden by the fake: keywords in the query."""
        b = self
        for name, value in _KEYWORD.findall(query):
            if name == "latency":
                b = replace(b, latency_ms=int(float(value or 0)))
            elif name == "hang":
                b = replace(b, hang_s=float(value or 30))
            elif name == "retry-after":
                b = replace(b, retry_after=value or "1")
            elif name == "empty":
                b = replace(b, empty=True)
            elif name == "dupes":
                b = replace(b, duplicates=True)
            elif name == "neardup":
                b = replace(b, near_duplicates=True)
            elif name == "badjson":
                b = replace(b, malformed=True)
        for code, times in _STATUS.findall(query):
            b = replace(b, status=int(code), fail_times=int(times) if times else None)
        return b


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: str | None
    headers: dict[str, str]
    at: float


@dataclass
class State:
    behaviour: Behaviour = field(default_factory=Behaviour)
    requests: list[RecordedRequest] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    registered: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pages: dict[str, tuple[FakePage | None, str]] = field(default_factory=dict)  # path -> (page, html)
    baike: list[Any] = field(default_factory=list)  # BaikeEntry (fake_engines.py)
    papers: list[Any] = field(default_factory=list)  # Paper
    boxes: dict[str, dict[str, Any]] = field(default_factory=dict)  # Serper's answerBox/knowledgeGraph
    disconnects: int = 0
    in_flight: int = 0
    max_in_flight: int = 0  # the most search requests it was working on at once
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)


def clean_query(query: str) -> str:
    """The query without its fake: keywords."""
    return " ".join(_KEYWORD.sub(" ", _STATUS.sub(" ", query)).split())
