"""bench.research --web: compound questions whose parts are only "on the web" (the fake engines of
backend/testing/fake_engines.py: Chinese pages behind Bocha, English ones behind Serper, entity entries
behind Baike), through ResearchService (POST /research, web=true) with an empty local corpus.

Per component: its gold page cited (the report's sources, by canonical URL), its gold string in the
report and in the answer line (when the run returns one: the FormatAnswer of issue 30 item 4), and the
engine its section's searches went to against the rule's (zh -> bocha, en -> serper, entity -> baike).
Per run: searches, model calls, provider requests and wall time. `--llm extractive` is the path without
a model; `--llm fake` answers plan, verdict and writing with a scripted OpenAI-compatible fake
(backend/testing/fake_openai.py) whose plan names each section's engine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from typing import Any

from backend.auth import LOCAL_IDENTITY
from backend.composition import Services, build_services
from backend.research import ResearchRequest
from backend.testing.fake_web import FakeWebServer
from backend.web.urls import canonical_url
from bench.answers.scoring import contains_gold
from bench.common import bench_settings, log
from bench.common.db import scratch_database
from bench.common.vectors import make_embedder
from bench.research.fake_model import fake_model
from bench.research.web_multihop import build_multihop_set
from bench.research.web_set import WebCompound, WebSet, build_web_set


def run_web(args: argparse.Namespace) -> dict[str, Any]:
    """The web-only benchmark: the set, the fake web serving it, one research run per compound."""
    if getattr(args, "multihop", False):
        web_set = build_multihop_set(args.datasets_dir, args.compounds, args.seed)
    else:
        web_set = build_web_set(args.datasets_dir, args.compounds, args.seed, single=args.single)
    parts = sum(len(c.parts) for c in web_set.compounds)
    log(f"web: {len(web_set.compounds)} compound questions of {parts} parts, {len(web_set.pages)} pages")
    with FakeWebServer() as web, fake_model(args.llm == "fake") as model:
        for page in web_set.pages:
            web.add_page(page)
        for entry in web_set.entries:
            web.add_baike_entry(entry)
        base = bench_settings(
            **web.engine_settings("bocha", "serper", "baike"),
            web_allow_private_addresses=True,
            web_max_results=args.web_results,
        )
        settings = type(base).model_validate({**base.model_dump(), **model})
        with scratch_database("research_web") as url:
            embedder = make_embedder(args.embedder, settings)
            services = build_services(settings, database_url=url, embedder=embedder, migrate=False)
            try:
                items = asyncio.run(_run_all(services, web_set, args.preset, web))
            finally:
                services.close()
    return {"summary": summarise(items), "items": items}


async def _run_all(services: Services, web_set: WebSet, preset: str, web: FakeWebServer) -> list[dict]:
    items = []
    try:
        for k, compound in enumerate(web_set.compounds, 1):
            items.append(await _one(services, compound, preset, web))
            if k % 10 == 0:
                log(f"  web: {k}/{len(web_set.compounds)} research runs")
    finally:
        await services.web.aclose()
    return items


async def _one(services: Services, compound: WebCompound, preset: str, web: FakeWebServer) -> dict:
    requests_before = len(web.requests)
    request = ResearchRequest(question=compound.text, preset=preset, web=True)  # type: ignore[arg-type]
    started = time.perf_counter()
    run = await services.research.start(request, identity=LOCAL_IDENTITY)
    body = await services.research.run(run)
    seconds = time.perf_counter() - started
    cited = {canonical_url(s["url"]) for s in body["sources"] if s.get("url")}
    report = "\n".join(s["content"] for s in body["sections"])
    answer_line = body.get("short_answer") if isinstance(body.get("short_answer"), str) else None
    sections = body["diagnostics"]["sections"]
    parts = []
    for k, part in enumerate(compound.parts):
        routed = _routed(sections, part.question, k)
        # A two-hop question's answer line answers its last hop.
        line_applies = answer_line is not None and bool(part.golds)
        line_applies = line_applies and (compound.bridge is None or k == len(compound.parts) - 1)
        parts.append(
            {
                "kind": part.kind,
                "qid": part.qid,
                "question": part.question,
                "golds": part.golds,
                "gold_url": web.base_url + part.gold_path,
                "cited": canonical_url(web.base_url + part.gold_path) in cited,
                "gold_string": contains_gold(report, part.golds) if part.golds else None,
                "answer_line_gold": answer_matches(answer_line, part.golds)  # type: ignore[arg-type]
                if line_applies
                else None,
                "expected_engine": part.engine,
                "engine": routed,
                "routed_right": routed == part.engine,
            }
        )
    used = body["diagnostics"]["budget"]["used"]
    hop = next((s["hop"] for s in sections if s.get("hop")), None)
    return {
        "question": compound.text,
        # A two-hop question: the first hop's answer (gold) and what the run carried into the second.
        "bridge": compound.bridge,
        "hop": hop,
        "bridge_carried": bool(hop and hop["entity"]) if compound.bridge else None,
        "bridge_right": bool(hop and hop["entity"] and answer_matches(hop["entity"], [compound.bridge]))
        if compound.bridge
        else None,
        "sections": [(s["question"], s.get("engine")) for s in sections],
        "plan_method": body["diagnostics"]["plan_method"],
        "answer_line": answer_line,
        "sources": sorted(cited),
        "partial_reasons": body["partial_reasons"],
        "model_calls": int(used["model_calls"]),
        "searches": int(used["searches"]),
        "provider_requests": len(web.requests) - requests_before,
        "seconds": round(seconds, 3),
        "parts": parts,
    }


def _routed(sections: list[dict[str, Any]], question: str, index: int) -> str | None:
    """The first engine the searches of the section asking `question` went to (a multi-hop step asks
    it with the earlier answer in it: the section of the part's index); None: no section."""
    key = _key(question)
    match = [s for s in sections if _key(s["question"]) in key or key in _key(s["question"])]
    if not match and index < len(sections) and sections[index].get("hop"):
        match = [sections[index]]
    for section in match:
        engines = next((s["engines"] for s in section["searches"] if s.get("engines")), None)
        return engines[0] if engines else section.get("engine")
    return None


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def summarise(items: list[dict[str, Any]]) -> dict[str, Any]:
    parts = [p for i in items for p in i["parts"]]
    n = max(len(parts), 1)
    with_gold = [p for p in parts if p["gold_string"] is not None]
    with_line = [p for p in parts if p["answer_line_gold"] is not None]
    seconds = sorted(i["seconds"] for i in items)
    by_kind = {
        kind: sum(p["cited"] for p in parts if p["kind"] == kind)
        / max(1, sum(p["kind"] == kind for p in parts))
        for kind in ("zh", "en", "entity")
    }
    return {
        "compounds": len(items),
        "parts": len(parts),
        "gold_page_cited_rate": sum(p["cited"] for p in parts) / n,
        "gold_page_cited_by_kind": by_kind,
        "gold_string_rate": sum(p["gold_string"] for p in with_gold) / max(1, len(with_gold)),
        "answer_line_gold_rate": (sum(p["answer_line_gold"] for p in with_line) / len(with_line))
        if with_line
        else None,
        "routing_accuracy": sum(p["routed_right"] for p in parts) / n,
        "searches_mean": statistics.fmean(i["searches"] for i in items) if items else 0.0,
        "model_calls_mean": statistics.fmean(i["model_calls"] for i in items) if items else 0.0,
        "provider_requests_mean": statistics.fmean(i["provider_requests"] for i in items) if items else 0.0,
        "partial_rate": sum(bool(i["partial_reasons"]) for i in items) / max(len(items), 1),
        "seconds_p50": seconds[len(seconds) // 2] if seconds else 0.0,
        "seconds_p90": seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))] if seconds else 0.0,
        "multihop": _hops(items),
    }


