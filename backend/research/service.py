"""Deep research for the API: validate and record a run, run the graph as the caller, store the report
as an assistant message and the run's outcome, and stream progress events.

Every database statement runs as the caller (Database.as_user): row-level security decides which
documents the searches find, and whose conversations and runs these are.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from backend.auth.identity import Identity
from backend.chat.conversations import recent_turns
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import conversations as conversations_repo
from backend.db.repositories import research_runs as runs_repo
from backend.errors import InvalidInput, NotFound
from backend.llm import LLM, Turn
from backend.research.budget import RunBudget
from backend.research.graph import run_graph
from backend.research.model import ResearchModel
from backend.research.presets import (
    RunLimits,
    effective_step_k,
    effective_write_k,
    preset,
    run_limits,
)
from backend.research.results import error_record, response_body, run_view
from backend.research.sections import RunContext
from backend.research.types import Emit, PreparedRun, ResearchRequest
from backend.retrieval.filters import compile_filter
from backend.search.service import RetrievalService
from backend.text import clean_query
from backend.web import WebSearch

_STOP = object()  # the stream's end-of-run marker


class ResearchService:
    def __init__(
        self,
        db: Database,
        retrieval: RetrievalService,
        llm: LLM,
        settings: Settings,
        web: WebSearch,
    ) -> None:
        self.db = db
        self.retrieval = retrieval
        self.llm = llm
        self.settings = settings
        self.web = web  # the web leg (issue 13); disabled without WEB_SEARCH_PROVIDER
        self._background: set[asyncio.Task[Any]] = set()
        # Model calls of every run share these threads (see ResearchModel.executor).
        self._model_threads = ThreadPoolExecutor(max_workers=8, thread_name_prefix="research-model")

    async def start(self, request: ResearchRequest, *, identity: Identity) -> PreparedRun:
        """Validate the request (4xx before anything runs) and record the run as running."""
        s = self.settings
        question, query = request.question.strip(), clean_query(request.question)
        if not query:
            raise InvalidInput("question is empty")
        if len(query) > s.max_query_chars:
            raise InvalidInput(f"question has {len(query)} characters; the limit is {s.max_query_chars}")
        # an unknown filter key or one over FILTER_MAX_SIZE is a 422 now, not when the run searches
        compile_filter(request.filters, s.metadata_whitelist, max_size=s.filter_max_size)
        name = request.preset or s.research_default_preset
        chosen = preset(name, s)
        step_k = effective_step_k(chosen, request.step_top_k, s)
        requested_step = request.step_top_k or s.research_step_top_k
        write_k = effective_write_k(chosen, requested_step, request.write_top_k or s.research_write_top_k)
        limits = run_limits(name, s)
        options = {
            "preset": name,
            "web": request.web,
            "filters": request.filters,
            "collections": None if request.collections is None else [str(c) for c in request.collections],
            "step_top_k": step_k,
            "write_top_k": write_k,
        }
        run_id, history = await asyncio.to_thread(
            self._open_run, identity, question, request.conversation_id, name, options, limits
        )
        return PreparedRun(
            run_id=run_id,
            identity=identity,
            question=question,
            query=query,
            conversation_id=request.conversation_id,
            history=history,
            preset=chosen,
            limits=limits,
            step_k=step_k,
            write_k=write_k,
            filters=request.filters,
            web=request.web,
            collections=request.collections,
        )

    async def run(self, run: PreparedRun, emit: Emit | None = None) -> dict[str, Any]:
        """The whole run; returns the response body. The run row ends completed, failed or cancelled."""
        budget = RunBudget(run.limits, self.settings.research_write_reserve)
        model = ResearchModel(self.llm, budget, self.settings.research_model_timeout_s, self._model_threads)
        pending: list[asyncio.Future[None]] = []
        plan: dict[str, Any] = {}

        def sink(event: dict[str, Any]) -> None:
            if event["type"] == "plan":
                event = {**event, "run_id": str(run.run_id)}
                plan.update(method=event["method"], sections=event["sections"])
                # Recorded as soon as it exists, so a client reading the run mid-way sees the plan.
                pending.append(asyncio.ensure_future(asyncio.to_thread(self._record_plan, run, dict(plan))))
            if event["type"] == "plan_gaps":  # the global verify's gaps join the plan (stored at the end)
                plan["sections"] = [*plan.get("sections", []), *event["sections"]]
            if emit is not None:
                emit(event)

        try:
            rewrite = await model.rewrite(run.query, run.history)
            ctx = RunContext(
                question=rewrite.query,
                asked=run.question,
                identity=run.identity,
                settings=self.settings,
                preset=run.preset,
                step_k=run.step_k,
                write_k=run.write_k,
                filters=run.filters,
                collections=run.collections,
                retrieval=self.retrieval,
                embedder=self.retrieval.embedder,
                model=model,
                budget=budget,
                emit=sink,
                web=self.web,
                web_choice=run.web,
                search_slots=asyncio.Semaphore(self.settings.research_parallel_searches),
            )
            outcome = await run_graph(ctx)
            await asyncio.gather(*pending)
            body = response_body(
                run, outcome, budget, rewrite, model, web_enabled=self.web.enabled, pruned=ctx.ledger.pruned()
            )
            return await asyncio.to_thread(self._store, run, body, plan)
        except asyncio.CancelledError:
            # The client went away: record it (shielded: this task is being cancelled) and stop.
            await asyncio.shield(asyncio.to_thread(self._fail, run, budget, "cancelled", None))
            raise
        except Exception as exc:
            await asyncio.to_thread(self._fail, run, budget, "failed", exc)
            raise

    async def stream(self, run: PreparedRun) -> AsyncIterator[dict[str, Any]]:
        """Events as they happen, then {"type": "done", **body}; a failure is raised after the events
        before it. Closing the iterator (the client disconnected) cancels the run and all its work."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        task = asyncio.create_task(self.run(run, emit=queue.put_nowait))
        task.add_done_callback(lambda _: queue.put_nowait(_STOP))
        try:
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), self.settings.research_heartbeat_s)
                except TimeoutError:
                    yield {"type": "heartbeat"}
                    continue
                if event is _STOP:
                    yield {"type": "done", **task.result()}  # raises the run's failure, if it failed
                    return
                yield event
        finally:
            if not task.done():
                task.cancel()
                self._keep(task)  # it records the cancellation on its own; keep it referenced until then

    def close(self) -> None:
        """Stop the model threads (a call still running finishes on its own)."""
        self._model_threads.shutdown(wait=False, cancel_futures=True)

    def get_run(self, run_id: uuid.UUID, *, identity: Identity) -> dict[str, Any]:
        """One of the caller's runs (another user's is a 404, like one that does not exist)."""
        with self.db.as_user(identity, read_only=True) as conn:
            row = runs_repo.get_run(conn, run_id=run_id)
        if row is None:
            raise NotFound(f"research run {run_id} does not exist")
        return run_view(row)

    def list_runs(self, *, identity: Identity, limit: int, offset: int) -> list[dict[str, Any]]:
        with self.db.as_user(identity, read_only=True) as conn:
            rows = runs_repo.list_runs(conn, owner_id=identity.user_id, limit=limit, offset=offset)
        return [run_view(row) for row in rows]

    # --- persistence (worker threads) ------------------------------------------------------------

    def _open_run(
        self,
        identity: Identity,
        question: str,
        conversation_id: uuid.UUID | None,
        preset_name: str,
        options: dict[str, Any],
        limits: RunLimits,
    ) -> tuple[uuid.UUID, list[Turn]]:
        history: list[Turn] = []
        with self.db.as_user(identity) as conn:
            if conversation_id is not None:
                history = recent_turns(
                    conn,
                    conversation_id=conversation_id,
                    identity=identity,
                    limit=self.settings.chat_history_turns,
                )
            run_id = runs_repo.create_run(
                conn,
                owner_id=identity.user_id,
                question=question,
                preset=preset_name,
                options=options,
                budget={"limits": limits.as_dict()},
            )
        return run_id, history

    def _record_plan(self, run: PreparedRun, plan: dict[str, Any]) -> None:
        with self.db.as_user(run.identity) as conn:
            runs_repo.record_plan(conn, run_id=run.run_id, plan=plan)

    def _store(self, run: PreparedRun, body: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
        """The question and the report as two messages, and the run's outcome, in one transaction."""
        research = body["diagnostics"]
        metadata = {
            "generator": body["generator"],
            "research": {
                "run_id": str(run.run_id),
                "preset": run.preset.name,
                "question": body["question"],
                "sections": body["sections"],
                "partial": body["partial"],
                "partial_reasons": body["partial_reasons"],
                "plan_method": plan.get("method"),
                "short_answer": body["short_answer"],
            },
        }
        with self.db.as_user(run.identity) as conn:
            conversation_id = run.conversation_id or conversations_repo.create_conversation(
                conn, owner_id=run.identity.user_id, title=run.question[:80]
            )
            conversations_repo.add_message(
                conn, conversation_id=conversation_id, role="user", content=run.question
            )
            message_id = conversations_repo.add_message(
                conn,
                conversation_id=conversation_id,
                role="assistant",
                content=body["report"],
                sources=body["sources"],
                metadata=metadata,
            )
            body = {**body, "conversation_id": str(conversation_id), "message_id": str(message_id)}
            runs_repo.finish_run(
                conn,
                run_id=run.run_id,
                status="completed",
                partial=body["partial"],
                stop_reasons=body["partial_reasons"],
                budget=research["budget"],
                timings=research["timings"],
                plan=plan,
                conversation_id=conversation_id,
                message_id=message_id,
                result=body,
            )
        return body

    def _fail(self, run: PreparedRun, budget: RunBudget, status: str, exc: Exception | None) -> None:
        record = error_record(exc) if exc is not None else {"detail": "the client disconnected"}
        with self.db.as_user(run.identity) as conn:
            runs_repo.finish_run(
                conn,
                run_id=run.run_id,
                status=status,
                partial=False,
                stop_reasons=[record["detail"]],
                budget={
                    "limits": run.limits.as_dict(),
                    "used": budget.usage(),
                    "exhausted": budget.exhausted,
                },
                timings={"total_ms": round(budget.elapsed() * 1000, 1)},
                error=record,
            )

    def _keep(self, task: asyncio.Task[Any]) -> None:
        self._background.add(task)
        task.add_done_callback(self._background.discard)
