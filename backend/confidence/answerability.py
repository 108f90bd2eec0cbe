"""Answerability: how sure retrieval is that the corpus holds the answer (policy formula "answerability").

Each candidate document gets three features, read from the fused candidates of one search:
  cosine_lift    how far its best chunk's cosine stands above the query's background, the median
                 cosine of the scored candidates, as a share of the room left above it:
                 (cos - median) / (1 - median). Relative to the same query's candidates, so it keeps
                 its meaning across embedding models and languages whose cosines sit at other levels
                 (multilingual-e5 puts unrelated text at ~0.8, English lower than Chinese).
  term_coverage  the idf-weighted share of the question's significant terms that its best chunk
                 contains: a rare name the corpus lacks weighs most when missing. Shares of idf mass
                 stay comparable as a corpus grows. A term counts as contained when the chunk's
                 indexed tokens hold it or, for a Chinese term of two or more characters, its text
                 does: jieba cuts a question and a passage differently ("盧斯是" vs "盧斯").
  leg_agreement  1 when it holds the first chunk of both the vector and the full-text leg, 0.5 for
                 one leg, else 0: two independent retrievers agreeing.

Across languages (issue 26) the last two read zero whatever the evidence: a Chinese question's terms
do not occur in an English passage, and the full-text leg cannot find it. Each candidate's language
(backend.text.detect_lang of its text: 'zh' or 'en') is compared with the question's (of its text; of
its terms without it), and four language-aware features (policy v4) mean the same whatever the two
languages are:
  comparable_coverage   term_coverage over the question terms the passage's language can hold: for a
                        Latin-script passage the terms without Chinese characters (numbers, names,
                        Latin words of a Chinese question); otherwise every term. No comparable term:
                        0. The same as term_coverage when the languages agree.
  comparable_agreement  leg_agreement when the languages agree; across them the full-text leg is
                        blind, so the vector leg's first chunk alone counts as agreement (1, else 0).
  cross_lingual         1 when the document's language differs from the question's, else 0: with its
                        own weight it replaces the term evidence the other language cannot show.
  cross_lingual_lift    cosine_lift when the languages differ, else 0: the embedding is the only
                        evidence left there, so the model may weigh it more.
Near misses (issue 26 item 2, policy v5): a passage on the question's topic that does not hold the
answer shares its words and meaning; three sentence-level features (backend/confidence/sentences.py)
read what the passage's sentences hold, computed only when the policy weighs them and the question's
text is given:
  sentence_coverage     the largest share of the comparable terms' idf within one sentence of it.
  answer_type           0 when the question asks for a number / date / person / place (多少, 何时, 谁,
                        哪里; how many, when, who, where) and its best-covering sentences hold none that
                        is not the question's own word; else 1 (untyped questions: 1).
  answer_sentence       the sentence coverage of its best sentence that holds the asked type
                        (untyped: sentence_coverage).
score = sigmoid(bias + sum(weight * feature)), weights >= 0 (monotone), fitted leave-one-dataset-out
on the development sets by bench/routing. The best document's score is best_overall_score.
Policy v6 keeps v3's model for documents in the question's language and scores a cross-lingual one
with a model of its own (the policy's "cross_lingual" block) over the evidence that means the same
across languages, calibrated so that it reaches T_low exactly where its cosine_lift crosses the cut
chosen on both cross-lingual directions (bench/routing/xlang_branch.py). From v7 the branch measures a
cross-lingual document's cosine_lift against a deeper background of its own: the cosine of the vector
leg's row of rank `background_rank` (ranked_background), not the median of the 15-candidate head.

Risk flags (each means what it says):
  low_coverage         close in meaning (cosine_lift >= lift_high) but most of the question's weight
                       of terms missing (term_coverage < coverage_low): it may be about something else.
                       Never on a cross-lingual document (its missing terms are the other language's).
  single_spike         only one retriever found it: none of its chunks is in the other leg.
  sparse_evidence      under sparse_ratio of its chunks were retrieved (only with chunk totals).
  huge_doc_sparse      a document of huge_doc_chunks or more chunks with under huge_doc_ratio of them
                       retrieved (only with chunk totals).
  ambiguous_candidate  on the runner-up when it competes with the best one (need_hitl).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from backend.confidence.answerability_policy import AnswerabilityPolicy
from backend.confidence.scoring import ChunkLike
from backend.confidence.sentences import SentenceEvidence, question_type, question_unit, sentence_evidence
from backend.text import detect_lang, normalize

# Chinese terms of 2+ characters are matched in the text too; Latin stems would match inside other
# words ("art" in "start"), single characters everywhere.
_SUBSTRING_TERM = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}$")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
LANGUAGES = ("zh", "en")  # what detect_lang tells apart ('und': neither script, never a mismatch)


class Candidate(ChunkLike, Protocol):
    """What the score reads of a fused candidate, beyond the seed formula's ChunkLike (ScoredChunk fits)."""

    @property
    def similarity(self) -> float | None: ...
    @property
    def vector_rank(self) -> int | None: ...
    @property
    def full_text_rank(self) -> int | None: ...
    @property
    def content_tokens(self) -> str: ...
    @property
    def content(self) -> str: ...


