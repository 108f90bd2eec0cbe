"""Routing benchmark: does the confidence tell answerable questions from unanswerable ones?

Usage: .venv/bin/python -m bench.routing [--sets NAME ...] [--sample N] [--policy v3 ...] [--combined]
                                         [--variants KIND ...] [--questions N] [--plots docs/plots]
                                         [--reuse] [--out bench/results/routing.json]
       .venv/bin/python -m bench.routing.fit [--write vN]   (the leave-one-dataset-out fit of v3)

Per development set, the articles are split in two halves by the parity of sha256(title); one half is
ingested through IngestionService with the bundled local model into a scratch database, and every
question of BOTH halves goes through RetrievalService.search(SearchRequest(query=q)) (the /search
default). Questions about an ingested article are "answerable", the others "unanswerable". For each
policy the report gives the AUROC of best_overall_score against the naive baselines of the same
searches, the routes (answer / clarify / web_fallback) on each side, how many distinct values the
score takes, and, for a sample, what /chat (web off, extractive generator) replies, as shipped and
if it answered only when the route is "answer". --combined adds every set's ingested half as ONE
corpus (2.6x larger, three scripts) asked every question: does the policy survive another corpus?
Searches and chats are kept in .data/bench-cache/routing/ (--reuse re-scores them without a database).

--variants (issue 26, bench/routing/variants.py): monolingual (the above, the default), keyword (each
question cut to its content words), xlang (xquad-zh questions over the xquad-en corpus and back),
near-miss (the gold paragraph removed, the rest of its article kept), mixed (= --combined) and native
(sets with their own answerable.tsv labels, e.g. dureader-checklist-dev: real search queries; such a
set is never half-split). --questions samples the keyword and native variants (per side). A variants
table follows the tables above, and docs/plots/routing-<variant>.svg shows each variant's score
distributions.
"""
