"""The WhereBuilder as the services use it: the caller's metadata vocabulary (cached) and its wiring."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from backend.auth.identity import Identity
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import vocabulary as vocabulary_repo
from backend.errors import ConfigurationError, ProviderError
from backend.llm import LLM, create_llm
from backend.retrieval.filters import compile_filter
from backend.where.builder import WhereBuilder
from backend.where.rules import Vocabulary

VOCABULARY_FIELDS = ("tags", "lang", "media_type", "content_type")
_MODEL_PROVIDERS = ("gemini", "openai_compatible")  # LLM providers that can read a question into filters
_MAX_CALLERS = 1024  # cached vocabularies (one per caller: row-level security decides what each sees)


class MetadataVocabulary:
    """`get(identity)`: the values of the caller's documents, re-read after WHERE_VOCABULARY_TTL_S.

    Read as the caller, so a private document's tags never shape another user's filter. The read scans
    the documents table (one row per document); the cache keeps it off the path of most searches.
    """

    def __init__(
        self,
        db: Database,
        *,
        ttl_s: float,
        max_values: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.ttl_s = ttl_s
        self.max_values = max_values
        self.clock = clock
        self._cache: OrderedDict[tuple[object, str], tuple[float, Vocabulary]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, identity: Identity) -> Vocabulary:
        key = (identity.user_id, identity.role)
        now = self.clock()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and now - cached[0] < self.ttl_s:
                self._cache.move_to_end(key)
                return cached[1]
        with self.db.as_user(identity, read_only=True, replica=True) as conn:
            values = vocabulary_repo.metadata_values(conn, fields=VOCABULARY_FIELDS, limit=self.max_values)
        vocabulary = Vocabulary(values)
        with self._lock:
            self._cache[key] = (now, vocabulary)
            self._cache.move_to_end(key)
            while len(self._cache) > _MAX_CALLERS:
                self._cache.popitem(last=False)
        return vocabulary

    def clear(self) -> None:
        """Forget every cached vocabulary (tests; a deploy that re-tagged its documents)."""
        with self._lock:
            self._cache.clear()


def build_where_builder(settings: Settings, db: Database, *, llm: LLM | None = None) -> WhereBuilder:
    """The WhereBuilder of the settings: the caller's vocabulary, the filter compiler, and a model when
    WHERE_BUILDER says (auto: when the LLM provider is Gemini or OpenAI-compatible), with its own short
    timeout and no retries: a slow model must not hold a search, the rules are there."""
    vocabulary = MetadataVocabulary(
        db, ttl_s=settings.where_vocabulary_ttl_s, max_values=settings.where_vocabulary_max_values
    )
    provider = "gemini" if settings.where_builder == "gemini" else settings.resolved_llm_provider
    use_model = settings.where_builder != "rules" and provider in _MODEL_PROVIDERS
    if settings.where_builder == "llm" and not use_model:
        raise ConfigurationError("WHERE_BUILDER=llm needs LLM_PROVIDER=gemini or openai_compatible")
    if use_model and llm is None:
        update: dict[str, object] = {"llm_provider": provider, "llm_max_retries": 0}
        update["llm_timeout_s"] = settings.where_llm_timeout_s
        try:
            llm = create_llm(settings.model_copy(update=update))
        except ProviderError as exc:
            raise ConfigurationError(f"WHERE_BUILDER={settings.where_builder}: {exc}") from exc
    whitelist = list(settings.metadata_whitelist)
    return WhereBuilder(
        settings,
        vocabulary.get,
        lambda filters: compile_filter(filters, whitelist, max_size=settings.filter_max_size),
        llm=llm if use_model else None,
    )
