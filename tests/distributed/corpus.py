"""A small multi-tenant corpus for the distributed tests: the demo documents cut into sentences and
dealt to a public corpus and four users, so every tenant holds different text on its own shard."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from backend import PROJECT_ROOT
from backend.auth import Identity
from backend.auth.identity import user_identity
from backend.ingest.documents import LoadedDocument
from tests.factories import loaded_document

DEMO = PROJECT_ROOT / "demo" / "corpus"
USERS = {name: uuid.UUID(int=0xC0 + i) for i, name in enumerate(("ann", "bo", "cai", "dee"))}
OWNERS: tuple[str, ...] = ("public", *USERS)
DOCS_PER_OWNER = 4
SENTENCES_PER_DOC = 6

QUERIES = (
    "混合检索怎么融合两路结果",
    "如何部署到 Supabase",
    "引用的来源怎么保存",
    "HNSW ef_search 调多大",
    "what does the reranker do",
    "连接池的大小",
    "row level security policies",
    "动态 top-k 截断",
)


@dataclass(frozen=True)
class OwnedDocuments:
    owner: str
    identity: Identity | None  # None: the backend's own role (the public corpus)
    documents: list[LoadedDocument]


def sentences() -> list[str]:
    """Every sentence of the demo corpus, in file order (Markdown syntax stripped)."""
    found: list[str] = []
    for path in sorted(DEMO.glob("*.md")):
        text = re.sub(r"[#>*`|]", " ", path.read_text(encoding="utf-8"))
        for piece in re.split(r"(?<=[。！？.!?])\s*|\n+", text):
            piece = " ".join(piece.split())
            if len(piece) >= 12:
                found.append(piece)
    return found


def corpus() -> list[OwnedDocuments]:
    """DOCS_PER_OWNER documents per owner, their sentences dealt round-robin (no two owners share one)."""
    pool = sentences()
    per_doc: dict[str, list[list[str]]] = {owner: [[] for _ in range(DOCS_PER_OWNER)] for owner in OWNERS}
    slots = [(owner, d) for d in range(DOCS_PER_OWNER) for owner in OWNERS]
    for i, sentence in enumerate(pool[: len(slots) * SENTENCES_PER_DOC]):
        owner, d = slots[i % len(slots)]
        per_doc[owner][d].append(sentence)
    owned = []
    for owner in OWNERS:
        identity = None if owner == "public" else user_identity(USERS[owner])
        docs = [
            loaded_document(f"{owner}-{d}", "\n\n".join(text), f"{owner} 的笔记 {d}")
            for d, text in enumerate(per_doc[owner])
        ]
        owned.append(OwnedDocuments(owner, identity, docs))
    return owned
