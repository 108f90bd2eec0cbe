"""Features, the listwise model, and the product's ordering, over collected questions (no database).

The model is a conditional logit: a question's candidates compete in one softmax over w . features,
and the loss is -log of the probability mass on the gold document's chunks (+ a small L2 penalty).
It is the rerank_v2 policy's own form (output "softmax"), fitted by full-batch Adam on standardised
features, which is deterministic and needs nothing beyond numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from backend.retrieval.rerank import candidate_features, diversify, dynamic_top_k
from bench.rerank.collect import StudyCandidate, StudyQuestion

PER_DOC_CAP = 3


_ROWS: dict[int, list[dict[str, float]]] = {}


def feature_rows(question: StudyQuestion) -> list[dict[str, float]]:
    """The product's features of each candidate, plus study-only ones (computed once per question)."""
    key = id(question)
    if key not in _ROWS:
        _ROWS[key] = _feature_rows(question)
    return _ROWS[key]


def _feature_rows(question: StudyQuestion) -> list[dict[str, float]]:
    rows = candidate_features(question.candidates, question.terms, "cosine", question.text, question.idf)
    best_cos = max((c.similarity or 0.0 for c in question.candidates), default=0.0)
    for f, c in zip(rows, question.candidates, strict=True):
        f["vector_rr"] = 1.0 / (1 + c.vector_rank) if c.vector_rank else 0.0
        f["full_text_rr"] = 1.0 / (1 + c.full_text_rank) if c.full_text_rank else 0.0
        f["cosine_gap"] = (c.similarity or 0.0) - best_cos
    return rows


@dataclass
class Matrix:
    """Candidates of many questions as padded arrays: X[q, c, f], mask[q, c], gold[q, c]."""

    x: np.ndarray
    mask: np.ndarray
    gold: np.ndarray
    questions: list[StudyQuestion]
    features: tuple[str, ...]

    @classmethod
    def build(cls, questions: Sequence[StudyQuestion], features: Sequence[str]) -> Matrix:
        n, d = len(questions), len(features)
        c = max((len(q.candidates) for q in questions), default=1)  # the prefetch_k collected
        x = np.zeros((n, c, d))
        mask = np.zeros((n, c), dtype=bool)
        gold = np.zeros((n, c), dtype=bool)
        for i, q in enumerate(questions):
            rows = feature_rows(q)
            for j, (f, cand) in enumerate(zip(rows, q.candidates, strict=False)):
                x[i, j] = [f[name] for name in features]
                mask[i, j] = True
                gold[i, j] = cand.document in q.gold
        return cls(x, mask, gold, list(questions), tuple(features))

    def logits(self, w: np.ndarray) -> np.ndarray:
        return np.where(self.mask, self.x @ w, -np.inf)


def fit(m: Matrix, *, l2: float = 1e-3, steps: int = 1500, lr: float = 0.05) -> np.ndarray:
    """Weights (in the features' own units) minimising the mean -log P(gold) + l2/2 |w_std|^2."""
    usable = (m.gold & m.mask).any(axis=1)  # a question whose gold was not prefetched teaches nothing
    x, mask, gold = m.x[usable], m.mask[usable], m.gold[usable]
    flat = x[mask]
    mean, std = flat.mean(axis=0), flat.std(axis=0)
    std[std < 1e-9] = 1.0
    z = np.where(mask[..., None], (x - mean) / std, 0.0)
    w = np.zeros(x.shape[2])
    first, second = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, steps + 1):
        s = np.where(mask, z @ w, -np.inf)
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        pg = np.where(gold, p, 0.0)
        q = pg / pg.sum(axis=1, keepdims=True)  # the posterior over the gold chunks
        grad = np.einsum("qc,qcf->f", p - q, z) / len(z) + l2 * w
        first = 0.9 * first + 0.1 * grad
        second = 0.999 * second + 0.001 * grad**2
        w -= lr * (first / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-12)
    return w / std  # the mean shifts every candidate of a question alike: it cancels in the softmax


def ranked(
    question: StudyQuestion, scores: Sequence[float], per_doc_cap: int = PER_DOC_CAP
) -> list[StudyCandidate]:
    """The product's order: by score (stable on the prefetch order), then diversify."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    return diversify(
        [question.candidates[i] for i in order],
        per_doc_cap=per_doc_cap,
        document=lambda c: c.document,
        content=lambda c: c.content_hash,
    )


def softmax(logits: Sequence[float]) -> list[float]:
    if not logits:
        return []
    arr = np.asarray(logits, dtype=float)
    e = np.exp(arr - arr.max())
    return list(e / e.sum())


def cut_size(finals_in_order: Sequence[float], drop_ratio: float, top_k_max: int = 5) -> int:
    return dynamic_top_k(finals_in_order, top_k_min=1, top_k_max=top_k_max, drop_ratio=drop_ratio)