@dataclass(frozen=True)
class DocumentEvidence:
    """One candidate document's evidence, aggregated over its scored chunks."""

    parent_id: str
    title: str
    cosine: float | None  # its best chunk's cosine (None: no vector leg)
    term_coverage: float
    vector_rank: int | None  # its best rank in each leg (None: not in that leg)
    full_text_rank: int | None
    hit_chunks: int
    missing_terms: tuple[str, ...]  # question terms its best-covering chunk lacks, rarest first
    language: str = "und"  # detect_lang of its first chunk: 'zh', 'en' or 'und'
    cross_lingual: bool = False  # its language and the question's are both known and differ
    comparable_coverage: float = 0.0  # term_coverage over the terms its language can hold
    sentences: SentenceEvidence | None = None  # sentence-level evidence (None: not computed)


@dataclass(frozen=True)
class Fusion:
    """The fusion settings of the search (RAG_RRF_K, RAG_FULL_TEXT_WEIGHT, RAG_SEMANTIC_WEIGHT)."""

    rrf_k: int = 60
    full_text_weight: float = 1.0
    semantic_weight: float = 1.0


def scored_candidates(
    candidates: Sequence[Candidate], depth: int, leg_depth: int, fusion: Fusion | None = None
) -> list[Candidate]:
    """The `depth` candidates the score reads: the head of the fusion as a search fetching
    `leg_depth` rows per leg would rank it.

    hybrid_search fetches max(4 x match_count, 40) rows per leg, so a 15-candidate search (/search)
    and an 80-candidate one (/chat) rank their heads differently (a chunk at vector rank 70 adds to
    the RRF of the second only). Re-fusing with leg ranks beyond leg_depth left out makes both
    score the same chunks, hence the same confidence for the same question.
    """

    fusion = fusion or Fusion()

    def capped_rrf(c: Candidate) -> float:
        score = 0.0
        if c.full_text_rank is not None and c.full_text_rank <= leg_depth:
            score += fusion.full_text_weight / (fusion.rrf_k + c.full_text_rank)
        if c.vector_rank is not None and c.vector_rank <= leg_depth:
            score += fusion.semantic_weight / (fusion.rrf_k + c.vector_rank)
        return score

    if any(c.vector_rank is not None or c.full_text_rank is not None for c in candidates):
        # hybrid_search breaks RRF ties by chunk id; rows outside both capped legs never qualify.
        ranked = sorted(
            (c for c in candidates if capped_rrf(c) > 0), key=lambda c: (-capped_rrf(c), c.chunk_id)
        )
    else:  # vector-only search (match_documents has no ranks): the cosine order is the leg's
        ranked = sorted(candidates, key=lambda c: (-(c.similarity or 0.0), c.chunk_id))
    seen: set[Any] = set()
    out = []
    for c in ranked:
        if c.chunk_id not in seen:
            seen.add(c.chunk_id)
            out.append(c)
        if len(out) == depth:
            break
    return out


def term_weights(terms: Sequence[str], term_idfs: Mapping[str, float] | None) -> dict[str, float]:
    """Each question term's weight: its idf; a term without one weighs as the rarest known term
    (unseen by the corpus), and without any idfs every term weighs 1 (plain keyword coverage)."""
    if not term_idfs:
        return dict.fromkeys(terms, 1.0)
    known = [v for t, v in term_idfs.items() if t in terms and math.isfinite(v) and v > 0]
    fallback = max(known, default=1.0)
    return {t: float(term_idfs[t]) if t in term_idfs and term_idfs[t] > 0 else fallback for t in terms}


def question_language(terms: Sequence[str], question: str | None = None) -> str:
    """The question's language: of its text when given, else of its terms (what every caller of the
    score passes). The text's function words count: 「谁写的 pgrag？」 is a Chinese question although its
    one significant term is Latin, so its Chinese passages are not cross-lingual."""
    return detect_lang(question) if question else detect_lang(" ".join(terms))


def passage_language(candidate: Candidate) -> str:
    """A candidate's language: its content_language when it carries one (the benchmark's stored
    candidates keep only the query terms of their text), else detect_lang of its text."""
    known = getattr(candidate, "content_language", None)
    return known if isinstance(known, str) and known else detect_lang(candidate.content)


def passage_text(candidate: Candidate) -> str:
    """A candidate's whole text: `text` when it carries one (the benchmark's stored candidates keep it
    apart from their reduced content), else its content."""
    full = getattr(candidate, "text", None)
    return full if isinstance(full, str) and full else candidate.content


def comparable_terms(terms: Sequence[str], language: str) -> list[str]:
    """The terms a passage in `language` can contain: a Latin-script passage holds no Chinese word
    (it may hold a Chinese question's numbers and Latin names); Chinese text quotes Latin words."""
    if language == "en":
        return [t for t in terms if not _HAN.search(t)]
    return list(terms)