def _hops(items: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Two-hop questions: each hop's gold page cited, the first hop's answer carried into the second's
    search (and right), both pages cited."""
    chains = [i for i in items if i.get("bridge")]
    if not chains:
        return None
    n = len(chains)
    hops = max(len(i["parts"]) for i in chains)
    return {
        "questions": n,
        "cited_by_hop": [
            sum(len(i["parts"]) > k and i["parts"][k]["cited"] for i in chains) / n for k in range(hops)
        ],
        "all_hops_cited": sum(all(p["cited"] for p in i["parts"]) for i in chains) / n,
        "bridge_carried": sum(bool(i["bridge_carried"]) for i in chains) / n,
        "bridge_right": sum(bool(i["bridge_right"]) for i in chains) / n,
    }


def render_web(report: dict[str, Any], *, examples: int = 5) -> str:
    s = report["web"]["summary"]
    line = s["answer_line_gold_rate"]
    kinds = s["gold_page_cited_by_kind"]
    lines = [
        f"# Deep research, web only ({report['llm']}, preset {report['preset']})",
        "",
        f"`{report['command']}` — code {report['code']}",
        "",
        "| runs / parts | gold page cited (zh / en / entity) | gold string | answer line | routing | "
        "searches | model calls | provider requests | s p50 / p90 | partial |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {s['compounds']} / {s['parts']} | {_pct(s['gold_page_cited_rate'])} "
        f"({_pct(kinds['zh'])} / {_pct(kinds['en'])} / {_pct(kinds['entity'])}) | "
        f"{_pct(s['gold_string_rate'])} | {'n/a' if line is None else _pct(line)} | "
        f"{_pct(s['routing_accuracy'])} | {s['searches_mean']:.1f} | {s['model_calls_mean']:.1f} | "
        f"{s['provider_requests_mean']:.1f} | {s['seconds_p50']:.2f} / {s['seconds_p90']:.2f} | "
        f"{_pct(s['partial_rate'])} |",
    ]
    hops = s.get("multihop")
    if hops:
        by_hop = " / ".join(_pct(x) for x in hops["cited_by_hop"])
        lines += [
            "",
            "| two-hop questions | gold page cited by hop | both cited | first answer carried "
            "| carried right |",
            "|---|---|---|---|---|",
            f"| {hops['questions']} | {by_hop} | {_pct(hops['all_hops_cited'])} | "
            f"{_pct(hops['bridge_carried'])} | {_pct(hops['bridge_right'])} |",
        ]
    misses = [(i, p) for i in report["web"]["items"] for p in i["parts"] if not p["cited"]][:examples]
    if misses:
        lines += ["", "## Parts whose gold page the report did not cite", ""]
        for item, part in misses:
            lines.append(
                f"- `{part['qid']}` ({part['kind']}, routed {part['engine']}): {part['question']} "
                f"— sections {item['sections']}"
            )
    return "\n".join(lines) + "\n"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def answer_matches(line: str, golds: Sequence[str]) -> bool:
    """The answer line holds a gold answer, or (a reading-comprehension gold is often the whole
    sentence: 「据统计，…票房收益大约是$10.2亿美金。」) a gold holds the line's answer, punctuation aside."""
    answer = _bare(line)
    return contains_gold(line, tuple(golds)) or (len(answer) >= 2 and any(answer in _bare(g) for g in golds))


def _bare(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())
