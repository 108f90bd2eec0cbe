"""WhereBuilder (seed 004): the effective filter of a search, the caller's `filters` plus what
`infer_filters` reads in the question, and the question's text without the words that only scoped it.

The caller's filters always apply as given and win: an inferred condition on a field they filter
anywhere in their tree is dropped (overridden). The rest combine with theirs by AND (keys side by side,
which the filter grammar reads as $and). An inferred condition the filter compiler refuses (say, a date
range where only equality is served) is left out and reported, never a 422 for words the user wrote.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo

from backend.auth.identity import Identity
from backend.config import Settings
from backend.errors import DomainError, InvalidInput
from backend.llm import LLM
from backend.where.model import WhereModelError, infer_with_model
from backend.where.rules import Inferred, Vocabulary, infer_rules

logger = logging.getLogger(__name__)

Method = Literal["none", "rules", "gemini", "openai_compatible"]
Validate = Callable[[dict[str, Any]], Any]  # the filter compiler: raises InvalidInput on a bad filter


@dataclass
class WherePlan:
    """What one search filters on and searches for."""

    question: str  # the question as asked (cleaned)
    query: str  # the text retrieval searches: the question without the phrases that only scoped it
    user: dict[str, Any]  # the caller's filters, as given
    applied: list[Inferred] = field(default_factory=list)  # inferred conditions in the effective filter
    overridden: list[Inferred] = field(default_factory=list)  # inferred, dropped: the caller filters it
    ignored: list[tuple[Inferred, str]] = field(default_factory=list)  # inferred, refused by the compiler
    method: Method = "none"
    fallback: str | None = None  # why the model's reading was not used (the rules decided)

    @property
    def inferred(self) -> dict[str, Any]:
        return {item.field: item.condition for item in self.applied}

    @property
    def effective(self) -> dict[str, Any]:
        """The caller's filters AND the inferred conditions on other fields."""
        return {**self.user, **self.inferred}

    @property
    def removed_phrases(self) -> list[str]:
        return [item.phrase for item in [*self.applied, *self.overridden] if item.strip]


class WhereBuilder:
    """Builds WherePlans. `clock` returns now (aware); tests pass a fixed one."""

    def __init__(
        self,
        settings: Settings,
        vocabulary: Callable[[Identity], Vocabulary],
        validate: Validate,
        *,
        llm: LLM | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings
        self.vocabulary = vocabulary
        self.validate = validate
        self.llm = llm
        self.clock = clock or (lambda: datetime.now(UTC))
        self.zone = ZoneInfo(settings.where_timezone)
        # A model call that timed out keeps its thread until the HTTP timeout ends it: not the caller's.
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="where-llm") if llm else None

    def plan(
        self, question: str, user_filters: dict[str, Any] | None, *, infer: bool, identity: Identity
    ) -> WherePlan:
        """The plan of one search; InvalidInput when the caller's own filters are not valid."""
        user = dict(user_filters or {})
        if user:
            self.validate(user)
        plan = WherePlan(question=question, query=question, user=user)
        if not infer or not question.strip():
            return plan
        now = self.clock().astimezone(self.zone)
        vocabulary = self.vocabulary(identity)
        found, plan.method, plan.fallback = self._infer(question, now, vocabulary)
        taken = _fields(user)
        for item in found:
            if item.field in taken:
                plan.overridden.append(item)
                continue
            try:
                self.validate({item.field: item.condition})
            except InvalidInput as exc:
                plan.ignored.append((item, str(exc)))
                continue
            plan.applied.append(item)
        plan.query = strip_phrases(
            question, [s for item in [*plan.applied, *plan.overridden] for s in item.strip]
        )
        return plan

    def _infer(
        self, question: str, now: datetime, vocabulary: Vocabulary
    ) -> tuple[list[Inferred], Method, str | None]:
        s = self.settings
        rules = infer_rules(question, now, vocabulary, high_quality_min=s.where_high_quality_min)
        if not s.where_infer_tags:
            rules = [i for i in rules if i.field != "tags" or i.strip]  # explicit #tags still count
        if self.llm is None or self._executor is None:
            return rules, "rules", None
        future = self._executor.submit(
            infer_with_model, self.llm, question, now, vocabulary, high_quality_min=s.where_high_quality_min
        )
        try:
            return future.result(timeout=s.where_llm_timeout_s), self._model_method, None
        except FutureTimeout:
            reason = f"timeout after {s.where_llm_timeout_s:g} s"
        except WhereModelError as exc:
            reason = str(exc)
        except DomainError as exc:
            reason = f"error: {exc}"
        except Exception as exc:  # noqa: BLE001 - the model is optional: any failure leaves the rules
            logger.exception("[where] the model's filters failed unexpectedly")
            reason = f"error: {type(exc).__name__}: {exc}"
        logger.warning("[where] the model's filters were not used (%s); the rules decide", reason)
        return rules, "rules", reason

    @property
    def _model_method(self) -> Method:
        """The model's reading, named by its provider (a test double counts as Gemini, as it always did)."""
        generator = getattr(self.llm, "generator", "")
        return "openai_compatible" if generator == "openai_compatible" else "gemini"

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


def _fields(node: Any) -> set[str]:
    """Every field a filter tree names (inside $and / $or / $not too)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and key.startswith("$"):
                found |= _fields(value)
            else:
                found.add(key)
    elif isinstance(node, list):
        for item in node:
            found |= _fields(item)
    return found


_PARTICLES = "的 之 里 中 在 于 from in of".split()
_EDGE = re.compile(r"^[\s,，、。.;；:：!！?？]+|[\s,，、;；:：]+$")


def strip_phrases(question: str, spans: list[tuple[int, int]]) -> str:
    """`question` without the spans (merged when they overlap), tidied; the question itself when nothing
    searchable would be left ("最近一周的英文资料" keeps 资料; "上个月" alone stays as it is)."""
    if not spans:
        return question
    kept, position = [], 0
    for start, end in sorted(spans):
        if start > position:
            kept.append(question[position:start])
        position = max(position, end)
    kept.append(question[position:])
    text = " ".join(part.strip() for part in kept if part.strip())
    text = re.sub(r"\s+", " ", text)
    for _ in range(3):  # "的" left at an edge ("去年的发票" -> "的发票"), punctuation, stray prepositions
        text = _EDGE.sub("", text)
        words = text.split(" ")
        if words and words[0].lower() in _PARTICLES:
            text = " ".join(words[1:])
        elif text[:1] in ("的", "之", "里", "中"):
            text = text[1:]
    return text if re.search(r"\w", text) else question
