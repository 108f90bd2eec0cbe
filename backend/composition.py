"""The one composition function: settings -> pool, providers and services, injected everywhere."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from backend.auth import Authenticator, build_authenticator
from backend.chat.context import ContextBuilder
from backend.chat.service import ChatService
from backend.confidence.policy import PolicyError
from backend.config import Settings
from backend.db import migrations
from backend.db.connection import create_pool, resolve_database_url
from backend.db.database import Database
from backend.db.repositories import erasure
from backend.documents.ingestion import IngestionService
from backend.embeddings import Embedder, create_embedder
from backend.errors import ConfigurationError
from backend.jobs.service import JobsService
from backend.jobs.worker import Worker, WorkerThreads
from backend.keys.service import ApiKeyAuthenticator, ApiKeys
from backend.llm import LLM, create_llm
from backend.llm.instrumented import instrument_llm
from backend.llm.token_count import create_token_counter
from backend.openai_compat import OpenAICompat
from backend.rerank import Reranker, create_rerankers
from backend.research.service import ResearchService
from backend.retrieval.rerank_policy import RerankPolicyError
from backend.search.policies import SearchPolicies
from backend.search.service import RetrievalService
from backend.telemetry import Metrics
from backend.web import PostgresWebCache, WebSearch, create_web_search
from backend.where.vocabulary import build_where_builder

logger = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    database_url: str
    db: Database
    embedder: Embedder
    llm: LLM
    authenticator: Authenticator
    api_keys: ApiKeys
    openai: OpenAICompat
    ingestion: IngestionService
    jobs: JobsService
    retrieval: RetrievalService
    chat: ChatService
    web: WebSearch
    research: ResearchService
    metrics: Metrics
    rerankers: dict[str, Reranker]

    def finish_interrupted_erasures(self) -> int:
        """On a Citus cluster, the erasures a crash left queued (sql/citus/erasure_outbox.sql), finished
        at start-up; the number of documents (0 on one node, where nothing is ever queued)."""
        with self.db.owner() as conn:
            count = erasure.drain_erasures(conn)
        if count:
            logger.warning("finished the erasure of %d documents that a crash had interrupted", count)
        return count

    def start_workers(self) -> WorkerThreads | None:
        """INGEST_WORKERS background ingestion workers in this process (None for 0); the caller stops them."""
        count = self.settings.ingest_workers
        if count == 0:
            return None
        threads = WorkerThreads(
            lambda i: Worker(self.db, self.ingestion, self.settings, name=f"api-{i}"), count
        )
        self.jobs.on_submit = threads.wake
        threads.start()
        return threads

    @property
    def pool(self) -> ConnectionPool:
        """The primary pool (the backend's own role: health checks, maintenance)."""
        return self.db.pool

    def close(self) -> None:
        self.research.close()
        self._close_clients()
        self.db.close()

    def _close_clients(self) -> None:
        """Every provider's HTTP client: rerankers, token counter, the answering model, the embedder."""
        for client in (*self.rerankers.values(), self.chat.context_builder.counter, self.llm, self.embedder):
            close = getattr(client, "close", None)
            if close is not None:
                close()

    async def aclose(self) -> None:
        """Close the web clients on the event loop that used them, then the pools."""
        await self.web.aclose()
        self.research.close()
        await asyncio.to_thread(self._close_clients)
        await asyncio.to_thread(self.db.close)


def build_services(
    settings: Settings,
    *,
    database_url: str | None = None,
    embedder: Embedder | None = None,
    llm: LLM | None = None,
    authenticator: Authenticator | None = None,
    web: WebSearch | None = None,
    migrate: bool | None = None,
) -> Services:
    """Resolve the database (embedded if unset), migrate (AUTO_MIGRATE unless `migrate` says), open the
    pool, wire the providers. A schema older than the code is refused with what to run."""
    url = database_url or resolve_database_url(settings)
    if settings.resolved_auto_migrate if migrate is None else migrate:
        migrations.upgrade(url)
    else:
        _require_current_schema(url)
    read_url = settings.database_read_url.strip()
    db = Database(
        create_pool(url, settings),
        settings,
        read_pool=create_pool(read_url, settings, name="pgrag-read") if read_url else None,
    )
    embedder = embedder or create_embedder(settings)
    metrics = Metrics()  # this process's /metrics; every service records into it
    llm = instrument_llm(llm or create_llm(settings), metrics)
    rerankers = create_rerankers(settings)
    try:
        policies = SearchPolicies.load(settings, embedder=embedder)
    except RerankPolicyError as exc:
        db.close()
        raise ConfigurationError(f"RAG_RERANK_POLICY: {exc}") from exc
    except PolicyError as exc:
        db.close()
        raise ConfigurationError(f"SCORE_POLICY_VERSION: {exc}") from exc
    retrieval = RetrievalService(
        db,
        embedder,
        settings,
        policies=policies,
        where=build_where_builder(settings, db),
        rerankers=rerankers,
        metrics=metrics,
    )
    # The web clients are created here and used on the event loop that serves requests (one loop per
    # process: the server's, or the CLI command's asyncio.run).
    web = web or create_web_search(settings, cache=PostgresWebCache(db.pool))
    chat = ChatService(
        db,
        retrieval,
        llm,
        settings,
        web,
        context_builder=ContextBuilder(settings, create_token_counter(settings, metrics), metrics),
    )
    research = ResearchService(db, retrieval, llm, settings, web)
    return Services(
        settings=settings,
        database_url=url,
        db=db,
        embedder=embedder,
        llm=llm,
        authenticator=ApiKeyAuthenticator(authenticator or build_authenticator(settings), db),
        api_keys=ApiKeys(db),
        ingestion=IngestionService(db, embedder, settings),
        jobs=JobsService(db, settings),
        retrieval=retrieval,
        chat=chat,
        openai=OpenAICompat(db, chat, research),
        web=web,
        research=research,
        metrics=metrics,
        rerankers=rerankers,
    )


def _require_current_schema(url: str) -> None:
    current, head = migrations.current_revision(url), migrations.head_revision()
    if current != head:
        raise ConfigurationError(
            f"the database schema is at migration {current or 'none (empty database)'} but this code "
            f"needs {head}: run `python -m backend db upgrade` (or set AUTO_MIGRATE=true)"
        )
