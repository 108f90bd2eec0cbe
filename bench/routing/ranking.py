"""Where the cross-lingual ranking loses (issue 26): nDCG@10 of the stored searches re-ordered offline.

Usage: .venv/bin/python -m bench.routing.ranking [--variants KIND ...]

For the answerable questions of each stored variant (python -m bench.routing), the gold paragraph's
document-level nDCG@10 over the /search candidates ordered
  - as shipped (final_score: rerank policy v2, a softmax of cosine, idf_coverage and phrase_coverage),
  - by the cosine alone (what is left when every lexical feature is neutral),
  - with idf_coverage counted, for a candidate in the other language than the question, over the
    comparable terms only (backend.confidence.answerability.comparable_terms: numbers and Latin names
    of a Chinese question in an English passage). The softmax's logit is log(final_score) up to a
    per-query constant, so swapping one feature's contribution re-orders exactly as the reranker
    would (the stored candidates keep the query terms of their tokens, which is all idf_coverage reads).
If the cosine order is as low as the shipped one, the rerank features are not what punishes the
other language's passage: the vector leg ranks it there.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence

from backend.confidence.answerability import LANGUAGES, comparable_terms, question_language
from backend.retrieval.rerank import idf_coverage
from backend.retrieval.rerank_policy import load_rerank_policy
from bench.common.beir import mean_scores, score_ranking
from bench.common.report import markdown_table
from bench.routing.fit import WORK_DIR, stored_groups
from bench.routing.records import Candidate, QuestionRecord, load_records
from bench.routing.variants import KINDS

ORDERS = ("as shipped", "cosine alone", "comparable-term idf_coverage")


def orders(record: QuestionRecord, idf_weight: float) -> dict[str, list[Candidate]]:
    """The record's /search candidates in each order of ORDERS."""
    candidates = record.searches["default"].candidates
    asked = question_language(record.terms, record.text)

    def logit(c: Candidate) -> float:
        return math.log(max(c.final_score, 1e-300))

    def comparable(c: Candidate) -> float:
        cross = asked in LANGUAGES and c.content_language in LANGUAGES and asked != c.content_language
        if not cross:
            return logit(c)
        terms = comparable_terms(record.terms, c.content_language)
        now = idf_coverage(record.terms, c.content_tokens, record.term_idfs)
        then = idf_coverage(terms, c.content_tokens, record.term_idfs) if terms else 0.0
        return logit(c) + idf_weight * (then - now)

    return {
        ORDERS[0]: sorted(candidates, key=lambda c: -logit(c)),
        ORDERS[1]: sorted(candidates, key=lambda c: -(c.similarity or 0.0)),
        ORDERS[2]: sorted(candidates, key=lambda c: -comparable(c)),
    }


def ndcg(records: Sequence[QuestionRecord], idf_weight: float) -> Mapping[str, float]:
    per_order: dict[str, list[dict[str, float]]] = {name: [] for name in ORDERS}
    for r in records:
        if r.answerable and r.gold_doc:
            for name, ranked in orders(r, idf_weight).items():
                per_order[name].append(score_ranking([c.external_id for c in ranked], {r.gold_doc: 1}))
    return {name: mean_scores(rows).get("ndcg@10", float("nan")) for name, rows in per_order.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.routing.ranking", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--variants", nargs="+", choices=KINDS, default=["monolingual", "xlang", "mixed"])
    args = parser.parse_args(argv)
    weight = load_rerank_policy("v2").weights.get("idf_coverage", 0.0)
    rows = []
    for key in stored_groups(args.variants, None):
        scores = ndcg(load_records(WORK_DIR / f"{key}.records.jsonl.gz"), weight)
        rows.append([key, *(f"{scores[name]:.4f}" for name in ORDERS)])
    if not rows:
        print(f"no stored searches in {WORK_DIR}: run python -m bench.routing")
        return 2
    print(markdown_table(["group", *(f"nDCG@10 {name}" for name in ORDERS)], rows, "lrrr"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