def document_evidence(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    term_idfs: Mapping[str, float] | None,
    question: str | None = None,
    *,
    read_sentences: bool = True,
) -> list[DocumentEvidence]:
    """Aggregate scored chunks per document, in order of first appearance; with the question's text,
    its language is read off the text, and (read_sentences) the sentence-level evidence too."""
    weights = term_weights(list(dict.fromkeys(terms)), term_idfs)
    if not read_sentences:
        asked, unit = None, None
    else:
        asked = question_type(question) if question is not None else None
        unit = question_unit(question) if question is not None and asked == "number" else None
    total = sum(weights.values())
    language_asked = question_language(terms, question)
    groups: dict[Any, list[Candidate]] = {}
    for c in candidates:
        groups.setdefault(c.document_id, []).append(c)
    out = []
    for doc_id, members in groups.items():
        language = passage_language(members[0])
        cross = language_asked in LANGUAGES and language in LANGUAGES and language_asked != language
        comparable = comparable_terms(list(weights), language) if cross else list(weights)
        comparable_total = sum(weights[t] for t in comparable)
        best_cover, best_missing = 0.0, tuple(sorted(weights, key=lambda t: -weights[t]))
        best_comparable = 0.0
        for c in members:
            tokens = set(c.content_tokens.split())
            text = normalize(c.content).lower()
            contained = {t for t in weights if t in tokens or (_SUBSTRING_TERM.match(t) and t in text)}
            covered = sum(w for t, w in weights.items() if t in contained)
            share = covered / total if total > 0 else 0.0
            if share > best_cover or (share == best_cover and c is members[0]):
                best_cover = share
                best_missing = tuple(
                    t for t in sorted(weights, key=lambda t: -weights[t]) if t not in contained
                )
            if comparable_total > 0:
                held = sum(weights[t] for t in comparable if t in contained)
                best_comparable = max(best_comparable, held / comparable_total)
        cosines = [c.similarity for c in members if c.similarity is not None]
        sentences = None
        if question is not None and read_sentences:
            sentences = sentence_evidence(
                [passage_text(c) for c in members], weights, asked, comparable, unit
            )
        out.append(
            DocumentEvidence(
                parent_id=str(doc_id),
                title=members[0].title,
                cosine=max(cosines) if cosines else None,
                term_coverage=best_cover,
                vector_rank=min((c.vector_rank for c in members if c.vector_rank is not None), default=None),
                full_text_rank=min(
                    (c.full_text_rank for c in members if c.full_text_rank is not None), default=None
                ),
                hit_chunks=len(members),
                missing_terms=best_missing,
                language=language,
                cross_lingual=cross,
                comparable_coverage=best_comparable,
                sentences=sentences,
            )
        )
    return out


def background_cosine(candidates: Sequence[Candidate]) -> float | None:
    """The query's background: the median cosine of the scored candidates."""
    cosines = [c.similarity for c in candidates if c.similarity is not None]
    return statistics.median(cosines) if cosines else None


def ranked_background(candidates: Sequence[Candidate], rank: int) -> float | None:
    """The cosine of the vector leg's row of `rank` among the candidates (of its deepest row there when
    the leg returned fewer): where a query's background lies at that depth, whatever the prefetch."""
    rows = sorted(
        (c.vector_rank, c.similarity)
        for c in candidates
        if c.vector_rank is not None and c.similarity is not None and c.vector_rank <= rank
    )
    return rows[-1][1] if rows else None


def features(doc: DocumentEvidence, background: float | None) -> dict[str, float]:
    """The policy's inputs for one document (see the module docstring)."""
    if doc.cosine is None or background is None:
        lift = 0.0  # no vector leg: the score rests on the terms and the legs
    else:
        lift = (doc.cosine - background) / max(1.0 - background, 1e-6)
    legs = (doc.vector_rank == 1) + (doc.full_text_rank == 1)
    cross = 1.0 if doc.cross_lingual else 0.0
    return {
        "cosine_lift": lift,
        "term_coverage": doc.term_coverage,
        "leg_agreement": legs / 2,
        "comparable_coverage": doc.comparable_coverage,
        # across languages the full-text leg is blind: the vector leg's first chunk alone agrees
        "comparable_agreement": float(doc.vector_rank == 1) if doc.cross_lingual else legs / 2,
        "cross_lingual": cross,
        "cross_lingual_lift": lift * cross,
        **sentence_features(doc.sentences),
    }


def sentence_features(evidence: SentenceEvidence | None) -> dict[str, float]:
    """The sentence-level features; not computed: zero coverage, the type taken as held."""
    if evidence is None:
        return {"sentence_coverage": 0.0, "answer_type": 1.0, "answer_sentence": 0.0}
    return {
        "sentence_coverage": evidence.sentence_coverage,
        "answer_type": evidence.answer_type,
        "answer_sentence": evidence.answer_sentence,
    }


def document_score(values: Mapping[str, float], policy: AnswerabilityPolicy) -> float:
    """sigmoid(bias + sum(weight * feature)) over the policy's features; a cross-lingual document
    under a policy with a cross-lingual branch (v6) is scored by the branch's model instead."""
    bias, weights = policy.model_for(values.get("cross_lingual", 0.0) == 1.0)
    z = bias + sum(w * values[name] for name, w in weights.items())
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0
