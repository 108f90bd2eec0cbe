"""A synthetic corpus of any size with real text statistics, clustered vectors and real questions.

Text: chunks recombine sentences of the shared BEIR corpora (Chinese and English). Each synthetic
document takes its title and most sentences from one source document (its "anchor"), with some
sentences swapped for random ones of the same language, so the term distribution is the real one
and no two chunks are copies. Every source sentence is segmented once with the product's
`index_tokens`, and a chunk's `content_tokens` is its title's tokens followed by its sentences'
tokens: what `index_tokens(title + "\\n" + content)` gives, since jieba never joins words across a
sentence end.

Vectors: not model embeddings (embedding millions of chunks is out of reach on 2 cores) but a
clustered model: 256 unit centroids; a chunk is its anchor's centroid plus a component in a
16-dimensional subspace of its own cluster plus a little isotropic noise, renormalised. Real
embeddings also live near a low-dimensional manifold, which is what makes HNSW work; isotropic noise
in 384 dimensions would make every neighbour equally far. A question's vector is drawn the same way
from the cluster of the document the question is about, so both legs find related chunks.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from backend import PROJECT_ROOT
from backend.db.repositories.documents import ChunkRow, DocumentRow
from backend.text import clean_query, detect_lang, index_tokens, query_terms
from backend.text.segment import stopwords
from bench.common import CACHE_DIR, DATASETS_DIR, log
from bench.common.beir import dataset_names, load_dataset, read_jsonl

GENERATOR_VERSION = 3  # bump when the generated data changes, so --reuse reloads
N_CLUSTERS = 256
SUBSPACE_RANK = 16
SPREAD = 0.9  # length of the in-cluster (subspace) component, relative to the unit centroid
NOISE = 0.35  # length of the isotropic component
MIX_RATIO = 0.3  # share of a chunk's sentences taken from other documents of the same language
CHUNK_CHARS = (200, 500)  # target length range; the product's CHUNK_SIZE is 500
RARE_SHARE, UNCOMMON_SHARE = 0.01, 0.04  # metadata bucket "rare" (the selective filter), "uncommon"
# The selectivity sweep's filters: chunk metadata "sel" lists every share s with draw < s, so the
# filter {"sel": ["0.01"]} admits 1 % of the chunks (nested: a 0.1 % chunk is also in the 1 % scope).
SELECTIVITIES = (0.0001, 0.001, 0.01, 0.02, 0.1, 0.5)
# Owners: three bench tenants owning 0.1 %, 1 % and 10 % of the documents, a public corpus of 1 %
# and the rest private to OTHER_TENANTS more users, so a tenant's RLS scope (public + own) is small.
TENANT_SHARES = {"tenant-0.1%": 0.001, "tenant-1%": 0.01, "tenant-10%": 0.1}
PUBLIC_SHARE = 0.01
OTHER_TENANTS = 16
SEGMENT_SOURCES = ("backend/text/segment.py", "backend/text/normalize.py", "backend/text/stopwords.txt")

_ZH_END = re.compile(r"(?<=[。！？；!?;])|\n+")
_EN_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")


@dataclass
class SourceDoc:
    key: str  # dataset/_id, as qrels name it
    dataset: str
    title: str
    title_tokens: str
    lang: str
    cluster: int
    sentences: list[int]  # indices into SentencePool.texts


@dataclass
class SentencePool:
    texts: list[str]
    tokens: list[str]
    docs: list[SourceDoc]
    by_lang: dict[str, list[int]] = field(default_factory=dict)
    segment_seconds: float = 0.0

    @classmethod
    def load(cls, root: Path = DATASETS_DIR) -> SentencePool:
        """Sentences of every corpus under root, segmented once (cached on disk by content)."""
        raw = _read_corpora(root)
        cache = _segmentation_cache(raw)
        started = time.perf_counter()
        seg = json.loads(cache.read_text(encoding="utf-8")) if cache.exists() else {}
        texts: list[str] = []
        tokens: list[str] = []
        docs: list[SourceDoc] = []
        for d in raw:
            ids = []
            for sentence in d["sentences"]:
                if sentence not in seg:
                    seg[sentence] = index_tokens(sentence)
                if seg[sentence]:
                    ids.append(len(texts))
                    texts.append(sentence)
                    tokens.append(seg[sentence])
            if d["title"] not in seg:
                seg[d["title"]] = index_tokens(d["title"])
            if ids:
                cluster = zlib.crc32(d["key"].encode()) % N_CLUSTERS
                docs.append(
                    SourceDoc(d["key"], d["dataset"], d["title"], seg[d["title"]], d["lang"], cluster, ids)
                )
        if not cache.exists():
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(seg, ensure_ascii=False), encoding="utf-8")
        pool = cls(texts, tokens, docs, segment_seconds=time.perf_counter() - started)
        for doc in docs:
            pool.by_lang.setdefault(doc.lang, []).extend(doc.sentences)
        return pool


def _read_corpora(root: Path) -> list[dict]:
    out = []
    for name in dataset_names(root):
        for row in read_jsonl(root / name / "corpus.jsonl"):
            text = row.get("text") or ""
            lang = "en" if detect_lang(text) == "en" else "zh"
            splitter = _EN_END if lang == "en" else _ZH_END
            sentences = [s.strip() for s in splitter.split(text) if s and len(s.strip()) >= 5]
            out.append(
                {
                    "key": f"{name}/{row['_id']}",
                    "dataset": name,
                    "title": row.get("title") or "",
                    "lang": lang,
                    "sentences": sentences,
                }
            )
    return out


def _segmentation_cache(raw: list[dict]) -> Path:
    """One file per (corpus text, segmentation code): a change in either re-segments."""
    digest = hashlib.sha256()
    for rel in SEGMENT_SOURCES:
        digest.update((PROJECT_ROOT / rel).read_bytes())
    for d in raw:
        digest.update(d["title"].encode())
        for s in d["sentences"]:
            digest.update(s.encode())
    return CACHE_DIR / "synthetic" / f"sentences-{digest.hexdigest()[:16]}.json"


class ClusteredVectors:
    """Unit vectors: centroid + a component in the cluster's own subspace + isotropic noise."""

    def __init__(self, dims: int, seed: int) -> None:
        rng = np.random.default_rng([seed, dims, 1])
        self.dims = dims
        self.centroids = _unit(rng.standard_normal((N_CLUSTERS, dims)))
        bases = rng.standard_normal((N_CLUSTERS, dims, SUBSPACE_RANK))
        self.bases = np.stack(
            [np.linalg.qr(b)[0].T for b in bases]
        )  # (clusters, rank, dims), orthonormal rows

    def sample(self, clusters: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One float32 unit vector per cluster id."""
        out = self.centroids[clusters].copy()
        z = rng.standard_normal((len(clusters), SUBSPACE_RANK)) * (SPREAD / np.sqrt(SUBSPACE_RANK))
        for k in np.unique(clusters):
            rows = np.nonzero(clusters == k)[0]
            out[rows] += z[rows] @ self.bases[k]
        out += rng.standard_normal(out.shape) * (NOISE / np.sqrt(self.dims))
        return _unit(out).astype(np.float32)


def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


@dataclass
class Chunk:
    position: int
    content: str
    content_tokens: str
    content_hash: str
    metadata: dict
    cluster: int


@dataclass
class Document:
    id: uuid.UUID
    external_id: str
    title: str
    source: str
    content_hash: str
    metadata: dict
    chunks: list[Chunk]
    owner_id: uuid.UUID | None = None  # None: the public corpus


def tenant_id(name: str) -> uuid.UUID:
    """The user id of a bench tenant (or of an "other-N" owner), stable across runs."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"pgrag-bench-tenant:{name}")


def owner_of(doc_id: uuid.UUID) -> tuple[str | None, uuid.UUID | None]:
    """(the bench tenant reading it as its own, or None; owner id, None for the public corpus), by the
    document id's bits: deterministic and independent of the text's random stream."""
    u = (doc_id.int >> 64) / 2**64
    edge = 0.0
    for name, share in TENANT_SHARES.items():
        edge += share
        if u < edge:
            return name, tenant_id(name)
    if u < edge + PUBLIC_SHARE:
        return None, None
    return None, tenant_id(f"other-{doc_id.int % OTHER_TENANTS}")


@dataclass
class Batch:
    documents: list[Document]
    vectors: np.ndarray  # one row per chunk, in document then position order
    seconds: float  # time spent generating it

    @property
    def chunk_count(self) -> int:
        return len(self.vectors)

    def rows(self) -> list[tuple[DocumentRow, list[ChunkRow]]]:
        """The batch as the rows the product's document writes take, in document order."""
        vectors = iter(self.vectors)
        return [
            (
                DocumentRow(d.external_id, d.title, d.source, d.content_hash, d.metadata),
                [
                    ChunkRow(
                        c.position,
                        c.content,
                        [],
                        c.content_hash,
                        c.content_tokens,
                        next(vectors),
                        c.metadata,
                        # What ingestion records beside each chunk: its embedded text's cache key.
                        hashlib.sha256(f"{d.title}\n{c.content}".encode()).hexdigest(),
                    )
                    for c in d.chunks
                ],
            )
            for d in self.documents
        ]


class SyntheticCorpus:
    """size chunks in documents of 1-16 chunks, generated batch by batch (deterministic per seed)."""

    def __init__(self, pool: SentencePool, size: int, dims: int, seed: int = 42) -> None:
        self.pool, self.size, self.dims, self.seed = pool, size, dims, seed
        self.vectors = ClusteredVectors(dims, seed)
        self._stop = stopwords()

    def batches(self, batch_chunks: int = 20_000) -> Iterator[Batch]:
        made, number = 0, 0
        while made < self.size:
            started = time.perf_counter()
            rnd = random.Random(self.seed * 1_000_003 + number)
            docs: list[Document] = []
            clusters: list[int] = []
            n = 0
            while n < min(batch_chunks, self.size - made):
                doc = self._document(rnd, made + n, min(rnd.randint(1, 16), self.size - made - n))
                docs.append(doc)
                clusters.extend(c.cluster for c in doc.chunks)
                n += len(doc.chunks)
            rng = np.random.default_rng([self.seed, self.dims, 2, number])
            vectors = self.vectors.sample(np.array(clusters), rng)
            yield Batch(docs, vectors, time.perf_counter() - started)
            made += n
            number += 1

    def _document(self, rnd: random.Random, first_chunk: int, n_chunks: int) -> Document:
        src = rnd.choice(self.pool.docs)
        external_id = f"syn-{first_chunk:08d}"
        chunks = [self._chunk(rnd, src, external_id, position) for position in range(n_chunks)]
        content_hash = hashlib.sha256("".join(c.content_hash for c in chunks).encode()).hexdigest()
        meta = {"source": src.dataset, "lang": src.lang, "content_type": "text/plain"}
        doc_id = uuid.UUID(int=rnd.getrandbits(128), version=4)
        tenant, owner = owner_of(doc_id)
        # "readers": the bench tenants that may read these chunks (RLS scope as a filter, for the owner's
        # side of the tenant cells): all of them for the public corpus, the owner tenant for its own.
        readers = list(TENANT_SHARES) if owner is None else [tenant] if tenant else []
        for chunk in chunks:
            if readers:
                chunk.metadata["readers"] = readers
        return Document(doc_id, external_id, src.title, src.dataset, content_hash, meta, chunks, owner)

    def _chunk(self, rnd: random.Random, src: SourceDoc, external_id: str, position: int) -> Chunk:
        target = rnd.randint(*CHUNK_CHARS)
        same_lang = self.pool.by_lang[src.lang]
        at = rnd.randrange(len(src.sentences))
        ids: list[int] = []
        length = 0
        while length < target and len(ids) < 40:
            sid = (
                rnd.choice(same_lang) if rnd.random() < MIX_RATIO else src.sentences[at % len(src.sentences)]
            )
            at += 1
            ids.append(sid)
            length += len(self.pool.texts[sid]) + 1
        sep = " " if src.lang == "en" else ""
        content = sep.join(self.pool.texts[i] for i in ids)
        tokens = " ".join([src.title_tokens, *(self.pool.tokens[i] for i in ids)]).strip()
        draw = rnd.random()
        meta: dict = {
            "doc_id": external_id,
            "source": src.dataset,
            "lang": src.lang,
            "text_len": len(content),
            "too_short": False,
            "quality_score": round(0.9 + 0.1 * rnd.random(), 4),
            "keyphrases": self._keyphrases(tokens),
        }
        if draw < SELECTIVITIES[-1]:
            meta["sel"] = [str(s) for s in SELECTIVITIES if draw < s]
        if draw < RARE_SHARE:
            meta["bucket"] = "rare"
        elif draw < RARE_SHARE + UNCOMMON_SHARE:
            meta["bucket"] = "uncommon"
        content_hash = hashlib.sha256(content.encode()).hexdigest()
        return Chunk(position, content, tokens, content_hash, meta, src.cluster)

    def _keyphrases(self, tokens: str) -> list[str]:
        counts = Counter(t for t in tokens.split() if len(t) > 1 and t not in self._stop and not t.isdigit())
        return [t for t, _ in counts.most_common(5)]


@dataclass
class Query:
    text: str  # as a user types it (what POST /search receives)
    clean: str  # clean_query(text): the key the embedder sees
    terms: str  # " ".join(query_terms(text)): hybrid_search's query_text
    lang: str
    dataset: str
    vector: np.ndarray


def load_queries(
    pool: SentencePool, dims: int, seed: int, count: int, root: Path = DATASETS_DIR
) -> list[Query]:
    """`count` real questions, an equal share per dataset, shuffled; vectors from their document's cluster."""
    names = dataset_names(root)
    vectors = ClusteredVectors(dims, seed)
    clusters = {d.key: d.cluster for d in pool.docs}
    picked: list[tuple[str, str, int]] = []
    per_set = -(-count // len(names))
    for name in names:
        ds = load_dataset(name, root)
        rnd = random.Random(seed + zlib.crc32(name.encode()))
        rows = rnd.sample(ds.queries, min(per_set, len(ds.queries)))
        for qid, text in rows:
            doc = next(iter(ds.qrels[qid]))
            picked.append((name, text, clusters.get(f"{name}/{doc}", 0)))
    random.Random(seed).shuffle(picked)
    out = []
    for name, text, cluster in picked[:count]:
        rng = np.random.default_rng([seed, dims, 3, zlib.crc32(text.encode())])
        vector = vectors.sample(np.array([cluster]), rng)[0]
        lang = "en" if detect_lang(text) == "en" else "zh"
        out.append(Query(text, clean_query(text), " ".join(query_terms(text)), lang, name, vector))
    return out


def query_vectors(queries: Sequence[Query]) -> dict[str, np.ndarray]:
    """clean query text -> vector, what the precomputed embedder serves."""
    return {q.clean: q.vector for q in queries}


def describe(pool: SentencePool) -> dict:
    """Facts about the sentence pool for the report."""
    langs = Counter(d.lang for d in pool.docs)
    log(f"sentence pool: {len(pool.texts)} sentences from {len(pool.docs)} documents {dict(langs)}")
    return {
        "sentences": len(pool.texts),
        "source_documents": len(pool.docs),
        "documents_by_lang": dict(langs),
        "segment_seconds": round(pool.segment_seconds, 2),
    }
