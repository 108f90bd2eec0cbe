"""`search "..."` and `ask "..."`, as the local user of AUTH_MODE=none: the shared corpus and its own."""

from __future__ import annotations

import argparse
import asyncio
import json

from backend.auth import LOCAL_IDENTITY
from backend.chat.service import ChatReply, ChatRequest
from backend.composition import Services
from backend.config import get_settings
from backend.search.types import SearchRequest


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser("search", help="retrieve: hybrid prefetch -> rerank -> dynamic top-k")
    s.add_argument("query")
    s.add_argument("--top-k", type=int, default=None)
    s.add_argument("--mode", choices=["hybrid", "vector", "fulltext"], default=None)
    s.add_argument("--no-dynamic", action="store_true", help="exactly --top-k results")
    s.add_argument("--json", action="store_true", help="full results and diagnostics as JSON")
    s.set_defaults(handler=search)
    a = sub.add_parser("ask", help="answer a question with [n] citations")
    a.add_argument("question")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=ask)


def search(args: argparse.Namespace) -> int:
    from backend.composition import build_services

    services = build_services(get_settings())
    try:
        result = services.retrieval.search(
            SearchRequest(query=args.query, top_k=args.top_k, mode=args.mode, dynamic=not args.no_dynamic),
            identity=LOCAL_IDENTITY,
        )
    finally:
        services.close()
    if args.json:
        payload = {
            "query": result.query,
            "mode": result.mode,
            "diagnostics": result.diagnostics.model_dump(mode="json"),
            "results": [
                {
                    "chunk_id": c.chunk_id,
                    "external_id": c.external_id,
                    "title": c.title,
                    "heading": c.heading,
                    "content": c.content,
                    "scores": c.why(),
                }
                for c in result.results
            ],
        }
        print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
        return 0
    print(f"{len(result.results)} results ({result.mode}, {result.diagnostics.total_ms:.0f} ms)")
    for i, c in enumerate(result.results, 1):
        head = f" > {c.heading}" if c.heading else ""
        print(
            f"\n[{i}] {c.title}{head}  (final {c.final_score:.3f}, cos {c.similarity or 0:.3f}, "
            f"coverage {c.keyword_coverage:.2f}, ft#{c.full_text_rank} vec#{c.vector_rank})"
        )
        print("    " + c.content[:300].replace("\n", " "))
    return 0


async def _ask(services: Services, question: str) -> ChatReply:
    try:
        return await services.chat.chat(ChatRequest(message=question), identity=LOCAL_IDENTITY)
    finally:
        await services.web.aclose()  # the web clients belong to this event loop


def ask(args: argparse.Namespace) -> int:
    from backend.composition import build_services

    services = build_services(get_settings())
    try:
        reply = asyncio.run(_ask(services, args.question))
    finally:
        services.close()
    if args.json:
        from backend.chat.service import reply_to_dict

        print(json.dumps(reply_to_dict(reply), ensure_ascii=False, indent=2, default=str))
        return 0
    print(reply.answer)
    print(f"\n(generator: {reply.generator})")
    for src in reply.sources:
        mark = "*" if src["cited"] else " "
        head = f" > {src['heading']}" if src["heading"] else ""
        print(f"{mark}[{src['n']}] {src['title']}{head}")
    return 0
