"""The report: sections in plan order, citations renumbered [1..n] by first appearance across them, the
bibliography (the sources list, shaped like /chat's), a note when the report is partial.

Seed (evidence-retention.md, 通用语义): the final synthesis truncates nothing, it joins the sections.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backend.chat.citations import MARKER
from backend.chat.citations import source_record as chat_source_record
from backend.ingest.provenance import Provenance
from backend.research.types import EvidenceItem
from backend.research.write import SectionDraft
from backend.text import detect_lang

_LABELS = {
    "zh": {
        "answer": "**答案：** {}",
        "unsupported": "> 推测：以下内容尚未得到证据的充分支持。",
        "hypotheses": "## 待验证的假设",
        "candidate": "（候选，尚未核实）",
    },
    "en": {
        "answer": "**Answer:** {}",
        "unsupported": "> Hypothesis: what follows is not yet fully supported by the evidence.",
        "hypotheses": "## Hypotheses (not yet supported)",
        "candidate": " (candidate, not yet checked)",
    },
}
_REASONS = {
    "zh": {
        "deadline": "时间上限",
        "max_model_calls": "模型调用次数上限",
        "max_tokens": "模型 token 上限",
        "max_searches": "检索次数上限",
    },
    "en": {
        "deadline": "the time limit",
        "max_model_calls": "the model-call limit",
        "max_tokens": "the token limit",
        "max_searches": "the search limit",
    },
}


@dataclass
class Report:
    markdown: str
    sections: list[dict[str, Any]]  # {title, question, content, source_numbers}
    sources: list[dict[str, Any]]


def assemble(
    question: str,
    drafts: Sequence[SectionDraft],
    partial_reasons: Sequence[str],
    *,
    answer: str | None = None,
    unsupported: frozenset[int] = frozenset(),
    hypotheses: Sequence[dict[str, Any]] = (),
) -> Report:
    """Renumber, collect the cited sources in order of first citation, and lay out the Markdown: the
    short answer first (a single-fact question), sections not yet supported marked as hypotheses,
    the chain's unsupported claims listed."""
    numbers: dict[int, int] = {}  # evidence id -> report number
    items: dict[int, EvidenceItem] = {}
    used_in: dict[int, list[int]] = {}
    sections = []
    for draft in drafts:
        for evidence_id in draft.cited:
            if evidence_id not in numbers:
                numbers[evidence_id] = len(numbers) + 1
                items[evidence_id] = draft.evidence[evidence_id]
            used_in.setdefault(evidence_id, []).append(draft.index)
        content = renumber(draft.text, numbers)
        sections.append(
            {
                "title": draft.title,
                "question": draft.question,
                "content": content,
                "source_numbers": sorted({numbers[e] for e in draft.cited}),
                "supported": draft.index not in unsupported,
            }
        )
    sources = [
        source_record(n, items[evidence_id], sections=used_in[evidence_id])
        for evidence_id, n in sorted(numbers.items(), key=lambda kv: kv[1])
    ]
    lang = "zh" if detect_lang(question) == "zh" else "en"
    markdown = _markdown(question, sections, sources, partial_reasons, lang, answer, hypotheses)
    for section in sections:
        del section["supported"]  # the markdown's mark; the sections' shape is the API's
    return Report(markdown, sections, sources)


def renumber(text: str, numbers: dict[int, int]) -> str:
    """Evidence ids as report numbers (every id in `text` is in `numbers`: unsupported ones are gone)."""

    def fix(match: re.Match[str]) -> str:
        ids = [int(x) for x in re.split(r"\s*[,，、]\s*", match.group(1).strip())]
        return "".join(f"[{numbers[i]}]" for i in ids if i in numbers)

    return MARKER.sub(fix, text)


def source_record(n: int, item: EvidenceItem, *, sections: list[int]) -> dict[str, Any]:
    """One bibliography entry: /chat's source record (local chunk or web page), plus where research
    found it."""
    record = chat_source_record(n, item.chunk, cited=True, in_context=True)
    return {**record, "pool_source": item.pool_source, "sections": sorted(set(sections))}


def _markdown(
    question: str,
    sections: list[dict[str, Any]],
    sources: list[dict[str, Any]],
    partial_reasons: Sequence[str],
    lang: str,
    answer: str | None,
    hypotheses: Sequence[dict[str, Any]],
) -> str:
    labels = _LABELS[lang]
    lines = [f"# {question.strip()}", ""]
    if answer:
        lines += [labels["answer"].format(answer), ""]
    if partial_reasons:
        names = [_REASONS[lang].get(r, r) for r in partial_reasons]
        note = (
            f"> 注意：本报告不完整（已达到{'、'.join(names)}），以下内容基于已找到的证据。"
            if lang == "zh"
            else f"> Note: this report is partial (it reached {', '.join(names)}); it is written from "
            "the evidence found so far."
        )
        lines += [note, ""]
    for section in sections:
        lines += [f"## {section['title']}", ""]
        lines += [] if section["supported"] else [labels["unsupported"], ""]
        lines += [section["content"], ""]
    if hypotheses:
        lines += [labels["hypotheses"], ""]
        for h in hypotheses:
            lines.append(f"- {h['claim']}{labels['candidate'] if h['origin'] == 'candidate' else ''}")
        lines.append("")
    if sources:
        lines += ["## 参考来源" if lang == "zh" else "## Sources", ""]
        for source in sources:
            label = " > ".join(p for p in (source["title"], source.get("heading") or "") if p)
            place = _place(source.get("provenance"), lang)
            where = f" — {source['url']}" if source.get("url") else ""
            lines.append(f"- [{source['n']}] {label}{place}{where}")
    return "\n".join(lines).rstrip() + "\n"


def _place(provenance: dict[str, Any] | None, lang: str) -> str:
    """Where in its file a source was read (", p. 12" / "，第 12 页"), in the report's language."""
    if not provenance:
        return ""
    label = Provenance.model_validate(provenance).label(lang)
    return f"{'，' if lang == 'zh' else ', '}{label}" if label else ""
